# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_containers.py: audit container IDs through the real ptagsd on both
# backends: the kernel's rules, polkit, the registry, removal and restart.
#
# Mirrors the container-ID checks of the audit test suite. On ptags-lsm the
# kernel fixture serves /PID/audit_containerid (ptagsd is its trusted
# delegate, see tests/fixture/README.md); on bpf the IDs live in task storage
# of the real kernel.

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from gi.repository import Gio, GLib

import ptags_client
import test_logging
from test_limits import daemon_rss_kib
from ptags_harness import (INTERACTIVE_REQUIRED, NOBODY_UID, PYTHON, ClientProcess, HarnessError,
                           PtagsTestCase, pump_main_context, second_user_uid, unprivileged_argv,
                           wait_until)

UNSET = 2**64 - 1
REGISTER = "org.ptags.container.register"
INSPECT = "org.ptags.container.inspect"
# From src/daemon/names.h and libaudit.h.
MESSAGE_SET = "ad78356abe3048aaa71ad4a8241e2078"
MESSAGE_REFUSED_SET = "297b1404a82e40e4ab70035a932b8586"
MESSAGE_DROPPED = "bdd732546eb446778798009d294a0049"
AUDIT_USYS_CONFIG = 1111
WAIT_S = 5.0
NS_TYPES = ("cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts")


def kill_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class ContainerSignals:
    """ContainerRegistered and ContainerRemoved as ptagsd emits them."""

    def __init__(self, conn):
        self.registered = []
        self.removed = []
        self._conn = conn
        self._ids = [
            conn.signal_subscribe(ptags_client.BUS_NAME, ptags_client.INTERFACE, name,
                                  ptags_client.OBJECT_PATH, None, Gio.DBusSignalFlags.NONE,
                                  self._on_signal)
            for name in ("ContainerRegistered", "ContainerRemoved")]
        conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                       "GetId", None, None, Gio.DBusCallFlags.NONE, 5000, None)

    def _on_signal(self, _conn, _sender, _path, _iface, name, params):
        if name == "ContainerRegistered":
            self.registered.append(params.unpack())
        else:
            self.removed.append(params.unpack()[0])

    def pump(self, duration=0.0):
        pump_main_context(duration)

    def wait_removed(self, contid, timeout=10.0):
        def seen():
            self.pump()
            return contid in self.removed
        wait_until(seen, timeout, "ContainerRemoved(%d)" % contid)


class ContainerTestCase(PtagsTestCase):
    """A world whose ptagsd keeps its registry in a private directory and,
    on ptags-lsm, has the fixture trust it as the contid writer."""

    daemon_args = ()
    daemon_env = {}

    def setUp(self):
        run = tempfile.mkdtemp(prefix="ptags-contid-run-")
        self.addCleanup(shutil.rmtree, run, True)
        self.world_options = {"daemon_env": dict(self.daemon_env, RUNTIME_DIRECTORY=run),
                              "fixture_args": ["--contid-delegate"],
                              "daemon_args": list(self.daemon_args)}
        super().setUp()
        self.signals = ContainerSignals(self.world.conn)

    # ------------------------------------------------------------ calls

    def register(self, pid, contid, name=None, uuid=None):
        info = {}
        if name is not None:
            info["name"] = GLib.Variant("s", name)
        if uuid is not None:
            info["uuid"] = GLib.Variant("ay", uuid)
        return self.world.root_call("RegisterContainer", "uta{sv}", [pid, contid, info])

    def contid_of(self, pid):
        return self.assertOk(self.world.root_call("GetContainerId", "u", [pid]))[0]

    def container(self, contid):
        return self.assertOk(self.world.root_call("GetContainer", "t", [contid]))[0]

    # ------------------------------------------------------------ processes

    def shell(self, script, *args):
        """A root `sh -c SCRIPT` child in its own process group (killed
        whole at the end) with pipes on stdin and stdout."""
        proc = self.world.spawn("target", ["setsid", "sh", "-c", script, "sh"] + list(args),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(self._kill_group, proc.pid)
        wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % proc.pid)) != "setsid",
                   10, "setsid to exec the shell")
        return proc

    @staticmethod
    def _kill_group(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    @staticmethod
    def read_line(proc):
        line = proc.stdout.readline()
        if not line:
            raise HarnessError("the shell exited before reporting")
        return int(line)

    def client_with_child(self, uid=NOBODY_UID, before_exec="", child="sleep 600"):
        """A ptags_client (as @uid) that has one child of its own running
        @child (a shell command). Returns (client, child pid)."""
        workdir = tempfile.mkdtemp(dir=self.world.tmp)
        os.chmod(workdir, 0o777)
        script = os.path.join(workdir, "ptags_client.py")
        shutil.copy(os.path.join(os.path.dirname(ptags_client.__file__), "ptags_client.py"),
                    script)
        os.chmod(script, 0o644)
        pidfile = os.path.join(workdir, "child")
        body = (before_exec + '%s </dev/null >/dev/null 2>&1 & echo $! > "$1"; '
                'exec %s -I "$2" "$3"' % (child, PYTHON))
        argv = unprivileged_argv(uid, uid) + ["sh", "-c", body, "sh", pidfile, script,
                                              self.world.address]
        proc = self.world.spawn("client", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client = ClientProcess(proc)
        self.world._clients.append(client)
        child = int(open(pidfile).read())
        self.addCleanup(kill_quietly, child)
        return client, child

    def orphan(self):
        """A root `sleep` that is not a descendant of this test process."""
        proc = subprocess.run(["setsid", "sh", "-c", "sleep 600 </dev/null >/dev/null 2>&1 & "
                               "echo $!"], stdout=subprocess.PIPE, check=True, timeout=10)
        pid = int(proc.stdout)
        self.addCleanup(kill_quietly, pid)
        wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % pid)) == "sleep", 10,
                   "the orphan to exec sleep")
        return pid


class ContainerTests(ContainerTestCase):
    def test_setting_own_id_fails(self):
        # busctl is single-threaded and childless, so the self rule decides.
        out = self.world.busctl(["call", ptags_client.BUS_NAME, ptags_client.OBJECT_PATH,
                                 ptags_client.INTERFACE, "RegisterContainer", "uta{sv}", "0",
                                 "700", "0"], unprivileged=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("is the caller itself", out.stderr)
        self.assertEqual(self.assertOk(self.world.root_call("ListContainers"))[0], [])

    def test_register_child(self):
        self.assertIn("containers", self.world.get_property("Features"))
        target = self.world.spawn_target()
        uuid = bytes(range(16))
        before = time.time()
        self.assertOk(self.register(target, 100, name="web", uuid=uuid))
        self.assertEqual(self.contid_of(target), 100)
        info = self.container(100)
        self.assertEqual(info["contid"], 100)
        self.assertEqual(info["parent"], UNSET)
        self.assertEqual(bytes(info["uuid"]), uuid)
        self.assertEqual(info["name"], "web")
        self.assertEqual(info["leader"], target)
        self.assertEqual(info["owner"], 0)
        self.assertEqual(info["owner-pid"], os.getpid())
        self.assertLessEqual(abs(info["registered"] / 1e6 - before), 30)
        expected = []
        for kind in NS_TYPES:
            try:
                st = os.stat("/proc/%d/ns/%s" % (target, kind))
            except FileNotFoundError:
                continue
            expected.append([kind, st.st_dev, st.st_ino])
        self.assertEqual(sorted(info["namespaces"]), sorted(expected))
        listed = self.assertOk(self.world.root_call("ListContainers"))[0]
        self.assertEqual([c for c, _ in listed], [100])
        self.signals.pump(0.3)
        self.assertEqual([(c, p) for c, p, _ in self.signals.registered], [(100, target)])
        self.assertEqual(self.signals.registered[0][2]["name"], "web")

    def test_bad_info_is_refused(self):
        target = self.world.spawn_target()
        invalid = "org.freedesktop.DBus.Error.InvalidArgs"
        self.assertError(self.register(target, 102, uuid=b"\x01" * 15), invalid)
        self.assertError(self.register(target, 102, name="a\nb"), invalid)
        # C1 controls too: U+009B is a terminal's CSI, as ESC [ is.
        self.assertError(self.register(target, 102, name="\u009b2Jweb"), invalid)
        self.assertError(self.register(target, 102, name="web\u0085"), invalid)
        self.assertError(self.register(target, 102, name="x" * 257), invalid)
        # Noncharacters: sd-bus refuses every message holding one, so a
        # name with one broke ListContainers, GetContainer and the signal.
        for c in ("\ufdd0", "\ufdef", "\ufffe", "\U0001ffff", "\U0010ffff"):
            with self.subTest(name="U+%04X" % ord(c)):
                reply = self.register(target, 102, name="x" + c)
                self.assertError(reply, invalid)
                self.assertIn("noncharacter", reply.message)
        reply = self.world.root_call("RegisterContainer", "uta{sv}",
                                     [target, 102, {"colour": GLib.Variant("s", "red")}])
        self.assertError(reply, invalid)
        self.assertIn('"colour"', reply.message)
        # An unknown key is named shortened and escaped: it was echoed whole
        # into the reply and the journal (a key of 32 MiB made a reply over
        # MaxMessageBytes, and control bytes reached the log).
        key = "\x1b[2J" + "k" * 200
        reply = self.world.root_call("RegisterContainer", "uta{sv}",
                                     [target, 102, {key: GLib.Variant("s", "red")}])
        self.assertError(reply, invalid)
        self.assertLess(len(reply.message), 200, reply.message)
        self.assertIn('"\\u{001B}[2Jkkk', reply.message)
        # Quotes too: the key cannot close the message's quotation.
        reply = self.world.root_call("RegisterContainer", "uta{sv}",
                                     [target, 102, {'k" is fine, "x': GLib.Variant("s", "red")}])
        self.assertError(reply, invalid)
        self.assertIn('"k\\u{0022} is fine, \\u{0022}x"', reply.message)
        # A key of 100000 bytes is refused for its size before it is read.
        reply = self.world.root_call("RegisterContainer", "uta{sv}",
                                     [target, 102, {"k" * 100000: GLib.Variant("s", "red")}])
        self.assertError(reply, invalid)
        self.assertLess(len(reply.message), 200, reply.message[:400])
        # A key given twice, or many times: the bus allows an a{sv} of up
        # to 32 MiB, which a call would hold while polkit decides.
        twice = self.world.root_call("RegisterContainer", "uta{sv}",
                                     [target, 102, [("name", GLib.Variant("s", "a")),
                                                    ("name", GLib.Variant("s", "b"))]])
        self.assertError(twice, invalid)
        self.assertIn('"name" given twice', twice.message)
        many = self.world.root_call("RegisterContainer", "uta{sv}",
                                    [target, 102, [("name", GLib.Variant("s", "x" * 256))] * 5000])
        self.assertError(many, invalid)
        self.assertIn("5000 entries", many.message)
        # Past MaxMessageBytes the call is refused as it arrives.
        more = self.world.root_call("RegisterContainer", "uta{sv}",
                                    [target, 102, [("name", GLib.Variant("s", "x" * 256))] * 20000])
        self.assertError(more, "LimitExceeded")
        self.assertIn("MaxMessageBytes", more.message)
        self.assertEqual(self.contid_of(target), UNSET)
        self.assertOk(self.register(target, 102, name="x" * 256, uuid=b"\x01" * 16))

    def test_info_is_refused_before_waiting_for_polkit(self):
        """A call waiting for polkit holds its whole message, and the bus
        lets an a{sv} repeat a key up to 32 MiB: 32 such calls of one user
        held gigabytes. A bad info is refused before anything waits."""
        target = self.world.spawn_target()
        self.world.polkit.set_hang([REGISTER])
        out = self.world.busctl(["call", ptags_client.BUS_NAME, ptags_client.OBJECT_PATH,
                                 ptags_client.INTERFACE, "RegisterContainer", "uta{sv}",
                                 str(target), "103", "2000"] + ["name", "s", "x" * 256] * 2000)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("2000 entries", out.stderr)
        self.assertEqual(self.world.polkit.checks(), [], "polkit was asked")

    def test_register_by_pidfd(self):
        target = self.world.spawn_target()
        fd = os.pidfd_open(target)
        try:
            self.assertOk(self.world.root_call("RegisterContainerFd", "hta{sv}", [0, 101, {}],
                                               fds=[fd]))
        finally:
            os.close(fd)
        self.assertEqual(self.contid_of(target), 101)

    def test_registrant_adds_second_child(self):
        first, second = self.world.spawn_target(), self.world.spawn_target()
        self.assertOk(self.register(first, 110))
        self.assertOk(self.register(second, 110))
        self.assertEqual((self.contid_of(first), self.contid_of(second)), (110, 110))
        self.assertEqual(self.container(110)["leader"], first)

    def test_value_in_use_by_another_registrant_fails(self):
        self.assertOk(self.register(self.world.spawn_target(), 120))
        self.world.polkit.set_allowed([REGISTER])
        client, child = self.client_with_child()
        self.assertError(client.call("RegisterContainer", "uta{sv}", [child, 120, {}]),
                         "ContainerIdInUse")
        self.assertEqual(self.contid_of(child), UNSET)
        # The same caller and child with a free value succeed.
        self.assertOk(client.call("RegisterContainer", "uta{sv}", [child, 121, {}]))
        self.assertEqual(self.contid_of(child), 121)
        self.assertEqual(self.container(121)["owner"], NOBODY_UID)

    def test_unset_value_fails(self):
        target = self.world.spawn_target()
        self.assertError(self.register(target, UNSET), "InvalidContainerId")
        self.assertEqual(self.contid_of(target), UNSET)
        self.assertOk(self.register(target, UNSET - 1))

    def test_setting_again_fails(self):
        target = self.world.spawn_target()
        self.assertOk(self.register(target, 130))
        self.assertError(self.register(target, 131), "AlreadyRegistered")
        self.assertError(self.register(target, 130), "AlreadyRegistered")
        self.assertEqual(self.contid_of(target), 130)
        self.assertError(self.world.root_call("GetContainer", "t", [131]), "NoSuchContainer")

    def test_target_with_child_fails(self):
        shell = self.shell("sleep 600 </dev/null >/dev/null 2>&1 & echo $!; wait")
        self.read_line(shell)
        self.assertError(self.register(shell.pid, 140), "TargetBusy")
        self.assertEqual(self.contid_of(shell.pid), UNSET)

    def test_multithreaded_target_fails(self):
        code = ("import threading, time; "
                "threading.Thread(target=time.sleep, args=(600,), daemon=True).start(); "
                "print(1, flush=True); time.sleep(600)")
        proc = self.world.spawn("target", [PYTHON, "-c", code], stdout=subprocess.PIPE)
        proc.stdout.readline()
        self.assertError(self.register(proc.pid, 150), "TargetBusy")
        self.assertEqual(self.contid_of(proc.pid), UNSET)

    def test_non_descendant_fails_for_non_root(self):
        self.world.polkit.set_allowed([REGISTER])
        client, child = self.client_with_child()
        stranger = self.world.spawn_target(unprivileged=True)
        self.assertError(client.call("RegisterContainer", "uta{sv}", [stranger, 160, {}]),
                         "NotDescendant")
        self.assertEqual(self.contid_of(stranger), UNSET)
        self.assertOk(client.call("RegisterContainer", "uta{sv}", [child, 160, {}]))

    def test_root_caller_is_exempt_from_the_descendant_rule_only(self):
        orphan = self.orphan()
        self.assertOk(self.register(orphan, 161))
        self.assertEqual(self.contid_of(orphan), 161)

    def test_nested_registration_shows_parent(self):
        # A shell registered as 170 later becomes an orchestrator (the
        # client) whose own child inherits 170 and is given 171 from inside.
        self.world.polkit.set_allowed([REGISTER])
        gate_dir = tempfile.mkdtemp(dir=self.world.tmp)
        os.chmod(gate_dir, 0o777)
        gate = os.path.join(gate_dir, "go")
        os.mkfifo(gate, 0o666)
        holder = os.open(gate, os.O_RDWR)  # the shell's read blocks until we write
        self.addCleanup(os.close, holder)
        # The shell waits (childless, one thread) until told to go on; the
        # client starts in a thread because it answers only after that.
        shell_wait = 'read go < "%s"; ' % gate
        result = {}

        def start():
            result["client"] = self.client_with_child(before_exec=shell_wait)

        t = threading.Thread(target=start)
        t.start()
        leader = wait_until(lambda: self._shell_waiting_on(gate), 10, "the shell to wait")
        self.assertOk(self.register(leader, 170))
        os.write(holder, b"go\n")
        t.join(20)
        client, child = result["client"]
        self.assertEqual(client.pid, leader)
        self.assertEqual(self.contid_of(child), 170, "the child inherits the container")
        self.assertOk(client.call("RegisterContainer", "uta{sv}", [child, 171, {}]))
        self.assertEqual(self.contid_of(child), 171)
        self.assertEqual(self.container(171)["parent"], 170)
        self.assertEqual(self.container(170)["parent"], UNSET)

    def _shell_waiting_on(self, gate):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    if gate.encode() in f.read() and os.readlink("/proc/%s/exe" % name).endswith(
                            "sh"):
                        return int(name)
            except OSError:
                continue
        return None

    def test_removed_after_last_process_exits(self):
        shell = self.shell('read go; sleep 600 </dev/null >/dev/null 2>&1 & echo $!; read x')
        self.assertOk(self.register(shell.pid, 180))
        shell.stdin.write(b"go\n")
        shell.stdin.flush()
        child = self.read_line(shell)
        self.assertEqual(self.contid_of(child), 180, "the child inherits the container")
        os.kill(shell.pid, signal.SIGKILL)
        shell.wait(timeout=10)
        self.signals.pump(1.0)
        self.assertEqual(self.signals.removed, [], "a process still carries 180")
        self.container(180)
        os.kill(child, signal.SIGKILL)
        self.signals.wait_removed(180)
        self.assertEqual(self.signals.removed, [180])
        self.assertError(self.world.root_call("GetContainer", "t", [180]), "NoSuchContainer")

    def test_registry_survives_sigkill_restart(self):
        kept, ended = self.world.spawn_target(), self.world.spawn_target()
        self.assertOk(self.register(kept, 190, name="kept", uuid=b"\x01" * 16))
        self.assertOk(self.register(ended, 191))
        before = self.container(190)
        self.world.daemon.kill()
        self.world.daemon.wait(timeout=10)
        self.world.kill(ended)  # ends while ptagsd is down
        self.world.start_daemon()
        self.assertEqual(self.container(190), before)
        self.assertEqual(self.contid_of(kept), 190)
        self.assertError(self.world.root_call("GetContainer", "t", [191]), "NoSuchContainer")
        # Still watched: its exit is noticed by the new ptagsd.
        signals = ContainerSignals(self.world.conn)
        self.world.kill(kept)
        signals.wait_removed(190)

    def test_removal_while_down_is_signalled_once_serving(self):
        """A container whose processes all ended while ptagsd was down is
        dropped when ptagsd starts; orchestrators learn it only from
        ContainerRemoved, so it must be sent once ptagsd owns its name."""
        ended = self.world.spawn_target()
        self.assertOk(self.register(ended, 192))
        self.world.daemon.kill()
        self.world.daemon.wait(timeout=10)
        self.world.kill(ended)
        signals = ContainerSignals(self.world.conn)
        self.world.start_daemon()
        signals.wait_removed(192)
        self.assertEqual(signals.removed, [192])

    def test_ids_in_use_stay_in_use_when_the_registry_is_lost(self):
        # The registry is what tells "in use by another registrant" on the
        # bpf backends. Removed (an administrator clearing /run/ptags) or
        # unreadable, it used to leave the IDs processes carry free for
        # anyone to register again, joining their processes. So did an ID
        # whose group alone is bad (the rest of the file read as before).
        registry = os.path.join(self.world.daemon_env["RUNTIME_DIRECTORY"], "containers")
        for loss in ("removed", "unreadable", "bad group"):
            with self.subTest(loss=loss):
                kept = self.world.spawn_target()
                self.assertOk(self.register(kept, 195))
                self.world.daemon.kill()
                self.world.daemon.wait(timeout=10)
                if loss == "removed":
                    os.unlink(registry)
                elif loss == "unreadable":
                    with open(registry, "w") as f:
                        f.write("[195\nnot a key file\n")
                else:
                    with open(registry) as f:
                        text = f.read()
                    self.assertIn("[195]", text)
                    with open(registry, "w") as f:
                        f.write(text.replace("[195]", "[195.0]"))
                self.world.start_daemon()
                info = self.container(195)
                self.assertEqual((info["owner"], info["owner-pid"], info["leader"]),
                                 (0xFFFFFFFF, 0, kept))
                self.world.polkit.set_allowed([REGISTER])
                client, child = self.client_with_child()
                self.assertError(client.call("RegisterContainer", "uta{sv}", [child, 195, {}]),
                                 "ContainerIdInUse")
                self.assertEqual(self.contid_of(child), UNSET)
                # Free again once its last process has exited.
                signals = ContainerSignals(self.world.conn)
                self.world.kill(kept)
                signals.wait_removed(195)
                self.assertOk(client.call("RegisterContainer", "uta{sv}", [child, 195, {}]))
                self.assertEqual(self.contid_of(child), 195)
                signals.removed.clear()
                self.world.kill(client.pid)
                kill_quietly(child)
                signals.wait_removed(195)

    def test_register_needs_polkit(self):
        client, child = self.client_with_child()
        self.assertError(client.call("RegisterContainer", "uta{sv}", [child, 200, {}]),
                         "NotAuthorized")
        self.assertEqual(self.contid_of(child), UNSET)
        checks = [c for c in self.world.polkit.checks() if c["action"] == REGISTER]
        self.assertEqual(len(checks), 1)
        details = checks[0]["details"]
        self.assertEqual(details["contid"], "200")
        self.assertEqual(details["container-name"], "")
        self.assertEqual(details["pid"], str(child))
        self.assertEqual(details["target-uid"], str(NOBODY_UID))
        self.assertEqual(details["target-comm"], "sleep")
        self.assertEqual(details["self"], "false")
        self.world.polkit.set_allowed([REGISTER])
        self.assertOk(client.call("RegisterContainer", "uta{sv}", [child, 200, {}]))
        self.assertEqual(self.contid_of(child), 200)

    def test_register_target_text_that_is_not_utf8_is_unknown(self):
        program = self.world.sleep_named_not_utf8().decode("ascii", "surrogateescape")
        client, child = self.client_with_child(
            child="exec \"$(printf '%s')\" 600" % program.replace("\udcff", "\\377"))
        wait_until(lambda: os.readlink("/proc/%d/exe" % child).endswith("\udcffsleep"), 10,
                   "the child to run its program")
        self.assertError(client.call("RegisterContainer", "uta{sv}", [child, 201, {}]),
                         "NotAuthorized")
        checks = [c for c in self.world.polkit.checks() if c["action"] == REGISTER]
        self.assertEqual(len(checks), 1)
        details = checks[0]["details"]
        self.assertEqual((details["pid"], details["target-comm"]), (str(child), ""))
        self.assertNotIn("target-exe", details)

    def register_while_it_changes(self, contid, then, changed, what):
        """Register a child shell as @contid while polkit hangs; meanwhile
        the shell runs @then (GATE in it names a FIFO) and @changed(pid)
        becomes true. Returns the child and the target-comm of every
        registration check polkit got."""
        def asleep(pid):
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "S"

        gate_dir = tempfile.mkdtemp(dir=self.world.tmp)
        os.chmod(gate_dir, 0o777)
        gate = os.path.join(gate_dir, "go")
        os.mkfifo(gate, 0o666)
        holder = os.open(gate, os.O_RDWR)
        self.addCleanup(os.close, holder)
        client, child = self.client_with_child(
            child="exec sh -c 'read go < %s; %s'" % (gate, then.replace("GATE", gate)))
        wait_until(lambda: os.readlink("/proc/%d/exe" % child).endswith("sh"), 10,
                   "the child shell")
        self.world.polkit.set_allowed([REGISTER])
        self.world.polkit.set_hang([REGISTER])
        client.send("RegisterContainer", "uta{sv}", [child, contid, {}])
        self.world.polkit.wait_hanging(1)
        os.write(holder, b"go\n")
        # Asleep (in its next read, or sleep) too: an exec shows its new
        # program in /proc before it is over, and before the kernel's exec
        # hooks (bpf's mark) run.
        wait_until(lambda: changed(child) and asleep(child), 10, what)
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertOk(client.receive())
        checks = [c for c in self.world.polkit.checks() if c["action"] == REGISTER]
        return child, [c["details"]["target-comm"] for c in checks]

    def test_target_exec_during_authorization_is_checked_again(self):
        child, comms = self.register_while_it_changes(
            220, "exec sleep 600",
            lambda pid: os.readlink("/proc/%d/exe" % pid).endswith("sleep"),
            "the child to exec sleep")
        self.assertEqual(comms, ["sh", "sleep"],
                         "polkit is asked again about the program that now runs")
        self.assertEqual(self.contid_of(child), 220)

    def test_target_exec_of_the_same_program_during_authorization(self):
        """The same program again (same exe, uids and unit) is another
        program too: the bpf backend marks every exec, and polkit is asked
        again. ptags-lsm has no such mark, and cannot tell."""
        child, comms = self.register_while_it_changes(
            226, 'exec sh -c "while :; do read x < GATE; done"',
            lambda pid: b"while" in open("/proc/%d/cmdline" % pid, "rb").read(),
            "the child to exec sh again")
        self.assertEqual(comms, ["sh", "sh"] if self.world.backend == "bpf" else ["sh"])
        self.assertEqual(self.contid_of(child), 226)

    def test_target_renamed_during_authorization_is_not_asked_again(self):
        """A process names itself (target-comm) whenever it likes, so a rule
        cannot rely on that name, and a rename while polkit decides is no
        reason to ask again: a target renaming itself in a loop made every
        registration but root's fail. (A change of program is asked about
        again, above; of unit, see daemon-unit-target.)"""
        child, comms = self.register_while_it_changes(
            225, "printf renamed > /proc/$$/comm; while :; do read x < GATE; done",
            lambda pid: open("/proc/%d/comm" % pid).read() == "renamed\n",
            "the child to rename itself")
        self.assertEqual(comms, ["sh"], "polkit was asked again about a new name")
        self.assertEqual(self.contid_of(child), 225)

    def test_concurrent_registrations_of_one_value(self):
        # Both pass polkit at once; the rules decide at the write, so the
        # second finds the value taken by the first.
        first, first_child = self.client_with_child()
        second, second_child = self.client_with_child(uid=second_user_uid())
        self.world.polkit.set_allowed([REGISTER])
        self.world.polkit.set_hang([REGISTER])
        first.send("RegisterContainer", "uta{sv}", [first_child, 230, {}])
        second.send("RegisterContainer", "uta{sv}", [second_child, 230, {}])
        self.world.polkit.wait_hanging(2)
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        replies = [first.receive(), second.receive()]
        self.assertEqual(sorted(r.error or "ok" for r in replies),
                         ["ok", "org.ptags.Error.ContainerIdInUse"], replies)
        ids = {self.contid_of(first_child), self.contid_of(second_child)}
        self.assertEqual(ids, {230, UNSET})
        self.assertEqual(len(self.assertOk(self.world.root_call("ListContainers"))[0]), 1)

    def test_inspect_answers_about_the_container_polkit_judged(self):
        """polkit judges the container an ID names when GetContainer comes
        in (its name is a detail rules may read). If that container ends and
        its ID is registered again while polkit decides, the answer must not
        show the new one."""
        first = self.world.spawn_target()
        self.assertOk(self.register(first, 212, name="public"))
        client = self.world.spawn_client()
        self.world.polkit.set_allowed([INSPECT])
        self.world.polkit.set_hang([INSPECT])
        client.send("GetContainer", "t", [212])
        self.world.polkit.wait_hanging(1)
        self.world.kill(first)
        self.signals.wait_removed(212)
        second = self.world.spawn_target()
        self.assertOk(self.register(second, 212, name="secret"))
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        reply = client.receive()
        self.assertError(reply, "NoSuchContainer")
        self.assertIn("ended while polkit was asked", reply.message)
        self.assertEqual(self.assertOk(client.call("GetContainer", "t", [212]))[0]["name"],
                         "secret", "asked again, polkit judges the new one")

    def test_container_id_of_a_process_that_executes_meanwhile_is_not_told(self):
        """polkit judges GetContainerId by the target's program, user and
        unit; one that executes another program while polkit decides (a
        setuid one, say) is not the process it allowed."""
        shell = self.shell("read go; exec sleep 600")
        self.assertOk(self.register(shell.pid, 213))
        client = self.world.spawn_client()
        self.world.polkit.set_allowed([INSPECT])
        self.world.polkit.set_hang([INSPECT])
        client.send("GetContainerId", "u", [shell.pid])
        self.world.polkit.wait_hanging(1)
        shell.stdin.write(b"go\n")
        shell.stdin.flush()
        wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % shell.pid)) == "sleep",
                   10, "the target to execute sleep")
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertError(client.receive(), "NotAuthorized")
        # Asked again, polkit judges the program it runs now.
        self.assertEqual(self.assertOk(client.call("GetContainerId", "u", [shell.pid]))[0], 213)

    def test_inspect_needs_polkit_for_others(self):
        target = self.world.spawn_target()
        self.assertOk(self.register(target, 210))
        client, child = self.client_with_child()
        # Its own processes are free to read.
        self.assertEqual(self.assertOk(client.call("GetContainerId", "u", [0]))[0], UNSET)
        self.assertEqual(self.assertOk(client.call("GetContainerId", "u", [child]))[0], UNSET)
        self.assertEqual([c["action"] for c in self.world.polkit.checks()], [])
        self.assertError(client.call("GetContainerId", "u", [target]), "NotAuthorized")
        # A process of the caller's real uid running as root (a setuid
        # program it started) is not its own either, as /proc has it.
        setuid_like = self.world.spawn("target", ["setpriv", "--ruid=%d" % NOBODY_UID,
                                                  "sleep", "600"])
        self.addCleanup(setuid_like.kill)
        wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % setuid_like.pid))
                   == "sleep", 10, "setpriv to exec sleep")
        reply = client.call("GetContainerId", "u", [setuid_like.pid])
        self.assertError(reply, "NotAuthorized")
        # The refusal names what was asked about (it said 'for tag "-"').
        self.assertIn("inspect for the container ID of process %d: not authorized"
                      % setuid_like.pid, reply.message)
        reply = client.call("GetContainer", "t", [210])
        self.assertError(reply, "NotAuthorized")
        self.assertIn("inspect for container 210: not authorized", reply.message)
        # An ID nobody registered looks the same, or the answer would tell
        # which IDs others use.
        self.assertError(client.call("GetContainer", "t", [211]), "NotAuthorized")
        self.assertEqual(self.assertOk(client.call("ListContainers"))[0], [])
        self.assertEqual({c["action"] for c in self.world.polkit.checks()}, {INSPECT})
        self.world.polkit.set_allowed([INSPECT])
        self.assertEqual(self.assertOk(client.call("GetContainerId", "u", [target]))[0], 210)
        self.assertEqual(self.assertOk(client.call("GetContainer", "t", [210]))[0]["leader"],
                         target)
        self.assertError(client.call("GetContainer", "t", [211]), "NoSuchContainer")
        listed = self.assertOk(client.call("ListContainers"))[0]
        self.assertEqual([c for c, _ in listed], [210])


class ContainerAuthorizationTests(ContainerTestCase):
    """The container methods' polkit checks, as ChangeMethodTests
    (test_methods.py) checks the changes': denied, challenged without and
    with interaction (the caller's ALLOW_INTERACTIVE_AUTHORIZATION reaches
    polkit), then allowed. ListContainers never asks interactively."""

    def check_authorization_paths(self, client, method, sig, args, action, check_refused,
                                  check_allowed, pidfd_of=None, repeatable=True):
        """@check_refused() after each refusal, @check_allowed(out args)
        after each success; @repeatable: the call may succeed twice."""
        polkit = self.world.polkit
        kw = {"pidfd_of": pidfd_of} if pidfd_of is not None else {}

        def asked(interactive):
            checks = polkit.checks()
            polkit.clear_checks()
            self.assertTrue(checks, "%s must have asked polkit" % method)
            self.assertEqual({c["action"] for c in checks}, {action})
            for c in checks:
                self.assertEqual(c["subject_kind"], "system-bus-name")
                self.assertEqual(c["subject"].get("name"), client.unique_name)
                self.assertEqual(c["flags"] & 1, 1 if interactive else 0,
                                 "the caller %s interaction" % ("allowed" if interactive
                                                                 else "did not allow"))

        polkit.clear_checks()
        # polkit says no, whether or not the caller allows interaction.
        for interactive in (False, True):
            self.assertError(client.call(method, sig, args, interactive=interactive, **kw),
                             "NotAuthorized")
            check_refused()
            asked(interactive)
        # A challenge: without interaction the caller is told to allow it...
        polkit.set_challenge([action])
        self.assertError(client.call(method, sig, args, **kw), INTERACTIVE_REQUIRED)
        check_refused()
        asked(False)
        # ...with it, the agent answers: no, then yes.
        polkit.set_interactive_answer(False)
        self.assertError(client.call(method, sig, args, interactive=True, **kw), "NotAuthorized")
        check_refused()
        asked(True)
        polkit.set_interactive_answer(True)
        check_allowed(self.assertOk(client.call(method, sig, args, interactive=True, **kw)))
        asked(True)
        if repeatable:
            polkit.set_challenge([])
            polkit.set_allowed([action])
            check_allowed(self.assertOk(client.call(method, sig, args, **kw)))
            asked(False)

    def check_registration(self, method, contid, by_pidfd):
        client, child = self.client_with_child()

        def refused():
            self.assertEqual(self.contid_of(child), UNSET)
            self.signals.pump()
            self.assertEqual(self.signals.registered, [])
            self.assertEqual(self.assertOk(self.world.root_call("ListContainers"))[0], [])

        def allowed(_out):
            self.assertEqual(self.contid_of(child), contid)
            self.assertEqual(self.container(contid)["owner"], NOBODY_UID)
            self.signals.pump(0.2)
            self.assertEqual([(c, p) for c, p, _ in self.signals.registered], [(contid, child)])

        if by_pidfd:  # the pidfd is the call's first fd
            sig, target, pidfd_of = "hta{sv}", 0, child
        else:
            sig, target, pidfd_of = "uta{sv}", child, None
        self.check_authorization_paths(client, method, sig, [target, contid, {}], REGISTER,
                                       refused, allowed, pidfd_of=pidfd_of, repeatable=False)

    def test_register_container(self):
        self.check_registration("RegisterContainer", 250, by_pidfd=False)

    def test_register_container_fd(self):
        self.check_registration("RegisterContainerFd", 251, by_pidfd=True)

    def test_get_container_id(self):
        target = self.world.spawn_target()
        self.assertOk(self.register(target, 252))
        self.check_authorization_paths(
            self.world.spawn_client(), "GetContainerId", "u", [target], INSPECT, lambda: None,
            lambda out: self.assertEqual(out, [252]))

    def test_get_container(self):
        target = self.world.spawn_target()
        self.assertOk(self.register(target, 253, name="web"))
        self.check_authorization_paths(
            self.world.spawn_client(), "GetContainer", "t", [253], INSPECT, lambda: None,
            lambda out: self.assertEqual((out[0]["leader"], out[0]["name"]), (target, "web")))

    def test_list_containers_never_asks_interactively(self):
        """ListContainers narrows the list to the caller's own when polkit
        says no: it asks without interaction even when the caller allows
        it, so a list never waits for a password dialog."""
        target = self.world.spawn_target()
        self.assertOk(self.register(target, 254))
        client = self.world.spawn_client()
        polkit = self.world.polkit
        # The agent would say yes, if it were asked.
        polkit.set_challenge([INSPECT])
        polkit.set_interactive_answer(True)
        for interactive in (True, False):
            polkit.clear_checks()
            listed = self.assertOk(client.call("ListContainers", interactive=interactive))[0]
            self.assertEqual(listed, [], "the challenge narrows the list to the caller's own")
            checks = polkit.checks()
            self.assertEqual([c["action"] for c in checks], [INSPECT])
            self.assertEqual(checks[0]["subject"].get("name"), client.unique_name)
            self.assertEqual(checks[0]["flags"] & 1, 0,
                             "ListContainers' check allowed interaction (caller's flag: %s)"
                             % interactive)
        # Allowed, every container is listed; still asked without interaction.
        polkit.set_challenge([])
        polkit.set_allowed([INSPECT])
        polkit.clear_checks()
        listed = self.assertOk(client.call("ListContainers", interactive=True))[0]
        self.assertEqual([c for c, _ in listed], [254])
        self.assertEqual([c["flags"] & 1 for c in polkit.checks()], [0])

    def test_register_fd_needs_polkit(self):
        """RegisterContainerFd by a caller other than root: refused unless
        polkit says yes (root's success is test_register_by_pidfd)."""
        client, child = self.client_with_child()
        self.assertError(client.call("RegisterContainerFd", "hta{sv}", [0, 255, {}],
                                     pidfd_of=child), "NotAuthorized")
        self.assertEqual(self.contid_of(child), UNSET)
        checks = [c for c in self.world.polkit.checks() if c["action"] == REGISTER]
        self.assertEqual(len(checks), 1)
        self.assertEqual((checks[0]["details"]["pid"], checks[0]["details"]["contid"]),
                         (str(child), "255"))
        self.world.polkit.set_allowed([REGISTER])
        self.assertOk(client.call("RegisterContainerFd", "hta{sv}", [0, 255, {}],
                                  pidfd_of=child))
        self.assertEqual(self.contid_of(child), 255)
        info = self.container(255)
        self.assertEqual((info["leader"], info["owner"]), (child, NOBODY_UID))


class ContainerListBudgetTests(ContainerTestCase):
    backends = ("bpf",)  # the authority's bound, the same on both backends
    daemon_args = ("--max-polkit-calls=1",)

    def test_a_list_polkit_was_not_asked_about_is_no_answer(self):
        """ListContainers narrows the list to the caller's own containers
        when polkit says no. It did so too when polkit was never asked (the
        caller's uid had MaxPolkitCalls waiting already), and so answered
        as if the others' containers did not exist."""
        self.assertOk(self.register(self.world.spawn_target(), 214))
        self.world.polkit.set_allowed([INSPECT])
        self.world.polkit.set_hang([INSPECT])
        waiting = self.world.spawn_client()
        waiting.send("ListContainers", "", [])
        self.world.polkit.wait_hanging(1)
        client = self.world.spawn_client()
        self.assertError(client.call("ListContainers"), "LimitExceeded")
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertEqual([c for c, _ in self.assertOk(waiting.receive())[0]], [214])


class ContainerListPolkitFailureTests(ContainerTestCase):
    daemon_args = ("--polkit-timeout=1",)

    def test_a_list_polkit_failed_to_answer_is_no_answer(self):
        """ListContainers narrows the list to the caller's own containers
        when polkit says no. It did so too when polkit failed to answer
        (here: no answer within --polkit-timeout), so a caller polkit would
        have allowed was told the others' containers did not exist."""
        self.assertOk(self.register(self.world.spawn_target(), 215))
        self.world.polkit.set_allowed([INSPECT])
        self.world.polkit.set_hang([INSPECT])
        client = self.world.spawn_client()
        reply = client.call("ListContainers")
        self.assertError(reply, "NotAuthorized")
        self.assertIn("polkit did not answer", reply.message)
        self.world.polkit.set_hang([])
        self.world.polkit.release()
        self.assertEqual([c for c, _ in self.assertOk(client.call("ListContainers"))[0]], [215])


class ContainerReadFaultTests(ContainerTestCase):
    # The kernel fixture fails reads of a process named contid-eio.
    backends = ("ptags-lsm",)

    def test_an_id_that_cannot_be_read_is_not_taken_for_unset(self):
        """A process whose container ID cannot be read is refused another
        ID with the read's error, and keeps its own: a failed read never
        counts as "no ID yet"."""
        # One thread, no children: registrable. Each line it reads renames it.
        script = ("import sys\n"
                  "for name in ('contid-eio', 'python3'):\n"
                  "    sys.stdin.readline()\n"
                  "    open('/proc/self/comm', 'w').write(name)\n"
                  "    print(name, flush=True)\n"
                  "sys.stdin.readline()\n")
        proc = self.world.spawn("target", [PYTHON, "-c", script], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        target = proc.pid

        def rename():
            proc.stdin.write(b"\n")
            proc.stdin.flush()
            return proc.stdout.readline().decode().strip()

        self.assertOk(self.register(target, 140))
        self.assertEqual(rename(), "contid-eio")
        reply = self.register(target, 141)
        self.assertError(reply, "Failed")
        self.assertIn("cannot read the container ID of process %d" % target, reply.message)
        self.assertError(self.world.root_call("GetContainerId", "u", [target]), "Failed")
        self.assertEqual(rename(), "python3")
        self.assertEqual(self.contid_of(target), 140)
        self.assertError(self.world.root_call("GetContainer", "t", [141]), "NoSuchContainer")


    def test_a_carrier_that_cannot_be_read_keeps_the_container(self):
        """The registered process exits, leaving a child whose ID reads
        fail: the container stays, as the child may carry its ID (it
        does), and nobody else may register the value."""
        # The registered parent forks once and exits on the next line;
        # SIGUSR2 gives the child the faulting name, SIGUSR1 its own back.
        # (A sleep, not signal.pause(): a signal that comes just before
        # pause() is handled only after the next one.)
        script = ("import os, signal, sys, time\n"
                  "sys.stdin.readline()\n"
                  "if os.fork() == 0:\n"
                  "    def rename(name):\n"
                  "        return lambda *_: open('/proc/self/comm', 'w').write(name)\n"
                  "    signal.signal(signal.SIGUSR1, rename('python3'))\n"
                  "    signal.signal(signal.SIGUSR2, rename('contid-eio'))\n"
                  "    print(os.getpid(), flush=True)\n"
                  "    while True:\n"
                  "        time.sleep(0.05)\n"
                  "sys.stdin.readline()\n")
        proc = self.world.spawn("target", [PYTHON, "-c", script], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        self.assertOk(self.register(proc.pid, 150))
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        child = int(proc.stdout.readline())
        self.addCleanup(kill_quietly, child)

        def comm():
            with open("/proc/%d/comm" % child) as f:
                return f.read().strip()

        # Read once while its parent runs: the fixture's inheritance sticks.
        self.assertEqual(self.contid_of(child), 150)
        os.kill(child, signal.SIGUSR2)
        wait_until(lambda: comm() == "contid-eio", 10, "the child to take the faulting name")
        self.assertError(self.world.root_call("GetContainerId", "u", [child]), "Failed")
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        proc.wait(timeout=10)  # the last pinned member: a scan follows
        self.signals.pump(1.0)
        self.assertEqual(self.signals.removed, [], "process %d still carries 150" % child)
        os.kill(child, signal.SIGUSR1)
        wait_until(lambda: comm() == "python3", 10, "the child to take its name back")
        self.assertEqual(self.contid_of(child), 150)
        self.container(150)
        self.world.polkit.set_allowed([REGISTER])
        client, other = self.client_with_child()
        self.assertError(client.call("RegisterContainer", "uta{sv}", [other, 150, {}]),
                         "ContainerIdInUse")
        self.assertEqual(self.contid_of(other), UNSET)

class ContainerBoundTests(ContainerTestCase):
    daemon_args = ("--max-containers-per-uid=2",)

    def test_per_uid_bound(self):
        self.assertEqual(self.world.get_property("MaxContainersPerUid"), 2)
        targets = [self.world.spawn_target() for _ in range(3)]
        self.assertOk(self.register(targets[0], 300))
        self.assertOk(self.register(targets[1], 301))
        reply = self.register(targets[2], 302)
        self.assertError(reply, "LimitExceeded")
        self.assertIn("MaxContainersPerUid", reply.message)
        self.assertEqual(self.contid_of(targets[2]), UNSET)
        # Adding to a container the caller holds is no new container.
        self.assertOk(self.register(targets[2], 300))
        # Another uid has its own bound.
        self.world.polkit.set_allowed([REGISTER])
        client, child = self.client_with_child()
        self.assertOk(client.call("RegisterContainer", "uta{sv}", [child, 303, {}]))
        # A container that ends frees its place.
        fresh = self.world.spawn_target()
        self.world.kill(targets[1])
        self.signals.wait_removed(301)
        self.assertOk(self.register(fresh, 304))


# Sends COUNT RegisterContainer calls whose info ptagsd must refuse (an
# unknown key, or a uuid of the wrong size, each carrying SIZE bytes), and
# prints the set of answers. Run as nobody by the test below.
REFUSED_INFO_SENDER = """
import sys
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
address, pid, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
conn = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
    | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
answers = set()
for i in range(count):
    if i % 2:
        info = {"uuid": GLib.Variant.new_from_bytes(GLib.VariantType("ay"),
                                                    GLib.Bytes(bytes(size)), True)}
    else:
        info = {"name": GLib.Variant("s", "web"), "colour": GLib.Variant("s", "x" * size)}
    try:
        conn.call_sync("org.ptags.Manager", "/org/ptags/Manager", "org.ptags.Manager",
                       "RegisterContainer", GLib.Variant("(uta{sv})", (pid, 400 + i, info)),
                       None, 0, 60000, None)
        answers.add("ok")
    except GLib.Error as e:
        answers.add(Gio.DBusError.get_remote_error(e) or e.message)
print(" ".join(sorted(answers)))
"""


class ContainerInfoMemoryTests(ContainerTestCase):
    # Freed memory must leave RSS (ASan would otherwise hold 256 MiB back).
    daemon_env = {"ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "")
                                   + ":quarantine_size_mb=16").lstrip(":")}

    def test_refused_info_is_not_kept(self):
        """An unprivileged caller's refused info costs ptagsd nothing once
        answered: each refused value used to stay in memory with the part of
        the message holding it, so anyone could grow ptagsd without bound."""
        target = self.world.spawn_target(unprivileged=True)
        count, size = 32, 2 * 1024 * 1024

        def send():
            proc = self.world.spawn(
                "refused-info", unprivileged_argv() + [
                    PYTHON, "-I", "-c", REFUSED_INFO_SENDER, self.world.address, str(target),
                    str(count), str(size)], stdout=subprocess.PIPE)
            out, _ = proc.communicate(timeout=300)
            self.assertEqual(proc.returncode, 0)
            self.assertEqual(out.split(), [b"org.freedesktop.DBus.Error.InvalidArgs"])

        send()  # the heap's high-water mark for calls this big
        before = daemon_rss_kib(self.world)
        send()
        grown = daemon_rss_kib(self.world) - before
        print("\nrefused info: %d calls of %d MiB, ptagsd RSS grew %d KiB"
              % (count, size >> 20, grown))
        self.assertLess(grown, 24 * 1024, "ptagsd kept the refused values")
        self.assertEqual(self.contid_of(target), UNSET)
        self.assertEqual(self.assertOk(self.world.root_call("ListContainers"))[0], [])


class ContainerInheritanceTests(ContainerTestCase):
    backends = ("bpf",)

    def test_fork_clone_and_exec_inherit(self):
        code = ("import threading, time, os; "
                "t = threading.Thread(target=time.sleep, args=(600,), daemon=True); t.start(); "
                "print(t.native_id, flush=True); time.sleep(600)")
        shell = self.shell('read go; (sleep 600; true) </dev/null >/dev/null 2>&1 & echo $!; '
                           '%s -c "$1" & echo $!; read x' % PYTHON, code)
        self.assertOk(self.register(shell.pid, 400))
        shell.stdin.write(b"go\n")
        shell.stdin.flush()
        forked = self.read_line(shell)
        threaded = self.read_line(shell)
        thread_id = self.read_line(shell)
        self.assertEqual(self.contid_of(forked), 400, "fork without exec")
        wait_until(lambda: os.readlink("/proc/%d/exe" % threaded).endswith(
            os.path.basename(os.path.realpath(PYTHON))), 10, "the child to exec python")
        self.assertEqual(self.contid_of(threaded), 400, "fork and exec")
        # Records are per thread: the pinned iterator shows the thread's own.
        with open(os.path.join(self.world.bpf_pin_dir, "tasks")) as f:
            rows = [line.split() for line in f]
        by_tid = {int(r[1]): int(r[3]) for r in rows}
        self.assertEqual(by_tid.get(thread_id), 400, "a thread created after registration")
        self.assertEqual(self.contid_of(shell.pid), 400)

    def test_kept_while_a_hopping_process_carries_it(self):
        # A scan is a snapshot: a process that forks and exits between the
        # scan and its pinning leaves its ID to a child the scan never saw.
        # Found exited, it used to count as "no carrier left", and the
        # container went while the chain still carried its ID. (On the
        # fixture, a child never read before its parent exits inherits
        # nothing: the kernel's inheritance is tested here only.)
        script = ("import os, sys, time\n"
                  "sys.stdin.readline()\n"
                  "for _ in range(600):\n"
                  "    if os.fork():\n"
                  "        os._exit(0)\n"
                  "    time.sleep(0.001)\n"
                  "print(os.getpid(), flush=True)\n"
                  "time.sleep(600)\n")
        proc = self.world.spawn("target", ["setsid", PYTHON, "-c", script],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(self._kill_group, proc.pid)
        wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % proc.pid)) != "setsid",
                   10, "setsid to exec python")
        self.assertOk(self.register(proc.pid, 170))
        log_start = os.path.getsize(self.world.daemon_log_path)
        hop_start = time.monotonic()
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        last = self.read_line(proc)
        hopped = time.monotonic() - hop_start
        self.addCleanup(kill_quietly, last)
        self.signals.pump(0.5)
        self.assertEqual(self.signals.removed, [], "process %d still carries 170" % last)
        # Every hop ends the process ptagsd watches, and a scan walks every
        # process: the scans of one container are spaced (100 ms, up to 4
        # scans each time), so 600 hops cannot keep ptagsd scanning.
        with open(self.world.daemon_log_path, "rb") as f:
            f.seek(log_start)
            scans = f.read().count(b"container scan:")
        print("600 hops in %.2f s: %d scans" % (hopped, scans))
        self.assertLessEqual(scans, 4 * (int(hopped / 0.1) + 2))
        self.assertEqual(self.contid_of(last), 170)
        self.container(170)
        self.world.polkit.set_allowed([REGISTER])
        client, child = self.client_with_child()
        self.assertError(client.call("RegisterContainer", "uta{sv}", [child, 170, {}]),
                         "ContainerIdInUse")
        self.assertEqual(self.contid_of(child), UNSET)


    def test_hopping_containers_share_their_scans(self):
        # Four containers whose processes hop (fork, exit) at once: their
        # checks share one walk of every process, at most one per 100 ms
        # for them all. Each container used to scan on its own spacing, so
        # many containers, or a process of each, kept ptagsd scanning.
        script = ("import os, sys, time\n"
                  "sys.stdin.readline()\n"
                  "for _ in range(400):\n"
                  "    if os.fork():\n"
                  "        os._exit(0)\n"
                  "    time.sleep(0.001)\n"
                  "print(os.getpid(), flush=True)\n"
                  "time.sleep(600)\n")
        procs = []
        contids = range(180, 184)
        for contid in contids:
            proc = self.world.spawn("target", ["setsid", PYTHON, "-c", script],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self.addCleanup(self._kill_group, proc.pid)
            wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % proc.pid))
                       != "setsid", 10, "setsid to exec python")
            self.assertOk(self.register(proc.pid, contid))
            procs.append(proc)
        log_start = os.path.getsize(self.world.daemon_log_path)
        hop_start = time.monotonic()
        for proc in procs:
            proc.stdin.write(b"\n")
            proc.stdin.flush()
        last = []
        for proc in procs:
            last.append(self.read_line(proc))
            self.addCleanup(kill_quietly, last[-1])
        hopped = time.monotonic() - hop_start
        self.signals.pump(0.5)
        self.assertEqual(self.signals.removed, [])
        with open(self.world.daemon_log_path, "rb") as f:
            f.seek(log_start)
            scans = f.read().count(b"container scan:")
        print("4 x 400 hops in %.2f s: %d scans" % (hopped, scans))
        self.assertGreater(scans, 0, "the containers were never checked")
        self.assertLessEqual(scans, int((hopped + 0.5) / 0.1) + 2)
        # Still each its own, and each found at the end of its chain.
        self.assertEqual([self.contid_of(pid) for pid in last], list(contids))
        for contid in contids:
            self.container(contid)


class ContainerLoggingTests(test_logging.LoggingTests):
    """The journal entries and audit records of registrations, refused ones
    and removals, as they leave ptagsd (the sinks of test_logging)."""

    def setUp(self):
        run = tempfile.mkdtemp(prefix="ptags-contid-run-")
        self.addCleanup(shutil.rmtree, run, True)
        self.world_options = {"daemon_env": {"RUNTIME_DIRECTORY": run},
                              "fixture_args": ["--contid-delegate"]}
        super().setUp()
        self.audit = test_logging.AuditReader()
        self.addCleanup(self.audit.close)

    def container_records(self, timeout, count):
        """Fields of ptagsd's container audit records, waiting for @count."""
        found = []
        deadline = time.monotonic() + timeout
        while len(found) < count and time.monotonic() < deadline:
            for kind, body in self.audit.records(0.2):
                match = test_logging.USER_RECORD.match(body)
                if kind != AUDIT_USYS_CONFIG or match is None:
                    continue
                # Names such as old-contid hold a dash.
                fields = dict(re.findall(r'([\w-]+)=("[^"]*"|\S+)', match.group(2)))
                if fields.get("op") in ("set", "drop"):
                    fields["record-pid"] = match.group(1)
                    found.append(fields)
        return found

    def test_refusals_before_the_target_is_pinned_are_audited(self):
        """A registration refused as soon as the caller is known (pid 0
        from a caller whose process cannot be proven, or a caller in
        another pid namespace) gave no record, though every refused attempt
        of a known caller is to be audited."""
        guarded = self.world.spawn_client(undumpable=True)
        self.assertError(guarded.call("RegisterContainer", "uta{sv}", [0, 805, {}]),
                         "NoSuchProcess")
        records = [f for f in self.container_records(WAIT_S, 1) if f.get("contid") == "805"]
        self.assertEqual(len(records), 1, records)
        self.assertEqual((records[0]["op"], records[0]["opid"], records[0]["res"]),
                         ("set", "0", "failed"))
        self.assertEqual(records[0]["uid"], "65534")
        # A caller in another pid namespace names pids ptagsd does not: the
        # record names none rather than one of the host's.
        inner = self.world.spawn_client(pid_namespace=True)
        self.assertError(inner.call("RegisterContainer", "uta{sv}", [1, 806, {}]),
                         "NotSupported")
        records = [f for f in self.container_records(WAIT_S, 1) if f.get("contid") == "806"]
        self.assertEqual([(f["opid"], f["res"]) for f in records], [("-1", "failed")])

    def test_container_audit_and_journal(self):
        caller = os.getpid()
        self.journal.drain()
        self.assertOk(self.world.root_call("RegisterContainer", "uta{sv}",
                                           [self.target, 800, {}]))
        self.assertError(self.world.root_call("RegisterContainer", "uta{sv}",
                                              [self.target, 801, {}]), "AlreadyRegistered")
        done, refused = self.container_records(WAIT_S, 2)
        for fields in (done, refused):
            self.assertEqual(fields["record-pid"], str(self.daemon_pid))
            self.assertEqual(fields["op"], "set")
            self.assertEqual(fields["opid"], str(self.target))
            self.assertEqual(fields["caller_pid"], str(caller))
            self.assertEqual(fields["uid"], "0")
        self.assertEqual((done["contid"], done["old-contid"], done["res"]),
                         ("800", "-1", "success"))
        self.assertEqual((refused["contid"], refused["old-contid"], refused["res"]),
                         ("801", "800", "failed"))

        entry, _ = self.journal.wait_for(
            lambda e: e.all("MESSAGE_ID") == [MESSAGE_SET], "a registration entry")
        self.assertEqual(entry.sender_pid, self.daemon_pid)
        self.assertEqual(entry.one("PTAGS_CONTID"), "800")
        self.assertEqual(entry.one("PTAGS_PID"), str(self.target))
        self.assertEqual(entry.one("PTAGS_CALLER_PID"), str(caller))
        self.assertEqual(entry.one("PTAGS_RESULT"), "success")
        entry, _ = self.journal.wait_for(
            lambda e: e.all("MESSAGE_ID") == [MESSAGE_REFUSED_SET], "a refusal entry")
        self.assertEqual(entry.one("PTAGS_CONTID"), "801")
        self.assertEqual(entry.one("PTAGS_RESULT"), "org.ptags.Error.AlreadyRegistered")

        self.world.kill(self.target)
        (drop,) = self.container_records(WAIT_S, 1)
        self.assertEqual((drop["op"], drop["contid"], drop["res"]), ("drop", "800", "success"))
        entry, _ = self.journal.wait_for(
            lambda e: e.all("MESSAGE_ID") == [MESSAGE_DROPPED], "a removal entry")
        self.assertEqual(entry.one("PTAGS_CONTID"), "800")
