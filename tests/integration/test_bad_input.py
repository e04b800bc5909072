# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_bad_input.py: a table of bad inputs, each answered with its exact
# named error while the daemon stays up and no process's tags change.
#
# Bad UTF-8 cannot be tested over D-Bus: the bus itself refuses strings that
# are not valid UTF-8 (the sender is disconnected before ptagsd sees them).

import os
import resource
import select
import unittest

import ptags_client
from gi.repository import GLib
from ptags_harness import PtagsTestCase, rss_kib

INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
LONG_TAG = "a" * 4001
LONG_VALUE = "v" * 32701


def rows_bad_tags(t):
    rows = []
    for tag, why in [
        ("", "empty"), (LONG_TAG, "4001 bytes"), ("a\x01b", "control byte 0x01"),
        ("a\x1fb", "control byte 0x1f"), ("a\tb", "tab"), ("a\nb", "newline"),
        ("a\x7fb", "DEL 0x7f"), ("a=b", "'='"), ("@a", "starts with '@'"),
        ("a:", "ends with ':'"), ("ptags:app:del", "bad rights field"),
        ("ptags:x", "bad rights field (one field)"),
    ]:
        rows.append(("AddTag %s" % why, "AddTag", "usb", [t, tag, False], "InvalidTag"))
    # A method argument that must be a tag is judged as a tag: '*' is a
    # forbidden byte there (in command lines "+a:*" is a misplaced pattern).
    rows.append(("AddTag '*' inside", "AddTag", "usb", [t, "a*b", False], "InvalidTag"))
    # "app:a=x" must not be smuggled into the line "!app:a=x=y".
    rows.append(("SetValue tag with '='", "SetValue", "uss", [t, "app:a=x", "y"], "InvalidTag"))
    rows.append(("Apply +bad tag ending ':'", "Apply", "uas", [t, ["+app:"]], "InvalidTag"))
    # An exact pattern is a tag: a bad one is InvalidTag (as in the model).
    rows.append(("Apply +@ with '@' start", "Apply", "uas", [t, ["+@@x"]], "InvalidTag"))
    # RemoveTag takes a pattern; keep flags are SetKeep's, so '@' is a bad pattern.
    rows.append(("RemoveTag '@' start", "RemoveTag", "us", [t, "@app:a"], "InvalidPattern"))
    return rows


def rows_bad_values(t):
    rows = []
    for value, why in [(LONG_VALUE, "32701 bytes"), ("v\x01", "control byte"),
                       ("v\x7f", "DEL"), ("v\nw", "newline"), ("v\tw", "tab")]:
        rows.append(("SetValue %s" % why, "SetValue", "uss", [t, "app:a", value],
                     "InvalidValue"))
    rows.append(("Apply !tag=control", "Apply", "uas", [t, ["!app:a=x\x02"]], "InvalidValue"))
    return rows


def rows_bad_patterns(t):
    rows = []
    for pattern in ["a*", "*", "a:*:b", "a:**", ":*x"]:
        rows.append(("RemoveTag %r" % pattern, "RemoveTag", "us", [t, pattern],
                     "InvalidPattern"))
    rows += [
        ("HasTag a*", "HasTag", "us", [t, "a*"], "InvalidPattern"),
        ("FindTagged a:*:b", "FindTagged", "s", ["a:*:b"], "InvalidPattern"),
        ("SetKeep x*", "SetKeep", "usb", [t, "x*", True], "InvalidPattern"),
        ("AddTag pattern", "AddTag", "usb", [t, "app:*", False], "InvalidTag"),
        ("SetValue pattern", "SetValue", "uss", [t, "app:*", "v"], "InvalidTag"),
    ]
    return rows


def rows_bad_lines(t):
    return [
        ("bare +", "Apply", "uas", [t, ["+"]], "InvalidCommand"),
        ("unknown command x", "Apply", "uas", [t, ["x"]], "InvalidCommand"),
        ("unknown command =", "Apply", "uas", [t, ["=a"]], "InvalidCommand"),
        ("+PREFIX:*", "Apply", "uas", [t, ["+a:*"]], "InvalidPattern"),
        ("!PATTERN=v", "Apply", "uas", [t, ["!a:*=v"]], "InvalidPattern"),
        ("line with newline", "Apply", "uas", [t, ["+a\nb"]], "InvalidCommand"),
        ("line with trailing newline", "Apply", "uas", [t, ["+a\n"]], "InvalidCommand"),
        ("failing ? after good lines", "Apply", "uas", [t, ["+ok", "-app:a", "?app:*"]],
         "NoSuchTag"),
        ("! on a missing tag", "Apply", "uas", [t, ["!missing=v"]], "NoSuchTag"),
        ("SetValue on a missing tag", "SetValue", "uss", [t, "missing", "v"], "NoSuchTag"),
        ("? without match", "Apply", "uas", [t, ["?zz:*", "+new"]], "NoSuchTag"),
    ]


def rows_noncharacters(t):
    """Unicode noncharacters are valid UTF-8, and the kernel takes them, but
    sd-bus refuses every message whose strings hold one: a tag holding one
    broke every later reply and signal carrying its process's tags (for
    FindTagged, every caller's). So ptagsd refuses them in what it is
    given, with the error the same text gets when otherwise bad."""
    rows = []
    for c in ("\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"):
        name = "U+%04X" % ord(c)
        rows += [
            ("AddTag " + name, "AddTag", "usb", [t, "u:" + c + "x", False], "InvalidTag"),
            ("SetValue tag " + name, "SetValue", "uss", [t, "u:" + c, "v"], "InvalidTag"),
            ("SetValue value " + name, "SetValue", "uss", [t, "app:a", "v" + c],
             "InvalidValue"),
            # The tag is judged before the value, whatever is wrong with each.
            ("SetValue tag " + name + " and a bad value", "SetValue", "uss",
             [t, "u:" + c, "v\x01"], "InvalidTag"),
            ("RemoveTag tag " + name, "RemoveTag", "us", [t, "app:a" + c], "InvalidTag"),
            ("RemoveTag pattern " + name, "RemoveTag", "us", [t, c + ":*"], "InvalidPattern"),
            ("SetKeep " + name, "SetKeep", "usb", [t, "app:" + c + ":*", True],
             "InvalidPattern"),
            ("HasTag " + name, "HasTag", "us", [t, "@app:a" + c], "InvalidTag"),
            ("FindTagged " + name, "FindTagged", "s", ["app:" + c + ":*"], "InvalidPattern"),
            ("PeerHasTag " + name, "PeerHasTag", "ss", ["org.freedesktop.DBus", "x" + c],
             "InvalidTag"),
            ("Apply + " + name, "Apply", "uas", [t, ["+ok", "+u:" + c]], "InvalidTag"),
            ("Apply ! value " + name, "Apply", "uas", [t, ["!app:a=" + c]], "InvalidValue"),
            ("Apply - pattern " + name, "Apply", "uas", [t, ["-" + c + ":*"]],
             "InvalidPattern"),
            ("Apply ? " + name, "Apply", "uas", [t, ["?app:a" + c]], "InvalidTag"),
            ("Apply comment " + name, "Apply", "uas", [t, ["# " + c]], "InvalidCommand"),
        ]
    return rows


class BadInputTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.bystander = self.world.spawn_target()
        self.assertOk(self.world.root_call(
            "Apply", "uas", [self.target, ["+app:a", "!app:a=v", "+@k"]]))
        self.assertOk(self.world.root_call("AddTag", "usb", [self.bystander, "by", False]))
        self.signals = self.world.record_signals()

    def snapshot(self):
        return {pid: self.world.get_tags(pid) for pid in (self.target, self.bystander)}

    def run_rows(self, rows, fds_for=None):
        before = self.snapshot()
        for label, method, sig, args, error in rows:
            with self.subTest(label):
                fds = fds_for(label) if fds_for else ()
                try:
                    reply = self.world.root_call(method, sig, args, fds=fds)
                finally:
                    for fd in fds:
                        os.close(fd)
                self.assertError(reply, error)
                self.assertTrue(self.world.daemon_alive(), "ptagsd died on: %s" % label)
                self.assertEqual(self.snapshot(), before, "tags changed by: %s" % label)
        self.assertEqual(self.signals.drain(0.2), [], "a failed call was signalled")
        # The daemon still works (a change, on the bystander: the target
        # may be full).
        self.assertOk(self.world.root_call("AddTag", "usb", [self.bystander, "after", False]))
        self.assertIn(("after", False, ""), self.world.get_tags(self.bystander))
        # Positive control: the recorder does see signals, so [] above meant it.
        self.assertEqual(self.signals.wait(1)[0][:2], (self.bystander, ["+after"]))

    def test_bad_tags(self):
        self.run_rows(rows_bad_tags(self.target))

    def test_bad_values(self):
        self.run_rows(rows_bad_values(self.target))

    def test_bad_patterns(self):
        self.run_rows(rows_bad_patterns(self.target))

    def test_bad_lines(self):
        self.run_rows(rows_bad_lines(self.target))

    def test_noncharacters(self):
        rows = rows_noncharacters(self.target)
        self.run_rows(rows, fds_for=None)
        # The message names the character, escaped: no error carries one.
        reply = self.world.root_call("AddTag", "usb", [self.target, "u:\ufdd0x", False])
        self.assertIn('"u:\\u{FDD0}x"', reply.message)
        self.assertIn("U+FDD0", reply.message)
        self.assertNotIn("\ufdd0", reply.message)
        # ApplyFd too.
        pidfd = os.pidfd_open(self.target)
        try:
            reply = self.world.root_call("ApplyFd", "has", [0, ["+u:\ufffe"]], fds=[pidfd])
        finally:
            os.close(pidfd)
        self.assertError(reply, "InvalidTag")
        # Their neighbours are characters like any other.
        for c in ("\ufdcf", "\ufdf0", "\ufffd", "\U0010fffd"):
            with self.subTest(ok="U+%04X" % ord(c)):
                self.assertOk(self.world.root_call("AddTag", "usb", [self.bystander, "n:" + c,
                                                                     False]))
                self.assertIn(("n:" + c, False, ""), self.world.get_tags(self.bystander))

    def test_long_values(self):
        if self.world.backend != "ptags-lsm":
            # No page limit: the longest valid value works.
            self.assertOk(self.world.root_call("SetValue", "uss",
                                               [self.target, "app:a", "v" * 32700]))
            self.assertIn(("app:a", False, "v" * 32700), self.world.get_tags(self.target))
            return
        # Valid (32700 bytes) but one kernel write is one page: NotSupported
        # on ptags-lsm, as the interface documents.
        # "!app:a=" + 4088 bytes + "\n" is exactly one page: still fine.
        self.assertOk(self.world.root_call("SetValue", "uss", [self.target, "app:a", "w" * 4088]))
        self.assertIn(("app:a", False, "w" * 4088), self.world.get_tags(self.target))
        self.signals.wait(1)
        self.signals.events.clear()
        self.run_rows([
            ("one byte past a page", "SetValue", "uss", [self.target, "app:a", "v" * 4089],
             "NotSupported"),
            ("32700-byte value", "SetValue", "uss", [self.target, "app:a", "v" * 32700],
             "NotSupported"),
        ])

    def test_bad_pids(self):
        dead = self.world.dead_pid()
        self.run_rows([
            ("GetTags dead pid", "GetTags", "u", [dead], "NoSuchProcess"),
            ("AddTag dead pid", "AddTag", "usb", [dead, "x", False], "NoSuchProcess"),
            ("Apply dead pid", "Apply", "uas", [dead, ["+x"]], "NoSuchProcess"),
            ("HasTag pid 2^31-1", "HasTag", "us", [2**31 - 1, "x"], "NoSuchProcess"),
            ("AddTag pid 2^31-1", "AddTag", "usb", [2**31 - 1, "x", False], "NoSuchProcess"),
            ("GetTags pid 2^32-1", "GetTags", "u", [2**32 - 1], "NoSuchProcess"),
            ("SetValue pid 2^32-1", "SetValue", "uss", [2**32 - 1, "x", "v"], "NoSuchProcess"),
            ("RegisterContainer pid 2^32-1", "RegisterContainer", "uta{sv}",
             [2**32 - 1, 9001, {}], "NoSuchProcess"),
            ("GetContainerId pid 2^31", "GetContainerId", "u", [2**31], "NoSuchProcess"),
            ("GetPeerTags unknown unique name", "GetPeerTags", "s", [":1.99999"],
             "NoSuchProcess"),
            ("PeerHasTag unowned name", "PeerHasTag", "ss", ["org.example.Nobody", "x"],
             "NoSuchProcess"),
        ])
        # The error names the pid as the caller sent it, never as a negative
        # number it became in ptagsd.
        for method, sig, args in (("GetTags", "u", [2**32 - 1]),
                                  ("AddTag", "usb", [2**32 - 1, "x", False]),
                                  ("GetContainerId", "u", [2**32 - 1]),
                                  ("RegisterContainer", "uta{sv}", [2**32 - 1, 9001, {}])):
            with self.subTest(method):
                reply = self.world.root_call(method, sig, args)
                self.assertError(reply, "NoSuchProcess")
                self.assertIn("4294967295", reply.message)

    def test_ptagsd_itself_is_no_target_of_changes(self):
        """ptagsd's own tags hold the rights it writes every other process's
        tags with (ptags-lsm): taken away through ptagsd, every later change
        failed until it restarted. Its tags are read like any process's."""
        daemon = self.world.daemon.pid
        before = self.world.get_tags(daemon)
        for method, sig, args in (("RemoveTag", "us", [daemon, "ptags:*"]),
                                  ("AddTag", "usb", [daemon, "app:x", False]),
                                  ("Apply", "uas", [daemon, ["-"]])):
            with self.subTest(method):
                reply = self.world.root_call(method, sig, args)
                self.assertError(reply, "NotSupported")
                self.assertIn("ptagsd itself", reply.message)
        self.assertEqual(self.world.get_tags(daemon), before)
        # Lines that only ask change nothing, so they are answered.
        self.assertError(self.world.root_call("Apply", "uas", [daemon, ["?app:none"]]),
                         "NoSuchTag")
        self.assertOk(self.world.root_call("Apply", "uas", [daemon, ["# a comment", ""]]))
        self.assertError(self.world.root_call("Apply", "uas", [daemon, ["?app:none", "-"]]),
                         "NotSupported")
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "app:after", False]))

    def test_thread_id_as_pid(self):
        """A thread id is not a process id: ptagsd says NoSuchProcess,
        naming the thread's process, never a generic Failed, and changes
        nothing."""
        pid, tid = self.world.spawn_with_a_thread()
        self.assertOk(self.world.root_call("AddTag", "usb", [pid, "proc", False]))
        for method, sig, args in [("GetTags", "u", [tid]), ("HasTag", "us", [tid, "proc"]),
                                  ("AddTag", "usb", [tid, "via-tid", False])]:
            with self.subTest(method=method):
                reply = self.world.root_call(method, sig, args)
                self.assertError(reply, "NoSuchProcess")
                self.assertIn("a thread of process %d" % pid, reply.message)
        self.assertEqual([t[0] for t in self.world.get_tags(pid)], ["proc"])
        # A pidfd of that one thread (PIDFD_THREAD, Linux 6.9) is refused:
        # the change went to the thread alone.
        thread_fd = os.pidfd_open(tid, os.O_EXCL)
        try:
            for method, sig, args in [("GetTagsFd", "h", [0]),
                                      ("ApplyFd", "has", [0, ["+via-thread-fd"]])]:
                with self.subTest(method=method):
                    reply = self.world.root_call(method, sig, args, fds=[thread_fd])
                    self.assertError(reply, "NoSuchProcess")
                    self.assertIn("thread %d" % tid, reply.message)
        finally:
            os.close(thread_fd)
        self.assertNotIn("via-thread-fd", [t[0] for t in self.world.get_tags(pid)])

    def test_bad_fds(self):
        def fds_for(label):
            if "file" in label:
                return [os.open("/etc/hostname", os.O_RDONLY | os.O_CLOEXEC)]
            pid = self.world.spawn_target()
            pidfd = os.pidfd_open(pid)
            self.world.kill(pid)  # exited and reaped: the pidfd outlives it
            return [pidfd]

        self.run_rows([
            ("GetTagsFd on a file", "GetTagsFd", "h", [0], INVALID_ARGS),
            ("ApplyFd on a file", "ApplyFd", "has", [0, ["+x"]], INVALID_ARGS),
            ("GetTagsFd exited pidfd", "GetTagsFd", "h", [0], "NoSuchProcess"),
            ("ApplyFd exited pidfd", "ApplyFd", "has", [0, ["+x"]], "NoSuchProcess"),
        ], fds_for=fds_for)

    def test_an_fd_with_a_huge_fdinfo_is_refused_unread(self):
        """ptagsd read all of /proc/self/fdinfo/N to find out whether an fd
        argument was a pidfd. An epoll fd lists every entry there, and a
        caller can give one millions of entries (an fd number each): each
        call made ptagsd copy the text whole, 227 MB and 3.6 s of its main
        loop for 3 million. An fd is now known for a pidfd before any of it
        is read."""
        pipes = [os.pipe() for _ in range(20)]
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))
        poll = select.epoll()
        try:
            for read_end, _ in pipes:
                for number in range(10000, 18000):
                    os.dup2(read_end, number)
                    poll.register(number, select.EPOLLIN)
                    os.close(number)
            # 160000 entries: about 13 MB of fdinfo text.
            peak = rss_kib(self.world.daemon.pid, "VmHWM")
            before = self.snapshot()
            reply = self.world.root_call("GetTagsFd", "h", [0], fds=[poll.fileno()])
            self.assertError(reply, INVALID_ARGS)
            self.assertIn("not a process file descriptor", reply.message)
            reply = self.world.root_call("ApplyFd", "has", [0, ["+x"]], fds=[poll.fileno()])
            self.assertError(reply, INVALID_ARGS)
            grown = rss_kib(self.world.daemon.pid, "VmHWM") - peak
            self.assertLess(grown, 4096, "ptagsd's peak RSS grew by %d KiB" % grown)
            self.assertEqual(self.snapshot(), before)
        finally:
            poll.close()
            for fds in pipes:
                for fd in fds:
                    os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    def test_malformed_calls(self):
        """Wrong signatures, fd indexes without fds, more fds than 'h'
        arguments, unknown members and writes to read-only properties:
        D-Bus errors, nothing changes."""
        before = self.snapshot()
        conn = self.world.conn
        props = "org.freedesktop.DBus.Properties"
        file_fd = os.open("/etc/hostname", os.O_RDONLY | os.O_CLOEXEC)
        try:
            cases = [
                ("h without fds", ptags_client.call(conn, "GetTagsFd", "h", [3]),
                 INVALID_ARGS),
                ("h index past the fds", ptags_client.call(
                    conn, "ApplyFd", "has", [1, ["+x"]], fds=[file_fd]), INVALID_ARGS),
                # Extra descriptors would be held for the call's whole life.
                ("descriptors with a call that takes none", ptags_client.call(
                    conn, "AddTag", "usb", [self.target, "x", False], fds=[file_fd] * 16),
                 INVALID_ARGS),
                ("two descriptors for one h", ptags_client.call(
                    conn, "ApplyFd", "has", [0, ["+x"]], fds=[file_fd, file_fd]), INVALID_ARGS),
                ("a descriptor with a property read", ptags_client.call(
                    conn, "Get", "ss", ["org.ptags.Manager", "MaxTags"], fds=[file_fd],
                    interface=props), INVALID_ARGS),
                ("missing argument", ptags_client.call(
                    conn, "AddTag", "us", [self.target, "x"]), INVALID_ARGS),
                ("wrong type", ptags_client.call(
                    conn, "GetTags", "s", ["1"]), INVALID_ARGS),
                ("unknown method", ptags_client.call(conn, "DropAllTags", "", []),
                 "org.freedesktop.DBus.Error.UnknownMethod"),
                ("read-only property", ptags_client.call(
                    conn, "Set", "ssv", ["org.ptags.Manager", "MaxTags", GLib.Variant("u", 1)],
                    interface=props), INVALID_ARGS),
            ]
        finally:
            os.close(file_fd)
        for label, reply, error in cases:
            with self.subTest(label):
                self.assertError(reply, error)
        self.assertEqual(self.world.get_property("MaxTags"), 4000)
        self.assertTrue(self.world.daemon_alive())
        self.assertEqual(self.snapshot(), before)

    def test_oversize_batches(self):
        self.run_rows([
            ("4097 lines", "Apply", "uas", [self.target, ["# c"] * 4097], "InvalidCommand"),
            ("more than 1 MiB", "Apply", "uas",
             [self.target, ["#" + "c" * 3999] * 263], "InvalidCommand"),
            ("ApplyFd 4097 lines", "ApplyFd", "has", [0, ["+x"] * 4097], "InvalidCommand"),
        ], fds_for=lambda label: [os.pidfd_open(self.target)] if "Fd" in label else [])

    def fill_target(self, keep=False):
        """Fill the target to exactly 4000 tags in batches the daemon accepts."""
        have = len(self.world.get_tags(self.target))
        names = ["t:%04d" % i for i in range(4000 - have)]
        add = "+@" if keep else "+"
        for i in range(0, len(names), 1000):
            self.assertOk(self.world.root_call(
                "Apply", "uas", [self.target, [add + n for n in names[i:i + 1000]]],
                timeout_ms=60000))
        self.assertEqual(len(self.world.get_tags(self.target)), 4000)
        self.signals.drain(0.1)
        self.signals.events.clear()

    def test_too_many_tags(self):
        self.fill_target()
        self.run_rows([
            ("AddTag 4001st", "AddTag", "usb", [self.target, "one:more", False], "TooManyTags"),
            ("Apply 4001st", "Apply", "uas", [self.target, ["-t:0000", "+x", "+y"]],
             "TooManyTags"),
            # Five global keep flips over 4000 tags resolve to 20000 changes:
            # refused before any polkit check or write (the model's plan bound).
            ("keep flips past the plan bound", "Apply", "uas",
             [self.target, ["+@", "-@", "+@", "-@", "+@"]], "InvalidCommand"),
        ])

    def test_pattern_lines_look_only_at_their_matches(self):
        """A pattern line costs ptagsd the tags it can match, found by a
        binary search: 4096 lines of prefixes the target does not hold plan
        at once on a full process. Lines that look at matches without
        changing them are bounded: past 64 sweeps of a full list the batch
        fails with InvalidCommand before polkit is asked. Anyone may send
        such a batch for any process, so each once kept ptagsd's main loop
        busy for a quarter of a second, and a stream of them held up every
        user's calls."""
        self.fill_target(keep=True)
        client = self.world.spawn_client()
        misses = ["-zzz:*", "+@zzz:*", "-@zzz:*", "?@t:0001"] * 1024
        self.assertOk(client.call("Apply", "uas", [self.target, misses]))
        reply = client.call("Apply", "uas", [self.target, ["+@t:*"] * 65])
        self.assertError(reply, "InvalidCommand")
        self.assertIn("look at more than 256000 tags", reply.message)
        self.assertIn("line 65", reply.message)
        # Root's batches are bounded alike; 64 sweeps still pass.
        self.assertError(self.world.root_call(
            "Apply", "uas", [self.target, ["-@zzz:*"] + ["?@t:*"] * 65]), "InvalidCommand")
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, ["?@t:*"] * 64]))
        self.assertEqual(len(self.world.get_tags(self.target)), 4000)
        self.assertEqual(self.signals.drain(0.2), [], "a batch without changes was signalled")
        self.assertTrue(self.world.daemon_alive())


if __name__ == "__main__":
    unittest.main()
