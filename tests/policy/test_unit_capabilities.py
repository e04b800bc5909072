# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_unit_capabilities.py: ptagsd run with exactly the unit's CapabilityBoundingSet= still serves
# every detail rules rely on; and without CAP_SYS_PTRACE it cannot (why the unit keeps it).
#
# Run one case per meson test, inside `unshare --mount --propagation private`:
#   test_unit_capabilities.py UnitCapabilities.test_units_capabilities_suffice

import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_world import PolicyTestCase, unit_capabilities  # noqa: E402

# linux/capability.h numbers of the capabilities the unit may name.
CAP_NUMBERS = {
    "CAP_DAC_OVERRIDE": 1, "CAP_SYS_PTRACE": 19, "CAP_AUDIT_WRITE": 29,
    "CAP_AUDIT_CONTROL": 30, "CAP_MAC_ADMIN": 33, "CAP_PERFMON": 38, "CAP_BPF": 39,
}
# What ptagsd drops at start of the unit's set, its backend needing them no
# more (CAP_MAC_ADMIN on ptags-lsm once its rights tags are written).
DROPPED = {
    "ptags-lsm": ("CAP_MAC_ADMIN", "CAP_BPF", "CAP_PERFMON"),
    "bpf": ("CAP_MAC_ADMIN", "CAP_AUDIT_CONTROL", "CAP_DAC_OVERRIDE"),
}
SLEEP = os.path.realpath(shutil.which("sleep", path="/usr/sbin:/usr/bin:/sbin:/bin"))

# Grants only when target-exe is known: ptagsd reads it from /proc/PID/exe,
# which the kernel guards with a ptrace check for other users' processes.
RULE_BY_EXECUTABLE = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("prefix") == "app" &&
        action.lookup("target-exe") == "%s") {
        return polkit.Result.YES;
    }
});
""" % SLEEP


def mask(caps):
    return sum(1 << CAP_NUMBERS[c] for c in caps)


class UnitCapabilities(PolicyTestCase):
    def setUp(self):
        caps = unit_capabilities()
        unknown = set(caps) - set(CAP_NUMBERS)
        self.assertFalse(unknown, "add %s to CAP_NUMBERS" % sorted(unknown))
        if self.id().endswith("without_sys_ptrace_target_exe_is_unknown"):
            caps = [c for c in caps if c != "CAP_SYS_PTRACE"]
        self.caps = caps
        self.world_options = {"admin_rules": {"40-test-exe.rules": RULE_BY_EXECUTABLE},
                              "daemon_capabilities": caps}
        super().setUp()

    def tag_nobodys_sleep(self):
        target = self.world.spawn_target(unprivileged=True)
        caller = self.world.spawn_client_as("nobody")
        return target, caller.call("AddTag", "usb", [target, "app:camera", False])

    def serving_mask(self):
        """The unit's capabilities but those ptagsd drops for its backend."""
        return mask(c for c in self.caps if c not in DROPPED[self.world.backend])

    def test_units_capabilities_suffice(self):
        w = self.world
        self.assertEqual(w.daemon_capability_mask("CapEff"), self.serving_mask(),
                         "ptagsd does not run with exactly the unit's capabilities that its "
                         "backend uses")
        self.assertEqual(w.daemon_capability_mask("CapBnd"), mask(self.caps))
        target, reply = self.tag_nobodys_sleep()
        self.assertOk(reply)
        self.assertEqual(w.get_tags(target), [("app:camera", False, "")])
        # Root's own changes (no polkit) and reads work the same.
        self.assertOk(w.root_call("AddTag", "usb", [target, "sys:x", True]))
        self.assertEqual(w.get_tags(target), [("app:camera", False, ""), ("sys:x", True, "")])

    def test_without_sys_ptrace_target_exe_is_unknown(self):
        self.assertEqual(self.world.daemon_capability_mask("CapEff"), self.serving_mask())
        target, reply = self.tag_nobodys_sleep()
        self.assertError(reply, "NotAuthorized")
        self.assertEqual(self.world.get_tags(target), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
