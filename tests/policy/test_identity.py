# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_identity.py: the caller and the target are who ptagsd thinks they are, tried as an attacker
# would on the REAL bus (our policy) with the REAL polkitd and the shipped rule.
#
# Run one case per meson test, inside `unshare --mount --propagation private`:
#   test_identity.py OrphanedConnection.test_reused_pid_of_the_connector_gains_nothing

import json
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_world import HarnessError, PolicyTestCase, setpriv_argv, wait_until  # noqa: E402
import ptags_client  # noqa: E402,I100  (policy_world put tests/lib on the path)
import ptags_harness  # noqa: E402

import gi  # noqa: E402

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NAME, PATH, IFACE = "org.ptags.Manager", "/org/ptags/Manager", "org.ptags.Manager"
ERR = "org.ptags.Error."


class OrphanPeer:
    """orphan_peer.py as @user: a connection whose connecting process has exited."""

    def __init__(self, world, user="nobody", call_first=False, then_exec=None, own=None,
                 exec_when_told=False):
        """own: a well-known name the connection owns too; exec_when_told:
        the connector runs @then_exec only at exec_now()."""
        script = os.path.join(world.tmp, "orphan_peer.py")
        with open(os.path.join(HERE, "orphan_peer.py")) as src, open(script, "w") as dst:
            dst.write(src.read())
        os.chmod(script, 0o644)
        argv = setpriv_argv(pwd.getpwnam(user)) + [ptags_harness.PYTHON, "-I", script,
                                                  world.address]
        if own is not None:
            argv += ["own", own]
        if call_first:
            argv += ["call-first"]
        if then_exec is not None:
            argv += ["exec", then_exec] + (["on-signal"] if exec_when_told else [])
        self.then_exec = then_exec
        self.proc = world.spawn("orphan", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        first = json.loads(self._read_line(10))
        self.connector_pid, self.unique_name = first["pid"], first["unique_name"]
        # setpriv execs python, so the Popen is the connector itself.
        if then_exec is None:
            self.proc.wait(timeout=10)

    def exec_now(self):
        """The connector (made with exec_when_told) runs its program now;
        returns once it does."""
        os.kill(self.connector_pid, signal.SIGUSR1)
        wait_until(lambda: os.readlink("/proc/%d/exe" % self.connector_pid) == self.then_exec,
                   10, "the connector to run %s" % self.then_exec)

    def _read_line(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise HarnessError("orphan_peer.py did not answer in %ds" % timeout)
        line = self.proc.stdout.readline()
        if not line:
            raise HarnessError("orphan_peer.py closed its output")
        return line

    def call(self, method, sig="", args=()):
        request = {"method": method, "sig": sig, "args": list(args)}
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        return ptags_client.Reply.from_json(json.loads(self._read_line(30)))


# An administrator's rule: nobody may add tags to its own processes.
SELF_RULE = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("self") == "true") {
        return polkit.Result.YES;
    }
});
"""


class OrphanedConnection(PolicyTestCase):
    world_options = {"admin_rules": {"40-self.rules": SELF_RULE}}

    def test_reused_pid_of_the_connector_gains_nothing(self):
        self.attack(OrphanPeer(self.world))

    def test_reused_pid_after_the_connection_was_identified(self):
        # ptagsd identified (and remembers) this connection's process while
        # it lived; its exit must end that, not hand it to the pid's next owner.
        self.attack(OrphanPeer(self.world, call_first=True))

    def attack(self, peer):
        w = self.world
        # A root process (every capability, CAP_MAC_ADMIN included) now holds
        # the pid the bus still reports for the attacker's connection.
        root_pid = w.spawn_target_at(peer.connector_pid)
        self.assertOk(w.root_call("AddTag", "usb", [root_pid, "app:root-only", False]))

        # pid 0 would mean the root process: refused, named.
        self.assertError(peer.call("AddTag", "usb", [0, "app:pwned", False]), ERR + "NoSuchProcess")
        self.assertError(peer.call("Apply", "uas", [0, ["+app:pwned"]]), ERR + "NoSuchProcess")
        # Naming the root process: not self, no rights from its tags or its
        # capabilities, so the shipped rule does not say yes.
        self.assertError(peer.call("AddTag", "usb", [root_pid, "app:pwned", False]),
                         ERR + "NotAuthorized")
        # A service asking about this client must not get the root process's tags.
        self.assertError(w.root_call("PeerHasTag", "ss", [peer.unique_name, "app:root-only"]),
                         ERR + "NoSuchProcess")
        self.assertError(w.root_call("GetPeerTags", "s", [peer.unique_name]), ERR + "NoSuchProcess")
        self.assertEqual(w.get_tags(root_pid), [("app:root-only", False, "")])

        # Reads need no caller identity and still work for this connection.
        self.assertOk(peer.call("GetTags", "u", [root_pid]))

    def test_reused_pid_taken_by_the_same_user_lends_nothing(self):
        # Processes of one uid differ in their tags (and, under Yama or in a
        # sandbox, cannot trace one another): a later process of the
        # attacker's own uid, holding a tag the attacker lacks, must not be
        # taken for the connection's either.
        w = self.world
        peer = OrphanPeer(w)
        after_ptagsd_saw_every_join(w)
        victim = w.spawn_target_at(peer.connector_pid, unprivileged=True)
        assert_lends_nothing(self, peer, victim)
        # Next to it, a connection of the same uid whose opener still runs.
        assert_proven(self, w.spawn_client_as("nobody"))

    def test_connections_older_than_every_join_kept_are_still_dated(self):
        # ptagsd once kept only the last 2048 joins, and dated older
        # connections by the oldest kept, later than their own join.
        w = self.world
        client = w.spawn_client_as("nobody")
        peer = OrphanPeer(w)
        join_and_leave(w.address, 2100)
        assert_lends_nothing(self, peer, w.spawn_target_at(peer.connector_pid, unprivileged=True))
        assert_proven(self, client)

    def test_a_pid_taken_before_every_join_kept_is_still_dated(self):
        # The other order: the victim takes the connector's pid first, then
        # 2100 connections join and leave, so that the connection's join is
        # no longer among the last ones; its date must not become later
        # than the victim's start.
        w = self.world
        client = w.spawn_client_as("nobody")
        peer = OrphanPeer(w)
        after_ptagsd_saw_every_join(w)
        victim = w.spawn_target_at(peer.connector_pid, unprivileged=True)
        join_and_leave(w.address, 2100)
        assert_lends_nothing(self, peer, victim)
        assert_proven(self, client)


def after_ptagsd_saw_every_join(w):
    """ptagsd dates a connection by when it read the bus's announcement of
    it, and knows a process's start to a clock tick (10 ms). Outside a test
    a pid is taken again only after a full turn of the pid space, long after
    both; the tests steer it within milliseconds. So first ptagsd reads
    every announcement made so far (a call to it is read after them), and
    two ticks pass."""
    w.root_call("GetTags", "u", [os.getpid()])
    time.sleep(2.5 / os.sysconf("SC_CLK_TCK"))


def join_and_leave(address, count):
    """@count connections join the bus and leave it, one after another."""
    flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
             Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    for _ in range(count):
        Gio.DBusConnection.new_for_address_sync(address, flags, None, None).close_sync(None)


def assert_lends_nothing(test, peer, victim):
    """@victim, a process of the attacker's uid that took the pid the bus
    reports for @peer's connection, is not taken for that connection."""
    w = test.world
    test.assertOk(w.root_call("AddTag", "usb", [victim, "app:camera", False]))
    # A service asking whether this client holds app:camera.
    test.assertError(w.root_call("PeerHasTag", "ss", [peer.unique_name, "app:camera"]),
                     ERR + "NoSuchProcess")
    test.assertError(w.root_call("GetPeerTags", "s", [peer.unique_name]), ERR + "NoSuchProcess")
    # pid 0 is not the victim, so the "self" rule does not apply to it.
    test.assertError(peer.call("AddTag", "usb", [0, "app:pwned", False]), ERR + "NoSuchProcess")
    test.assertError(peer.call("Apply", "uas", [0, ["+app:pwned"]]), ERR + "NoSuchProcess")
    test.assertEqual(w.get_tags(victim), [("app:camera", False, "")])


def assert_proven(test, client):
    """@client's own process counts as its caller: pid 0 and the "self" rule."""
    test.assertOk(client.call("AddTag", "usb", [0, "app:mine", False]))
    reply = test.world.root_call("PeerHasTag", "ss", [client.unique_name, "app:mine"])
    test.assertOk(reply)
    test.assertEqual(reply.value, [True])


class ConnectionOlderThanPtagsd(PolicyTestCase):
    # ptagsd is started by the first call to it, so its first callers
    # always connected before it ran.
    world_options = {"admin_rules": {"40-self.rules": SELF_RULE}, "with_daemon": False}

    def test_a_process_started_after_ptagsd_did_not_open_an_older_connection(self):
        w = self.world
        client = w.spawn_client_as("nobody")
        first, second = OrphanPeer(w), OrphanPeer(w)
        w.start_daemon()
        after_ptagsd_saw_every_join(w)
        # Before and after ptagsd has seen any connection join.
        assert_lends_nothing(self, first, w.spawn_target_at(first.connector_pid, unprivileged=True))
        later = w.spawn_client_as("nobody")
        assert_lends_nothing(self, second,
                             w.spawn_target_at(second.connector_pid, unprivileged=True))
        assert_proven(self, client)
        assert_proven(self, later)


def status_ids(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return [int(n) for n in line.split()[1:]]
    return []


class ElevatedConnector(PolicyTestCase):
    """The process that opened a connection, identified by ptagsd as an
    ordinary process of the caller's uid, then executes a setuid-root
    program (su or passwd waiting for a password will do), while a child
    it forked keeps using the connection. ptagsd kept lending the child the
    identity it had checked once: the root process's CAP_MAC_ADMIN made
    every change a right the caller holds, which the shipped rule allows."""

    def test_a_connector_that_becomes_root_lends_nothing(self):
        w = self.world
        suid_sleep = os.path.join(w.tmp, "suid-sleep")
        shutil.copy("/usr/bin/sleep", suid_sleep)
        os.chown(suid_sleep, 0, 0)
        os.chmod(suid_sleep, 0o4755)
        victim = w.spawn_target()
        self.assertOk(w.root_call("AddTag", "usb", [victim, "app:victim", False]))
        peer = OrphanPeer(w, call_first=True, then_exec=suid_sleep)
        self.addCleanup(peer.proc.kill)
        connector = peer.connector_pid
        wait_until(lambda: status_ids(connector, "Uid")[1:2] == [0], 10,
                   "the connector to run the setuid program")

        # Its capabilities are not the caller's: no right, so no yes.
        reply = peer.call("AddTag", "usb", [victim, "app:pwned", False])
        self.assertError(reply, ERR + "NotAuthorized")
        self.assertError(peer.call("Apply", "uas", [victim, ["-app:victim"]]),
                         ERR + "NotAuthorized")
        self.assertEqual(w.get_tags(victim), [("app:victim", False, "")])
        # Nor is the root process the caller's own any more.
        self.assertError(peer.call("AddTag", "usb", [0, "app:pwned", False]),
                         ERR + "NoSuchProcess")
        self.assertError(w.root_call("PeerHasTag", "ss", [peer.unique_name, "app:x"]),
                         ERR + "NoSuchProcess")
        # Reads need no caller identity and still work for this connection.
        self.assertOk(peer.call("GetTags", "u", [victim]))


# nobody may add app:camera to its own process while that runs the camera app.
CAMERA_RULE = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("tag") == "app:camera" && action.lookup("self") == "true" &&
        action.lookup("target-exe") == "%s") {
        return polkit.Result.YES;
    }
});
"""


# A service's own bus policy (its system.d file): nobody owns its name.
SERVICE_NAME = "org.example.CameraService"
SERVICE_POLICY = '<policy user="nobody"><allow own="%s"/></policy>' % SERVICE_NAME


class ConnectorRunsAnotherProgram(PolicyTestCase):
    """The process that opened a connection, proven by ptagsd, then
    executes a program an administrator's rule trusts by its target-exe,
    while a child it forked keeps using the connection. ptagsd kept taking
    the child's calls as the camera app's: AddTag(0, ...) reached the
    camera app as "self", and a service's PeerHasTag saw its tags."""

    def setUp(self):
        # The camera app: any program, at a path only the test writes.
        self.camera_dir = tempfile.mkdtemp(prefix="ptags-camera-")
        self.addCleanup(shutil.rmtree, self.camera_dir, True)
        os.chmod(self.camera_dir, 0o755)
        self.camera_app = os.path.join(self.camera_dir, "camera-app")
        shutil.copy("/usr/bin/sleep", self.camera_app)
        os.chmod(self.camera_app, 0o755)
        self.world_options = {"admin_rules": {"40-camera.rules": CAMERA_RULE % self.camera_app},
                              "service_policy": SERVICE_POLICY}
        super().setUp()

    def connector_running_the_camera_app(self, **kw):
        """A connection ptagsd has proven, whose connector then ran the
        camera app (at once, or at exec_now() with exec_when_told); its
        child serves the connection."""
        peer = OrphanPeer(self.world, call_first=True, then_exec=self.camera_app, **kw)
        self.addCleanup(peer.proc.kill)
        if not kw.get("exec_when_told"):
            wait_until(lambda: os.readlink("/proc/%d/exe" % peer.connector_pid) ==
                       self.camera_app, 10, "the connector to run the camera app")
        return peer, peer.connector_pid

    def push_out_of_the_peer_cache(self):
        """540 other connections, each looked up once (the bus allows 256 a
        user), push every connection asked about before out of the 512
        proven peers ptagsd keeps."""
        w = self.world
        script = os.path.join(w.tmp, "orphan_peer.py")
        for user in ("nobody", "daemon", "bin"):
            argv = setpriv_argv(pwd.getpwnam(user)) + [ptags_harness.PYTHON, "-I", script,
                                                      w.address, "many", "180"]
            proc = w.spawn("many", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            names = json.loads(proc.stdout.readline())
            for name in names:
                self.assertOk(w.root_call("PeerHasTag", "ss", [name, "app:x"]))

    def test_a_connector_that_runs_another_program_lends_nothing(self):
        w = self.world
        peer, connector = self.connector_running_the_camera_app()
        # The child's calls are not the camera app's: it is no "self" and
        # no peer of the connection any more.
        self.assertError(peer.call("AddTag", "usb", [0, "app:camera", False]),
                         ERR + "NoSuchProcess")
        self.assertEqual(w.get_tags(connector), [])
        self.assertError(w.root_call("PeerHasTag", "ss", [peer.unique_name, "app:x"]),
                         ERR + "NoSuchProcess")


    def test_a_connection_found_unknown_stays_unknown(self):
        """Once its process ran another program, a connection is unknown
        for as long as it lives. The entry saying so sat in the peer cache
        with the proven ones, and went once 512 newer ones came: the next
        call looked the connection up afresh, and proved the camera app."""
        w = self.world
        peer, connector = self.connector_running_the_camera_app()
        self.assertError(w.root_call("PeerHasTag", "ss", [peer.unique_name, "app:x"]),
                         ERR + "NoSuchProcess")
        self.push_out_of_the_peer_cache()
        self.assertError(w.root_call("PeerHasTag", "ss", [peer.unique_name, "app:x"]),
                         ERR + "NoSuchProcess")
        self.assertError(peer.call("AddTag", "usb", [0, "app:camera", False]),
                         ERR + "NoSuchProcess")
        self.assertEqual(w.get_tags(connector), [])

    def test_a_well_known_name_is_asked_about_as_its_owner(self):
        """A service asking by the well-known name its client owns got a
        fresh proof of the name's owner each time: the connection whose
        connector had run the camera app since it was proven was unknown
        by its unique name, yet by its service name ptagsd proved the
        camera app and answered with its tags."""
        w = self.world
        peer, connector = self.connector_running_the_camera_app(own=SERVICE_NAME)
        self.assertOk(w.root_call("AddTag", "usb", [connector, "app:camera", False]))
        owner = ptags_client.call(w.conn, "GetNameOwner", "s", [SERVICE_NAME],
                                  bus_name="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                  interface="org.freedesktop.DBus", timeout_ms=10000)
        self.assertEqual(self.assertOk(owner)[0], peer.unique_name,
                         "the connection does not own the service name: the test proves nothing")
        # Asked first by the service name, then by the unique one, then by
        # the service name again: unknown each time.
        for i, name in enumerate((SERVICE_NAME, peer.unique_name, SERVICE_NAME)):
            with self.subTest(i=i, name=name):
                self.assertError(w.root_call("PeerHasTag", "ss", [name, "app:camera"]),
                                 ERR + "NoSuchProcess")
                self.assertError(w.root_call("GetPeerTags", "s", [name]), ERR + "NoSuchProcess")

    def test_a_connection_pushed_out_of_the_cache_keeps_its_history(self):
        """Of the proven connections, ptagsd keeps 512 (each pins its
        process); one pushed out by newer ones was proven afresh at the
        next call, as whatever program its connector ran by then. One
        connector here ran the camera app before ptagsd let its connection
        go, the other after; nobody asked about either in between."""
        w = self.world
        ran_before, connector_before = self.connector_running_the_camera_app()
        ran_after, connector_after = self.connector_running_the_camera_app(exec_when_told=True)
        self.push_out_of_the_peer_cache()
        ran_after.exec_now()

        # A service asks about the first (the camera app holds its tag).
        self.assertOk(w.root_call("AddTag", "usb", [connector_before, "app:camera", False]))
        self.assertError(w.root_call("PeerHasTag", "ss", [ran_before.unique_name, "app:camera"]),
                         ERR + "NoSuchProcess")
        self.assertError(w.root_call("GetPeerTags", "s", [ran_before.unique_name]),
                         ERR + "NoSuchProcess")
        # The second calls first, as the camera app, which the rule trusts.
        self.assertError(ran_after.call("AddTag", "usb", [0, "app:camera", False]),
                         ERR + "NoSuchProcess")
        self.assertEqual(w.get_tags(connector_after), [])
        self.assertOk(w.root_call("AddTag", "usb", [connector_after, "app:camera", False]))
        self.assertError(w.root_call("PeerHasTag", "ss", [ran_after.unique_name, "app:camera"]),
                         ERR + "NoSuchProcess")


# nobody may add exe:slow only to python programs; the check takes 3 s.
SLOW_EXE_RULE = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("tag") == "exe:slow") {
        if ((action.lookup("target-exe") || "").indexOf("python") >= 0) {
            polkit.spawn(["/bin/sleep", "3"]);
            return polkit.Result.YES;
        }
        return polkit.Result.NO;
    }
});
"""

# nobody may add exe:named only to a process named "before"; the check takes 3 s.
NAMED_RULE = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("tag") == "exe:named") {
        if (action.lookup("target-comm") == "before") {
            polkit.spawn(["/bin/sleep", "3"]);
            return polkit.Result.YES;
        }
        return polkit.Result.NO;
    }
});
"""

# Named "before", then after @delay s the same python again (named
# "python3" by the exec).
PYTHON_REEXEC = "import os, sys, time; open('/proc/self/comm', 'w').write('before'); " \
                "time.sleep(float(sys.argv[1])); " \
                "os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)'])"

PYTHON_TARGET = "import os, sys, time; time.sleep(float(sys.argv[1])); " \
                "os.execv('/bin/sleep', ['sleep', '600']) if sys.argv[2] == 'exec' else time.sleep(600)"


class ExecDuringCheck(PolicyTestCase):
    world_options = {"admin_rules": {"40-slow-exe.rules": SLOW_EXE_RULE,
                                     "41-named.rules": NAMED_RULE}}

    def python_target(self, delay, then):
        argv = setpriv_argv(pwd.getpwnam("nobody")) + [
            "/usr/bin/python3", "-c", PYTHON_TARGET, str(delay), then]
        proc = self.world.spawn("target", argv)

        def runs_python():
            try:
                return "python" in os.readlink("/proc/%d/exe" % proc.pid)
            except OSError:
                return False
        wait_until(runs_python, 10, "target to run python")
        return proc.pid

    def test_exec_during_the_check_is_checked_again(self):
        client = self.world.spawn_client_as("nobody")
        # Control: the rule lets a python target have the tag.
        stays = self.python_target(60, "stay")
        self.assertOk(client.call("AddTag", "usb", [stays, "exe:slow", False]))
        self.assertEqual(self.world.get_tags(stays), [("exe:slow", False, "")])

        # This one becomes `sleep` while polkit is still deciding about python.
        execs = self.python_target(1.0, "exec")
        reply = client.call("AddTag", "usb", [execs, "exe:slow", False])
        self.assertEqual(os.path.basename(os.readlink("/proc/%d/exe" % execs)), "sleep",
                         "the target did not exec during the check: the test proves nothing")
        self.assertError(reply, ERR + "NotAuthorized")
        self.assertEqual(self.world.get_tags(execs), [])

    def test_exec_of_the_same_program_during_the_check_is_checked_again(self):
        """The bpf backend marks every exec. An exec of the same program
        (same exe, uids, unit and tags) while polkit decided went unseen:
        the change was applied to the new program on the strength of a
        check about the old one. polkit is told the process's name, which
        the exec changes, and the rule allows only the old one."""
        argv = setpriv_argv(pwd.getpwnam("nobody")) + [
            "/usr/bin/python3", "-c", PYTHON_REEXEC, "1.0"]
        proc = self.world.spawn("target", argv)
        wait_until(lambda: open("/proc/%d/comm" % proc.pid).read().strip() == "before", 10,
                   "target to name itself")
        client = self.world.spawn_client_as("nobody")
        reply = client.call("AddTag", "usb", [proc.pid, "exe:named", False])
        with open("/proc/%d/comm" % proc.pid) as f:
            self.assertEqual(f.read().strip(), "python3",
                             "the target did not exec during the check: the test proves nothing")
        self.assertError(reply, ERR + "NotAuthorized")
        self.assertEqual(self.world.get_tags(proc.pid), [])


class ZombieTarget(PolicyTestCase):
    world_options = {}

    def test_a_zombie_is_no_such_process(self):
        w = self.world
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        try:
            def zombie():
                with open("/proc/%d/stat" % pid) as f:
                    return f.read().rsplit(")", 1)[1].split()[0] == "Z"
            wait_until(zombie, 10, "child %d to become a zombie" % pid)
            pidfd = os.pidfd_open(pid)
            try:
                recorder = w.record_signals()
                for method, sig, args, fds in (
                        ("ApplyFd", "has", [0, ["+app:x"]], [pidfd]),
                        ("GetTagsFd", "h", [0], [pidfd]),
                        ("AddTag", "usb", [pid, "app:x", False], []),
                        ("GetTags", "u", [pid], []),
                        ("HasTag", "us", [pid, "app:x"], [])):
                    self.assertError(w.root_call(method, sig, args, fds=fds),
                                     ERR + "NoSuchProcess", method)
                self.assertEqual(recorder.drain(0.3), [], "a change to a zombie was signalled")
            finally:
                os.close(pidfd)
        finally:
            os.waitpid(pid, 0)


FORGE = """
import sys
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
conn = Gio.DBusConnection.new_for_address_sync(
    sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
    Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
conn.emit_signal(None, "/org/ptags/Manager", "org.ptags.Manager", "TagsChanged",
                 GLib.Variant("(uasa(sbs))", (1, ["+app:forged"], [("app:forged", False, "")])))
conn.flush_sync(None)
"""


class ForgedSignal(PolicyTestCase):
    world_options = {}

    def test_only_ptagsd_emits_our_signals(self):
        w = self.world
        events = []
        # Subscribed without a sender filter, as a careless listener would be.
        sub = w.conn.signal_subscribe(None, IFACE, None, None, None, Gio.DBusSignalFlags.NONE,
                                      lambda c, sender, path, i, member, p:
                                      events.append((sender, member, p.unpack()[1])))
        w.conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                         "GetId", None, None, Gio.DBusCallFlags.NONE, 5000, None)
        for prefix in (setpriv_argv(pwd.getpwnam("nobody")), []):  # nobody, then root
            subprocess.run(prefix + [ptags_harness.PYTHON, "-I", "-c", FORGE, w.address],
                           check=True, timeout=30, env=w.child_env())
        target = w.spawn_target()
        self.assertOk(w.root_call("AddTag", "usb", [target, "app:real", False]))
        owner = w.conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                 "org.freedesktop.DBus", "GetNameOwner", GLib.Variant("(s)", (NAME,)),
                                 None, Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
        ctx = GLib.MainContext.default()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            while ctx.iteration(False):
                pass
            time.sleep(0.01)
        w.conn.signal_unsubscribe(sub)
        self.assertEqual(events, [(owner, "TagsChanged", ["+app:real"])])


GDB_HEAD = """set pagination off
set confirm off
handle all nostop noprint pass
"""
# One hold: gdb stops ptagsd at {function}, touches {hit}, waits for {go},
# then runs {after}.
GDB_HOLD = """break {function}
commands
  shell touch {hit}; while [ ! -e {go} ]; do sleep 0.05; done
{after}
end
"""
GDB_LET_GO = """  delete
  detach
  quit"""
# x86-64: a record's update is the call of bpf_map__update_elem with flags
# BPF_F_LOCK (its 6th argument); the value (4th) holds the set id at offset 8.
LOCKED_UPDATE = "bpf_map__update_elem if $r9 == 4"
GDB_PRINT_UPDATE = """break """ + LOCKED_UPDATE + """
commands
  printf "update of a record to set %lu\\n", *(unsigned long long *)($rcx + 8)
  delete
  detach
  quit
end"""


def call_held_in(test, function, method, sig, args, meanwhile, print_update=False):
    """Call ptagsd as root while gdb holds it at the entry of @function (a
    bpf write), run @meanwhile() there, then let it go; returns the reply.
    @print_update: gdb then stays until the next record update and logs the
    set it writes (see updated_sets)."""
    after = "  delete 1\n  continue" if print_update else GDB_LET_GO
    return call_under_gdb(test, method, sig, args, [(function, after, meanwhile)],
                          GDB_PRINT_UPDATE + "\n" if print_update else "")


def call_under_gdb(test, method, sig, args, holds, extra=""):
    """Call @method as root while gdb holds ptagsd at each (function,
    after, step) of @holds in turn: step() runs at the hold, then gdb runs
    the commands @after. @extra: more gdb commands, set before the call.
    Returns the reply."""
    w = test.world
    if w.backend != "bpf":
        raise HarnessError("this test holds ptagsd inside the bpf write: PTAGS_BACKEND=bpf")
    armed = os.path.join(w.tmp, "gdb-armed")
    script, waits = GDB_HEAD, []
    for i, (function, after, step) in enumerate(holds):
        hit, go = (os.path.join(w.tmp, "gdb-%s%d" % (k, i)) for k in ("hit", "go"))
        script += GDB_HOLD.format(function=function, hit=hit, go=go, after=after)
        waits.append((hit, go, step))
    path = os.path.join(w.tmp, "hold.gdb")
    with open(path, "w") as f:
        f.write(script + extra + "shell touch %s\ncontinue\n" % armed)
    gdb = w.spawn("gdb", ["gdb", "-q", "-nx", "-batch", "-p", str(w.daemon.pid), "-x", path],
                  log_name="gdb.log")
    wait_until(lambda: os.path.exists(armed) or gdb.poll() is not None, 60,
               "gdb to hold a breakpoint in ptagsd")
    test.assertIsNone(gdb.poll(), w.read_log("gdb.log"))

    result = {}
    caller = threading.Thread(target=lambda: result.setdefault(
        "reply", w.call_as(None, NAME, PATH, IFACE, method, sig, args)))
    caller.start()
    try:
        for hit, go, step in waits:
            wait_until(lambda: os.path.exists(hit), 20,
                       "ptagsd to reach " + os.path.basename(hit))
            try:
                step()
            finally:
                open(go, "w").close()
    finally:
        for _hit, go, _step in waits:
            open(go, "w").close()
        caller.join(30)
    gdb.wait(timeout=30)
    return result.get("reply")


class PidReuseDuringApply(PolicyTestCase):
    world_options = {}

    def test_reused_pid_never_receives_the_tag(self):
        w = self.world
        target = w.spawn_target(unprivileged=True)

        def reuse():
            # ptagsd has checked the target and is about to write it: now the
            # target exits, and a root process takes its pid.
            w.kill(target)
            w.spawn_target_at(target)

        reply = call_held_in(self, "ptags_bpf_write_tags", "AddTag", "usb",
                             [target, "app:stolen", False], reuse)
        self.assertError(reply, ERR + "NoSuchProcess")
        self.assertEqual(w.get_tags(target), [], "the process that reused the pid got the tag")


FORKER = """
import os, sys, time
sys.stdin.readline()
child = os.fork()
if child == 0:
    time.sleep(600)
    os._exit(0)
print(child, flush=True)
time.sleep(600)
"""


class ForkDuringRegistration(PolicyTestCase):
    world_options = {}

    def test_a_child_forked_during_registration_carries_the_id(self):
        """The kernel checks that a process has no children and writes its
        container ID at once; ptagsd checked, then wrote through BPF, and a
        child forked in between copied the old ID: it escaped the container
        its parent was registered in, as a payload racing its registration
        could arrange."""
        w = self.world
        target = w.spawn("target", [ptags_harness.PYTHON, "-I", "-c", FORKER],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        forked = []

        def fork():
            # ptagsd has checked that the target has no child and is about
            # to write: now the target forks.
            target.stdin.write(b"fork\n")
            target.stdin.flush()
            forked.append(int(target.stdout.readline()))

        reply = call_held_in(self, "ptags_bpf_write_contid", "RegisterContainer", "uta{sv}",
                             [target.pid, 88, {}], fork)
        self.assertOk(reply)
        child = forked[0]
        ids = {pid: w.root_call("GetContainerId", "u", [pid]).value[0]
               for pid in (target.pid, child)}
        self.assertEqual(ids, {target.pid: 88, child: 88}, "the child escaped the container")


def call_held_twice(test, first, second, method, sig, args, at_first, at_second):
    """Call ptagsd as root while gdb holds it at the entry of @first, then
    of @second; @at_first() and @at_second() run at each hold. Returns the
    reply."""
    return call_under_gdb(test, method, sig, args,
                          [(first, "  continue", at_first), (second, GDB_LET_GO, at_second)])


# A process that, on command, starts a thread, forks a child (printing its
# pid) and has the thread exec sleep, which ends the first thread.
THREADED_FORKER = """
import os, sys, threading, time
go = threading.Event()
def execute():
    go.wait()
    os.execv("/bin/sleep", ["sleep", "600"])
for line in sys.stdin:
    if line == "thread\\n":
        threading.Thread(target=execute).start()
    elif line == "fork\\n":
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        print(child, flush=True)
    elif line == "exec\\n":
        go.set()
        time.sleep(600)
"""


def runs_sleep(pid):
    """Whether process @pid runs sleep. While a thread other than the
    leader execs, the process has no executable for a moment."""
    try:
        return os.readlink("/proc/%d/exe" % pid) == "/usr/bin/sleep"
    except FileNotFoundError:
        return False


def start_thread(target):
    """THREADED_FORKER @target starts its second thread."""
    target.stdin.write(b"thread\n")
    target.stdin.flush()
    wait_until(lambda: len(os.listdir("/proc/%d/task" % target.pid)) == 2, 10,
               "the target's second thread")


def fork_and_exec(target):
    """THREADED_FORKER @target forks a child, then its second thread execs
    sleep; returns the child's pid."""
    target.stdin.write(b"fork\n")
    target.stdin.flush()
    child = int(target.stdout.readline())
    target.stdin.write(b"exec\n")
    target.stdin.flush()
    wait_until(lambda: runs_sleep(target.pid), 10, "the target's thread to exec")
    return child


class ThreadExecDuringRegistration(PolicyTestCase):
    world_options = {}

    def test_an_id_a_process_carries_stays_registered(self):
        """A bpf write of a container ID reaches the leader first, then the
        other threads. A thread that execs in between takes the leader's
        place without the ID, and the write failed: ptagsd forgot the
        container, although a child the leader forked meanwhile carried its
        ID, so the ID could be registered again by someone else. The kernel
        writes every thread at once: the exec and the fork come after the
        write, and both processes carry the ID."""
        w = self.world
        target = w.spawn("target", [ptags_harness.PYTHON, "-I", "-c", THREADED_FORKER],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        forked = []
        # Held when checked (one thread, no child), then when the leader
        # holds the ID and the second thread not yet.
        reply = call_held_twice(self, "ptags_bpf_write_contid", "retag_pass", "RegisterContainer",
                                "uta{sv}", [target.pid, 88, {}], lambda: start_thread(target),
                                lambda: forked.append(fork_and_exec(target)))
        child = forked[0]
        self.assertEqual(w.root_call("GetContainerId", "u", [child]).value[0], 88)
        # Whatever the reply, an ID a process carries stays registered.
        self.assertOk(w.root_call("GetContainer", "t", [88]))
        other = w.spawn_target()
        self.assertError(w.call_as(None, NAME, PATH, IFACE, "RegisterContainer", "uta{sv}",
                                   [other, 88, {}]), ERR + "ContainerIdInUse")
        # As the kernel would have it: the write came first, so it succeeded
        # and the process after its exec carries the ID too.
        self.assertOk(reply)
        self.assertEqual(w.root_call("GetContainerId", "u", [target.pid]).value[0], 88)


EXECER = """
import os, sys
sys.stdin.readline()
os.execv("/bin/sleep", ["sleep", "600"])
"""
# The same, but a thread other than the leader execs: it takes the leader's
# place (and pid), and the leader's exec stamp is no longer the process's.
THREAD_EXECER = """
import os, sys, threading
def execute():
    sys.stdin.readline()
    os.execv("/bin/sleep", ["sleep", "600"])
thread = threading.Thread(target=execute)
thread.start()
thread.join()
"""


class ExecDuringWrite(PolicyTestCase):
    """A bpf write replaces the target's whole set. An exec between the read
    it was computed from and the write (or during the write) had its
    filtering undone: the tags the exec dropped came back, and a change
    meant for the old program reached the new one whole. The write is now
    ordered before the exec: the new program gets what the exec keeps."""

    world_options = {}

    def set_id_of(self, pid):
        """The set id the pinned task dump shows for process @pid."""
        with open(os.path.join(self.world.bpf_pin_dir, "tasks")) as f:
            ids = {int(line.split()[2]) for line in f if int(line.split()[0]) == pid}
        self.assertEqual(len(ids), 1, ids)
        return ids.pop()

    def held_while_it_execs(self, function, method, sig, args, print_update=False,
                            execer=EXECER):
        """@method on a target holding app:old and app:kept (kept), held in
        @function while the target execs; returns (reply, tags after)."""
        w = self.world
        target = self.target = w.spawn("target", [ptags_harness.PYTHON, "-I", "-c", execer],
                                       stdin=subprocess.PIPE)
        for tag, keep in (("app:old", False), ("app:kept", True)):
            self.assertOk(w.root_call("AddTag", "usb", [target.pid, tag, keep]))

        def execute():
            target.stdin.write(b"exec\n")
            target.stdin.flush()
            wait_until(lambda: runs_sleep(target.pid), 10, "the target to exec")

        reply = call_held_in(self, function, method, sig, [target.pid] + args, execute,
                             print_update)
        return reply, sorted(t[0] for t in w.get_tags(target.pid))

    def test_a_change_read_before_an_exec_is_written_as_before_it(self):
        # Held at the write's entry: the exec falls after the re-check. The
        # first record written must already be the filtered one: a new
        # program that held the whole set for a moment could fork a child
        # that keeps it.
        reply, tags = self.held_while_it_execs("ptags_bpf_write_tags", "AddTag", "usb",
                                               ["app:new", False], print_update=True)
        self.assertOk(reply)
        self.assertEqual(tags, ["app:kept"], "the exec's filtering was undone")
        self.assert_first_update_filtered()

    def assert_first_update_filtered(self):
        first = re.search(r"update of a record to set (\d+)", self.world.read_log("gdb.log"))
        self.assertIsNotNone(first, self.world.read_log("gdb.log"))
        self.assertEqual(int(first.group(1)), self.set_id_of(self.target.pid),
                         "the new program held the whole set before it was filtered")

    def test_a_thread_exec_inside_the_write_comes_after_it(self):
        # The target starts a thread after ptagsd's last look; once the
        # leader is written, it forks a child and that thread execs. The
        # kernel would write, then fork, then exec: the change succeeds, the
        # child holds it, the new program what the exec keeps of it.
        w = self.world
        target = self.target = w.spawn("target", [ptags_harness.PYTHON, "-I", "-c",
                                                  THREADED_FORKER],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for tag, keep in (("app:old", False), ("app:kept", True)):
            self.assertOk(w.root_call("AddTag", "usb", [target.pid, tag, keep]))
        forked = []
        reply = call_held_twice(self, "ptags_bpf_write_tags", "retag_pass", "AddTag", "usb",
                                [target.pid, "app:new", False],
                                lambda: start_thread(target),
                                lambda: forked.append(fork_and_exec(target)))
        self.assertEqual(sorted(t[0] for t in w.get_tags(forked[0])),
                         ["app:kept", "app:new", "app:old"])
        self.assertEqual(sorted(t[0] for t in w.get_tags(target.pid)), ["app:kept"])
        self.assertOk(reply)

    def test_a_thread_exec_before_the_write_is_not_undone(self):
        reply, tags = self.held_while_it_execs("ptags_bpf_write_tags", "AddTag", "usb",
                                               ["app:new", False], print_update=True,
                                               execer=THREAD_EXECER)
        self.assertOk(reply)
        self.assertEqual(tags, ["app:kept"], "the exec's filtering was undone")
        self.assert_first_update_filtered()

    def test_an_exec_inside_the_write_is_not_undone(self):
        # Held at the record's update: the exec falls between the write's
        # read of the record and its update.
        reply, tags = self.held_while_it_execs(LOCKED_UPDATE, "AddTag", "usb", ["app:new", False])
        self.assertOk(reply)
        self.assertEqual(tags, ["app:kept"], "the exec's filtering was undone")

    def test_a_container_id_written_during_an_exec_keeps_its_filtering(self):
        reply, tags = self.held_while_it_execs(LOCKED_UPDATE, "RegisterContainer", "uta{sv}",
                                               [77, {}])
        self.assertOk(reply)
        self.assertEqual(tags, ["app:kept"], "the exec's filtering was undone")



class SubordinateUids(PolicyTestCase):
    """A user's subordinate uids (/etc/subuid: nobody holds 200000-265535
    here) reach ptagsd on dbus-broker, which needs no passwd entry, each
    as a uid of its own; and every per-uid budget counted each of them
    alone, so one user held 65536 shares. Here: the refusal records, which
    any caller can cause. (dbus-daemon refuses uids it cannot look up.)"""

    def setUp(self):
        fd, path = tempfile.mkstemp(prefix="ptags-subuid-")
        os.write(fd, b"nobody:200000:65536\n")
        os.close(fd)
        os.chmod(path, 0o644)
        self.addCleanup(os.unlink, path)
        # 1 record a second, in bursts of 16: 8 refusals of one change.
        self.world_options = {"daemon_args": ["--subuid-file=" + path,
                                              "--max-refusal-records=1"]}
        super().setUp()

    def test_subordinate_uids_share_their_owners_refusal_records(self):
        target = self.world.spawn_target()
        for uid in (200001, 200002):
            client = self.world.spawn_client(uid=uid)
            for i in range(5):
                self.assertEqual(client.call("AddTag", "usb", [target, "app:x%d" % i, False]).error,
                                 ERR + "NotAuthorized")
        with open(self.world.daemon_log_path, errors="replace") as f:
            log = f.read()
        # Ten refusals, twenty records: past the owner's burst, which the
        # two uids share; each alone stayed within its own.
        self.assertIn("uid %d is refused more often than its refusals may be logged"
                      % pwd.getpwnam("nobody").pw_uid, log)
        self.assertIn("and its subordinate uids'", log)
        self.assertNotIn("uid 200001 is refused", log)
        self.assertNotIn("uid 200002 is refused", log)

if __name__ == "__main__":
    unittest.main(verbosity=2)
