# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_ctl_containers.py: `ptagsctl container register|show|list` and `monitor`'s container
# lines against the real ptagsd (polkit mock) with audit container IDs (kernel fixture delegate).
#
# Like tests/integration/test_containers.py, the fixture runs with --contid-delegate (ptagsd is
# its trusted contid writer) and ptagsd keeps its registry in a private directory.

import json
import os
import re
import select
import shutil
import tempfile
import time
import unittest

import ctl_run
from ctl_run import run, run_json
from ptags_harness import NOBODY_UID, HarnessError
from test_ptagsctl import DENIED, INVALID, NO_PROCESS, OK, USAGE, CtlTestCase

UNSET = 2**64 - 1
REGISTER = "org.ptags.container.register"
INSPECT = "org.ptags.container.inspect"
UUID = "00010203-0405-0607-0809-0a0b0c0d0e0f"
NS_TYPES = ("cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts")


def read_line(pipe, timeout=20):
    """One line from an unbuffered pipe, or HarnessError after @timeout."""
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([pipe], [], [], left)[0]:
            raise HarnessError("no complete line within %d s: %r" % (timeout, line))
        byte = pipe.read(1)
        if not byte:
            raise HarnessError("the pipe closed after %r" % line)
        line += byte
    return line.decode()


class ContainerCtlTestCase(CtlTestCase):
    def setUp(self):
        run_dir = tempfile.mkdtemp(prefix="ptags-ctl-contid-run-")
        self.addCleanup(shutil.rmtree, run_dir, True)
        self.world_options = {"daemon_env": {"RUNTIME_DIRECTORY": run_dir},
                              "fixture_args": ["--contid-delegate"]}
        super().setUp()

    def expected(self, pid, contid, name=None, uuid=None, owner=0, owner_pid=None):
        """The JSON shape of man/ptagsctl.1 for a container ptagsctl (as
        @owner, pid @owner_pid) registered with @pid as its first process,
        as the kernel describes @pid's namespaces (registered_usec apart)."""
        namespaces = []
        for kind in NS_TYPES:
            try:
                st = os.stat("/proc/%d/ns/%s" % (pid, kind))
            except FileNotFoundError:
                continue
            namespaces.append({"type": kind, "device": st.st_dev, "inode": st.st_ino})
        return {"contid": contid, "parent": None, "uuid": uuid, "name": name, "leader": pid,
                "owner": owner, "owner_pid": owner_pid, "namespaces": namespaces}

    def assertContainer(self, got, want):
        got = dict(got)
        registered = got.pop("registered_usec")
        self.assertLessEqual(abs(registered / 1e6 - time.time()), 60)
        if want["owner_pid"] is None:
            self.assertIsInstance(got["owner_pid"], int)
            want = dict(want, owner_pid=got["owner_pid"])
        self.assertEqual(got, want)


class ContainerCommandTests(ContainerCtlTestCase):
    def test_register_show_and_list_as_root(self):
        self.assertIn("containers", self.world.get_property("Features"))
        target = self.target()
        out = run(self.world, "container", "register", str(target), "100", "--name", "web",
                  "--uuid", UUID)
        self.assertExit(out, OK)
        self.assertEqual(out.stdout, "")
        self.assertEqual(self.assertOk(self.world.root_call("GetContainerId", "u", [target]))[0],
                         100)
        # Through a pidfd: a pid reused meanwhile is never registered.
        self.assertIn("RegisterContainerFd: Process %d registered" % target,
                      self.world.read_log("ptagsd.log"))
        want = self.expected(target, 100, name="web", uuid=UUID)

        # By ID, and by the process in it: one shape.
        self.assertContainer(run_json(self, self.world, "container", "show", "100"), want)
        self.assertContainer(run_json(self, self.world, "container", "show", "pid:%d" % target),
                             want)
        out = run(self.world, "container", "show", "100")
        self.assertExit(out, OK)
        fields = dict(re.match(r"^ *([^:]+): (.*)$", ln).groups()
                      for ln in out.stdout.splitlines() if ln.strip())
        self.assertEqual(fields["Container"], "100")
        self.assertEqual(fields["Name"], "web")
        self.assertEqual(fields["UUID"], UUID)
        self.assertEqual(fields["Leader"], str(target))
        self.assertEqual(fields["Owner"], "root (0)")
        self.assertNotIn("Parent", fields)
        self.assertIn("mnt:[%d]" % os.stat("/proc/%d/ns/mnt" % target).st_ino,
                      fields["Namespaces"])
        # Labels right-aligned, as hostnamectl prints them.
        self.assertEqual({ln.index(":") for ln in out.stdout.split("\n\n")[0].splitlines()},
                         {len("Registered")})

        # A second container, no name: the list, sorted by ID, as a table and JSON.
        other = self.target()
        self.assertExit(run(self.world, "container", "register", str(other), "7"), OK)
        got = run_json(self, self.world, "container", "list")
        self.assertEqual([c["contid"] for c in got["containers"]], [7, 100])
        self.assertContainer(got["containers"][1], want)
        self.assertContainer(got["containers"][0], self.expected(other, 7))
        out = run(self.world, "container", "list")
        self.assertExit(out, OK)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["CONTID", "NAME", "PARENT", "LEADER", "OWNER"])
        self.assertEqual(lines[1].split(), ["7", "-", "-", str(other), "root"])
        self.assertEqual(lines[2].split(), ["100", "web", "-", str(target), "root"])
        self.assertEqual(lines[0].index("NAME"), lines[2].index("web"), "aligned columns")
        self.assertEqual(lines[3:], ["", "2 containers listed."])
        self.assertEqual(len(run(self.world, "--no-legend", "container", "list")
                             .stdout.splitlines()), 2)

    def test_register_json_and_self(self):
        target = self.target()
        got = run_json(self, self.world, "container", "register", str(target),
                       str(2**63 + 5), "--uuid", UUID.replace("-", "").upper())
        self.assertEqual(got["pid"], target)
        self.assertContainer(got["container"], self.expected(target, 2**63 + 5, uuid=UUID))
        # ptagsctl's own process: ptagsd's rules refuse, named.
        self.assertExit(run(self.world, "container", "register", "self", "5"), INVALID,
                        "org.ptags.Error.SelfTarget")
        self.assertExit(run(self.world, "container", "show", "self"), NO_PROCESS,
                        "in no container")

    def test_failures_name_what_failed(self):
        target = self.target()
        self.assertExit(run(self.world, "container", "register", str(target), "9"), OK)
        cases = [
            # Bad command lines: nothing is asked.
            (["container"], USAGE, "needs one of"),
            (["container", "frobnicate"], USAGE, "Unknown container command"),
            (["container", "list", "extra"], USAGE, "Wrong number"),
            (["container", "register", str(target)], USAGE, "Wrong number"),
            (["container", "register", str(target), "abc"], USAGE, "Invalid container ID"),
            (["container", "register", str(target), "--", "-1"], USAGE, "Invalid container ID"),
            (["container", "register", str(target), "+1"], USAGE, "Invalid container ID"),
            (["container", "register", str(target), str(2**64)], USAGE, "Invalid container ID"),
            (["container", "register", "0", "5"], USAGE, "Invalid process"),
            (["container", "register", str(target), "5", "--uuid", "0123"], USAGE,
             "Invalid UUID"),
            (["container", "register", str(target), "5", "--uuid", UUID[:-1] + "g"], USAGE,
             "Invalid UUID"),
            (["container", "show", "--name", "x", "9"], USAGE, "belong to 'container register'"),
            (["list", "1", "--uuid", UUID], USAGE, "belong to 'container register'"),
            (["container", "show", "pid:x"], USAGE, "Invalid process"),
            (["container", "show", "web"], USAGE, "Invalid container ID"),
            # The ID of every process in no container, not one container's.
            (["container", "show", str(UNSET)], USAGE, "is the unset container ID"),
            # Refused by ptagsd, with its named error.
            (["container", "register", str(target), str(UNSET)], INVALID,
             "org.ptags.Error.InvalidContainerId"),
            (["container", "register", str(target), "10"], INVALID,
             "org.ptags.Error.AlreadyRegistered"),
            # Each ptagsctl is a process of its own, so another registrant:
            # it cannot add a process to the container an earlier one made.
            (["container", "register", str(self.target()), "9"], INVALID,
             "9 is in use by a container registered by another process "
             "(org.ptags.Error.ContainerIdInUse)"),
            (["container", "register", str(self.target()), "5", "--name", "bad\x01name"],
             INVALID, "org.freedesktop.DBus.Error.InvalidArgs"),
            # Latin-1: no D-Bus string, so ptagsctl refuses it itself.
            (["container", "register", str(self.target()), "5", "--name", "caf\udce9"],
             INVALID, "'caf\\x{E9}' is not valid UTF-8"),
            # Gone before ptagsctl holds a pidfd: nothing is asked (see below).
            (["container", "register", str(self.world.dead_pid()), "5"], NO_PROCESS,
             "No such process"),
            (["container", "show", "4242"], NO_PROCESS, "org.ptags.Error.NoSuchContainer"),
            (["container", "show", "pid:%d" % self.target()], NO_PROCESS, "in no container"),
            (["container", "show", "pid:%d" % self.world.dead_pid()], NO_PROCESS,
             "org.ptags.Error.NoSuchProcess"),
        ]
        for argv, code, message in cases:
            with self.subTest(argv=argv):
                self.assertExit(run(self.world, *argv), code, message)
        # Nothing but the first registration happened.
        got = run_json(self, self.world, "container", "list")
        self.assertEqual([(c["contid"], c["leader"]) for c in got["containers"]], [(9, target)])
        self.assertIn("Cannot register the container",
                      run(self.world, "container", "register", str(target), "10").stderr)

    def test_names_that_do_not_print_are_escaped_but_exact_in_json(self):
        target = self.target()
        # (ptagsd refuses control characters in names: these are a format
        # character and a line separator.)
        name = "web\u202e2J\u2028x"
        shown = "web\\u{202E}2J\\u{2028}x"
        self.assertExit(run(self.world, "container", "register", str(target), "12", "--name",
                            name), OK)
        for argv in (["container", "show", "12"], ["container", "list"]):
            with self.subTest(argv=argv):
                out = run(self.world, *argv)
                self.assertExit(out, OK)
                self.assertEqual([c for c in "\u202e\u2028" if c in out.stdout], [],
                                 out.stdout)
                self.assertIn(shown, out.stdout)
        self.assertEqual(run_json(self, self.world, "container", "show", "12")["name"], name)

    def test_register_of_an_exited_process_asks_nothing(self):
        """Without a pidfd the call could only name the pid, which a new
        process may take meanwhile: ptagsctl fails on its own, asking no one."""
        dead = self.world.dead_pid()
        out = run(self.world, "container", "register", str(dead), "5")
        self.assertExit(out, NO_PROCESS, "No such process")
        self.assertNotIn("org.ptags.Error", out.stderr, "the answer came from ptagsd")
        self.assertNotIn("RegisterContainer", self.world.read_log("ptagsd.log"))
        self.assertEqual(self.assertOk(self.world.root_call("ListContainers"))[0], [])

    def test_register_of_a_thread_id_names_no_process(self):
        """A thread id is not a process id: no such process, as ptagsd
        itself says of one."""
        _, tid = self.world.spawn_with_a_thread()
        out = run(self.world, "container", "register", str(tid), "5")
        self.assertExit(out, NO_PROCESS, "No such process")
        self.assertEqual(self.assertOk(self.world.root_call("ListContainers"))[0], [])

    def test_unprivileged_user_is_refused(self):
        mine = self.target()  # nobody's, but not ptagsctl's child
        out = run(self.world, "container", "register", str(mine), "5", uid=NOBODY_UID)
        self.assertExit(out, DENIED, "org.ptags.Error.NotAuthorized")
        self.assertEqual([c["action"] for c in self.world.polkit.checks()], [REGISTER])
        # Even with polkit's yes, only a descendant may be registered.
        self.world.polkit.set_allowed([REGISTER])
        self.assertExit(run(self.world, "container", "register", str(mine), "5", uid=NOBODY_UID),
                        INVALID, "org.ptags.Error.NotDescendant")
        self.assertEqual(self.assertOk(self.world.root_call("ListContainers"))[0], [])

        # Root's container: hidden from nobody unless polkit allows inspect.
        roots = self.world.spawn_target()
        self.assertExit(run(self.world, "container", "register", str(roots), "77"), OK)
        self.assertExit(run(self.world, "container", "show", "77", uid=NOBODY_UID), DENIED,
                        "org.ptags.Error.NotAuthorized")
        self.assertExit(run(self.world, "container", "show", "pid:%d" % roots, uid=NOBODY_UID),
                        DENIED, "org.ptags.Error.NotAuthorized")
        out = run(self.world, "container", "list", uid=NOBODY_UID)
        self.assertExit(out, OK)
        self.assertEqual(out.stdout, "No containers.\n")
        self.assertEqual(run_json(self, self.world, "container", "list", uid=NOBODY_UID),
                         {"containers": []})
        self.world.polkit.set_allowed([INSPECT])
        self.assertEqual(run_json(self, self.world, "container", "show", "77",
                                  uid=NOBODY_UID)["leader"], roots)
        self.assertEqual([c["contid"] for c in run_json(
            self, self.world, "container", "list", uid=NOBODY_UID)["containers"]], [77])

    def test_monitor_sees_another_clients_registration_and_its_end(self):
        for json_mode in (False, True):
            contid = 300 + json_mode
            with ctl_run.monitor(self.world, json_mode, bufsize=0) as mon:
                self.assertIn("Monitoring", read_line(mon.stderr))
                target = self.world.spawn_target()
                # Another client registers (the harness's own connection).
                self.assertOk(self.world.root_call("RegisterContainer", "uta{sv}",
                                                   [target, contid, {}]))
                registered = read_line(mon.stdout)
                self.world.kill(target)
                removed = read_line(mon.stdout)
            if json_mode:
                got = json.loads(registered)
                self.assertEqual((got["event"], got["contid"], got["pid"]),
                                 ("container-registered", contid, target))
                self.assertEqual((got["container"]["contid"], got["container"]["leader"]),
                                 (contid, target))
                self.assertEqual(json.loads(removed),
                                 {"event": "container-removed", "contid": contid})
            else:
                self.assertEqual(registered, "%d: registered in container %d\n"
                                 % (target, contid))
                self.assertEqual(removed, "Container %d removed\n" % contid)


class ContainerCompletionTests(ContainerCtlTestCase):
    def test_verbs_options_pids_and_container_ids(self):
        def complete(line):
            return ctl_run.complete(self, self.world, line)

        self.assertIn("container", complete("ptagsctl con"))
        self.assertEqual(complete("ptagsctl container "), ["register", "show", "list"])
        self.assertEqual(complete("ptagsctl container re"), ["register"])
        self.assertIn("--uuid=", complete("ptagsctl container register 1 2 --"))
        self.assertNotIn("--uuid=", complete("ptagsctl container show --"))
        target = self.target()
        self.assertIn(str(target), complete("ptagsctl container register --name x %s"
                                            % str(target)[:-1]))
        self.assertIn("self", complete("ptagsctl container register "))
        self.assertExit(run(self.world, "container", "register", str(target), "4711"), OK)
        self.assertEqual(complete("ptagsctl container show 47"), ["4711"])
        self.assertIn("pid:", complete("ptagsctl container show "))
        self.assertIn("pid:%d" % target, complete("ptagsctl container show pid:%s"
                                                  % str(target)[:-1]))
        self.assertEqual(complete("ptagsctl container show 4711 "), [])

if __name__ == "__main__":
    unittest.main(verbosity=2)
