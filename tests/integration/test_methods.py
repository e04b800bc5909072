# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_methods.py: every org.ptags.Manager method over the bus: reads work
# for anyone without polkit; each change succeeds, is denied or asks.
#
# Changes are made by an unprivileged caller (uid 0 skips polkit, so only a
# non-root caller exercises authorization) on an unprivileged target.

import ctypes
import os
import signal
import struct
import subprocess
import unittest
import xml.etree.ElementTree as ET

import ptags_client
from ptags_harness import INTERACTIVE_REQUIRED, PtagsTestCase, sleep_sleeps, wait_until

ADD = "org.ptags.tag.add"
REMOVE = "org.ptags.tag.remove"
SET_VALUE = "org.ptags.tag.set-value"
RIGHTS = "org.ptags.rights.change"
ALL_ACTIONS = [ADD, REMOVE, SET_VALUE, RIGHTS]


class ReadMethodTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call(
            "Apply", "uas", [self.target, ["+app:a", "+@app:b", "!app:a=x=y", "+other"]]))
        self.expected = [("app:a", False, "x=y"), ("app:b", True, ""), ("other", False, "")]
        self.world.polkit.clear_checks()

    def test_reads_by_unprivileged_caller_need_no_polkit(self):
        client = self.world.spawn_client()
        got = self.assertOk(client.call("GetTags", "u", [self.target]))[0]
        self.assertEqual([tuple(t) for t in got], self.expected)
        got = self.assertOk(client.call("GetTagsFd", "h", [0], pidfd_of=self.target))[0]
        self.assertEqual([tuple(t) for t in got], self.expected)
        for pattern, want in [("app:a", True), ("app:*", True), ("@app:b", True),
                              ("@app:a", False), ("app:c", False), ("", True),
                              ("@app:*", True), ("nope:*", False), ("@", True)]:
            with self.subTest(pattern=pattern):
                self.assertEqual(
                    self.assertOk(client.call("HasTag", "us", [self.target, pattern]))[0], want)
        found = self.assertOk(client.call("FindTagged", "s", ["app:*"]))[0]
        # Only the matching tags (not "other"): FindTagged's replies stay bounded.
        self.assertIn([self.target, [list(t) for t in self.expected if t[0].startswith("app:")]],
                      found)
        # Its own (empty) tags via pid 0.
        self.assertEqual(self.assertOk(client.call("GetTags", "u", [0]))[0], [])
        self.assertEqual(self.world.polkit.checks(), [],
                         "a read must not consult polkit")

    def test_properties(self):
        backend = self.world.get_property("Backend")
        if self.world.backend == "ptags-lsm":
            self.assertEqual(backend, "ptags-lsm")
        else:
            self.assertIn(backend, ("bpf-lsm", "bpf-tracepoint"))
        self.assertTrue(self.world.get_property("Version"))
        self.assertEqual(self.world.get_property("MaxTags"), 4000)
        self.assertEqual(self.world.get_property("MaxTagLength"), 4000)
        self.assertEqual(self.world.get_property("MaxValueLength"), 32700)
        features = self.world.get_property("Features")
        for name in ("tags", "atomic-apply", "pidfd"):
            self.assertIn(name, features)

    def test_introspection_matches_the_interface_xml(self):
        def members(xml_text):
            root = ET.fromstring(xml_text)
            iface = [i for i in root.iter("interface") if i.get("name") == "org.ptags.Manager"]
            self.assertEqual(len(iface), 1)
            out = set()
            for m in iface[0]:
                if m.tag in ("method", "signal"):
                    args = tuple((a.get("type"), a.get("direction", "out"))
                                 for a in m.findall("arg"))
                    out.add((m.tag, m.get("name"), args))
                elif m.tag == "property":
                    emits = [a.get("value") for a in m.findall("annotation") if a.get("name")
                             == "org.freedesktop.DBus.Property.EmitsChangedSignal"]
                    out.add((m.tag, m.get("name"),
                             (m.get("type"), m.get("access"), (emits or ["true"])[0])))
            return out

        source_root = os.environ.get("PTAGS_SOURCE_ROOT") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(source_root, "data", "dbus-1", "org.ptags.Manager.xml")) as f:
            documented = members(f.read())
        live = ptags_client.call(self.world.conn, "Introspect", "", [],
                                 interface="org.freedesktop.DBus.Introspectable")
        self.assertEqual(members(self.assertOk(live)[0]), documented)
        # Properties that never change say so, as hostnamed's do.
        constant = {m[1] for m in documented if m[0] == "property" and m[2][2] == "const"}
        self.assertTrue({"Version", "Backend", "Features", "MaxTags", "MaxTagLength",
                         "MaxValueLength"} <= constant, constant)

    def test_root_changes_skip_polkit(self):
        self.world.polkit.clear_checks()
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "root:x", True]))
        self.assertIn(("root:x", True, ""), self.world.get_tags(self.target))
        self.assertEqual(self.world.polkit.checks(), [], "uid 0 must not need polkit")


class OtherPidNamespaceTests(PtagsTestCase):
    """A caller in a pid namespace of its own (a container, a sandboxed app)
    numbers processes its own way: a pid it names is another process to
    ptagsd, and the pids FindTagged answers with are others to it. ptagsd
    refuses both by name, and serves it through pidfds and pid 0."""

    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "app:a", False]))
        self.client = self.world.spawn_client(unprivileged=False, pid_namespace=True)
        self.assertEqual(self.client.pid, 1, "the client runs as pid 1 of its own namespace")

    def test_pids_it_names_or_would_be_told_are_refused(self):
        calls = [("GetTags", "u", [self.target]), ("HasTag", "us", [self.target, "app:a"]),
                 ("FindTagged", "s", ["app:*"]),
                 ("AddTag", "usb", [self.target, "app:b", False]),
                 ("RemoveTag", "us", [self.target, "app:a"]),
                 ("SetValue", "uss", [self.target, "app:a", "v"]),
                 ("SetKeep", "usb", [self.target, "app:a", True]),
                 ("Apply", "uas", [self.target, ["+app:c"]]),
                 ("GetContainerId", "u", [self.target]),
                 ("RegisterContainer", "uta{sv}", [self.target, 77, {}])]
        before = self.world.get_tags(self.target)
        # Twice: first while ptagsd learns who the caller is, then once it
        # knows (reads and root's changes are then answered in its bus thread).
        for round_ in (1, 2):
            for method, sig, args in calls:
                with self.subTest(round=round_, method=method):
                    reply = self.client.call(method, sig, args)
                    self.assertError(reply, "NotSupported")
                    self.assertIn("pid namespace", reply.message)
        self.assertEqual(self.world.get_tags(self.target), before)
        self.assertEqual(
            self.assertOk(self.world.root_call("GetContainerId", "u", [self.target]))[0],
            2**64 - 1, "no container was registered")
        # Whether ptagsd has such a pid is no answer to give it either.
        for method, sig, args in (("GetTags", "u", [self.world.dead_pid()]),
                                  ("AddTag", "usb", [self.world.dead_pid(), "app:b", False])):
            with self.subTest(method=method, pid="dead"):
                self.assertError(self.client.call(method, sig, args), "NotSupported")

    def test_a_caller_not_proven_its_connections_is_refused_too(self):
        """ptagsd does not take a process with privileges beyond its uid
        (here CAP_SYS_ADMIN, which made its namespace) for its connection's
        caller, but its pid namespace is no privilege: still refused."""
        client = self.world.spawn_client(pid_namespace=True)
        self.assertError(client.call("GetTags", "u", [0]), "NoSuchProcess")
        for method, sig, args in (("GetTags", "u", [self.target]), ("FindTagged", "s", ["app:*"]),
                                  ("AddTag", "usb", [self.target, "app:b", False])):
            with self.subTest(method=method):
                self.assertError(client.call(method, sig, args), "NotSupported")
        self.assertEqual(self.world.get_tags(self.target), [("app:a", False, "")])

    def test_pidfds_and_pid_0_serve_it(self):
        self.assertOk(self.world.root_call("AddTag", "usb",
                                           [self.client.host_pid, "app:mine", False]))
        mine = [["app:mine", False, ""]]
        self.assertEqual(self.assertOk(self.client.call("GetTags", "u", [0]))[0], mine)
        self.assertEqual(self.assertOk(self.client.call("HasTag", "us", [0, "app:mine"]))[0],
                         True)
        # pidfd_of is a pid of the client's namespace: 1 is the client itself.
        self.assertEqual(self.assertOk(self.client.call("GetTagsFd", "h", [0], pidfd_of=1))[0],
                         mine)
        self.assertOk(self.client.call("ApplyFd", "has", [0, ["+app:b"]], pidfd_of=1))
        self.assertOk(self.client.call("AddTag", "usb", [0, "app:c", False]))
        self.assertEqual([t[0] for t in self.world.get_tags(self.client.host_pid)],
                         ["app:b", "app:c", "app:mine"])


class ChangeMethodTests(PtagsTestCase):
    """For each change: denied, challenge without and with interaction, then
    allowed; the target changes only on the allowed call."""

    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call(
            "Apply", "uas", [self.target, ["+app:a", "+app:b", "!app:b=old"]]))
        self.client = self.world.spawn_client()

    def check_authorization_paths(self, method, sig, args, action, expect_after,
                                  pidfd_of=None):
        polkit = self.world.polkit
        before = self.world.get_tags(self.target)
        kw = {"pidfd_of": pidfd_of} if pidfd_of else {}

        polkit.clear_checks()
        self.assertError(self.client.call(method, sig, args, **kw), "NotAuthorized")
        self.assertEqual(self.world.get_tags(self.target), before)
        checks = polkit.checks()
        self.assertTrue(checks, "a denied change must have asked polkit")
        self.assertEqual({c["action"] for c in checks}, {action})
        for c in checks:
            self.assertEqual(c["subject_kind"], "system-bus-name")
            self.assertEqual(c["subject"].get("name"), self.client.unique_name)
            self.assertEqual(c["flags"] & 1, 0, "interaction was not allowed by the caller")

        polkit.set_challenge([action])
        self.assertError(self.client.call(method, sig, args, **kw), INTERACTIVE_REQUIRED)
        self.assertEqual(self.world.get_tags(self.target), before)

        polkit.clear_checks()
        polkit.set_interactive_answer(False)
        self.assertError(self.client.call(method, sig, args, interactive=True, **kw),
                         "NotAuthorized")
        self.assertEqual(self.world.get_tags(self.target), before)
        self.assertTrue(all(c["flags"] & 1 for c in polkit.checks()),
                        "the caller's interactive flag must reach polkit")

        polkit.set_challenge([])
        polkit.set_allowed([action])
        self.assertOk(self.client.call(method, sig, args, **kw))
        self.assertEqual(self.world.get_tags(self.target), expect_after)

    def test_add_tag(self):
        self.check_authorization_paths(
            "AddTag", "usb", [self.target, "app:new", True], ADD,
            [("app:a", False, ""), ("app:b", False, "old"), ("app:new", True, "")])

    def test_add_rights_tag(self):
        self.check_authorization_paths(
            "AddTag", "usb", [self.target, "ptags:app:add", False], RIGHTS,
            [("app:a", False, ""), ("app:b", False, "old"), ("ptags:app:add", False, "")])

    def test_remove_tag(self):
        self.check_authorization_paths(
            "RemoveTag", "us", [self.target, "app:b"], REMOVE, [("app:a", False, "")])

    def test_remove_pattern(self):
        self.check_authorization_paths("RemoveTag", "us", [self.target, "app:*"], REMOVE, [])

    def test_set_value(self):
        self.check_authorization_paths(
            "SetValue", "uss", [self.target, "app:a", "v=1 ü"], SET_VALUE,
            [("app:a", False, "v=1 ü"), ("app:b", False, "old")])

    def test_clear_value(self):
        self.check_authorization_paths(
            "SetValue", "uss", [self.target, "app:b", ""], SET_VALUE,
            [("app:a", False, ""), ("app:b", False, "")])

    def test_set_keep(self):
        self.check_authorization_paths(
            "SetKeep", "usb", [self.target, "app:*", True], ADD,
            [("app:a", True, ""), ("app:b", True, "old")])

    def test_clear_keep(self):
        self.assertOk(self.world.root_call("SetKeep", "usb", [self.target, "app:a", True]))
        self.check_authorization_paths(
            "SetKeep", "usb", [self.target, "app:a", False], REMOVE,
            [("app:a", False, ""), ("app:b", False, "old")])

    def test_apply(self):
        self.check_authorization_paths(
            "Apply", "uas", [self.target, ["+app:c"]], ADD,
            [("app:a", False, ""), ("app:b", False, "old"), ("app:c", False, "")])

    def test_apply_fd(self):
        self.check_authorization_paths(
            "ApplyFd", "has", [0, ["-app:a"]], REMOVE, [("app:b", False, "old")],
            pidfd_of=self.target)

    def test_busctl_callers(self):
        """Shell scripts use busctl: its default (interactive allowed on
        Debian 12) reaches polkit, and =no gets InteractiveAuthorizationRequired."""
        polkit = self.world.polkit
        polkit.set_challenge([ADD])
        call = ["call", "org.ptags.Manager", "/org/ptags/Manager", "org.ptags.Manager",
                "AddTag", "usb", str(self.target), "app:sh", "false"]
        result = self.world.busctl(["--allow-interactive-authorization=no"] + call)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(polkit.checks()[-1]["flags"] & 1, 0)
        polkit.clear_checks()
        result = self.world.busctl(call)
        self.assertNotEqual(result.returncode, 0, "the simulated agent said no")
        self.assertEqual(polkit.checks()[-1]["flags"] & 1, 1, "busctl's default is interactive")
        polkit.set_interactive_answer(True)
        result = self.world.busctl(call)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(("app:sh", False, ""), self.world.get_tags(self.target))

    def test_one_denied_match_refuses_the_whole_pattern(self):
        polkit = self.world.polkit
        polkit.set_allowed([REMOVE, ADD])
        polkit.set_denied_tags(["app:b"])
        before = self.world.get_tags(self.target)
        for method, sig, args in [("RemoveTag", "us", [self.target, "app:*"]),
                                  ("SetKeep", "usb", [self.target, "", True]),
                                  ("Apply", "uas", [self.target, ["+app:c", "-app:b"]])]:
            with self.subTest(method=method):
                self.assertError(self.client.call(method, sig, args), "NotAuthorized")
                self.assertEqual(self.world.get_tags(self.target), before)
        polkit.set_denied_tags([])
        self.assertOk(self.client.call("RemoveTag", "us", [self.target, "app:*"]))
        self.assertEqual(self.world.get_tags(self.target), [])

    def test_apply_needs_every_action(self):
        """A batch touching three actions is refused while one is denied."""
        polkit = self.world.polkit
        lines = ["+app:c", "-app:a", "!app:b=new"]
        before = self.world.get_tags(self.target)
        polkit.set_allowed([ADD, REMOVE])
        self.assertError(self.client.call("Apply", "uas", [self.target, lines]), "NotAuthorized")
        self.assertEqual(self.world.get_tags(self.target), before)
        polkit.set_allowed([ADD, REMOVE, SET_VALUE])
        self.assertOk(self.client.call("Apply", "uas", [self.target, lines]))
        self.assertEqual(self.world.get_tags(self.target),
                         [("app:b", False, "new"), ("app:c", False, "")])


class ZombieFindTests(PtagsTestCase):
    def test_find_tagged_lists_no_exited_process(self):
        """An exited process is gone, zombie or reaped, for every method:
        FindTagged listed a zombie (its parent had not reaped it) that held
        a matching tag, whose GetTags then failed."""
        zombie = subprocess.Popen(["sleep", "600"])
        try:
            wait_until(lambda: sleep_sleeps(zombie.pid), 10, "sleep to exec")
            self.assertOk(self.world.root_call("AddTag", "usb", [zombie.pid, "app:zz", False]))
            found = self.assertOk(self.world.root_call("FindTagged", "s", ["app:zz"]))[0]
            self.assertEqual([pid for pid, _ in found], [zombie.pid])
            os.kill(zombie.pid, signal.SIGKILL)
            wait_until(lambda: open("/proc/%d/stat" % zombie.pid).read().rsplit(")", 1)[1]
                       .split()[0] == "Z", 10, "sleep to be a zombie")
            self.assertEqual(self.assertOk(
                self.world.root_call("FindTagged", "s", ["app:zz"]))[0], [])
            self.assertError(self.world.root_call("GetTags", "u", [zombie.pid]),
                             "NoSuchProcess")
        finally:
            zombie.kill()
            zombie.wait(timeout=10)



class ThreadRecordFindTests(PtagsTestCase):
    """bpf keeps a record per thread; GetTags reads the main thread's."""
    backends = ("bpf",)

    def write_thread_record(self, tid, set_id):
        """Give thread @tid the record {set_id, no container ID} through the
        pinned map, as a write that failed after the main thread (or that
        missed the thread) leaves it."""
        libbpf = ctypes.CDLL("libbpf.so.1", use_errno=True)
        libbpf.bpf_obj_get.argtypes = [ctypes.c_char_p]
        fd = libbpf.bpf_obj_get(os.path.join(self.world.bpf_pin_dir, "task_records").encode())
        self.assertGreaterEqual(fd, 0, "the pinned task_records map")
        pidfd = os.pidfd_open(tid, os.O_EXCL)  # PIDFD_THREAD: that very thread
        try:
            # struct ptags_task_record: lock, flags (VALID), set id, contid, token
            value = struct.pack("=IIQQQ", 0, 1, set_id, 2**64 - 1, 0)
            key = ctypes.c_int(pidfd)
            r = libbpf.bpf_map_update_elem(fd, ctypes.byref(key), ctypes.c_char_p(value),
                                           ctypes.c_uint64(4))  # BPF_F_LOCK
            self.assertEqual(r, 0, "writing thread %d: errno %d" % (tid, ctypes.get_errno()))
        finally:
            os.close(pidfd)
            os.close(fd)

    def set_id_of(self, pid):
        with open(os.path.join(self.world.bpf_pin_dir, "tasks")) as f:
            return {int(r[1]): int(r[2]) for r in (line.split() for line in f)}[pid]

    def test_find_tagged_reports_what_get_tags_reads(self):
        """A thread whose record differs from its main thread's (a write
        that failed in part) made FindTagged list the process with that
        thread's tags, which GetTags then did not show."""
        pid, tid = self.world.spawn_with_a_thread()
        other = self.world.spawn_target()
        self.assertOk(self.world.root_call("Apply", "uas", [pid, ["+app:a"]]))
        self.assertOk(self.world.root_call("Apply", "uas", [other, ["+other:b"]]))
        self.write_thread_record(tid, self.set_id_of(other))
        self.assertEqual(self.world.get_tags(pid), [("app:a", False, "")])
        found = self.assertOk(self.world.root_call("FindTagged", "s", ["other:*"]))[0]
        self.assertEqual([p for p, _ in found], [other], "GetTags shows no other:* on %d" % pid)
        found = self.assertOk(self.world.root_call("FindTagged", "s", ["app:*"]))[0]
        self.assertEqual([(p, [tuple(t) for t in tags]) for p, tags in found],
                         [(pid, [("app:a", False, "")])])

if __name__ == "__main__":
    unittest.main()
