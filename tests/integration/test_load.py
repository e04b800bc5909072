# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_load.py: 16 callers, 2000 random operations each, against one ptagsd:
# every reply agrees with a model, and the final tags are exactly the model's
# (nothing lost, nothing phantom), with one TagsChanged per applied change.
#
# The callers (tests/lib/ptags_load_client.py) share eight targets, each in
# its own tag namespace; the polkit mock authorizes, denies or decides at
# random by tag class. check.sh runs this suite against the ASan build too.

import json
import os
import select
import shutil
import stat
import subprocess
import time
import unittest

from ptags_harness import (LIB_DIR, NOBODY_UID, PYTHON, PtagsTestCase, second_user_uid,
                           unprivileged_argv)

ADD = "org.ptags.tag.add"
REMOVE = "org.ptags.tag.remove"
SET_VALUE = "org.ptags.tag.set-value"
CLIENTS = 16
OPS = int(os.environ.get("PTAGS_LOAD_OPS", "2000"))
TARGETS = 8
DEADLINE_S = 600  # a hang, not slowness: meson's timeout is the real bound


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class LoadTests(PtagsTestCase):
    maxDiff = None

    def copy_script(self, name):
        path = os.path.join(self.world.tmp, name)
        shutil.copy(os.path.join(LIB_DIR, name), path)
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
        return path

    def test_random_operations_match_the_model(self):
        polkit = self.world.polkit
        polkit.set_allowed([ADD, REMOVE, SET_VALUE])
        polkit.set_denied_tags(["c%d:d%d" % (c, i) for c in range(CLIENTS) for i in range(2)])
        polkit.set_random_tags(["c%d:r" % c for c in range(CLIENTS)], 0.5, 9)
        targets = [self.world.spawn_target(unprivileged=True) for _ in range(TARGETS)]
        self.copy_script("ptags_client.py")
        script = self.copy_script("ptags_load_client.py")
        other = second_user_uid()
        signals = self.world.record_signals()
        rss_before = rss_kib(self.world.daemon.pid)

        procs, reports = [], []
        start = time.monotonic()
        for c in range(CLIENTS):
            # Two root callers, the rest split between two ordinary users
            # (polkit slots are shared per user).
            uid = 0 if c < 2 else (NOBODY_UID if c % 2 else other)
            cfg = {"client": c, "seed": 1000 + c, "ops": OPS, "root": uid == 0,
                   "targets": [targets[c % TARGETS], targets[(c + 3) % TARGETS]]}
            argv = ([] if uid == 0 else unprivileged_argv(uid, uid)) + [
                PYTHON, "-I", script, self.world.address, json.dumps(cfg)]
            procs.append(self.world.spawn("load-client", argv, stdout=subprocess.PIPE,
                                          env=self.world.child_env()))
        # Read every caller's report as it comes (a report can outgrow a pipe)
        # while dispatching signals, so neither side waits on the other.
        outputs = {proc.stdout.fileno(): [proc, b""] for proc in procs}
        while outputs:
            self.assertLess(time.monotonic() - start, DEADLINE_S, "load callers hang")
            ready, _, _ = select.select(list(outputs), [], [], 0.05)
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    outputs[fd][1] += chunk
                    continue
                proc, out = outputs.pop(fd)
                self.assertEqual(proc.wait(timeout=30), 0,
                                 "a load caller crashed: %r" % out[-2000:])
                reports.append(json.loads(out))
            signals.drain(0.01)
        results = sorted(reports, key=lambda r: r["client"])
        elapsed = time.monotonic() - start
        for r in results:
            self.assertIsNone(r["error"], "caller %d: %s" % (r["client"], r["error"]))

        # Final state: exactly the union of the callers' models.
        expected = {pid: {} for pid in targets}
        for r in results:
            for pid, tags in r["model"].items():
                expected[int(pid)].update({t: (v[0], v[1]) for t, v in tags.items()})
        for pid in targets:
            actual = {t[0]: (t[1], t[2]) for t in self.world.get_tags(pid)}
            self.assertEqual(actual, expected[pid], "target %d: lost or phantom tags" % pid)

        totals = {k: sum(r["counts"][k] for r in results) for k in results[0]["counts"]}
        deadline = time.monotonic() + 30
        while len(signals.events) < totals["applied"] and time.monotonic() < deadline:
            signals.drain(0.2)
        signals.drain(0.5)
        # Each applied change has its signal: same target, same tags.
        def key(pid, tags):
            return "%d %s" % (pid, " ".join(sorted(tags)))
        unsignalled = {}
        for r in results:
            for pid, tags, method, args in r["applied"]:
                unsignalled.setdefault(key(pid, tags), []).append((method, args))
        phantom = []
        for pid, lines, _tags in signals.events:
            k = key(pid, {line.lstrip("+-!@").split("=", 1)[0] for line in lines})
            if unsignalled.get(k):
                unsignalled[k].pop()
            else:
                phantom.append((pid, lines))
        missing = {k: v for k, v in unsignalled.items() if v}
        self.assertEqual((missing, phantom), ({}, []),
                         "applied changes without their TagsChanged, and signals of no "
                         "applied change")
        self.assertEqual(totals["ops"] + totals["reads"], CLIENTS * OPS)
        # The outcomes the test is about all happened.
        for key in ("applied", "noop", "denied", "reads"):
            self.assertGreater(totals[key], 0, "no %s operations: %r" % (key, totals))
        rss_after = rss_kib(self.world.daemon.pid)
        print("\nload: %d callers x %d ops in %.1f s (%.0f ops/s): %r; ptagsd RSS %d -> %d KiB"
              % (CLIENTS, OPS, elapsed, CLIENTS * OPS / elapsed, totals, rss_before,
                 rss_after))


if __name__ == "__main__":
    unittest.main()
