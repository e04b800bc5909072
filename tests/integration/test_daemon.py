# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_daemon.py: ptagsd as a process: one instance per bus, bad options
# refused with a message, a clean exit on SIGTERM (checked by the harness).
#
# These run the real executable next to the world's own instance.

import fcntl
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from ptags_harness import PtagsTestCase, daemon_wrapper, wait_until


class DaemonTestCase(PtagsTestCase):
    def run_ptagsd(self, *args):
        """ptagsd as the world's runs, on the same state (runtime directory,
        pins) unless told otherwise."""
        return subprocess.run([self.world.ptagsd, *args],
                              env=self.world.child_env(self.world.daemon_env),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30)

    def stop_world_daemon(self):
        """Stop the world's ptagsd and wait until its name is free, so a
        second run fails only for what it was given."""
        self.world.daemon.terminate()
        self.assertEqual(self.world.daemon.wait(timeout=30), 0)
        wait_until(lambda: not self.world.name_has_owner("org.ptags.Manager"), 10,
                   "org.ptags.Manager to be released")


class DaemonLifecycleTests(DaemonTestCase):

    def test_second_instance_does_not_take_over(self):
        target = self.world.spawn_target()
        args = ["--backend=" + self.world.backend]
        if self.world.mount is not None:
            args.append("--proc-root=" + self.world.mount)
        result = self.run_ptagsd(*args)
        self.assertNotEqual(result.returncode, 0)
        # Refused for the bus name, or earlier for the backend's kernel state.
        self.assertIn("ptagsd", result.stderr, "the refusal must say why")
        self.assertTrue(self.world.daemon_alive())
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "still", False]))
        self.assertEqual(self.world.get_tags(target), [("still", False, "")])

    def test_bad_options_are_refused(self):
        self.stop_world_daemon()
        # Each refusal must name what was wrong, not some other failure
        # (such as the bus name being taken), with the documented exit
        # status: 2 for a bad option, 1 for a backend that cannot start.
        cases = (
            (["--backend=nope"], "nope", 2),
            (["--polkit-timeout=0"], "--polkit-timeout", 2),
            (["--polkit-timeout=-5"], "--polkit-timeout", 2),
            (["--polkit-timeout=x"], "polkit-timeout", 2),
            (["--backend=ptags-lsm", "--proc-root=/nonexistent"], "/nonexistent", 1),
            (["--no-such-option"], "--no-such-option", 2),
        )
        for args, named, status in cases:
            with self.subTest(args=args):
                result = self.run_ptagsd(*args)
                self.assertEqual(result.returncode, status, result.stderr)
                self.assertIn("ptagsd", result.stderr, "the refusal must say why")
                self.assertIn(named, result.stderr, "the refusal must name the bad option")
                self.assertNotIn("already serves", result.stderr)
                self.assertFalse(self.world.name_has_owner("org.ptags.Manager"),
                                 "a refused ptagsd must not serve")
        # The control: in the same environment good options do serve, so
        # the refusals above came from the options alone.
        self.world.start_daemon()
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "good", False]))


    def test_help_limits_shows_each_budgets_default_and_range(self):
        """Each budget option is described with the default the running
        ptagsd shows as its property, and the range it accepts: the value
        just past either end is refused as a bad option."""
        out = self.run_ptagsd("--help-limits")
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = re.findall(r"--(max-[a-z-]+)=N .*\(default (\d+), from (\d+) to (\d+)\)",
                          out.stdout)
        self.assertGreaterEqual(len(rows), 10, out.stdout)
        for option, default, low, high in rows:
            with self.subTest(option=option):
                prop = "".join(w.capitalize() for w in option.split("-"))
                self.assertEqual(self.world.get_property(prop), int(default))
                for bad in (int(low) - 1, int(high) + 1):
                    refused = self.run_ptagsd("--%s=%d" % (option, bad))
                    self.assertEqual(refused.returncode, 2, refused.stderr)
                    self.assertIn(option, refused.stderr)


def capability_sets(pid):
    """{tid: {"CapInh": mask, ...}} of every thread of @pid."""
    sets = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            sets[tid] = {k: int(v, 16) for k, v in re.findall(r"^(Cap\w+):\s+([0-9a-f]+)$",
                                                              f.read(), re.M)}
    return sets


class CapabilityTests(PtagsTestCase):
    # Bits of /proc/PID/status's capability sets.
    CAP_DAC_OVERRIDE, CAP_SETUID, CAP_SETPCAP, CAP_SYS_ADMIN = 1, 7, 8, 21
    CAP_AUDIT_WRITE, CAP_AUDIT_CONTROL = 29, 30
    CAP_SYS_PTRACE, CAP_PERFMON, CAP_BPF = 19, 38, 39

    def expected(self, contids=True):
        keep = {self.CAP_AUDIT_WRITE, self.CAP_SYS_PTRACE}
        if self.world.backend == "ptags-lsm":
            if contids:
                keep |= {self.CAP_AUDIT_CONTROL, self.CAP_DAC_OVERRIDE}
        else:
            keep |= {self.CAP_BPF, self.CAP_PERFMON}
        return sum(1 << cap for cap in keep)

    def check_only(self, keep):
        """ptagsd was started with all of root's capabilities (as a bus
        without systemd activation, or an administrator, would start it):
        every thread holds exactly @keep, and its bounding set no more."""
        mine = capability_sets(os.getpid())[str(os.getpid())]
        for cap in (self.CAP_SETPCAP, self.CAP_SYS_ADMIN, self.CAP_SETUID):
            self.assertTrue(mine["CapBnd"] >> cap & 1 and mine["CapEff"] >> cap & 1,
                            "the test runs with root's capabilities")
        sets = capability_sets(self.world.daemon_pid())
        self.assertGreater(len(sets), 1, "ptagsd runs GDBus's worker thread too")
        for tid, caps in sets.items():
            for name in ("CapPrm", "CapEff", "CapBnd"):
                self.assertEqual(caps[name], keep, "thread %s's %s: %x, not %x"
                                 % (tid, name, caps[name], keep))
            for name in ("CapInh", "CapAmb"):
                self.assertEqual(caps[name], 0, "thread %s's %s" % (tid, name))
        # And it still works.
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "ptags:app:add", False]))
        self.assertEqual(self.world.get_tags(target), [("ptags:app:add", False, "")])

    def test_only_what_ptagsd_and_its_backend_need_is_kept_by_every_thread(self):
        """ptagsd keeps the capabilities it and its backend need, and drops
        every other before it starts any thread (credentials are per
        thread). It used to drop only those of the unit's it did not need:
        started without the unit it kept CAP_SYS_ADMIN, CAP_SETUID and the
        rest of root's. On ptags-lsm, CAP_MAC_ADMIN kept made, on the 2016
        kernel, every writer of ptagsd's own file unrestricted (it looks at
        the target's capability): any user could take ptagsd's rights tags
        away."""
        self.check_only(self.expected())


class CapabilityWithoutContidTests(CapabilityTests):
    """ptags-lsm on a kernel without audit container IDs: the capabilities
    for /proc/PID/audit_containerid are of no use, and dropped."""
    backends = ("ptags-lsm",)
    world_options = {"fixture_args": ["--no-contid"]}

    def test_only_what_ptagsd_and_its_backend_need_is_kept_by_every_thread(self):
        self.check_only(self.expected(contids=False))


class FileLimitTests(PtagsTestCase):
    """ptags-lsm on a kernel without audit container IDs (the 2016 patch
    alone), ptagsd started with a soft limit of 1024 open files."""
    backends = ("ptags-lsm",)
    world_options = {"fixture_args": ["--no-contid"]}

    def setUp(self):
        with daemon_wrapper("prlimit --nofile=1024:8192 --"):
            super().setUp()

    def test_the_soft_limit_of_open_files_is_raised(self):
        """ptagsd holds a pidfd per pinned process and passed descriptor:
        it raised its soft limit to the hard one only when it kept a
        container registry, so on such a kernel a few users' calls could
        take all 1024 and every call failed to pin its target."""
        pid = self.world.daemon_pid()
        with open("/proc/%d/limits" % pid) as f:
            line = [l for l in f if l.startswith("Max open files")][0]
        self.assertEqual(line.split()[3:5], ["8192", "8192"], line)
        self.assertNotIn("containers", self.world.get_property("Features"))


class CrashNoteTests(DaemonTestCase):
    """On ptags-lsm a change longer than one kernel page takes several
    writes, so ptagsd first notes the target's tags; a ptagsd killed midway
    puts them back at its next start. The process may have executed a
    program meanwhile, and the kernel then dropped its tags without the keep
    flag: those come back only while a tag exec drops, held before, is still
    there to show it did not."""

    backends = ("ptags-lsm",)

    def write_note(self, pid, before):
        """The crash note of a change to @pid, which held @before; its path."""
        with open("/proc/%d/stat" % pid) as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
        note = os.path.join(self.world.daemon_env["RUNTIME_DIRECTORY"], "lsm-intent")
        with open(note, "w") as f:
            f.write("%d %s\n%s" % (pid, start, before))
        return note

    def restart_with_note(self, pid, before):
        self.stop_world_daemon()
        note = self.write_note(pid, before)
        self.world.start_daemon()
        self.assertFalse(os.path.exists(note), "the note is used once")

    def test_a_second_ptagsd_leaves_the_note_alone(self):
        """Two ptagsd started at once both find the bus name free; the one
        that comes second must not act on the other's state (its crash
        note, its registry) before it learns it lost the name. The state
        is locked: here by the test, as a ptagsd still starting holds it."""
        target = self.world.spawn_target(unprivileged=True)
        self.stop_world_daemon()
        run_dir = self.world.daemon_env["RUNTIME_DIRECTORY"]
        lock = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(lock, fcntl.LOCK_EX)
        note = self.write_note(target, "@app:noted\n")
        result = self.run_ptagsd("--backend=ptags-lsm", "--proc-root=" + self.world.mount)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("in use by another ptagsd", result.stderr)
        self.assertFalse(self.world.name_has_owner("org.ptags.Manager"))
        self.assertTrue(os.path.exists(note), "the other ptagsd's note was used")
        self.assertEqual(self.world.fixture_tags(target), b"")
        # The other one, done: its state is free for the next ptagsd.
        os.unlink(note)
        os.close(lock)
        self.world.start_daemon()

    def test_tags_an_exec_drops_are_not_given_back(self):
        target = self.world.spawn_target(unprivileged=True)
        # As after an exec: only the kept tag is left.
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+@k", "!k=v"]]))
        self.restart_with_note(target, "app:cam\n@k=v\n")
        self.assertEqual(self.world.get_tags(target), [("k", True, "v")])

    def test_tags_come_back_when_the_process_did_not_execute(self):
        target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+@k", "+other"]]))
        self.restart_with_note(target, "app:cam\n@k=v\nother\n")
        self.assertEqual(self.world.get_tags(target),
                         [("app:cam", False, ""), ("k", True, "v"), ("other", False, "")])

    def test_a_full_runtime_directory_is_named_and_changes_nothing(self):
        """A change of several pages cannot start without its note: with the
        runtime directory full, it fails saying so, and nothing changes."""
        target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+app:before"]]))
        run_dir = self.world.daemon_env["RUNTIME_DIRECTORY"]
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "ptags-full",
                        run_dir], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", run_dir], check=True)
        fd = os.open(os.path.join(run_dir, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            with self.assertRaises(OSError):
                while True:
                    os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
        batch = ["+batch:%03d:%s" % (i, "x" * 200) for i in range(30)]
        reply = self.world.root_call("Apply", "uas", [target, batch])
        self.assertFalse(reply.ok, reply)
        self.assertEqual(reply.error, "org.ptags.Error.Failed", reply)
        self.assertIn("No space left on device", reply.message)
        self.assertEqual(self.world.get_tags(target), [("app:before", False, "")])


class ReadinessTests(PtagsTestCase):
    """ptagsd tells systemd it is ready (Type=dbus units use it for status,
    Type=notify ones to order start-up) only once it serves the bus name."""

    def setUp(self):
        notify_dir = tempfile.mkdtemp(prefix="ptags-notify-")
        self.addCleanup(shutil.rmtree, notify_dir, True)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(self.notify.close)
        path = os.path.join(notify_dir, "notify")
        self.notify.bind(path)
        self.world_options = {"daemon_env": {"NOTIFY_SOCKET": path}}
        super().setUp()

    def notifications(self, until, timeout=10):
        """Datagrams as {KEY: VALUE} dicts, until one holds @until."""
        messages = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.notify.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.notify.recv(4096)
            except socket.timeout:
                break
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            messages.append(fields)
            if until in fields:
                return messages
        self.fail("no %s notification within %s s; got %r" % (until, timeout, messages))

    def test_ready_once_the_name_is_served(self):
        ready = self.notifications("READY")[-1]
        self.assertEqual(ready["READY"], "1")
        backend = self.world.get_property("Backend")
        self.assertIn(backend, ready.get("STATUS", ""), "STATUS names the backend")
        # It said ready: the name is owned and a call is answered.
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "ready", False]))


if __name__ == "__main__":
    unittest.main()
