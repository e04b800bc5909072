# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_bus_policy.py: our REAL org.ptags.Manager.conf on a private system bus with the stock defaults:
# only root owns the name; anyone calls the API and the standard interfaces; nothing else gets through.
#
# Run one case per meson test, inside `unshare --mount --propagation private`:
#   test_bus_policy.py BusOwnership.test_only_root_owns_the_name

import json
import os
import pwd
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_world import BUS_OWN_REJECTION, PolicyTestCase, setpriv_argv  # noqa: E402
import ptags_harness  # noqa: E402,I100  (policy_world put tests/lib on the path)

import gi  # noqa: E402

gi.require_version("GLib", "2.0")
from gi.repository import GLib  # noqa: E402

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


LISTEN = """
import json, sys
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
conn = Gio.DBusConnection.new_for_address_sync(
    sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
    Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
seen = []
conn.signal_subscribe(None, "org.ptags.Manager", None, None, None, Gio.DBusSignalFlags.NONE,
                      lambda c, s, p, i, name, params: seen.append(name))
print("ready", flush=True)
loop = GLib.MainLoop()
GLib.io_add_watch(0, GLib.IO_IN | GLib.IO_HUP, lambda *a: loop.quit())
loop.run()
print(json.dumps(sorted(set(seen))), flush=True)
"""


class BusContainerSignals(PolicyTestCase):
    def listener(self, user):
        prefix = setpriv_argv(pwd.getpwnam(user)) if user != "root" else []
        proc = self.world.spawn("listener", prefix + [ptags_harness.PYTHON, "-I", "-c", LISTEN,
                                                      self.world.address],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.assertEqual(proc.stdout.readline().strip(), b"ready")
        return proc

    def test_container_signals_reach_root_only(self):
        """ContainerRegistered and ContainerRemoved carry each container's
        name, owner and leader, which org.ptags.container.inspect guards
        (GetContainer, ListContainers), yet every user received them."""
        w = self.world
        listeners = {user: self.listener(user) for user in ("nobody", "root")}
        target = w.spawn_target()
        self.assertOk(w.root_call("AddTag", "usb", [target, "app:x", False]))
        self.assertOk(w.root_call("RegisterContainer", "uta{sv}",
                                  [target, 77, {"name": GLib.Variant("s", "web")}]))
        w.kill(target)
        time.sleep(1)  # the removal is noticed and signalled
        seen = {}
        for user, proc in listeners.items():
            proc.stdin.close()
            seen[user] = json.loads(proc.stdout.readline())
        self.assertEqual(seen["root"], ["ContainerRegistered", "ContainerRemoved", "TagsChanged"])
        self.assertEqual(seen["nobody"], ["TagsChanged"])


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
