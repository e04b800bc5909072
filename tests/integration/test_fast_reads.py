# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_fast_reads.py: the cheap reads ptagsd answers in its bus thread on the
# bpf backend (GetTags, HasTag, GetPeerTags, PeerHasTag of a small tag list,
# from a connection ptagsd knows): answered while the main loop is busy,
# always the tags the kernel holds, and held to the same budgets as the rest.

import json
import os
import random
import signal
import subprocess
import time
import unittest

from ptags_harness import HeldThread, PtagsTestCase, sleep_sleeps, wait_until
from test_limits import stopped_reader_of_small_lists


def proc_state(pid):
    """The state letter of process @pid (R, S, Z, ...), or None once gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None

class FastReadTests(PtagsTestCase):
    backends = ("bpf",)

    def test_reads_are_answered_while_the_main_loop_is_held(self):
        """With ptagsd's main thread stopped, the cheap reads are still
        answered; what needs the main loop (FindTagged, AddTag) waits."""
        w = self.world
        target = w.spawn_target()
        self.assertOk(w.root_call("AddTag", "usb", [target, "app:before", False]))
        reader = w.spawn_client()
        # A first call teaches ptagsd who this connection is (on the main loop).
        self.assertOk(reader.call("GetTags", "u", [target]))
        self.assertOk(reader.call("GetPeerTags", "s", [reader.unique_name]))

        # The main thread is interrupted while idle in poll(), so it holds
        # no lock the bus thread could wait for.
        with HeldThread(w.daemon.pid):
            changer = w.spawn_client(unprivileged=False)
            changer.send("AddTag", "usb", [target, "app:after", False])
            names = [t[0] for t in self.assertOk(reader.call("GetTags", "u", [target],
                                                             timeout=5))[0]]
            self.assertEqual(names, ["app:before"])
            self.assertTrue(self.assertOk(reader.call("HasTag", "us", [target, "app:*"],
                                                      timeout=5))[0])
            self.assertFalse(self.assertOk(reader.call(
                "PeerHasTag", "ss", [reader.unique_name, "app:*"], timeout=5))[0])
            self.assertOk(reader.call("GetPeerTags", "s", [reader.unique_name], timeout=5))
            reader.send("FindTagged", "s", ["app:*"])
            self.assertFalse(reader.pending(1.0), "FindTagged was answered off the main loop")
            self.assertFalse(changer.pending(0.0), "AddTag was answered off the main loop")
        self.assertOk(changer.receive())
        found = self.assertOk(reader.receive())
        self.assertIn(target, [pid for pid, _ in found[0]])
        names = [t[0] for t in self.assertOk(reader.call("GetTags", "u", [target]))[0]]
        self.assertEqual(names, ["app:after", "app:before"])

    def test_every_read_sees_the_change_before_it(self):
        """A reader on another connection, asking right after each change
        returned, always sees exactly the kernel's state."""
        w = self.world
        target = w.spawn_target()
        reader = w.spawn_client()
        rng = random.Random(9)
        held = {}
        self.assertOk(reader.call("GetTags", "u", [target]))
        for i in range(150):
            tag = "app:t%d" % rng.randrange(8)
            if tag in held and rng.random() < 0.4:
                self.assertOk(w.root_call("RemoveTag", "us", [target, tag]))
                del held[tag]
            else:
                value = "v%d" % i
                self.assertOk(w.root_call("Apply", "uas", [target, ["+" + tag,
                                                                    "!%s=%s" % (tag, value)]]))
                held[tag] = value
            got = self.assertOk(reader.call("GetTags", "u", [target]))[0]
            self.assertEqual(sorted((n, v) for n, _, v in got), sorted(held.items()),
                             "after change %d" % i)
            self.assertEqual(self.assertOk(reader.call("HasTag", "us", [target, tag]))[0],
                             tag in held)

    def test_kept_replies_answer_only_for_their_own_list(self):
        """The bus thread keeps the replies it built, by list: 40 processes
        with a list each (more lists than it keeps, so they share places),
        one list shared by two of them, and one too long to keep, read in
        turn twice, each get their own tags, before and after a change."""
        w = self.world
        reader = w.spawn_client()
        targets = [w.spawn_target() for _ in range(42)]
        expected = {}
        for i, pid in enumerate(targets):
            if i == 40:  # the same list as the first
                tags = expected[targets[0]]
            elif i == 41:  # over what is kept
                tags = ["app:long%02d" % k for k in range(40)]
            else:
                tags = ["app:p%02d" % i, "app:q%d" % (i % 3)]
            self.assertOk(w.root_call("Apply", "uas", [pid, ["+" + t for t in tags]]))
            expected[pid] = sorted(tags)
        self.assertOk(reader.call("GetTags", "u", [targets[0]]))  # known from now on
        for rounds in range(2):
            for pid in targets + list(reversed(targets)):
                got = self.assertOk(reader.call("GetTags", "u", [pid]))[0]
                self.assertEqual(sorted(t[0] for t in got), expected[pid], "process %d" % pid)
            for pid in targets[::7]:
                self.assertOk(w.root_call("AddTag", "usb", [pid, "app:z%d" % rounds, False]))
                expected[pid] = sorted(expected[pid] + ["app:z%d" % rounds])
        own = sorted(t[0] for t in self.assertOk(
            reader.call("GetPeerTags", "s", [reader.unique_name]))[0])
        self.assertEqual(own, [])

    def test_kept_pidfds_answer_only_for_their_own_process(self):
        """The bus thread keeps the pidfds of the pids it read, fewer than
        it reads here (so pids share places): 70 processes, each with its own
        tag, read in turn three times, each get their own tags; HasTag
        too."""
        w = self.world
        reader = w.spawn_client()
        targets = [w.spawn_target() for _ in range(70)]
        for pid in targets:
            self.assertOk(w.root_call("AddTag", "usb", [pid, "app:n%d" % pid, False]))
        self.assertOk(reader.call("GetTags", "u", [targets[0]]))  # known from now on
        for order in (targets, list(reversed(targets)), targets[::2] + targets[1::2]):
            for pid in order:
                got = self.assertOk(reader.call("GetTags", "u", [pid]))[0]
                self.assertEqual([t[0] for t in got], ["app:n%d" % pid], "process %d" % pid)
                self.assertTrue(self.assertOk(
                    reader.call("HasTag", "us", [pid, "app:n%d" % pid]))[0], "process %d" % pid)

    def test_a_pid_taken_again_reads_its_new_process(self):
        """A pid read once, whose process then exited and whose pid another
        process took, reads the new process: its tags, or none, and
        NoSuchProcess while the pid is free or a zombie's."""
        w = self.world
        reader = w.spawn_client()
        old = w.spawn_target()
        self.assertOk(w.root_call("AddTag", "usb", [old, "app:old", False]))
        for _ in range(2):
            got = self.assertOk(reader.call("GetTags", "u", [old]))[0]
            self.assertEqual([t[0] for t in got], ["app:old"])
        w.kill(old)
        self.assertError(reader.call("GetTags", "u", [old]), "NoSuchProcess")
        self.assertError(reader.call("HasTag", "us", [old, "app:old"]), "NoSuchProcess")
        self.assertEqual(w.spawn_target_at(old), old)
        self.assertEqual(self.assertOk(reader.call("GetTags", "u", [old]))[0], [])
        self.assertFalse(self.assertOk(reader.call("HasTag", "us", [old, "app:old"]))[0])
        self.assertOk(w.root_call("AddTag", "usb", [old, "app:new", False]))
        got = self.assertOk(reader.call("GetTags", "u", [old]))[0]
        self.assertEqual([t[0] for t in got], ["app:new"])
        # A zombie (its parent has not reaped it) holds its pid, but runs
        # no more: no tags to report.
        zombie = subprocess.Popen(["sleep", "600"])
        try:
            wait_until(lambda: sleep_sleeps(zombie.pid), 10, "sleep to exec")
            self.assertOk(w.root_call("AddTag", "usb", [zombie.pid, "app:z", False]))
            self.assertTrue(self.assertOk(
                reader.call("HasTag", "us", [zombie.pid, "app:z"]))[0])
            os.kill(zombie.pid, signal.SIGKILL)
            wait_until(lambda: proc_state(zombie.pid) == "Z", 10, "sleep to be a zombie")
            self.assertError(reader.call("GetTags", "u", [zombie.pid]), "NoSuchProcess")
            self.assertError(reader.call("HasTag", "us", [zombie.pid, "app:z"]),
                             "NoSuchProcess")
        finally:
            zombie.kill()
            zombie.wait(timeout=10)

    def test_large_lists_and_errors_read_as_on_the_main_loop(self):
        """What the bus thread leaves to the main loop still gets the same
        answers: a list over the bus thread's size, and every error."""
        w = self.world
        target = w.spawn_target()
        lines = ["+app:%03d:%s" % (i, "x" * 300) for i in range(100)]  # about 31 KB
        self.assertOk(w.root_call("Apply", "uas", [target, lines]))
        reader = w.spawn_client()
        got = self.assertOk(reader.call("GetTags", "u", [target]))[0]
        self.assertEqual(len(got), 100)
        self.assertTrue(self.assertOk(reader.call("HasTag", "us", [target, "app:*"]))[0])
        gone = w.spawn_target()
        w.kill(gone)
        self.assertError(reader.call("GetTags", "u", [gone]), "NoSuchProcess")
        self.assertError(reader.call("GetTags", "u", [2 ** 31 + 5]), "NoSuchProcess")
        self.assertError(reader.call("HasTag", "us", [target, "app:"]), "InvalidTag")
        self.assertError(reader.call("HasTag", "us", [target, "@@x"]), "InvalidTag")
        self.assertError(reader.call("PeerHasTag", "ss", [":1.99999", "x"]), "NoSuchProcess")
        self.assertEqual(reader.call("GetPeerTags", "s", ["not a name"]).error,
                         "org.freedesktop.DBus.Error.InvalidArgs")


class FastReadBudgetTests(PtagsTestCase):
    backends = ("bpf",)
    world_options = {"daemon_args": ["--max-unread-reply-bytes=65536",
                                     "--max-expensive-calls=1024"]}

    def test_unread_small_replies_are_bounded(self):
        """Replies sent from the bus thread count against the connection's
        unread budget like any other: a reader that asks for 400 small
        lists at once and stops reading is refused once 64 KiB are out."""
        flood = stopped_reader_of_small_lists(self.world)[1]
        time.sleep(1)
        os.kill(flood.pid, signal.SIGCONT)
        summary = json.loads(flood.stdout.readline())["replies"]
        self.assertGreater(summary.get("org.ptags.Error.LimitExceeded", 0), 0, summary)
        self.assertGreater(summary.get("ok", 0), 0, summary)


if __name__ == "__main__":
    unittest.main(verbosity=2)
