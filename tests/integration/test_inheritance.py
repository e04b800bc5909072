# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_inheritance.py: implicit changes on the real kernel (BPF backend):
# fork copies the list, exec keeps only kept tags, and neither is signalled.
#
# The kernel fixture cannot see fork or exec, so this runs on bpf only.

import os
import select
import signal
import subprocess
import unittest

from ptags_harness import PtagsTestCase, sleep_sleeps, wait_until


class InheritanceTests(PtagsTestCase):
    backends = ("bpf",)

    @staticmethod
    def kill_group(pgid):
        """The shell's children are not the world's: kill its whole group."""
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def read_pids(self, stream, count):
        """@count pids the shell echoes, one a line (raw reads: a buffered
        readline would hide the second line from select)."""
        data = b""
        while data.count(b"\n") < count:
            ready, _, _ = select.select([stream.fileno()], [], [], 10)
            self.assertTrue(ready, "the shell did not report its children")
            chunk = os.read(stream.fileno(), 4096)
            self.assertTrue(chunk, "the shell exited")
            data += chunk
        return [int(line) for line in data.split()]

    def test_fork_copies_exec_filters_silently(self):
        # The shell forks a subshell that never execs, and a sleep (fork+exec).
        # Its own process group (setsid execs in place), so cleanup reaches
        # the grandchildren too.
        shell = self.world.spawn("target", [
            "setsid", "sh", "-c", "read go; (sleep 600; true) & echo $!; sleep 600 & echo $!; wait"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(self.kill_group, shell.pid)
        # Tag the shell, not setsid before it execs the shell (that exec
        # would drop the unkept tag and the test would prove nothing).
        def shell_reads():  # exec done: the shell waits in read(2) (syscall 0)
            with open("/proc/%d/syscall" % shell.pid) as f:
                return (os.path.basename(os.readlink("/proc/%d/exe" % shell.pid))
                        in ("sh", "dash", "bash") and f.read().split(" ", 1)[0] == "0")
        wait_until(shell_reads, 10, "setsid to exec the shell")
        signals = self.world.record_signals()
        self.assertOk(self.world.root_call(
            "Apply", "uas", [shell.pid, ["+plain", "+@kept", "!kept=v", "!plain=p"]]))
        signals.wait(1)
        signals.events.clear()
        shell.stdin.write(b"go\n")
        shell.stdin.flush()
        forked, execed = self.read_pids(shell.stdout, 2)
        # Its exe names sleep before the exec hook has run: wait until
        # sleep sleeps.
        wait_until(lambda: sleep_sleeps(execed), 10, "the child to exec sleep")
        full = [("kept", True, "v"), ("plain", False, "p")]
        self.assertEqual(self.world.get_tags(forked), full, "fork copies the whole list")
        self.assertEqual(self.world.get_tags(execed), [("kept", True, "v")],
                         "exec keeps only kept tags, with their values")
        self.assertEqual(self.world.get_tags(shell.pid), full)
        self.assertEqual(signals.drain(0.5), [], "implicit changes are not signalled")
        found = self.assertOk(self.world.root_call("FindTagged", "s", ["plain"]))[0]
        self.assertEqual(sorted(p for p, _ in found), sorted([shell.pid, forked]))


if __name__ == "__main__":
    unittest.main()
