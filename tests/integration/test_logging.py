# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_logging.py: the journal entries and audit records of tag changes
# really leave ptagsd (received here, parsed, and checked field by field).
#
# The journal is this test's own datagram socket, bind-mounted over
# /run/systemd/journal/socket in ptagsd's private mount namespace
# (journal-ns-wrapper.sh); audit records are read from the kernel's
# NETLINK_AUDIT read-log multicast group while audit is switched on.

import array
import errno
import os
import re
import select
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time

from ptags_harness import (HarnessError, PtagsTestCase, daemon_wrapper, preload_env, preloaded,
                           wait_until)

# From src/daemon/names.h: stable ids that log filters select on.
MESSAGE_CHANGED = "56f8202c992d48b2b57f12d212df8c0b"
MESSAGE_REFUSED = "157bd556789b4955bd9106f6457525c2"
NOT_AUTHORIZED = "org.ptags.Error.NotAuthorized"
ADD = "org.ptags.tag.add"
SET_VALUE = "org.ptags.tag.set-value"
NOBODY_UID = 65534
LOG_NOTICE = 5
LOG_WARNING = 4

WRAPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "journal-ns-wrapper.sh")

# linux/netlink.h and linux/audit.h (libaudit.h: AUDIT_USER_MAC_CONFIG_CHANGE).
NETLINK_AUDIT = 9
AUDIT_NLGRP_READLOG = 1
NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
AUDIT_GET = 1000
AUDIT_SET = 1001
AUDIT_STATUS_ENABLED = 0x1
AUDIT_USER_MAC_CONFIG_CHANGE = 2312
AUDIT_STATUS_WORDS = 10  # mask enabled failure pid rate_limit backlog_limit lost backlog ...
NLMSG_HEADER = struct.Struct("=IHHII")

WAIT_S = 5.0


def parse_journal_native(data):
    """Fields of one native-protocol journal entry as [(name, value)]:
    `NAME=value\\n`, or `NAME\\n` + little-endian u64 size + value + `\\n`.
    Malformed input raises AssertionError naming the offset."""
    fields = []
    pos = 0
    while pos < len(data):
        newline = data.find(b"\n", pos)
        if newline < 0:
            raise AssertionError("journal entry: unterminated field at byte %d" % pos)
        line = data[pos:newline]
        if b"=" in line:
            name, value = line.split(b"=", 1)
            pos = newline + 1
        else:
            name = line
            if newline + 9 > len(data):
                raise AssertionError("journal entry: %r lacks its size" % name)
            (size,) = struct.unpack_from("<Q", data, newline + 1)
            start = newline + 9
            value = data[start:start + size]
            if len(value) != size or data[start + size:start + size + 1] != b"\n":
                raise AssertionError("journal entry: binary field %r is cut or unterminated"
                                     % name)
            pos = start + size + 1
        fields.append((name.decode(), value.decode()))
    return fields


class JournalEntry:
    def __init__(self, fields, sender_pid, via_memfd):
        self.fields = fields
        self.sender_pid = sender_pid
        self.via_memfd = via_memfd

    def all(self, name):
        return [v for n, v in self.fields if n == name]

    def one(self, name):
        values = self.all(name)
        if len(values) != 1:
            raise AssertionError("journal field %s occurs %d times in %r"
                                 % (name, len(values), self.fields))
        return values[0]

    def __repr__(self):
        # Failure messages stay readable even for the largest entries.
        shown = [(n, v if len(v) < 120 else v[:120] + "...") for n, v in self.fields[:16]]
        more = len(self.fields) - len(shown)
        return "JournalEntry(from pid %s%s: %r%s)" % (
            self.sender_pid, ", memfd" if self.via_memfd else "", shown,
            " and %d more fields" % more if more else "")


class JournalSink:
    """The AF_UNIX datagram socket ptagsd's libsystemd sends to, with the
    sender's credentials on every datagram and large entries as a memfd."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        # Large enough for entries that are sent inline (libsystemd tries up
        # to its 8 MiB send buffer before it falls back to a memfd).
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024 * 1024)

    def close(self):
        self.sock.close()

    def receive(self, timeout):
        """The next entry, or None after @timeout seconds."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return None
        fd_size = array.array("i").itemsize
        data, ancillary, _flags, _addr = self.sock.recvmsg(
            16 * 1024 * 1024, socket.CMSG_SPACE(4 * fd_size) + socket.CMSG_SPACE(12))
        sender_pid = None
        fds = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                sender_pid, _uid, _gid = struct.unpack("=iII", payload[:12])
            elif level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[:len(payload) - len(payload) % fd_size]))
        if fds:
            try:
                if data or len(fds) != 1:
                    raise AssertionError("a memfd entry must be one fd and no payload, got %d "
                                         "fd(s) and %d bytes" % (len(fds), len(data)))
                data = b""
                while True:
                    chunk = os.pread(fds[0], 1 << 20, len(data))
                    if not chunk:
                        break
                    data += chunk
            finally:
                for fd in fds:
                    os.close(fd)
        return JournalEntry(parse_journal_native(data), sender_pid, bool(fds))

    def drain(self):
        """Discard what has arrived so far (entries of the setup)."""
        while self.receive(0) is not None:
            pass

    def wait_for(self, predicate, what, timeout=WAIT_S):
        """The first entry matching @predicate; entries before it are
        returned too, as (entry, skipped)."""
        skipped = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            entry = self.receive(max(left, 0))
            if entry is None:
                raise AssertionError("no journal entry %s within %.0f s; got only %r"
                                     % (what, timeout, skipped))
            if predicate(entry):
                return entry, skipped
            skipped.append(entry)


class AuditReader:
    """Records of the kernel's audit read-log group. Audit is switched on
    while it is open (user records reach the group only then) and switched
    back off by close() if it was off."""

    def __init__(self):
        self.control = None
        self.reader = None
        self.was_enabled = None
        try:
            self.control = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                                         NETLINK_AUDIT)
            self.control.bind((0, 0))
            self.reader = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                                        NETLINK_AUDIT)
            self.reader.bind((0, 1 << (AUDIT_NLGRP_READLOG - 1)))
        except OSError as e:
            self.close()
            raise HarnessError("NETLINK_AUDIT is refused here (%s): audit records cannot be "
                               "checked (needs root with CAP_AUDIT_CONTROL and CAP_AUDIT_READ "
                               "in the initial namespaces)" % e) from e
        self.reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        self._seq = 0
        enabled = self.status()[1]
        self.was_enabled = enabled
        if enabled == 2:
            return  # locked on: records flow, and it must not be changed
        if enabled == 0:
            self._set_enabled(1)
            if self.status()[1] != 1:
                raise HarnessError("audit stayed disabled after AUDIT_SET")

    def _request(self, kind, payload=b"", flags=NLM_F_REQUEST):
        self._seq += 1
        self.control.send(NLMSG_HEADER.pack(NLMSG_HEADER.size + len(payload), kind, flags,
                                            self._seq, 0) + payload)
        deadline = time.monotonic() + WAIT_S
        while True:
            ready, _, _ = select.select([self.control], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise HarnessError("no audit netlink reply to type %d" % kind)
            data = self.control.recv(65536)
            for msg_kind, seq, body in split_netlink(data):
                if seq != self._seq:
                    continue
                if msg_kind == NLMSG_ERROR:
                    (code,) = struct.unpack_from("=i", body)
                    if code != 0:
                        raise HarnessError("audit netlink type %d refused: %s"
                                           % (kind, os.strerror(-code)))
                    return None
                return msg_kind, body

    def status(self):
        reply = self._request(AUDIT_GET)
        if reply is None or reply[0] != AUDIT_GET:
            raise HarnessError("unexpected AUDIT_GET reply %r" % (reply,))
        return struct.unpack_from("=%dI" % 8, reply[1])

    def _set_enabled(self, value):
        words = [AUDIT_STATUS_ENABLED, value] + [0] * (AUDIT_STATUS_WORDS - 2)
        self._request(AUDIT_SET, struct.pack("=%dI" % AUDIT_STATUS_WORDS, *words),
                      NLM_F_REQUEST | NLM_F_ACK)

    def close(self):
        try:
            if self.control is not None and self.was_enabled == 0:
                self._set_enabled(0)
        finally:
            for s in (self.reader, self.control):
                if s is not None:
                    s.close()
            self.reader = self.control = None

    def records(self, timeout):
        """(type, text) of every record arriving within @timeout s."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.reader], [], [], max(left, 0))
            if not ready:
                return out
            try:
                data = self.reader.recv(1 << 20)
            except OSError as e:
                if e.errno == errno.ENOBUFS:
                    raise AssertionError("audit records were lost (ENOBUFS)") from e
                raise
            for kind, _seq, body in split_netlink(data):
                out.append((kind, body.rstrip(b"\0").decode(errors="replace")))


def split_netlink(data):
    pos = 0
    while pos + NLMSG_HEADER.size <= len(data):
        length, kind, _flags, seq, _pid = NLMSG_HEADER.unpack_from(data, pos)
        # Audit's multicast copies may leave nlmsg_len short of the text.
        end = len(data) if length < NLMSG_HEADER.size else min(pos + length, len(data))
        yield kind, seq, data[pos + NLMSG_HEADER.size:end]
        pos += (max(length, NLMSG_HEADER.size) + 3) & ~3


USER_RECORD = re.compile(r"^audit\([0-9.:]+\): pid=(\d+) .*? msg='(.*)'$", re.S)


def audit_fields(body):
    """The name=value pairs of a libaudit message body ("op=x pid=1 ...")."""
    return dict(re.findall(r'(\w+)=("[^"]*"|\S+)', body))


def decoded_tag(encoded):
    """libaudit's tag=: quoted, or hex when it holds spaces or quotes."""
    if encoded.startswith('"'):
        return encoded[1:-1]
    return bytes.fromhex(encoded).decode()


class LoggingTests(PtagsTestCase):
    # The largest entry comes from a 0.9 MB Apply: raise the per-process
    # budget (256 KiB by default) to its maximum so the batch is accepted.
    world_options = {"daemon_args": ["--max-process-bytes=2097152"]}

    def setUp(self):
        if shutil.which("unshare") is None:
            raise HarnessError("unshare (util-linux) is missing: ptagsd cannot get a private "
                               "journal socket")
        sink_dir = tempfile.mkdtemp(prefix="ptags-journal-")
        self.addCleanup(shutil.rmtree, sink_dir, True)
        sink_path = os.path.join(sink_dir, "journal.socket")
        self.journal = JournalSink(sink_path)
        self.addCleanup(self.journal.close)
        # Only this world's ptagsd runs in the namespace with our socket.
        with daemon_wrapper("/bin/sh %s %s" % (WRAPPER, sink_path)):
            super().setUp()
        self.daemon_pid = self.world.daemon.pid
        self.target = self.world.spawn_target(unprivileged=True)

    def entry_about(self, message_id, pid, action):
        entry, _ = self.journal.wait_for(
            lambda e: (e.all("MESSAGE_ID") == [message_id] and e.all("PTAGS_PID") == [str(pid)]
                       and e.all("PTAGS_ACTION") == [action]),
            "%s by %s on pid %d" % (message_id, action, pid))
        return entry

    def assertEntry(self, entry, message_id, priority, action, tags, caller_pid, caller_uid,
                    result="success"):
        self.assertEqual(entry.sender_pid, self.daemon_pid, "the entry must come from ptagsd")
        self.assertEqual(entry.one("MESSAGE_ID"), message_id)
        self.assertEqual(entry.one("PRIORITY"), str(priority))
        self.assertEqual(entry.one("PTAGS_PID"), str(self.target))
        self.assertEqual(entry.one("PTAGS_ACTION"), action)
        self.assertEqual(entry.one("PTAGS_RESULT"), result)
        self.assertEqual(entry.one("PTAGS_CALLER_PID"), str(caller_pid))
        self.assertEqual(entry.one("PTAGS_CALLER_UID"), str(caller_uid))
        self.assertEqual(sorted(set(entry.all("PTAGS_TAG"))), sorted(tags))
        self.assertIn(str(self.target), entry.one("MESSAGE"))
        return entry

    # ------------------------------------------------------------ journal

    def test_root_changes_are_journaled(self):
        self.journal.drain()
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "log:root", False]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "AddTag")
        self.assertEntry(entry, MESSAGE_CHANGED, LOG_NOTICE, "AddTag", ["log:root"],
                         os.getpid(), 0)
        self.assertEqual(entry.one("PTAGS_LINES"), "+log:root")

        lines = ["+log:a", "+@log:b", "!log:a=v=1", "-log:root"]
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, lines]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "Apply")
        self.assertEntry(entry, MESSAGE_CHANGED, LOG_NOTICE, "Apply",
                         ["log:a", "log:b", "log:root"], os.getpid(), 0)
        # Several lines: sent in the binary form, one line per change.
        logged = entry.one("PTAGS_LINES").split("\n")
        for line in ("+@log:b", "!log:a=v=1", "-log:root"):
            self.assertIn(line, logged)

    def test_message_quotes_each_line_escaped(self):
        """MESSAGE is what a person reads: a tag holding spaces, quotes or
        a bidi override must not read as other lines (the exact lines are
        in PTAGS_LINES), and a long batch is summarized."""
        tag = 'log:x" "-ptags:app:add \u202e'
        self.journal.drain()
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, tag, False]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "AddTag")
        self.assertEqual(entry.one("PTAGS_LINES"), "+" + tag)
        self.assertTrue(entry.one("MESSAGE").endswith(
            ': "+log:x\\u{0022} \\u{0022}-ptags:app:add \\u{202E}"'), entry.one("MESSAGE"))

        lines = ["+log:%02d" % i for i in range(20)]
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, lines]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "Apply")
        self.assertTrue(entry.one("MESSAGE").endswith(
            ": " + ", ".join('"%s"' % line for line in lines[:8]) + " and 12 more"),
            entry.one("MESSAGE"))
        self.assertEqual(entry.one("PTAGS_LINES").split("\n"), lines)

    def test_authorized_unprivileged_change_is_journaled(self):
        client = self.world.spawn_client()
        self.world.polkit.set_allowed([ADD, SET_VALUE])
        self.journal.drain()
        self.assertOk(client.call("AddTag", "usb", [self.target, "log:user", True]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "AddTag")
        self.assertEntry(entry, MESSAGE_CHANGED, LOG_NOTICE, "AddTag", ["log:user"],
                         client.pid, NOBODY_UID)
        self.assertOk(client.call("Apply", "uas", [self.target, ["+log:u2", "!log:u2=x"]]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "Apply")
        self.assertEntry(entry, MESSAGE_CHANGED, LOG_NOTICE, "Apply", ["log:u2"],
                         client.pid, NOBODY_UID)
        # Pid 0 is the caller itself: the entry names the real pid.
        self.assertOk(client.call("AddTag", "usb", [0, "log:self", False]))
        entry, _ = self.journal.wait_for(lambda e: e.all("PTAGS_TAG") == ["log:self"],
                                         "for the caller's own change")
        self.assertEqual(entry.one("MESSAGE_ID"), MESSAGE_CHANGED)
        self.assertEqual(entry.one("PTAGS_PID"), str(client.pid))
        self.assertEqual(entry.one("PTAGS_CALLER_PID"), str(client.pid))

    def test_refused_change_is_journaled(self):
        client = self.world.spawn_client()  # the polkit mock denies everything
        self.journal.drain()
        self.assertError(client.call("AddTag", "usb", [self.target, "log:denied", False]),
                         "NotAuthorized")
        entry = self.entry_about(MESSAGE_REFUSED, self.target, "AddTag")
        self.assertEntry(entry, MESSAGE_REFUSED, LOG_WARNING, "AddTag", ["log:denied"],
                         client.pid, NOBODY_UID, result=NOT_AUTHORIZED)
        self.assertEqual(self.world.get_tags(self.target), [])

    def test_refusal_message_shows_the_tag_escaped(self):
        """The refusal names the tag polkit refused: like a change's MESSAGE,
        it must show quotes, bidi overrides and line separators escaped."""
        client = self.world.spawn_client()
        tag = 'log:x": authorized \u202e\u2028y'
        self.journal.drain()
        reply = client.call("AddTag", "usb", [self.target, tag, False])
        self.assertError(reply, "NotAuthorized")
        entry = self.entry_about(MESSAGE_REFUSED, self.target, "AddTag")
        for text in (entry.one("MESSAGE"), reply.message):
            with self.subTest(text=text):
                self.assertEqual([c for c in "\u202e\u2028" if c in text], [], text)
                self.assertIn('tag "log:x\\u{0022}: authorized \\u{202E}\\u{2028}y"', text)
        self.assertEqual(entry.all("PTAGS_TAG"), [tag])

    def test_a_caller_that_leaves_is_logged_as_such(self):
        """A caller leaving the bus cancels its polkit checks: the refusal
        says so and names a D-Bus error, not GIO's unmapped one."""
        client = self.world.spawn_client()
        self.world.polkit.set_hang([ADD])
        client.send("AddTag", "usb", [self.target, "log:left", False])
        self.world.polkit.wait_hanging(1)
        self.journal.drain()
        client.stop()
        entry = self.entry_about(MESSAGE_REFUSED, self.target, "AddTag")
        self.assertEqual(entry.one("PTAGS_RESULT"), "org.ptags.Error.Failed")
        self.assertIn("the caller left the bus while polkit decided", entry.one("MESSAGE"))
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertEqual(self.world.get_tags(self.target), [])

    def test_a_target_that_exits_while_polkit_decides_is_logged(self):
        """Once polkit was asked, a refusal is logged whatever the reason:
        here the target exits before the answer."""
        target = self.world.spawn_target(unprivileged=True)
        client = self.world.spawn_client()
        self.world.polkit.set_allowed([ADD])
        self.world.polkit.set_hang([ADD])
        client.send("AddTag", "usb", [target, "log:gone", False])
        self.world.polkit.wait_hanging(1)
        os.kill(target, signal.SIGKILL)
        wait_until(lambda: not os.path.exists("/proc/%d/stat" % target) or
                   open("/proc/%d/stat" % target).read().rsplit(")", 1)[1].split()[0] == "Z",
                   10, "the target to exit")
        self.journal.drain()
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertError(client.receive(timeout=15), "NoSuchProcess")
        entry, _ = self.journal.wait_for(
            lambda e: (e.all("MESSAGE_ID") == [MESSAGE_REFUSED]
                       and e.all("PTAGS_PID") == [str(target)]),
            "the refusal about pid %d" % target)
        self.assertEqual(entry.one("PTAGS_RESULT"), "org.ptags.Error.NoSuchProcess")
        self.assertIn("exited during authorization", entry.one("MESSAGE"))

    def test_a_removal_whose_query_fails_at_commit_is_logged_with_its_changes(self):
        """A removal polkit allowed is planned again when the target changed
        meanwhile; when that new plan fails (here its query: another writer
        removed app:y), the refusal names the changes polkit was asked
        about. It named none: no PTAGS_LINES, no PTAGS_TAG."""
        target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+log:x", "+log:y"]]))
        client = self.world.spawn_client()
        self.world.polkit.set_allowed(["org.ptags.tag.remove"])
        self.world.polkit.set_hang(["org.ptags.tag.remove"])
        client.send("Apply", "uas", [target, ["?log:y", "-log:x"]])
        self.world.polkit.wait_hanging(1)
        self.assertOk(self.world.root_call("RemoveTag", "us", [target, "log:y"]))
        self.journal.drain()
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertError(client.receive(timeout=15), "NoSuchTag")
        entry, _ = self.journal.wait_for(
            lambda e: (e.all("MESSAGE_ID") == [MESSAGE_REFUSED]
                       and e.all("PTAGS_PID") == [str(target)]),
            "the refusal about pid %d" % target)
        self.assertEqual(entry.all("PTAGS_LINES"), ["-log:x"])
        self.assertEqual(entry.all("PTAGS_TAG"), ["log:x"])

    def journal_during(self, action):
        """(what @action() returns, the journal entries it caused): read
        meanwhile, as journald would (a datagram socket queues only 10
        entries before the sender waits), until root's change after it,
        which must be logged too."""
        self.journal.drain()
        entries = []
        done = threading.Event()

        def read_journal():
            while not done.is_set():
                entry = self.journal.receive(0.05)
                if entry is not None:
                    if entry.all("PTAGS_TAG") == ["log:after"]:
                        return
                    entries.append(entry)

        reader = threading.Thread(target=read_journal)
        reader.start()
        try:
            result = action()
            self.assertOk(self.world.root_call("AddTag", "usb",
                                               [self.target, "log:after", False]))
            reader.join(WAIT_S)
            self.assertFalse(reader.is_alive(), "root's change after the calls was not logged")
        finally:
            done.set()
            reader.join()
        return result, entries

    def test_a_flood_of_refusals_is_logged_within_a_budget(self):
        """Refusals are the records anyone can cause at will: one uid's may
        write 1024 records (a journal entry, or an audit record per refused
        change) at once and 64 a second after that, so that its flood cannot
        push everyone's records past journald's rate limit or the audit
        backlog. The refusals beyond are counted, and the next one logged
        says how many were not."""
        client = self.world.spawn_client()  # the polkit mock denies everything
        lines = ["+log:flood:%02d" % i for i in range(31)]  # 32 records a refusal
        start = time.monotonic()

        def flood():
            for _ in range(100):
                client.send("Apply", "uas", [self.target, lines])
            return [client.receive().error for _ in range(100)]

        errors, entries = self.journal_during(flood)
        took = time.monotonic() - start
        self.assertEqual(set(errors) - {NOT_AUTHORIZED, "org.ptags.Error.LimitExceeded"}, set())
        logged = [e for e in entries if e.all("MESSAGE_ID") == [MESSAGE_REFUSED]]
        self.assertGreaterEqual(len(logged), 1024 // 32)
        self.assertLessEqual(len(logged), (1024 + 64 * took) // 32 + 1,
                             "%d of 100 refusals logged in %.2f s" % (len(logged), took))
        # Each refusal logged says how many before it were not (the budget
        # refills during the flood too); the next one logged after the flood
        # (an AddTag: 2 records, refilled in 1/32 s) completes the count. On
        # a slow machine the flood's last refusals may fit the refilled
        # budget: then none is left to count, and that one says nothing.
        time.sleep(0.1)
        self.assertError(client.call("AddTag", "usb", [self.target, "log:later", False]),
                         "NotAuthorized")
        noting = [e for e in logged + [self.entry_about(MESSAGE_REFUSED, self.target, "AddTag")]
                  if e.all("PTAGS_SUPPRESSED")]
        self.assertNotEqual(noting, [], "no refusal logged said how many were not")
        for entry in noting:
            self.assertIn("%s earlier refusals of uid %d were not logged"
                          % (entry.one("PTAGS_SUPPRESSED"), NOBODY_UID), entry.one("MESSAGE"))
        counted = sum(int(e.one("PTAGS_SUPPRESSED")) for e in noting)
        self.assertEqual(len(logged) + counted, 100, "refusals neither logged nor counted")
        # ptagsd said so each time it started counting them (its warnings are
        # rate-limited too: 10 at once, then one every 6 s).
        warned = self.world.read_log("ptagsd.log", 100000).count(
            "uid %d is refused more often than its refusals may be logged" % NOBODY_UID)
        self.assertGreaterEqual(warned, 1)
        self.assertLessEqual(warned, 10 + (time.monotonic() - start) // 6 + 1)

    def test_noops_and_reads_are_not_journaled(self):
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, ["+log:here"]]))
        self.entry_about(MESSAGE_CHANGED, self.target, "Apply")
        client = self.world.spawn_client()
        self.journal.drain()
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "log:here", False]))
        self.assertOk(client.call("AddTag", "usb", [self.target, "log:here", False]))
        self.assertOk(client.call("RemoveTag", "us", [self.target, "log:absent"]))
        self.assertOk(client.call("Apply", "uas", [self.target, ["+log:here", "# only"]]))
        self.assertOk(client.call("GetTags", "u", [self.target]))
        self.assertOk(client.call("HasTag", "us", [self.target, "log:*"]))
        self.assertOk(client.call("FindTagged", "s", ["log:*"]))
        # Entries from one sender arrive in order: the first after the calls
        # above must be this marker change's.
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "log:marker", False]))
        entry, skipped = self.journal.wait_for(
            lambda e: e.all("PTAGS_TAG") == ["log:marker"], "for the marker change")
        self.assertEqual(skipped, [], "a no-op or a read was journaled")
        self.assertEqual(entry.one("MESSAGE_ID"), MESSAGE_CHANGED)

    def test_largest_entry_arrives_whole(self):
        # Close to the 1 MiB limit of an Apply: ~0.9 MB each in MESSAGE,
        # PTAGS_LINES and the PTAGS_TAG fields. libsystemd sends it inline
        # when its send buffer allows, else as a sealed memfd; both are read.
        self.assertSinkReadsMemfdEntries()
        tags = ["log:%04d:%s" % (i, "x" * 3000) for i in range(300)]
        self.journal.drain()
        self.assertOk(self.world.root_call("Apply", "uas", [self.target,
                                                            ["+" + t for t in tags]]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "Apply")
        self.assertEntry(entry, MESSAGE_CHANGED, LOG_NOTICE, "Apply", tags[:256], os.getpid(), 0)
        self.assertEqual(entry.all("PTAGS_TAG"), tags[:256])
        self.assertEqual(entry.one("PTAGS_TAGS_UNLISTED"), "44")
        self.assertEqual(entry.one("PTAGS_LINES").split("\n"), ["+" + t for t in tags])

    def test_an_entry_about_many_tags_arrives(self):
        """libsystemd sends an entry in one sendmsg() of about two iovecs a
        field, and the kernel takes 1024: an entry with a PTAGS_TAG field
        per changed tag was lost whole past about 500 tags. The first 256
        changed tags get their field; PTAGS_LINES holds every change."""
        tags = ["log:many:%03d" % i for i in range(600)]
        self.journal.drain()
        self.assertOk(self.world.root_call("Apply", "uas", [self.target,
                                                            ["+" + t for t in tags]]))
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "Apply")
        self.assertEqual(entry.all("PTAGS_TAG"), tags[:256])
        self.assertEqual(entry.one("PTAGS_TAGS_UNLISTED"), "344")
        self.assertEqual(entry.one("PTAGS_LINES").split("\n"), ["+" + t for t in tags])

    # Entries of about 120 KB: libsystemd's send buffer (16 MiB for root)
    # fills after about 140 of them unread, before the kernel's queue of
    # datagrams does however long it is (max_dgram_qlen: 10 by default,
    # 512 where systemd sets it); the sends block from then on.
    STALL_TAGS = ["log:stall:%04d:%s" % (i, "x" * 80) for i in range(1000)]

    def stall_lines(self, i):
        return ["%s%s" % ("+" if i % 2 == 0 else "-", t) for t in self.STALL_TAGS]

    def changes_until_refused(self, lines_of=None):
        """With the journal sink not read, root's changes (of 1000 tags, or
        @lines_of(i)) one after another until one is refused: (changes
        made, the refusal)."""
        made = 0
        for i in range(600):
            before = self.world.get_tags(self.target)
            lines = (lines_of or self.stall_lines)(i)
            reply = self.world.root_call("Apply", "uas", [self.target, lines], timeout_ms=5000)
            if reply.error is not None:
                self.assertError(reply, "LimitExceeded")
                # The audit trail has its own queue and took its records
                # (about 300 KB a change) meanwhile: what waits is the
                # journal's.
                self.assertTrue(reply.message.startswith("the journal is not taking records"),
                                reply.message)
                self.assertEqual(self.world.get_tags(self.target), before,
                                 "a change refused for want of logging was made")
                return made, reply
            made += 1
        self.fail("600 changes of 1000 tags were all made while the journal took nothing: "
                  "what waits to be logged is unbounded")

    def entries_of_the_target(self, count, timeout):
        """The next @count journal entries about the target (fewer if the
        time is up)."""
        entries = []
        deadline = time.monotonic() + timeout
        while len(entries) < count:
            entry = self.journal.receive(max(deadline - time.monotonic(), 0))
            if entry is None:
                break
            if entry.all("PTAGS_PID") == [str(self.target)]:
                entries.append(entry)
        return entries

    def assertStallChangesLogged(self, entries, made):
        self.assertEqual(len(entries), made, "changes made while the journal stalled were "
                         "not all logged")
        for i, entry in enumerate(entries):
            self.assertEqual(entry.one("MESSAGE_ID"), MESSAGE_CHANGED)
            self.assertEqual(entry.one("PTAGS_LINES").split("\n")[0], self.stall_lines(i)[0])

    def assertSinkReadsMemfdEntries(self):
        """The receiver's memfd path, fed by hand the way libsystemd feeds it
        (no payload, one fd) so a daemon entry past the send buffer is read."""
        fd = os.memfd_create("journal-entry", os.MFD_CLOEXEC)
        try:
            os.write(fd, b"MESSAGE_ID=x\nPTAGS_LINES\n" + struct.pack("<Q", 3) + b"a\nb\n")
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
                sender.sendmsg([], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                     array.array("i", [fd]))],
                               0, self.journal.sock.getsockname())
        finally:
            os.close(fd)
        entry = self.journal.receive(WAIT_S)
        self.assertIsNotNone(entry, "the hand-made memfd entry did not arrive")
        self.assertTrue(entry.via_memfd)
        self.assertEqual(entry.fields, [("MESSAGE_ID", "x"), ("PTAGS_LINES", "a\nb")])
        self.assertEqual(entry.sender_pid, os.getpid())

    # ------------------------------------------------------------ audit

    def target_bodies(self, records):
        """The parsed USER_MAC_CONFIG_CHANGE bodies ptagsd sent about our
        target among @records, (type, text) pairs."""
        found = []
        for kind, text in records:
            match = USER_RECORD.match(text)
            if kind != AUDIT_USER_MAC_CONFIG_CHANGE or match is None:
                continue
            if int(match.group(1)) != self.daemon_pid:
                continue
            body = audit_fields(match.group(2))
            if body.get("opid") == str(self.target):
                found.append(body)
        return found

    def daemon_records(self, audit, count, timeout=WAIT_S):
        """Parsed USER_MAC_CONFIG_CHANGE bodies sent by ptagsd about our
        target, once @count have arrived (or the time is up)."""
        found = []
        deadline = time.monotonic() + timeout
        while len(found) < count and time.monotonic() < deadline:
            found.extend(self.target_bodies(
                audit.records(min(0.2, max(deadline - time.monotonic(), 0)))))
        return found

    def test_changes_and_refusals_are_audited(self):
        audit = AuditReader()
        self.addCleanup(audit.close)
        client = self.world.spawn_client()
        plain, spaced, quoted = "log:plain", "log:has space", 'log:"quoted"'
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, plain, False]))
        # A no-op changes nothing, so it must not be audited (a record would
        # arrive before the refusal's and be counted for `plain` below).
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, plain, False]))
        self.assertOk(self.world.root_call("Apply", "uas", [self.target,
                                                            ["+" + spaced, "+" + quoted]]))
        self.assertError(client.call("AddTag", "usb", [self.target, "log:refused", False]),
                         "NotAuthorized")
        records = self.daemon_records(audit, 4)
        by_tag = {}
        for body in records:
            self.assertIn("tag", body, "an audit record without tag=: %r" % body)
            by_tag.setdefault(decoded_tag(body["tag"]), []).append(body)
        self.assertEqual(sorted(by_tag), sorted([plain, spaced, quoted, "log:refused"]),
                         "audit records from ptagsd (pid %d): %r" % (self.daemon_pid, records))
        for tag in (plain, spaced, quoted, "log:refused"):
            self.assertEqual(len(by_tag[tag]), 1, "records for %r: %r" % (tag, by_tag[tag]))
            body = by_tag[tag][0]
            self.assertEqual(body["op"], "ptags-add")
            self.assertEqual(body["res"], "failed" if tag == "log:refused" else "success")
            # The subject is ptagsd: the body must name who asked.
            self.assertEqual(body["uid"], "65534" if tag == "log:refused" else "0")
            self.assertIn("caller_pid", body)
        # Plain tags are quoted; spaces and quotes force hex.
        self.assertEqual(by_tag[plain][0]["tag"], '"%s"' % plain)
        self.assertEqual(by_tag[spaced][0]["tag"].upper(), spaced.encode().hex().upper())
        self.assertEqual(by_tag[quoted][0]["tag"].upper(), quoted.encode().hex().upper())

    def test_caller_text_cannot_forge_what_ausearch_reads(self):
        """ausearch reads a user record's fields by searching its text: the
        first "res=" and "hostname=" after the body's start, and a second
        "uid=" (ending the search with an error, so the record is dropped
        from any search by uid, when it follows a letter it does not know,
        as in caller_uid=). A refused value "a,hostname=...,res=success"
        read as a success from that host."""
        audit = AuditReader()
        self.addCleanup(audit.close)
        client = self.world.spawn_client()
        forging = "a,hostname=evil.example,res=success"
        self.assertError(client.call("Apply", "uas", [self.target, [
            "+log:forged", "!log:forged=" + forging]]), "NotAuthorized")
        records = []
        deadline = time.monotonic() + WAIT_S
        while len(records) < 2 and time.monotonic() < deadline:
            for kind, text in audit.records(0.2):
                match = USER_RECORD.match(text)
                if (kind == AUDIT_USER_MAC_CONFIG_CHANGE and match is not None
                        and int(match.group(1)) == self.daemon_pid
                        and "opid=%d " % self.target in match.group(2)):
                    records.append(match.group(2))
        self.assertEqual(len(records), 2, records)
        for text in records:
            with self.subTest(text=text[:60]):
                self.assertTrue(text.endswith(" res=failed"), text)
                self.assertEqual(text.index("res="), len(text) - len("res=failed"), text)
                self.assertEqual(text[text.index("hostname="):].split(" ")[0], "hostname=?")
                for at in [m.start() for m in re.finditer("uid=", text)]:
                    self.assertIn(text[at - 1], " 'asu", text)
                self.assertIn(" uid=65534 ", text)

    def test_a_value_set_is_audited(self):
        """A set-value record carries the value (the journal entry always
        did): quoted or hex-encoded as a tag is, and only its first 256
        bytes, with its length, so the kernel never cuts the record."""
        audit = AuditReader()
        self.addCleanup(audit.close)
        long_value = "v" * 300
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, [
            "+log:val", "!log:val=a b", "!log:val=" + long_value, "!log:val"]]))
        records = self.daemon_records(audit, 4)
        self.assertEqual([b["op"] for b in records], ["ptags-add", "ptags-set-value",
                                                      "ptags-set-value", "ptags-clear-value"])
        added, spaced, cut, cleared = records
        self.assertNotIn("value", added)
        self.assertEqual(spaced["value"].upper(), b"a b".hex().upper())
        self.assertNotIn("value_len", spaced)
        self.assertEqual(cut["value"], '"%s"' % long_value[:256])
        self.assertEqual(cut["value_len"], "300")
        self.assertEqual(cut["res"], "success")
        self.assertNotIn("value", cleared)

    def test_every_change_of_a_large_batch_is_audited(self):
        # ptagsd sends a batch's records together, in datagrams of up to
        # 64 KiB: 400 records of ~300 bytes take two of them, and the
        # kernel must see each record of both.
        audit = AuditReader()
        self.addCleanup(audit.close)
        tags = ["log:batch:%03d:%s" % (i, "b" * 40) for i in range(400)]
        self.assertOk(self.world.root_call("Apply", "uas", [self.target,
                                                            ["+" + t for t in tags]]))
        client = self.world.spawn_client()
        refused = ["log:no:%d" % i for i in range(3)]
        self.assertError(client.call("Apply", "uas", [self.target, ["+" + t for t in refused]]),
                         "NotAuthorized")
        records = self.daemon_records(audit, len(tags) + len(refused))
        seen = sorted((decoded_tag(b["tag"]), b["op"], b["res"]) for b in records)
        self.assertEqual(seen, sorted([(t, "ptags-add", "success") for t in tags]
                                      + [(t, "ptags-add", "failed") for t in refused]))


class StalledJournalTests(LoggingTests):
    """A journal that takes nothing: what ptagsd's writer threads do then
    does not depend on the backend, and filling their 2 MiB takes a while,
    so these run on one."""
    backends = ("bpf",)

    def test_a_journal_that_takes_nothing_holds_up_no_call(self):
        """journald may stop taking entries for a while (busy, or being
        restarted), and then a send to it blocks. ptagsd sent from the call
        that logged, so one change waited, and with it the main loop or the
        bus thread: every call, reads included, waited with it. Records now
        wait in ptagsd, up to a bound. Until it is reached changes go on;
        then they are refused with LimitExceeded and change nothing (their
        refusals are not logged); reads go on throughout; and once the
        journal takes entries again, every change made meanwhile is in it."""
        self.journal.drain()
        made, _refused = self.changes_until_refused()
        self.assertGreater(made, 10, "changes were refused before the journal stalled")
        # Reads go on while records wait.
        client = self.world.spawn_client()
        self.assertOk(client.call("GetTags", "u", [self.target], timeout=5.0))
        self.assertOk(self.world.root_call("HasTag", "us", [self.target, "log:*"],
                                           timeout_ms=5000))
        # The journal takes entries again: every change made is there, in
        # order, and no refusal.
        self.assertStallChangesLogged(self.entries_of_the_target(made, 60), made)
        # With what waited written, changes are made again.
        wait_until(lambda: self.world.root_call("AddTag", "usb", [self.target, "log:after",
                                                                  False]).ok,
                   WAIT_S, "a change once the journal took entries again")
        _entry, skipped = self.journal.wait_for(
            lambda e: e.all("PTAGS_ACTION") == ["AddTag"], "for the change made after")
        self.assertEqual([e for e in skipped if e.all("MESSAGE_ID") == [MESSAGE_REFUSED]], [],
                         "a refusal was logged while records waited")
        # ptagsd's own log says how many refusals went unlogged.
        wait_until(lambda: "1 refusals were not logged while the journal"
                   in self.world.read_log("ptagsd.log"),
                   WAIT_S, "the warning counting the refusals not logged")

    def test_a_flood_of_refusals_leaves_room_for_changes(self):
        """Anyone may have large batches refused, and a refusal of more
        changes than a burst costs two records of the refusal budget: its
        journal entry listed every line (200 KB here), so while the journal
        was slow a user's refusals filled what may wait, and root's changes
        were refused. A refusal's entry now lists its first 8 KiB of lines
        and of tags, and refusals fill half of what may wait at most."""
        self.journal.drain()
        client = self.world.spawn_client()  # the polkit mock denies everything
        lines = []
        for i in range(512):
            tag = "log:flood:%04d:%s" % (i, "a" * 180)
            lines += ["+" + tag, "-" + tag]
        for _ in range(120):
            client.send("Apply", "uas", [self.target, lines])
        errors = [client.receive(timeout=30).error for _ in range(120)]
        self.assertEqual(set(errors), {NOT_AUTHORIZED})
        reply = self.world.root_call("AddTag", "usb", [self.target, "log:root", False],
                                     timeout_ms=5000)
        self.assertOk(reply)
        refusals = []
        while True:
            entry = self.journal.receive(2)
            if entry is None:
                break
            if entry.all("MESSAGE_ID") == [MESSAGE_REFUSED]:
                refusals.append(entry)
        self.assertGreater(len(refusals), 10)
        for entry in refusals:
            listed = entry.one("PTAGS_LINES")
            self.assertLessEqual(len(listed), 8 * 1024 + 64)
            self.assertEqual(listed.split("\n")[0], lines[0])
            shown = listed.count("\n")
            self.assertTrue(listed.endswith("# %d more lines not listed" % (1024 - shown)),
                            listed[-80:])
            self.assertEqual(len(entry.all("PTAGS_TAG")) + int(entry.one("PTAGS_TAGS_UNLISTED")),
                             1024)

    def test_audit_records_go_out_while_the_journal_stalls(self):
        """The audit trail does not wait for the journal: each has its own
        queue. Changes of 20 values of 4000 bytes make journal entries of
        about 80 KB (the lines hold the values) and audit records of about
        10 KB (the first 256 bytes of each value): the journal stalls, and
        every change made meanwhile is audited nonetheless. Stopped then,
        ptagsd waits for the journal only so long before it exits."""
        audit = AuditReader()
        self.addCleanup(audit.close)
        names = ["log:v%d" % k for k in range(20)]
        self.assertOk(self.world.root_call("Apply", "uas", [self.target,
                                                            ["+" + n for n in names]]))
        self.journal.drain()

        def value_lines(i):
            return ["!%s=%s" % (n, "ab"[i % 2] * 4000) for n in names]

        # Read as they come: thousands of records would overflow the
        # reading socket's buffer if left to the end.
        raw = []
        failed = []
        stop = threading.Event()

        def read():
            try:
                while not stop.is_set():
                    raw.extend(audit.records(0.1))
            except AssertionError as e:  # records lost (ENOBUFS)
                failed.append(e)
        reader = threading.Thread(target=read)
        reader.start()
        try:
            made, _refused = self.changes_until_refused(value_lines)
            self.assertGreater(made, 10, "changes were refused before the journal stalled")

            # The journal is not read: what reaches the kernel meanwhile is
            # the audit trail's own doing.
            def set_values():
                return [b for b in self.target_bodies(list(raw))
                        if b["op"] == "ptags-set-value"]
            try:
                wait_until(lambda: len(set_values()) >= 20 * made, WAIT_S,
                           "the audit records of %d changes" % made)
            except HarnessError:
                pass
        finally:
            stop.set()
            reader.join()
        if failed:
            raise failed[0]
        records = set_values()
        self.assertEqual(len(records), 20 * made, "changes made while the journal stalled "
                         "were not audited until it took entries again")
        self.assertEqual({b["res"] for b in records}, {"success"})
        # Stopped while the journal still takes nothing, ptagsd waits for it
        # only so long (5 s), then exits, saying what it could not write.
        daemon = self.world.daemon
        daemon.send_signal(signal.SIGTERM)
        self.assertEqual(daemon.wait(timeout=25), 0, "ptagsd did not exit 0 on SIGTERM")
        self.assertRegex(self.world.read_log("ptagsd.log"),
                         r"exiting with \d+ records \(\d+ KiB\) not written")
        # Stopped on purpose: the harness must not count it as a crash.
        self.world.daemon = None

    def test_records_waiting_at_exit_are_written_first(self):
        """Changes answered as made are logged even when ptagsd is stopped
        while their records wait for the journal: it writes them, then
        exits."""
        self.journal.drain()
        made, _refused = self.changes_until_refused()
        # Records wait now (a change was refused for it): stop ptagsd.
        daemon = self.world.daemon
        daemon.send_signal(signal.SIGTERM)
        self.assertStallChangesLogged(self.entries_of_the_target(made, 60), made)
        self.assertEqual(daemon.wait(timeout=10), 0, "ptagsd did not exit 0 on SIGTERM")
        # Stopped on purpose: the harness must not count it as a crash.
        self.world.daemon = None


class RestoreLoggingTests(LoggingTests):
    """ptags-lsm: the tags ptagsd puts back at its start, after a change of
    several pages its exit interrupted, are logged as a change ptagsd made."""
    backends = ("ptags-lsm",)

    def test_a_restore_is_logged_as_a_change(self):
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, ["+@k", "+other"]]))
        self.world.daemon.terminate()
        self.assertEqual(self.world.daemon.wait(timeout=30), 0)
        wait_until(lambda: not self.world.name_has_owner("org.ptags.Manager"), 10,
                   "org.ptags.Manager to be released")
        with open("/proc/%d/stat" % self.target) as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
        note = os.path.join(self.world.daemon_env["RUNTIME_DIRECTORY"], "lsm-intent")
        with open(note, "w") as f:
            f.write("%d %s\napp:cam\n@k=v\nother\n" % (self.target, start))
        self.journal.drain()
        with daemon_wrapper("/bin/sh %s %s" % (WRAPPER, self.journal.sock.getsockname())):
            self.world.start_daemon()
        entry = self.entry_about(MESSAGE_CHANGED, self.target, "Restore")
        self.assertEqual(entry.one("PTAGS_LINES").split("\n"), ["+app:cam", "!k=v"])
        self.assertEqual(entry.one("PTAGS_CALLER_PID"), str(self.world.daemon.pid))
        self.assertEqual(entry.one("PTAGS_CALLER_UID"), "0")
        self.assertEqual(self.world.get_tags(self.target),
                         [("app:cam", False, ""), ("k", True, "v"), ("other", False, "")])


class PartialWriteLoggingTests(LoggingTests):
    """ptags-lsm: a change written in part (its undo failed too) is logged
    whatever the caller's refusal budget: the tags did change."""
    backends = ("ptags-lsm",)
    world_options = {"daemon_args": ["--max-refusal-records=2"]}

    def test_a_partial_write_is_logged_whatever_the_budget(self):
        losing = self.world.spawn_target_losing_tags()
        client = self.world.spawn_client()  # the polkit mock denies everything
        for i in range(20):  # 40 records: past the burst of 32
            client.call("AddTag", "usb", [self.target, "log:d%d" % i, False])
        self.world.polkit.set_allowed([ADD, SET_VALUE])
        audit = AuditReader()
        self.addCleanup(audit.close)
        self.journal.drain()
        # As in test_concurrency's test_a_partial_write_is_signalled.
        reply = client.call("Apply", "uas", [losing, [
            "+app:n", "!app:n=v", "+app:f:" + "x" * 3990, "+app:g:" + "x" * 100,
            "!app:n=w"]])
        self.assertError(reply, "Failed")
        self.assertIn("holds part of this change", reply.message)
        entry, _ = self.journal.wait_for(
            lambda e: e.all("PTAGS_PID") == [str(losing)] and e.all("PTAGS_ACTION") == ["Apply"],
            "the entry of the partial write")
        self.assertEqual(entry.one("MESSAGE_ID"), MESSAGE_REFUSED)
        self.assertEqual(entry.one("PRIORITY"), "3")
        self.assertIn("failed part way", entry.one("MESSAGE"))
        ops = []
        deadline = time.monotonic() + WAIT_S
        while "ptags-partial" not in ops and time.monotonic() < deadline:
            for kind, text in audit.records(0.2):
                match = USER_RECORD.match(text)
                if (kind == AUDIT_USER_MAC_CONFIG_CHANGE and match is not None
                        and "opid=%d " % losing in match.group(2)):
                    ops.append(audit_fields(match.group(2))["op"])
        self.assertIn("ptags-partial", ops)


class AuditSocketTests(LoggingTests):
    """ptagsd's first audit socket cannot be opened (EMFILE, as for a
    process out of file descriptors): an LD_PRELOAD module makes it fail."""
    world_options = {"daemon_args": LoggingTests.world_options["daemon_args"],
                     "daemon_env": preload_env({"PTAGS_AUDIT_SOCKET_FAILS": "1"})}

    def setUp(self):
        with preloaded("PTAGS_AUDIT_FAILS"):
            super().setUp()

    def test_changes_wait_for_an_audit_socket_that_may_open(self):
        """One failed open turned auditing off for good: every later change
        was made and not audited, and only a debug message said so. A
        change is now refused while the socket cannot be opened, and the
        next one opens it and is audited."""
        audit = AuditReader()
        self.addCleanup(audit.close)
        reply = self.world.root_call("AddTag", "usb", [self.target, "log:first", False])
        self.assertError(reply, "LimitExceeded")
        self.assertIn("audit", reply.message)
        self.assertEqual(self.world.get_tags(self.target), [])
        # Tried again a tenth of a second later at most.
        time.sleep(0.2)
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "log:second", False]))
        records = self.daemon_records(audit, 1)
        self.assertEqual([(decoded_tag(r["tag"]), r["op"], r["res"]) for r in records],
                         [("log:second", "ptags-add", "success")])
        self.assertIn("cannot open the audit socket",
                      self.world.read_log("ptagsd.log", 100000))


class RefusalBudgetTests(LoggingTests):
    """The refusal budget is MaxRefusalRecords: here 2 records a second, in
    bursts of 32 (an AddTag's refusal writes 2)."""
    world_options = {"daemon_args": ["--max-refusal-records=2"]}

    def test_a_refusal_of_more_changes_than_a_burst_is_summed_up(self):
        """A refused Apply of 40 changes (past the burst of 32) wrote 40
        audit records for the cost of the burst; a few uids so logged far
        past the budget of all uids together. It gets one record now,
        saying how many changes, and the journal entry lists them all."""
        audit = AuditReader()
        self.addCleanup(audit.close)
        client = self.world.spawn_client()  # the polkit mock denies everything
        self.journal.drain()
        self.assertError(client.call("Apply", "uas", [
            self.target, ["+log:many%02d" % i for i in range(40)]]), "NotAuthorized")
        entry = self.entry_about(MESSAGE_REFUSED, self.target, "Apply")
        self.assertEqual(len(entry.one("PTAGS_LINES").split("\n")), 40)
        records = self.daemon_records(audit, 2, timeout=2.0)
        self.assertEqual([(r["op"], r.get("changes"), r["res"]) for r in records],
                         [("ptags-change", "40", "failed")])

    def test_the_refusal_budget_is_configured(self):
        self.assertEqual(self.world.get_property("MaxRefusalRecords"), 2)
        client = self.world.spawn_client()  # the polkit mock denies everything
        start = time.monotonic()
        _, entries = self.journal_during(lambda: [
            self.assertError(client.call("AddTag", "usb", [self.target, "log:x", False]),
                             "NotAuthorized") for _ in range(40)])
        took = time.monotonic() - start
        logged = [e for e in entries if e.all("MESSAGE_ID") == [MESSAGE_REFUSED]]
        self.assertGreaterEqual(len(logged), 16)
        self.assertLessEqual(len(logged), (32 + 2 * took) // 2 + 1,
                             "%d of 40 refusals logged in %.2f s" % (len(logged), took))
