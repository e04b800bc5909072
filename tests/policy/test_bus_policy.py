# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_bus_policy.py: our REAL org.ptags.Manager.conf on a private system bus with the stock defaults:
# only root owns the name; anyone calls the API and the standard interfaces; nothing else gets through.
#
# Run one case per meson test, inside `unshare --mount --propagation private`:
#   test_bus_policy.py BusOwnership.test_only_root_owns_the_name

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_world import BUS_OWN_REJECTION, PolicyTestCase  # noqa: E402

NAME = "org.ptags.Manager"
PATH = "/org/ptags/Manager"
BUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
DO_NOT_QUEUE = 4
PRIMARY_OWNER = 1


class BusOwnership(PolicyTestCase):
    # The name is left unowned, so an allowed request would succeed at once.
    world_options = {"with_daemon": False}

    def test_only_root_owns_the_name(self):
        for user in ("nobody", "daemon"):
            reply = self.world.call_as(user, *BUS, "RequestName", "su", [NAME, DO_NOT_QUEUE])
            self.assertRejectedByBus(reply, BUS_OWN_REJECTION)
        self.assertFalse(self.world.name_has_owner(NAME), "a non-root process owns " + NAME)
        # Control: the same request from root is granted, so the refusal
        # above is the policy's, not a broken bus.
        reply = self.world.call_as(None, *BUS, "RequestName", "su", [NAME, DO_NOT_QUEUE])
        self.assertOk(reply)
        self.assertEqual(reply.value, [PRIMARY_OWNER])


class BusAllowedCalls(PolicyTestCase):
    def test_anyone_calls_the_api_and_standard_interfaces(self):
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "app:public", False]))
        w = self.world

        tags = self.assertOk(w.call_as("nobody", NAME, PATH, NAME, "GetTags", "u", [target]))
        self.assertEqual(tags, [[["app:public", False, ""]]])

        xml = self.assertOk(w.call_as("nobody", NAME, PATH, "org.freedesktop.DBus.Introspectable",
                                      "Introspect"))[0]
        self.assertIn('<interface name="org.ptags.Manager">', xml)

        version = self.assertOk(w.call_as("nobody", NAME, PATH, "org.freedesktop.DBus.Properties",
                                          "Get", "ss", [NAME, "Version"]))[0]
        self.assertTrue(version, "empty Version property")
        props = self.assertOk(w.call_as("nobody", NAME, PATH, "org.freedesktop.DBus.Properties",
                                        "GetAll", "s", [NAME]))[0]
        self.assertIn("Backend", props)

        self.assertOk(w.call_as("nobody", NAME, PATH, "org.freedesktop.DBus.Peer", "Ping"))

        # A change through the open interface reaches ptagsd, which asks
        # polkit: the refusal is the daemon's, not the bus's.
        reply = w.call_as("nobody", NAME, PATH, NAME, "AddTag", "usb", [target, "app:x", False])
        self.assertError(reply, "NotAuthorized")


class BusReadConfirmation(PolicyTestCase):
    def test_replies_read_are_confirmed_under_the_real_policy(self):
        """ptagsd counts unread reply bytes per connection and learns they
        were read from the client's answer to Peer.Ping: the policy must let
        that ping through, or a reader is refused for good after 4 MiB."""
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("Apply", "uas", [
            target, ["+app:%03d:%s" % (i, "x" * 1000) for i in range(200)]]))
        client = self.world.spawn_client()
        for i in range(40):  # 8 MB in all, twice MaxUnreadReplyBytes
            reply = client.call("GetTags", "u", [target])
            self.assertOk(reply, "read %d: %r" % (i, reply))


class BusDeniedCalls(PolicyTestCase):
    def test_other_interfaces_are_refused_by_the_bus(self):
        w = self.world
        for user in ("nobody", None):  # the default context binds root too
            for interface, method in (
                ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"),
                ("org.ptags.Manager.Debug", "Dump"),
            ):
                self.assertRejectedByBus(w.call_as(user, NAME, PATH, interface, method))
            # A call without an interface field matches no allow rule.
            self.assertRejectedByBus(w.call_as(user, NAME, PATH, None, "GetTags", "u", [1]))
        self.assertTrue(w.daemon_alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)
