# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_peers.py: the lookups that resolve a process for the caller: a bus
# peer (GetPeerTags, PeerHasTag), every tagged process (FindTagged) and
# pidfds (GetTagsFd, ApplyFd), each checked to hit the right process.

import os
import subprocess
import unittest

from ptags_harness import PYTHON, UNPRIVILEGED, PtagsTestCase

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

# A peer's unicast NameOwnerChanged to ptagsd: a join of a name far ahead.
FORGE_JOIN = """
import sys
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
conn = Gio.DBusConnection.new_for_address_sync(
    sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
    Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
name = ":99999.0"
conn.emit_signal(sys.argv[2], "/org/freedesktop/DBus", "org.freedesktop.DBus",
                 "NameOwnerChanged", GLib.Variant("(sss)", (name, "", name)))
conn.flush_sync(None)
"""


class PeerTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.peer = self.world.spawn_client()  # an unprivileged bus peer
        self.other = self.world.spawn_client(unprivileged=False)
        self.assertOk(self.world.root_call(
            "Apply", "uas", [self.peer.pid, ["+app:camera", "+@app:mic", "!app:mic=front"]]))
        self.assertOk(self.world.root_call("AddTag", "usb", [self.other.pid, "web:x", False]))

    def test_get_peer_tags(self):
        want = [["app:camera", False, ""], ["app:mic", True, "front"]]
        # Asked by root and by another unprivileged peer: both work.
        got = self.assertOk(self.world.root_call("GetPeerTags", "s", [self.peer.unique_name]))
        self.assertEqual(got[0], want)
        got = self.assertOk(self.other.call("GetPeerTags", "s", [self.peer.unique_name]))
        self.assertEqual(got[0], want)
        got = self.assertOk(self.peer.call("GetPeerTags", "s", [self.other.unique_name]))
        self.assertEqual(got[0], [["web:x", False, ""]])

    def test_well_known_name(self):
        bus = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
        self.assertOk(self.peer.call("RequestName", "su", ["org.example.TaggedPeer", 0],
                                     destination=bus))
        got = self.assertOk(self.other.call("GetPeerTags", "s", ["org.example.TaggedPeer"]))
        self.assertEqual(got[0], [["app:camera", False, ""], ["app:mic", True, "front"]])
        self.assertTrue(self.assertOk(self.other.call(
            "PeerHasTag", "ss", ["org.example.TaggedPeer", "@app:mic"]))[0])

    def test_peer_has_tag(self):
        name = self.peer.unique_name
        for pattern, want in [("app:camera", True), ("app:*", True), ("@app:mic", True),
                              ("@app:camera", False), ("web:x", False), ("", True)]:
            with self.subTest(pattern=pattern):
                got = self.assertOk(self.other.call("PeerHasTag", "ss", [name, pattern]))
                self.assertEqual(got[0], want)
        self.assertTrue(self.assertOk(self.peer.call(
            "PeerHasTag", "ss", [self.other.unique_name, "web:*"]))[0])

    def test_a_forged_join_dates_nothing(self):
        # Only the bus announces that a connection joined it. A join of a
        # name far ahead, sent to ptagsd by a peer, would otherwise date
        # every later connection before its process started, and leave
        # their processes unknown.
        w = self.world
        owner = w.conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                 "org.freedesktop.DBus", "GetNameOwner",
                                 GLib.Variant("(s)", ("org.ptags.Manager",)), None,
                                 Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
        subprocess.run(UNPRIVILEGED + [PYTHON, "-I", "-c", FORGE_JOIN, w.address, owner],
                       check=True, timeout=30, env=w.child_env())
        later = w.spawn_client()
        self.assertOk(w.root_call("AddTag", "usb", [later.pid, "app:later", False]))
        self.assertTrue(self.assertOk(self.other.call(
            "PeerHasTag", "ss", [later.unique_name, "app:later"]))[0])

    def test_peer_gone(self):
        name = self.peer.unique_name
        self.world.kill(self.peer.pid)
        # The bus notices the disconnect asynchronously; the answer must then
        # be NoSuchProcess, never another process's tags.
        reply = self.world.root_call("GetPeerTags", "s", [name])
        if reply.ok:
            self.fail("a gone peer returned tags: %r" % (reply,))
        self.assertError(reply, "NoSuchProcess")

    def test_find_tagged(self):
        t1 = self.world.spawn_target(unprivileged=True)
        t2 = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [t1, "app:camera", True]))
        self.assertOk(self.world.root_call("Apply", "uas", [t2, ["+app:other", "+zz"]]))
        found = self.assertOk(self.other.call("FindTagged", "s", ["app:camera"]))[0]
        self.assertEqual(sorted(p for p, _ in found), sorted([self.peer.pid, t1]))
        self.assertEqual([p for p, _ in found], sorted(p for p, _ in found), "sorted by pid")
        by_pid = dict((p, tags) for p, tags in found)
        self.assertEqual(by_pid[t1], [["app:camera", True, ""]])
        found = self.assertOk(self.other.call("FindTagged", "s", ["app:*"]))[0]
        self.assertEqual(sorted(p for p, _ in found), sorted([self.peer.pid, t1, t2]))
        found = self.assertOk(self.other.call("FindTagged", "s", ["@app:*"]))[0]
        self.assertEqual(sorted(p for p, _ in found), sorted([self.peer.pid, t1]))
        self.assertEqual(self.assertOk(self.other.call("FindTagged", "s", ["none:*"]))[0], [])
        found = self.assertOk(self.other.call("FindTagged", "s", [""]))[0]
        # ptagsd (ptags-lsm) gives itself the rights tags at start, so it is
        # found too; nothing else may be.
        self.assertEqual(sorted(p for p, _ in found if p != self.world.daemon.pid),
                         sorted([self.peer.pid, self.other.pid, t1, t2]), "any tag")
        self.world.kill(t1)
        found = self.assertOk(self.other.call("FindTagged", "s", ["app:camera"]))[0]
        self.assertEqual([p for p, _ in found], [self.peer.pid], "an exited process is gone")


class PidfdTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.t1 = self.world.spawn_target(unprivileged=True)
        self.t2 = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("AddTag", "usb", [self.t1, "one", False]))
        self.assertOk(self.world.root_call("AddTag", "usb", [self.t2, "two", False]))

    def test_get_tags_fd(self):
        fd = os.pidfd_open(self.t2)
        try:
            got = self.assertOk(self.world.root_call("GetTagsFd", "h", [0], fds=[fd]))
        finally:
            os.close(fd)
        self.assertEqual(got[0], [["two", False, ""]])
        client = self.world.spawn_client()
        got = self.assertOk(client.call("GetTagsFd", "h", [0], pidfd_of=self.t1))
        self.assertEqual(got[0], [["one", False, ""]])

    def test_apply_fd_targets_the_right_process(self):
        fd = os.pidfd_open(self.t2)
        try:
            self.assertOk(self.world.root_call("ApplyFd", "has", [0, ["+fd:x", "!two=v"]],
                                               fds=[fd]))
        finally:
            os.close(fd)
        self.assertEqual(self.world.get_tags(self.t2), [("fd:x", False, ""), ("two", False, "v")])
        self.assertEqual(self.world.get_tags(self.t1), [("one", False, "")])

        client = self.world.spawn_client()
        self.world.polkit.set_allowed(["org.ptags.tag.remove"])
        self.world.polkit.clear_checks()
        self.assertOk(client.call("ApplyFd", "has", [0, ["-one"]], pidfd_of=self.t1))
        self.assertEqual(self.world.get_tags(self.t1), [])
        self.assertEqual(self.world.get_tags(self.t2), [("fd:x", False, ""), ("two", False, "v")])
        checks = self.world.polkit.checks()
        self.assertEqual([c["details"].get("pid") for c in checks], [str(self.t1)])


if __name__ == "__main__":
    unittest.main()
