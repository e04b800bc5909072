# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_concurrency.py: changes racing each other and the kernel while polkit
# thinks: the outcome is always all-or-nothing and never loses a change.
#
# Checks are held in the polkit mock (SetHangActions) to open the window
# deterministically; the kernel file is also written directly (as the kernel
# would let any writer) to change the target behind ptagsd's back.

import os
import time
import unittest

from ptags_harness import PYTHON, PtagsTestCase, wait_until

ADD = "org.ptags.tag.add"
REMOVE = "org.ptags.tag.remove"
SET_VALUE = "org.ptags.tag.set-value"
RACE_ERRORS = ("org.ptags.Error.Failed", "org.ptags.Error.NoSuchTag")


class TargetWorld(PtagsTestCase):
    """One unprivileged target holding app:a=v."""

    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, ["+app:a", "!app:a=v"]]))


class ReauthorizationWaitTests(TargetWorld):
    world_options = {"daemon_args": ["--max-polkit-calls=4"]}

    def test_calls_waiting_for_a_reauthorization_are_bounded(self):
        """While one call asks polkit again about its changed target, other
        authorized calls on that target wait before applying, holding their
        messages and plans. They waited outside MaxPolkitCalls: while polkit
        kept the second check waiting (for a password, say), one uid could
        queue authorized calls without end. They now wait in its places."""
        polkit = self.world.polkit
        polkit.set_allowed([ADD, REMOVE])
        polkit.set_hang([ADD])
        holder = self.world.spawn_client()
        holder.send("AddTag", "usb", [self.target, "app:mine", False])
        polkit.wait_hanging(1)
        # The target changes while polkit thinks: the call plans again and
        # asks again, and polkit keeps that check waiting too.
        self.assertOk(self.world.root_call("Apply", "uas",
                                           [self.target, ["+r:%02d" % i for i in range(10)]]))
        polkit.release()
        wait_until(lambda: len(polkit.checks()) == 2 and polkit.hanging_count() == 1, 10,
                   "the second check")
        # The same uid's removals are allowed at once, then wait for it: in
        # the 3 places its second check leaves free.
        others = [self.world.spawn_client() for _ in range(10)]
        for i, client in enumerate(others):
            client.send("RemoveTag", "us", [self.target, "r:%02d" % i])
        wait_until(lambda: sum(c.pending() for c in others) >= 7, 15, "7 calls refused")
        time.sleep(0.3)  # and no more
        waited = [c for c in others if not c.pending()]
        self.assertEqual(len(waited), 3, "calls waiting where MaxPolkitCalls leaves 3 places")
        for client in others:
            if client not in waited:
                self.assertError(client.receive(timeout=1), "LimitExceeded")
        polkit.set_hang([])
        polkit.release()
        self.assertOk(holder.receive(timeout=15))
        for client in waited:
            self.assertOk(client.receive(timeout=15))
        self.assertEqual(len([t for t in self.world.get_tags(self.target)
                              if t[0].startswith("r:")]), 7)


class ConcurrencyTests(TargetWorld):
    def test_concurrent_changes_on_one_target(self):
        polkit = self.world.polkit
        polkit.set_allowed([ADD])
        polkit.set_hang([ADD])
        clients = [self.world.spawn_client() for _ in range(3)]
        signals = self.world.record_signals()
        for i, client in enumerate(clients):
            client.send("Apply", "uas", [self.target, ["+c:%d" % i, "+@shared"]])
        polkit.wait_hanging(3)
        polkit.set_hang([])
        polkit.release()
        replies = [c.receive(timeout=15) for c in clients]
        tags = self.world.get_tags(self.target)
        names = [t[0] for t in tags]
        succeeded = 0
        for i, reply in enumerate(replies):
            with self.subTest(client=i):
                if reply.ok:
                    succeeded += 1
                    self.assertIn("c:%d" % i, names)
                else:
                    self.assertIn(reply.error, RACE_ERRORS, reply)
                    self.assertNotIn("c:%d" % i, names, "a failed batch left a tag behind")
        self.assertGreaterEqual(succeeded, 1, "at least the first change must win")
        self.assertIn(("app:a", False, "v"), tags, "an unrelated tag was lost")
        if succeeded:
            self.assertIn(("shared", True, ""), tags)
        self.assertEqual(len(signals.drain(0.5)), succeeded, "one signal per applied change")

    def revocation_held_by_polkit(self):
        """A client's RemoveTag(target, "app:*"), held while polkit is asked
        about app:a (allowed once released). Returns the client."""
        polkit = self.world.polkit
        polkit.set_allowed([REMOVE])
        polkit.set_hang([REMOVE])
        client = self.world.spawn_client()
        client.send("RemoveTag", "us", [self.target, "app:*"])
        polkit.wait_hanging(1)
        self.assertEqual([c["details"]["tag"] for c in polkit.checks()], ["app:a"])
        return client

    def test_pattern_matches_grown_during_authorization_are_not_removed(self):
        """RemoveTag("app:*") was authorized for app:a; app:b appears while
        polkit thinks and polkit would refuse it: app:b must not be removed
        on app:a's authorization. app:a goes, as polkit allowed, and app:b
        stays, as if it had been added just after the call."""
        polkit = self.world.polkit
        client = self.revocation_held_by_polkit()
        signals = self.world.record_signals()
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "app:b", False]))
        polkit.set_hang([])
        polkit.set_denied_tags(["app:b"])
        polkit.release()
        self.assertOk(client.receive(timeout=15))
        self.assertEqual([t[0] for t in self.world.get_tags(self.target)], ["app:b"])
        self.assertEqual([c["details"]["tag"] for c in polkit.checks()], ["app:a"])
        # The signal names what was removed, and only that.
        self.assertEqual([s[1] for s in signals.drain(0.5)], [["+app:b"], ["-app:a"]])

    def test_many_tags_gained_during_authorization_count_for_nothing(self):
        """The narrowed plan is the one checked against the bounds: the
        tags a target gains while polkit decides (1100 here, past
        MaxPolkitChanges) made the planned-again removal too large, and
        the revocation failed with LimitExceeded."""
        polkit = self.world.polkit
        client = self.revocation_held_by_polkit()
        self.assertOk(self.world.root_call("Apply", "uas", [
            self.target, ["+app:g%04d" % i for i in range(1100)]]))
        polkit.set_hang([])
        polkit.release()
        self.assertOk(client.receive(timeout=15))
        names = [t[0] for t in self.world.get_tags(self.target)]
        self.assertNotIn("app:a", names)
        self.assertEqual(len(names), 1100)
        self.assertEqual([c["details"]["tag"] for c in polkit.checks()], ["app:a"])

    def test_tags_changing_twice_during_authorization_fail(self):
        polkit = self.world.polkit
        polkit.set_allowed([ADD])
        polkit.set_hang([ADD])
        client = self.world.spawn_client()
        client.send("AddTag", "usb", [self.target, "app:mine", False])
        for i in range(2):
            polkit.wait_hanging(1)
            self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "r:%d" % i, False]))
            polkit.release()
        polkit.set_hang([])
        polkit.release()
        self.assertError(client.receive(timeout=15), "Failed")
        self.assertEqual([t[0] for t in self.world.get_tags(self.target)], ["app:a", "r:0", "r:1"])

    def test_caller_rights_revoked_during_authorization_are_asked_about(self):
        """polkit said yes because the caller's tags granted the change (as
        the shipped rule does); the caller lost those rights before the
        apply. The kernel judges a writer's rights when it writes: ptagsd
        must ask again, with caller-holds-right now false."""
        polkit = self.world.polkit
        polkit.set_right_allows([ADD])
        polkit.set_hang([ADD])
        client = self.world.spawn_client()
        self.assertOk(self.world.root_call("Apply", "uas", [client.pid, [
            "+ptags:app:add", "+ptags:app:others"]]))
        client.send("AddTag", "usb", [self.target, "app:camera", False])
        polkit.wait_hanging(1)
        self.assertEqual(polkit.checks()[0]["details"]["caller-holds-right"], "true")
        self.assertOk(self.world.root_call("RemoveTag", "us", [client.pid, "ptags:app:*"]))
        polkit.set_hang([])
        polkit.release()
        self.assertError(client.receive(timeout=15), "NotAuthorized")
        self.assertEqual([c["details"]["caller-holds-right"] for c in polkit.checks()],
                         ["true", "false"])
        self.assertEqual([t[0] for t in self.world.get_tags(self.target)], ["app:a"])

    def test_set_value_racing_removal(self):
        polkit = self.world.polkit
        polkit.set_allowed([SET_VALUE])
        polkit.set_hang([SET_VALUE])
        client = self.world.spawn_client()
        client.send("SetValue", "uss", [self.target, "app:a", "new"])
        polkit.wait_hanging(1)
        self.assertOk(self.world.root_call("RemoveTag", "us", [self.target, "app:a"]))
        polkit.release()
        reply = client.receive(timeout=15)
        self.assertIn(reply.error, RACE_ERRORS,
                      "setting a value on a tag removed meanwhile: %r" % (reply,))
        self.assertEqual(self.world.get_tags(self.target), [], "the removed tag came back")

    def test_large_batch_by_unprivileged_caller(self):
        """A legitimate 1000-change batch is authorized change by change:
        ptagsd must not flood the bus with more pending polkit calls than
        it allows one connection (dbus-daemon's default is 128)."""
        self.world.polkit.set_allowed([ADD])
        client = self.world.spawn_client()
        batch = ["+big:%04d" % i for i in range(1000)]
        reply = client.call("Apply", "uas", [self.target, batch], timeout=60, timeout_ms=60000)
        self.assertOk(reply)
        self.assertEqual(len(self.world.get_tags(self.target)), 1001)
        self.assertEqual(len(self.world.polkit.checks()), 1000)

    def test_caller_disconnects_while_check_hangs(self):
        polkit = self.world.polkit
        polkit.set_allowed([ADD])
        polkit.set_hang([ADD])
        client = self.world.spawn_client()
        client.send("AddTag", "usb", [self.target, "app:gone", False])
        polkit.wait_hanging(1)
        (check,) = polkit.checks()
        self.world.kill(client.pid)
        # The caller left: ptagsd must withdraw its question from polkit
        # (so an agent's dialog goes away) and never apply the change.
        wait_until(lambda: check["cancellation_id"] in polkit.cancellations(), 10,
                   "ptagsd to cancel the check of the caller that left")
        self.assertEqual(polkit.hanging_count(), 0)
        polkit.set_hang([])
        polkit.release()
        # ptagsd survives the vanished caller and keeps serving.
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "after", False]))
        self.assertEqual(self.world.get_tags(self.target),
                         [("after", False, ""), ("app:a", False, "v")],
                         "the change of a caller that left was applied")
        self.assertTrue(self.world.daemon_alive())

    def test_cancelled_checks_are_not_warnings(self):
        """A batch decided early cancels its other checks; polkitd refuses
        to cancel what it has just answered, which libpolkit reports as a
        warning. A caller can cause that at will, so it must not reach the
        log as one warning per check."""
        polkit = self.world.polkit
        polkit.set_hang([ADD])
        polkit.set_cancel_fails(True)
        client = self.world.spawn_client()
        rounds, hanging = 6, 7
        for r in range(rounds):
            # Seven checks hang; the eighth (set-value) is denied at once.
            batch = ["+w%d:%d" % (r, i) for i in range(hanging)] + ["!app:a=x%d" % r]
            self.assertError(client.call("Apply", "uas", [self.target, batch], timeout=30),
                             "NotAuthorized")
        wait_until(lambda: len(polkit.cancellations()) >= rounds * hanging, 10,
                   "ptagsd to cancel %d checks" % (rounds * hanging))
        self.assertOk(self.world.root_call("GetTags", "u", [self.target]))
        log = self.world.read_log("ptagsd.log", tail_lines=100000)
        warnings = [line for line in log.splitlines() if "WARNING" in line]
        self.assertEqual(warnings, [], "cancelled checks logged as warnings")
        self.assertEqual(self.world.get_tags(self.target), [("app:a", False, "v")])


class RenamingTargetTests(PtagsTestCase):
    def test_a_target_renaming_itself_cannot_refuse_a_change(self):
        """A process names itself (comm) as often as it likes, and a rule
        cannot rely on that name: a change of it while polkit decides is no
        reason to ask again. Every rename used to make the call plan and
        ask again, and fail after the second time, so a process renaming
        itself in a loop kept any change but root's off itself, its
        revocation included."""
        script = ("import itertools\n"
                  "for i in itertools.count():\n"
                  "    open('/proc/self/comm', 'w').write('r%d' % (i % 1000))\n")
        target = self.world.spawn("target", [PYTHON, "-c", script]).pid
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "app:camera", False]))
        self.world.polkit.set_allowed([ADD, REMOVE])
        client = self.world.spawn_client()
        self.assertOk(client.call("RemoveTag", "us", [target, "app:camera"]))
        self.assertOk(client.call("AddTag", "usb", [target, "app:other", False]))
        self.assertEqual(self.world.get_tags(target), [("app:other", False, "")])


class KernelWriteRaceTests(TargetWorld):
    """Writes straight to the kernel file: the fixture's, so ptags-lsm only."""

    backends = ("ptags-lsm",)

    def write_kernel(self, pid, lines):
        """Write command lines straight to the (fixture) kernel file, one
        page at a time, as root (unrestricted, like CAP_MAC_ADMIN)."""
        path = os.path.join(self.world.mount, str(pid), "attr", "ptags")
        chunk = ""
        for line in lines + [None]:
            if line is None or len(chunk) + len(line) + 1 > 4000:
                if chunk:
                    fd = os.open(path, os.O_WRONLY)
                    try:
                        self.assertEqual(os.write(fd, chunk.encode()), len(chunk.encode()))
                    finally:
                        os.close(fd)
                chunk = ""
            if line is not None:
                chunk += line + "\n"

    def test_direct_kernel_writes_are_seen(self):
        self.write_kernel(self.target, ["+direct", "+@app:a"])
        self.assertEqual(self.world.get_tags(self.target),
                         [("app:a", True, "v"), ("direct", False, "")])
        self.assertOk(self.world.root_call("Apply", "uas",
                                           [self.target, ["?direct", "?@app:a", "+ok"]]))
        self.assertIn(("ok", False, ""), self.world.get_tags(self.target))

    def test_a_keep_flag_gives_no_dropped_tag_to_a_new_program(self):
        """The target executes a program after ptagsd read its tags, which
        drops app:t and app:b. "+@app:t" created app:t (kept) for the new
        program, "!app:b=x" failed, and the undo gave app:t back its old
        value: the new program held app:t=v, and the reply said nothing
        changed. Now the keep flag is set only on a tag still there."""
        target = self.world.spawn_target_that_execs(["+app:t", "!app:t=v", "+app:b"])
        reply = self.world.root_call("Apply", "uas", [target, ["+@app:t", "!app:t=w", "!app:b=x"]])
        self.assertError(reply, "NoSuchTag")
        self.assertIn('line 1 ("+@app:t")', reply.message)
        self.assertEqual(self.world.get_tags(target), [])

    def test_rights_taken_from_ptagsd_are_named_and_given_back(self):
        """Another writer takes ptagsd's own rights tags away, so the kernel
        refuses its next write (EPERM). That was NotAuthorized, blaming a
        change of the target's tags, for every change until a restart. Now
        the reply names ptagsd's lost rights, and ptagsd gives back those
        its remaining rights allow (ptags:ptags:add covers them all)."""
        daemon = self.world.daemon_pid()
        self.write_kernel(daemon, ["-ptags:add"])
        reply = self.world.root_call("AddTag", "usb", [self.target, "app:new", False])
        self.assertError(reply, "Failed")
        self.assertIn("took ptagsd's own rights tags away", reply.message)
        self.assertIn("nothing changed", reply.message)
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "app:new", False]))
        # With none left it cannot give them back, and every change says so.
        self.write_kernel(daemon, ["-ptags:*"])
        for tag in ("app:1", "app:2"):
            reply = self.world.root_call("AddTag", "usb", [self.target, tag, False])
            self.assertError(reply, "Failed")
            self.assertIn("took ptagsd's own rights tags away", reply.message)
        # Told once, not once per refused change.
        self.assertEqual(self.world.read_log("ptagsd.log").count("could give back only 0"), 1)
        self.assertIn(("app:new", False, ""), self.world.get_tags(self.target))

    def test_multi_page_batch_racing_the_tag_limit(self):
        """While a 100-tag batch of long tags (several kernel pages) waits
        for polkit, the kernel fills up behind ptagsd's back: the batch must
        fail whole, never leave its first pages applied. (100 changes stay
        below the bus's 128 pending replies, see test_large_batch_*.)"""
        polkit = self.world.polkit
        polkit.set_allowed([ADD])
        polkit.set_hang([ADD])
        client = self.world.spawn_client()
        batch = ["+batch:%03d:%s" % (i, "x" * 200) for i in range(100)]
        client.send("Apply", "uas", [self.target, batch], timeout_ms=60000)
        polkit.wait_hanging(1)
        self.write_kernel(self.target, ["+fill:%04d" % i for i in range(3950)])
        expected = self.world.get_tags(self.target)
        self.assertEqual(len(expected), 3951)
        polkit.set_hang([])
        polkit.release()
        reply = client.receive(timeout=60)
        self.assertFalse(reply.ok, "4051 tags cannot fit")
        self.assertIn(reply.error, RACE_ERRORS + ("org.ptags.Error.TooManyTags",), reply)
        self.assertEqual(self.world.get_tags(self.target), expected,
                         "a failed batch must leave no tag behind")

    def write_in_a_loop(self, pid, line):
        """Another process writes @line (a Python expression of the count i,
        giving bytes) to @pid's kernel file, again and again, until the test
        ends."""
        path = os.path.join(self.world.mount, str(pid), "attr", "ptags")
        script = ("import itertools, os, sys\n"
                  "for i in itertools.count():\n"
                  "    fd = os.open(sys.argv[1], os.O_WRONLY)\n"
                  "    os.write(fd, %s)\n"
                  "    os.close(fd)\n" % line)
        proc = self.world.spawn("writer", [PYTHON, "-c", script, path])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)

    def test_a_read_never_joins_two_lists(self):
        """The kernel builds the text of the file anew for every read(2): a
        list read in pieces could join the start of one list to the rest of
        the next, and show a tag the process never held. Here another writer
        flips a:1's value between none and "app:admin": "a:1\\n" then, from
        byte 4 of "a:1=app:admin\\n", "app:admin\\n" made a:1 and app:admin."""
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "a:1", False]))
        self.write_in_a_loop(target, "(b'!a:1=app:admin\\n', b'!a:1\\n')[i % 2]")
        forged = 0
        for _ in range(2000):
            reply = self.world.root_call("HasTag", "us", [target, "app:admin"])
            self.assertOk(reply)
            forged += reply.value[0]
        self.assertEqual(forged, 0, "app:admin was read from a joined list")

    def test_a_target_changing_its_tags_cannot_refuse_a_removal(self):
        """A removal polkit allowed takes away nothing more when the target
        changed meanwhile, so it is applied whatever else changed: another
        writer flipping one of the target's other tags in a loop (as the
        target itself may, holding a right to) made every non-root
        revocation plan and ask again, then fail."""
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+app:camera", "+x:flip"]]))
        self.write_in_a_loop(target, "b'!x:flip=%d\\n' % (i % 1000)")
        self.world.polkit.set_allowed([REMOVE])
        client = self.world.spawn_client()
        self.assertOk(client.call("RemoveTag", "us", [target, "app:camera"]))
        self.assertEqual([t[0] for t in self.world.get_tags(target)], ["x:flip"])

    def test_a_partial_write_is_signalled(self):
        """A write that failed after part of it was written, and whose
        undo failed too, leaves the process holding part of the change: it
        is announced (a TagsChanged with a comment line and the tags read
        back), as every change of a process's tags by ptagsd is."""
        target = self.world.spawn_target_losing_tags()
        signals = self.world.record_signals()
        # Two pages. The second fails (the fixture wipes the tags before
        # each write: app:n is gone), and so does the undo of the first
        # ("!app:n", app:n's value before, for the same reason).
        reply = self.world.root_call("Apply", "uas", [target, [
            "+app:n", "!app:n=v", "+app:f:" + "x" * 3990, "+app:g:" + "x" * 100,
            "!app:n=w"]])
        self.assertError(reply, "Failed")
        self.assertIn("holds part of this change", reply.message)
        held = self.world.get_tags(target)
        self.assertEqual([(pid, lines, tags) for pid, lines, tags in signals.drain(0.5)],
                         [(target, ["# part of this change failed: the tags as read back"],
                           held)])

    def test_a_tag_removed_just_before_the_write_is_named(self):
        """Another writer removes the tag after ptagsd read the tags and
        before it writes the new value: the kernel refuses the line with
        ENOENT, which is NoSuchTag naming that line, not NoSuchProcess
        (the process is there)."""
        target = self.world.spawn_target_losing_tags()
        reply = self.world.root_call("SetValue", "uss", [target, "app:a", "w"])
        self.assertError(reply, "NoSuchTag")
        self.assertIn('argument tag ("app:a")', reply.message)
        self.assertIn("another writer", reply.message)
        self.assertEqual(self.world.get_tags(target), [])

        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+app:a", "!app:a=v"]]))
        reply = self.world.root_call("Apply", "uas", [target, ["+app:b", "!app:a=w"]])
        self.assertError(reply, "NoSuchTag")
        self.assertIn('line 2 ("!app:a=w")', reply.message)
        # The first line, applied before the refused one, was taken back.
        self.assertEqual(self.world.get_tags(target), [])

    def test_an_undo_gives_no_tag_back_to_a_new_program(self):
        """The target executes a program after ptagsd read its tags: the
        exec drops app:x and app:b (no keep flag), so "-app:x" changes
        nothing and "!app:b=v" fails. The undo wrote "+app:x" and
        "!app:x=secret", handing the new program a tag its exec had dropped,
        and the reply said that nothing changed. Now the process keeps what
        its exec left, and the reply and the signal say that part of the
        change stays."""
        target = self.world.spawn_target_that_execs(
            ["+@k:kept", "+app:x", "!app:x=secret", "+app:b"])
        signals = self.world.record_signals()
        reply = self.world.root_call("Apply", "uas", [target, ["-app:x", "!app:b=v"]])
        self.assertError(reply, "Failed")
        self.assertIn("holds part of this change", reply.message)
        self.assertIn("without the keep flag", reply.message)
        self.assertEqual(self.world.get_tags(target), [("k:kept", True, "")])
        self.assertEqual([(pid, tags) for pid, _lines, tags in signals.drain(0.5)],
                         [(target, [("k:kept", True, "")])])


if __name__ == "__main__":
    unittest.main()
