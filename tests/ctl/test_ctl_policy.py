# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_ctl_policy.py: ptagsctl under the REAL polkitd and bus policy: exec as an ordinary user
# allowed only by an administrator's "self" rule; and polkitd serving our French messages.
#
# Run one case per meson test, inside `unshare --mount --propagation private`
# (tests/ctl/meson.build), like tests/policy, whose PolicyWorld this reuses.

import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "policy"))
from policy_world import PolicyTestCase  # noqa: E402
import ctl_run  # noqa: E402,I100  (policy_world put tests/lib on the path)
import ptags_client  # noqa: E402
from ptags_harness import NOBODY_UID, wait_until  # noqa: E402

# What an administrator writes so that users may start their own programs
# with app: tags, and nothing else: only "self" changes, only under app:.
SELF_RULE = """
polkit.addRule(function (action, subject) {
    if ((action.id == "org.ptags.tag.add" || action.id == "org.ptags.tag.set-value") &&
        subject.user == "nobody" && action.lookup("self") == "true" &&
        action.lookup("prefix") == "app") {
        return polkit.Result.YES;
    }
});
"""


class ExecUnderSelfRuleTests(PolicyTestCase):
    world_options = {"admin_rules": {"40-test-self-app.rules": SELF_RULE}}

    def test_exec_gets_exactly_the_requested_kept_tags(self):
        w = self.world
        argv = ctl_run.unprivileged_prefix(NOBODY_UID) + [
            ctl_run.ptagsctl_path(), "exec", "--tag", "app:session=42", "--tag", "app:camera",
            "--", "sleep", "600"]
        proc = w.spawn("target", argv, env=w.child_env())

        def runs_sleep():
            try:
                return (proc.poll() is not None
                        or os.path.basename(os.readlink("/proc/%d/exe" % proc.pid)) == "sleep")
            except OSError:
                return False

        wait_until(runs_sleep, 20, "ptagsctl exec to run sleep")
        self.assertIsNone(proc.poll(), "ptagsctl exec failed (exit %s)" % proc.returncode)
        self.assertEqual(w.get_tags(proc.pid),
                         [("app:camera", True, ""), ("app:session", True, "42")])

    def test_refused_outside_the_rule_runs_nothing(self):
        w = self.world
        out = ctl_run.run(w, "exec", "--tag", "app:ok", "--tag", "sys:admin", "--",
                          "echo", "RAN", uid=NOBODY_UID, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 4, out.stderr)
        self.assertIn("org.ptags.Error.NotAuthorized", out.stderr)
        self.assertEqual(out.stdout, "")
        # The same rule does not let the user tag another of its processes:
        # the change is not "self" there.
        target = w.spawn_target(unprivileged=True)
        out = ctl_run.run(w, "add", str(target), "app:x", uid=NOBODY_UID,
                          stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 4, out.stderr)
        self.assertEqual(w.get_tags(target), [])


class PkcheckRecipeTests(PolicyTestCase):
    world_options = {"admin_rules": {"40-test-self-app.rules": SELF_RULE}, "with_daemon": False}

    def recipe(self):
        """The pkcheck command of org.ptags.Manager(5), as a shell line."""
        root = os.environ.get("PTAGS_SOURCE_ROOT") or os.path.join(HERE, "..", "..")
        with open(os.path.join(root, "man", "org.ptags.Manager.5")) as f:
            text = f.read()
        start = text.index("pkcheck \\-\\-action")
        block = text[start:text.index("echo $?", start)]
        return block.replace("\\-", "-").replace("\\e\n", " ").strip()

    def test_the_documented_pkcheck_recipe_asks_what_ptagsd_asks(self):
        w = self.world
        user_process = w.spawn_target(unprivileged=True)  # nobody, like the rule's user
        line = self.recipe().replace("4321", str(user_process))
        self.assertIn("--detail self true", line)

        def pkcheck(cmd):
            return subprocess.run(["bash", "-c", cmd], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=w.child_env(),
                                  timeout=30)

        out = pkcheck(line)
        self.assertEqual(out.returncode, 0, "pkcheck: %s %s" % (out.stdout, out.stderr))
        # The rule answers only for "self" and prefix app: the same recipe
        # with other details is not authorized (1).
        self.assertEqual(pkcheck(line.replace("--detail self true", "--detail self false"))
                         .returncode, 1)
        self.assertEqual(pkcheck(line.replace("--detail prefix app", "--detail prefix sys"))
                         .returncode, 1)


class FrenchPolicyTests(PolicyTestCase):
    world_options = {"with_daemon": False}

    def test_polkitd_serves_the_french_messages(self):
        def actions(locale):
            reply = ptags_client.call(self.world.conn, "EnumerateActions", "s", [locale],
                                      bus_name="org.freedesktop.PolicyKit1",
                                      path="/org/freedesktop/PolicyKit1/Authority",
                                      interface="org.freedesktop.PolicyKit1.Authority")
            return {a[0]: a for a in self.assertOk(reply)[0] if a[0].startswith("org.ptags.")}

        english, french = actions("C"), actions("fr_FR.UTF-8")
        self.assertEqual(set(french), set(english))
        self.assertEqual(french["org.ptags.tag.add"][1], "Ajouter une étiquette à un processus")
        for action_id in english:
            with self.subTest(action=action_id):
                self.assertNotEqual(french[action_id][1], english[action_id][1])
                self.assertNotEqual(french[action_id][2], english[action_id][2])
                # The same details shown, translated around them.
                self.assertEqual(sorted(re.findall(r"\$\([^)]+\)", french[action_id][2])),
                                 sorted(re.findall(r"\$\([^)]+\)", english[action_id][2])))


if __name__ == "__main__":
    unittest.main(verbosity=2)
