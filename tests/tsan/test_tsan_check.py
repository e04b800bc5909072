#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_tsan_check.py: tsan_check.py leaves aside GLib's own handoffs between
# the bus thread and the main thread, and still fails on a race in ptagsd's
# code. The reports below are shaped as ThreadSanitizer prints them.
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tsan_check.py")

# A signal GDBus built on the main thread (its interface string copied by
# g_memdup2) that ptagsd's outgoing-message filter read on the bus thread.
GLIB_COPY_HANDOFF = """\
==================
WARNING: ThreadSanitizer: data race (pid=19909)
  Read of size 1 at 0x7b080000b650 by thread T2:
    #0 strcmp sanitizer_common_interceptors.inc:457 (libtsan.so.2+0x62cc8)
    #1 watch_filter ../src/daemon/bus-stats.c:543 (ptagsd+0x2f167)
    #2 <null> <null> (libgio-2.0.so.0+0x104dad)

  Previous write of size 1 at 0x7b080000b650 by main thread (mutexes: write M17):
    #0 memcpy sanitizer_common_interceptors.inc:827 (libtsan.so.2+0x5dda6)
    #1 memcpy sanitizer_common_interceptors.inc:819 (libtsan.so.2+0x5dda6)
    #2 g_memdup2 <null> (libglib-2.0.so.0+0x74ced)
    #3 change_authorize ../src/daemon/manager-change.c:250 (ptagsd+0x15c7a)

  Location is heap block of size 18 at 0x7b080000b640 allocated by main thread:
    #0 malloc tsan_interceptors_posix.cpp:647 (libtsan.so.2+0x3ebb8)
    #1 g_malloc <null> (libglib-2.0.so.0+0x5a658)

  Thread T2 'gdbus' (tid=19912, running) created by main thread at:
    #0 pthread_create tsan_interceptors_posix.cpp:1001 (libtsan.so.2+0x5e686)

SUMMARY: ThreadSanitizer: data race ../src/daemon/bus-stats.c:543 in watch_filter
==================
"""

# The same read, but the main thread's copy is ptagsd's own memcpy into a
# buffer it shares: a real race.
OWN_COPY_RACE = GLIB_COPY_HANDOFF.replace(
    "    #2 g_memdup2 <null> (libglib-2.0.so.0+0x74ced)\n", "")

# A copy by GLib, but on another thread than the main one: not the handoff.
WORKER_COPY_RACE = GLIB_COPY_HANDOFF.replace(
    "Previous write of size 1 at 0x7b080000b650 by main thread",
    "Previous write of size 1 at 0x7b080000b650 by thread T3")

# The same read, but TSan kept no stack of the main thread's write (its
# history of that thread's accesses had wrapped): it cannot be judged.
LOST_STACK_RACE = GLIB_COPY_HANDOFF.replace(
    """    #0 memcpy sanitizer_common_interceptors.inc:827 (libtsan.so.2+0x5dda6)
    #1 memcpy sanitizer_common_interceptors.inc:819 (libtsan.so.2+0x5dda6)
    #2 g_memdup2 <null> (libglib-2.0.so.0+0x74ced)
    #3 change_authorize ../src/daemon/manager-change.c:250 (ptagsd+0x15c7a)
""", "    [failed to restore the stack]\n")


class TsanCheckTests(unittest.TestCase):
    def run_check(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".report") as f:
            f.write(text)
            f.flush()
            return subprocess.run([sys.executable, CHECK, f.name], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=30)

    def test_glib_copy_handed_to_the_bus_thread_is_left_aside(self):
        r = self.run_check(GLIB_COPY_HANDOFF)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("1 inside GLib's own thread handoffs, 0 in ptagsd's code", r.stdout)

    def test_own_copy_is_a_failure(self):
        r = self.run_check(OWN_COPY_RACE)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("1 in ptagsd's code off the main thread", r.stdout)

    def test_copy_on_another_thread_is_a_failure(self):
        r = self.run_check(WORKER_COPY_RACE)
        self.assertEqual(r.returncode, 1, r.stdout)

    def test_lost_stack_is_a_failure_that_says_so(self):
        self.assertNotEqual(LOST_STACK_RACE, GLIB_COPY_HANDOFF)
        r = self.run_check(LOST_STACK_RACE)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("history_size", r.stdout)


if __name__ == "__main__":
    unittest.main()
