# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_bus_thread_changes.py: root's changes, which need no polkit, run
# whole in ptagsd's bus thread while the main loop lets them: answered while
# the main thread is stopped, in the order each client sent them, and never
# ahead of an earlier call of their connection still on its way to or in
# flight on the main loop; everyone else's changes still go through the main
# loop and polkit.

import os
import time
import unittest

from gi.repository import Gio, GLib

import ptags_client
from ptags_harness import HeldThread, PtagsTestCase, wait_until

ADD = "org.ptags.tag.add"


# How much ptagsd's heap may grow between 1920 and 3840 changes, in bytes
# in use (in a sanitizer build, its allocator's; its RSS follows the
# allocator's caches and shadow memory, and grew by 2 to 19 MiB from one run
# to the next under ThreadSanitizer). Over 16 rounds the heap stayed flat
# but for steps of up to 80 KiB as ptagsd's tables grew; a leak of 136 bytes
# a change is seen.
GROWTH_LIMIT_BYTES = 256 * 1024


class BusThreadChangeTests(PtagsTestCase):
    def root_client(self):
        """A root connection ptagsd already knows (its first change runs on
        the main loop, where ptagsd learns who it is)."""
        client = self.world.spawn_client(unprivileged=False)
        other = self.world.spawn_target()
        self.assertOk(client.call("AddTag", "usb", [other, "learn:me", False]))
        return client

    def test_root_changes_are_answered_while_the_main_loop_is_held(self):
        """Every change method but ApplyFd, from a known root connection,
        is applied, logged, signalled and answered with the main thread
        stopped; a change from anyone else waits for the main loop and
        polkit, and is refused there when polkit says no."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        root = self.root_client()
        other = w.spawn_client()
        self.assertError(other.call("AddTag", "usb", [target, "app:denied", False]),
                         "NotAuthorized")
        signals = w.record_signals()
        with HeldThread(w.daemon.pid):
            other.send("AddTag", "usb", [target, "app:denied", False])
            for method, sig, args in (
                    ("AddTag", "usb", [target, "app:a", False]),
                    ("Apply", "uas", [target, ["+app:b", "!app:b=1", "+@app:c"]]),
                    ("SetValue", "uss", [target, "app:a", "x"]),
                    ("SetKeep", "usb", [target, "app:a", True]),
                    ("RemoveTag", "us", [target, "app:c"])):
                with self.subTest(method=method):
                    self.assertOk(root.call(method, sig, args, timeout=5))
            # A refusal is made in the bus thread too, and changes nothing.
            self.assertError(root.call("AddTag", "usb", [target, "", False], timeout=5),
                             "InvalidTag")
            self.assertError(root.call("SetValue", "uss", [target, "app:none", "x"], timeout=5),
                             "NoSuchTag")
            self.assertFalse(other.pending(0.5), "polkit's caller was answered off the main loop")
            events = signals.wait(5, timeout=5)
        self.assertError(other.receive(timeout=15), "NotAuthorized")
        self.assertEqual([e[1] for e in events[:5]],
                         [["+app:a"], ["+app:b", "!app:b=1", "+@app:c"], ["!app:a=x"],
                          ["+@app:a"], ["-app:c"]])
        self.assertEqual(w.get_tags(target), [("app:a", True, "x"), ("app:b", False, "1")])
        self.assertEqual(len(signals.drain(0.3)), 5, "a refused change was signalled")

    def connect(self):
        """A root connection of this test process."""
        return Gio.DBusConnection.new_for_address_sync(
            self.world.address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
            Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)

    def send(self, conn, calls, errors, base=0):
        """Send @calls [(method, sig, args[, fd])] on @conn without waiting;
        each error (None for success) lands in @errors under @base + its
        index."""

        def done(source, result, i):
            try:
                source.call_with_unix_fd_list_finish(result)
                errors[i] = None
            except GLib.Error as e:
                errors[i] = e.message

        for i, call in enumerate(calls, start=base):
            method, sig, args = call[:3]
            fds = Gio.UnixFDList.new_from_array([call[3]]) if len(call) > 3 else None
            conn.call_with_unix_fd_list(
                ptags_client.BUS_NAME, ptags_client.OBJECT_PATH, ptags_client.INTERFACE,
                method, GLib.Variant("(%s)" % sig, tuple(args)), None,
                Gio.DBusCallFlags.NONE, 25000, fds, None, done, i)

    def wait_replies(self, errors, count, timeout=60):
        ctx = GLib.MainContext.default()

        def all_replied():
            while ctx.iteration(False):
                pass
            return len(errors) >= count

        wait_until(all_replied, timeout, "%d replies" % count)
        return [errors[i] for i in range(count)]

    def pipeline(self, calls, conn=None, timeout=60):
        """Send @calls on @conn (a new root connection by default) without
        waiting, then wait for every reply; the errors in the order sent."""
        own = conn is None
        conn = conn or self.connect()
        errors = {}
        self.send(conn, calls, errors)
        result = self.wait_replies(errors, len(calls), timeout)
        if own:
            conn.close_sync(None)
        return result

    def test_changes_do_not_overtake_one_on_its_way_to_the_main_loop(self):
        """A change the main loop must run (ApplyFd, with its pidfd) holds
        back the changes a root client sends after it, which could run in
        the bus thread: with the main thread stopped none is answered, and
        all are applied in the order sent."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        self.assertOk(w.root_call("AddTag", "usb", [target, "app:v", False]))
        conn = self.connect()
        self.assertEqual(self.pipeline([("SetValue", "uss", [target, "app:v", "known"])], conn),
                         [None])
        signals = w.record_signals()
        pidfd = os.pidfd_open(target)  # the fd list below owns it
        errors = {}
        values = ["v%d" % i for i in range(10)]
        with HeldThread(w.daemon.pid):
            self.send(conn, [("ApplyFd", "has", [0, ["!app:v=fd"]], pidfd)], errors)
            self.send(conn, [("SetValue", "uss", [target, "app:v", v]) for v in values], errors,
                      base=1)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                GLib.MainContext.default().iteration(False)
                time.sleep(0.01)
            self.assertEqual(errors, {}, "a change was answered off the main loop")
        self.assertEqual(self.wait_replies(errors, 11), [None] * 11)
        self.assertEqual(w.get_tags(target), [("app:v", False, values[-1])])
        events = signals.wait(11)
        self.assertEqual([e[1] for e in events], [["!app:v=fd"]] + [["!app:v=" + v] for v in values])
        conn.close_sync(None)

    def test_reads_do_not_overtake_a_change_on_its_way_to_the_main_loop(self):
        """A read a root client sends after a change the main loop must run
        (ApplyFd) sees that change, as it would on the main loop: with the
        main thread stopped nothing is answered, then HasTag and GetTags
        answer with the new tag."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        conn = self.connect()
        self.assertEqual(self.pipeline([("AddTag", "usb", [target, "app:known", False]),
                                        ("GetTags", "u", [target])], conn), [None, None])
        results = {}

        def done(source, result, i):
            try:
                results[i] = source.call_with_unix_fd_list_finish(result)[0].unpack()
            except GLib.Error as e:
                results[i] = e.message

        pidfd = os.pidfd_open(target)  # the fd list below owns it
        calls = [("ApplyFd", "(has)", (0, ["+app:new"]), Gio.UnixFDList.new_from_array([pidfd])),
                 ("HasTag", "(us)", (target, "app:new"), None),
                 ("GetTags", "(u)", (target,), None)]
        with HeldThread(w.daemon.pid):
            for i, (method, sig, args, fds) in enumerate(calls):
                conn.call_with_unix_fd_list(
                    ptags_client.BUS_NAME, ptags_client.OBJECT_PATH, ptags_client.INTERFACE,
                    method, GLib.Variant(sig, args), None, Gio.DBusCallFlags.NONE, 25000, fds,
                    None, done, i)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                GLib.MainContext.default().iteration(False)
                time.sleep(0.01)
            self.assertEqual(results, {}, "a read overtook its connection's change")
        self.wait_replies(results, 3)
        self.assertEqual(results[1], (True,))
        self.assertEqual([t[0] for t in results[2][0]], ["app:known", "app:new"])
        conn.close_sync(None)

    def test_a_change_waits_for_its_connections_read_on_the_main_loop(self):
        """Any call of a connection on its way to the main loop (here a
        FindTagged) holds back the root changes that connection sends after
        it: with the main thread stopped neither is answered."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        conn = self.connect()
        self.assertEqual(self.pipeline([("AddTag", "usb", [target, "app:known", False])], conn),
                         [None])
        errors = {}
        with HeldThread(w.daemon.pid):
            self.send(conn, [("FindTagged", "s", ["app:late"]),
                             ("AddTag", "usb", [target, "app:late", False])], errors)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                GLib.MainContext.default().iteration(False)
                time.sleep(0.01)
            self.assertEqual(errors, {}, "a change overtook its connection's read")
        self.assertEqual(self.wait_replies(errors, 2), [None, None])
        self.assertIn("app:late", [t[0] for t in w.get_tags(target)])
        conn.close_sync(None)

    def test_a_new_connections_pipelined_changes_keep_their_order(self):
        """A root client's first changes wait on the main loop while ptagsd
        learns who it is; those sent meanwhile, answered from the cache or
        in the bus thread once it knows, still apply in the order sent."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        for round_ in range(20):
            calls = []
            for i in range(10):  # 30 calls: within root's MaxExpensiveCalls
                tag = "app:r%d.%d" % (round_, i)
                calls += [("AddTag", "usb", [target, tag, False]),
                          ("SetValue", "uss", [target, tag, "v"]),
                          ("RemoveTag", "us", [target, tag])]
            with self.subTest(round=round_):
                self.assertEqual(self.pipeline(calls), [None] * len(calls))
        self.assertEqual(w.get_tags(target), [])

    def test_another_connections_call_in_flight_holds_no_root_change_back(self):
        """While another client's change waits for polkit on the main loop,
        root's changes on the same target still run in the bus thread (a
        bus orders no calls of different connections either); the waiting
        change applies once polkit answers."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        root = self.root_client()
        w.polkit.set_allowed([ADD])
        w.polkit.set_hang([ADD])
        waiting = w.spawn_client()
        waiting.send("AddTag", "usb", [target, "app:slow", False])
        w.polkit.wait_hanging(1)
        with HeldThread(w.daemon.pid):
            self.assertOk(root.call("AddTag", "usb", [target, "app:root", False], timeout=5))
            self.assertFalse(waiting.pending(0.5), "polkit's caller was answered")
        w.polkit.set_hang([])
        w.polkit.release()
        self.assertOk(waiting.receive(timeout=15))
        names = [t[0] for t in w.get_tags(target)]
        self.assertEqual(names, ["app:root", "app:slow"])
        # Once nothing is in flight, root's changes run in the bus thread again.
        with HeldThread(w.daemon.pid):
            self.assertOk(root.call("RemoveTag", "us", [target, "app:*"], timeout=5))
        self.assertEqual(w.get_tags(target), [])

    def test_apply_fd_without_a_descriptor_is_refused(self):
        """An ApplyFd whose handle names no descriptor, from a root
        connection ptagsd knows, gets InvalidArgs like any other caller's
        (it went to the bus thread and failed an assertion there)."""
        w = self.world
        target = w.spawn_target(unprivileged=True)
        conn = self.connect()
        self.assertEqual(self.pipeline([("AddTag", "usb", [target, "app:a", False]),
                                        ("AddTag", "usb", [target, "app:b", False])], conn),
                         [None, None])
        errors = self.pipeline([("ApplyFd", "has", [0, ["+app:c"]])], conn)
        self.assertIn("org.freedesktop.DBus.Error.InvalidArgs", errors[0] or "")
        self.assertTrue(w.daemon_alive())
        self.assertEqual([t[0] for t in w.get_tags(target)], ["app:a", "app:b"])
        conn.close_sync(None)

    def test_root_changes_do_not_grow_ptagsd(self):
        """Thousands of changes answered in the bus thread leave ptagsd's
        memory where the first thousands put it."""
        w = self.world
        target = w.spawn_target(unprivileged=True)

        conn = self.connect()
        self.assertEqual(self.pipeline([("AddTag", "usb", [target, "app:first", False])], conn),
                         [None])
        # 32 calls at a time, each set of four making three changes and one
        # refused call: calls that reach the main loop count against the
        # MaxExpensiveCalls budget of 32, and the bus refuses calls beyond
        # 128 awaited replies (dbus-daemon).
        expected = [None, None, None, "InvalidTag"] * 8
        sizes = []
        for round_ in range(2):
            for batch in range(80):
                calls = []
                for i in range(8):
                    tag = "app:r%d" % ((batch + i) % 50)
                    calls.append(("AddTag", "usb", [target, tag, i % 2 == 0]))
                    calls.append(("SetValue", "uss", [target, tag, "v%d" % i]))
                    calls.append(("RemoveTag", "us", [target, tag]))
                    calls.append(("AddTag", "usb", [target, "", False]))
                errors = self.pipeline(calls, conn)
                self.assertEqual(["InvalidTag" if e and "Error.InvalidTag" in e else e
                                  for e in errors], expected)
            sizes.append(w.heap_in_use())
        print("ptagsd's heap in use after 1920 and 3840 changes: %d, %d bytes" % tuple(sizes))
        self.assertLess(sizes[1] - sizes[0], GROWTH_LIMIT_BYTES,
                        "ptagsd grew by %d bytes" % (sizes[1] - sizes[0]))


if __name__ == "__main__":
    unittest.main()
