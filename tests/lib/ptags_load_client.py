# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags_load_client.py: one load-test caller (test_load.py): random reads and
# changes on shared targets, each reply checked against a model of this
# caller's own tags, the model printed at the end for the final comparison.
#
# Each caller owns the tag namespace "c<N>:" on every target, so the model
# of its tags is exact whatever other callers do meanwhile. Tag classes set
# what the polkit mock answers: "a" authorized, "d" denied, "r" random (the
# reply says which). Root callers are never asked about (uid 0 skips polkit).
#
# Usage: ptags_load_client.py BUS_ADDRESS CONFIG_JSON; prints one JSON object.

import json
import os
import random
import sys
import time

# Run with python3 -I (no PYTHONPATH): its sibling is found by location.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptags_client  # noqa: E402

# What a change that did not happen may answer: refused by polkit, or the
# target changed by another caller while polkit thought (all-or-nothing).
NOT_AUTHORIZED = "org.ptags.Error.NotAuthorized"
RACE = "org.ptags.Error.Failed"
CLASSES = {"a": 6, "d": 2, "r": 4}  # tags per class


class Failure(Exception):
    pass


class Caller:
    def __init__(self, conn, cfg):
        self.conn = conn
        self.root = cfg["root"]
        self.prefix = "c%d:" % cfg["client"]
        self.targets = cfg["targets"]
        self.rng = random.Random(cfg["seed"])
        self.tags = [self.prefix + "%s%d" % (k, i) for k, n in CLASSES.items() for i in range(n)]
        self.model = {pid: {} for pid in self.targets}  # pid -> tag -> (keep, value)
        self.counts = {"ops": 0, "applied": 0, "noop": 0, "denied": 0, "race": 0, "reads": 0}
        self.log = []  # the last operations, for a failure report
        self.applied = []  # [pid, sorted effective tags] per applied change

    def call(self, method, sig, args):
        reply = ptags_client.call(self.conn, method, sig, args, timeout_ms=60000)
        self.log = (self.log + ["%s%r -> %r" % (method, tuple(args), reply)])[-20:]
        return reply

    def fail(self, why):
        raise Failure("%s\nlast calls:\n  %s" % (why, "\n  ".join(self.log)))

    def kind(self, tag):
        return tag[len(self.prefix)]

    # ------------------------------------------------------------ changes

    def change(self, pid, method, sig, args, effective, after):
        """A change whose effective tag set is @effective (tags that need a
        check); @after is the model after success. Checks the reply against
        what polkit may answer for those tags and updates the model."""
        reply = self.call(method, sig, args)
        self.counts["ops"] += 1
        if not effective:
            if not reply.ok:
                self.fail("a no-op failed")
            self.counts["noop"] += 1
            return
        kinds = {self.kind(t) for t in effective}
        if reply.ok:
            if not self.root and "d" in kinds:
                self.fail("a change of a denied tag succeeded")
            self.model[pid] = after
            self.counts["applied"] += 1
            self.applied.append([pid, sorted(effective), method, list(args[1:])])
        elif reply.error == NOT_AUTHORIZED and not self.root and kinds & {"d", "r"}:
            self.counts["denied"] += 1
        elif reply.error == RACE:
            self.counts["race"] += 1
        else:
            self.fail("unexpected answer for tags %s" % sorted(effective))

    def new_value(self, stem, old):
        """A value other than @old: setting the same value is no change
        (no line in TagsChanged), which this model does not follow."""
        while True:
            value = "%s%d" % (stem, self.rng.randrange(100))
            if value != old:
                return value

    def random_change(self, pid):
        model = self.model[pid]
        tag = self.rng.choice(self.tags)
        after = dict(model)
        op = self.rng.randrange(5)
        if op == 0 or (op == 3 and tag not in model):
            keep = self.rng.random() < 0.3
            effective = tag not in model or (keep and not model[tag][0])
            if effective:
                after[tag] = (True, model.get(tag, (False, ""))[1]) if keep else (False, "")
            self.change(pid, "AddTag", "usb", [pid, tag, keep], {tag} if effective else set(),
                        after)
        elif op == 1:
            after.pop(tag, None)
            self.change(pid, "RemoveTag", "us", [pid, tag], {tag} if tag in model else set(),
                        after)
        elif op == 3:
            value = self.new_value("v", model[tag][1])
            after[tag] = (model[tag][0], value)
            self.change(pid, "SetValue", "uss", [pid, tag, value], {tag}, after)
        else:
            lines, effective = [], set()
            for t in self.rng.sample(self.tags, self.rng.randint(2, 4)):
                if t in after and self.rng.random() < 0.5:
                    value = self.new_value("b", after[t][1])
                    lines.append("!%s=%s" % (t, value))
                    after[t] = (after[t][0], value)
                    effective.add(t)
                elif t in after:
                    lines.append("-" + t)
                    del after[t]
                    effective.add(t)
                else:
                    lines.append("+" + t)
                    after[t] = (False, "")
                    effective.add(t)
            self.change(pid, "Apply", "uas", [pid, lines], effective, after)

    # ------------------------------------------------------------ reads

    def mine(self, tags):
        return {t[0]: (bool(t[1]), t[2]) for t in tags if t[0].startswith(self.prefix)}

    def random_read(self, pid):
        self.counts["reads"] += 1
        if self.rng.random() < 0.6:
            reply = self.call("GetTags", "u", [pid])
            if not reply.ok:
                self.fail("GetTags failed")
            if self.mine(reply.value[0]) != self.model[pid]:
                self.fail("GetTags(%d) shows %r, the model %r"
                          % (pid, self.mine(reply.value[0]), self.model[pid]))
        else:
            tag = self.rng.choice(self.tags)
            reply = self.call("HasTag", "us", [pid, tag])
            if not reply.ok or reply.value[0] != (tag in self.model[pid]):
                self.fail("HasTag(%d, %s) disagrees with the model" % (pid, tag))

    def run(self, ops):
        for _ in range(ops):
            pid = self.rng.choice(self.targets)
            if self.rng.random() < 0.35:
                self.random_read(pid)
            else:
                self.random_change(pid)


def main():
    address, cfg = sys.argv[1], json.loads(sys.argv[2])
    conn = ptags_client.connect(address)
    caller = Caller(conn, cfg)
    start = time.monotonic()
    result = {"client": cfg["client"], "error": None}
    try:
        caller.run(cfg["ops"])
    except Failure as e:
        result["error"] = str(e)
    result["seconds"] = time.monotonic() - start
    result["counts"] = caller.counts
    result["applied"] = caller.applied
    result["model"] = {str(pid): {t: list(v) for t, v in tags.items()}
                       for pid, tags in caller.model.items()}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
