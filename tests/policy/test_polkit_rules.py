# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_polkit_rules.py: ptagsd's checks against the REAL polkitd with our REAL actions and rules:
# an administrator's rule, the shipped caller-holds-right rule, and the separate rights action.
#
# Run one case per meson test, inside `unshare --mount --propagation private`:
#   test_polkit_rules.py AdminRule.test_own_processes_under_app_only
# No logind runs here, so every caller is a subject without a session:
# polkit applies the rules first, then the actions' allow_any ("no").

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_world import PolicyTestCase  # noqa: E402
import ptags_client  # noqa: E402,I100  (policy_world put tests/lib on the path)

# The administrator's rule of the README: nobody (uid 65534) may add tags
# under app: to its own processes, and nothing else.
ADMIN_RULE_APP_FOR_NOBODY = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("prefix") == "app" &&
        action.lookup("target-uid") == "65534") {
        return polkit.Result.YES;
    }
});
"""

# nobody may add any tag; daemon (uid 1) may add tags and change rights.
ADMIN_RULE_RIGHTS = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" &&
        (subject.user == "nobody" || subject.user == "daemon")) {
        return polkit.Result.YES;
    }
    if (action.id == "org.ptags.rights.change" && subject.user == "daemon") {
        return polkit.Result.YES;
    }
});
"""


# polkit's PolkitImplicitAuthorization values, as EnumerateActions reports them.
NOT_AUTHORIZED, ADMIN_AUTHENTICATION_REQUIRED, AUTHORIZED = 0, 2, 5
EXPECTED_ACTIONS = {  # id: (allow_any, allow_inactive, allow_active), org.ptags.Manager(5)
    "org.ptags.tag.add": (NOT_AUTHORIZED, NOT_AUTHORIZED, ADMIN_AUTHENTICATION_REQUIRED),
    "org.ptags.tag.remove": (NOT_AUTHORIZED, NOT_AUTHORIZED, ADMIN_AUTHENTICATION_REQUIRED),
    "org.ptags.tag.set-value": (NOT_AUTHORIZED, NOT_AUTHORIZED, ADMIN_AUTHENTICATION_REQUIRED),
    "org.ptags.rights.change": (NOT_AUTHORIZED, NOT_AUTHORIZED, ADMIN_AUTHENTICATION_REQUIRED),
    "org.ptags.container.register": (NOT_AUTHORIZED, NOT_AUTHORIZED,
                                     ADMIN_AUTHENTICATION_REQUIRED),
    "org.ptags.container.inspect": (NOT_AUTHORIZED, NOT_AUTHORIZED, AUTHORIZED),
}


class PolkitActions(PolicyTestCase):
    world_options = {"with_daemon": False}

    def enumerate_actions(self, locale):
        reply = ptags_client.call(self.world.conn, "EnumerateActions", "s", [locale],
                                  bus_name="org.freedesktop.PolicyKit1",
                                  path="/org/freedesktop/PolicyKit1/Authority",
                                  interface="org.freedesktop.PolicyKit1.Authority")
        actions = self.assertOk(reply)[0]
        return {a[0]: a for a in actions}

    def test_polkitd_loads_our_actions_with_translations(self):
        english = self.enumerate_actions("C")
        self.assertEqual(set(english), set(EXPECTED_ACTIONS),
                         "polkitd did not load exactly our six actions (see polkitd.log)")
        for action_id, defaults in EXPECTED_ACTIONS.items():
            self.assertEqual(tuple(english[action_id][6:9]), defaults, action_id)
        german = self.enumerate_actions("de_DE.UTF-8")
        self.assertEqual(german["org.ptags.tag.add"][1], "Einem Prozess eine Markierung hinzufügen")
        for action_id in EXPECTED_ACTIONS:
            self.assertNotEqual(german[action_id][2], english[action_id][2],
                                "%s: no German message served" % action_id)
            # The same details shown, translated around them.
            self.assertEqual(sorted(re.findall(r"\$\([^)]+\)", german[action_id][2])),
                             sorted(re.findall(r"\$\([^)]+\)", english[action_id][2])))


class AdminRule(PolicyTestCase):
    world_options = {"admin_rules": {"40-test-app-for-nobody.rules": ADMIN_RULE_APP_FOR_NOBODY}}

    def test_own_processes_under_app_only(self):
        w = self.world
        own_target = w.spawn_target(unprivileged=True)
        roots_target = w.spawn_target()
        caller = w.spawn_client_as("nobody")

        self.assertOk(caller.call("AddTag", "usb", [own_target, "app:camera", False]))
        self.assertEqual(w.get_tags(own_target), [("app:camera", False, "")])
        self.assertOk(caller.call("AddTag", "usb", [0, "app:self", True]))
        self.assertEqual(w.get_tags(caller.pid), [("app:self", True, "")])

        # Outside app: and on another user's process, the rule says nothing
        # and allow_any says no; nothing changes.
        self.assertError(caller.call("AddTag", "usb", [own_target, "sys:admin", False]),
                         "NotAuthorized")
        self.assertError(caller.call("AddTag", "usb", [roots_target, "app:camera", False]),
                         "NotAuthorized")
        # The rule grants adding only; removing stays denied.
        self.assertError(caller.call("RemoveTag", "us", [own_target, "app:camera"]),
                         "NotAuthorized")
        # All or nothing: one refused tag in a batch refuses the batch.
        self.assertError(caller.call("Apply", "uas", [own_target, ["+app:mic", "+sys:x"]]),
                         "NotAuthorized")
        self.assertEqual(w.get_tags(own_target), [("app:camera", False, "")])
        self.assertEqual(w.get_tags(roots_target), [])


class ShippedRule(PolicyTestCase):
    def test_caller_holding_the_right_adds_to_itself(self):
        w = self.world
        holder = w.spawn_client_as("nobody")
        self.assertOk(w.root_call("AddTag", "usb", [holder.pid, "ptags:app:add", False]))
        self.assertOk(holder.call("AddTag", "usb", [0, "app:x", False]))
        self.assertEqual(w.get_tags(holder.pid),
                         [("app:x", False, ""), ("ptags:app:add", False, "")])
        # The right covers app: only, and only the caller itself (another
        # process would need ptags:app:others as well).
        self.assertError(holder.call("AddTag", "usb", [0, "sys:x", False]), "NotAuthorized")
        other = w.spawn_target(unprivileged=True)
        self.assertError(holder.call("AddTag", "usb", [other, "app:x", False]), "NotAuthorized")
        self.assertEqual(w.get_tags(other), [])

    def test_caller_without_the_right_is_denied(self):
        w = self.world
        caller = w.spawn_client_as("nobody")
        self.assertError(caller.call("AddTag", "usb", [0, "app:x", False]), "NotAuthorized")
        self.assertEqual(w.get_tags(caller.pid), [])


class ShippedRuleRights(PolicyTestCase):
    """The shipped rule beyond AddTag: rights tags are never its to grant,
    and RemoveTag and SetValue follow the matching right (sub, set)."""

    def test_rights_tags_are_never_approved(self):
        w = self.world
        holder = w.spawn_client_as("nobody")
        # ptags:ptags:add and ptags:ptags:sub are the kernel's rights to add
        # and remove rights tags (the caller-holds-right detail is "true"
        # for them), ptags:app:add the control that the rule is live for
        # this caller.
        self.assertOk(w.root_call("Apply", "uas", [holder.pid, [
            "+ptags:ptags:add", "+ptags:ptags:sub", "+ptags:app:add"]]))
        self.assertOk(holder.call("AddTag", "usb", [0, "app:x", False]))
        # A rights tag is org.ptags.rights.change, which the shipped rule
        # never answers: allow_any ("no") decides.
        for rights_tag in ("ptags:sys:add", "ptags:add", "ptags:app:others"):
            with self.subTest(tag=rights_tag):
                self.assertError(holder.call("AddTag", "usb", [0, rights_tag, False]),
                                 "NotAuthorized")
        self.assertError(holder.call("Apply", "uas", [0, ["+ptags:sys:add"]]), "NotAuthorized")
        # Nor may it take a right away or change a right's value.
        self.assertError(holder.call("RemoveTag", "us", [0, "ptags:app:add"]), "NotAuthorized")
        self.assertEqual(w.get_tags(holder.pid),
                         [("app:x", False, ""), ("ptags:app:add", False, ""),
                          ("ptags:ptags:add", False, ""), ("ptags:ptags:sub", False, "")])

    def test_remove_and_set_value_with_the_right(self):
        w = self.world
        holder = w.spawn_client_as("nobody")
        self.assertOk(w.root_call("Apply", "uas", [holder.pid, [
            "+app:x", "+app:y", "+app:z", "+ptags:app:sub", "+ptags:app:set"]]))
        self.assertOk(holder.call("RemoveTag", "us", [0, "app:x"]))
        self.assertOk(holder.call("SetValue", "uss", [0, "app:y", "v=1"]))
        self.assertOk(holder.call("SetValue", "uss", [0, "app:y", ""]))
        self.assertOk(holder.call("SetValue", "uss", [0, "app:z", "kept"]))
        self.assertEqual(w.get_tags(holder.pid),
                         [("app:y", False, ""), ("app:z", False, "kept"),
                          ("ptags:app:set", False, ""), ("ptags:app:sub", False, "")])
        # The rights cover app: only, and only the caller itself (another
        # process would need ptags:app:others as well).
        self.assertOk(w.root_call("Apply", "uas", [holder.pid, ["+sys:x"]]))
        self.assertError(holder.call("RemoveTag", "us", [0, "sys:x"]), "NotAuthorized")
        self.assertError(holder.call("SetValue", "uss", [0, "sys:x", "v"]), "NotAuthorized")
        other = w.spawn_target(unprivileged=True)
        self.assertOk(w.root_call("Apply", "uas", [other, ["+app:x", "+app:y"]]))
        self.assertError(holder.call("RemoveTag", "us", [other, "app:x"]), "NotAuthorized")
        self.assertError(holder.call("SetValue", "uss", [other, "app:y", "v"]), "NotAuthorized")
        self.assertEqual(w.get_tags(other), [("app:x", False, ""), ("app:y", False, "")])
        self.assertIn(("sys:x", False, ""), w.get_tags(holder.pid))

    def test_remove_and_set_value_without_the_right(self):
        w = self.world
        caller = w.spawn_client_as("nobody")
        # Rights, but not the matching ones: adding under app:, and
        # removing and setting under sys:.
        self.assertOk(w.root_call("Apply", "uas", [caller.pid, [
            "+app:x", "+app:y", "!app:y=old", "+ptags:app:add", "+ptags:sys:sub",
            "+ptags:sys:set"]]))
        before = w.get_tags(caller.pid)
        self.assertError(caller.call("RemoveTag", "us", [0, "app:x"]), "NotAuthorized")
        self.assertError(caller.call("RemoveTag", "us", [0, "app:*"]), "NotAuthorized")
        self.assertError(caller.call("SetValue", "uss", [0, "app:y", "new"]), "NotAuthorized")
        self.assertError(caller.call("SetValue", "uss", [0, "app:x", "v"]), "NotAuthorized")
        self.assertError(caller.call("SetValue", "uss", [0, "app:y", ""]), "NotAuthorized")
        self.assertEqual(w.get_tags(caller.pid), before)
        # The same caller's add right still works: the rule is live.
        self.assertOk(caller.call("AddTag", "usb", [0, "app:new", False]))


class ShippedRuleAbsent(PolicyTestCase):
    # Control for ShippedRule: the same holder, polkit without our rule.
    world_options = {"shipped_rule": False}

    def test_holding_the_right_alone_is_not_enough(self):
        w = self.world
        holder = w.spawn_client_as("nobody")
        self.assertOk(w.root_call("AddTag", "usb", [holder.pid, "ptags:app:add", False]))
        self.assertError(holder.call("AddTag", "usb", [0, "app:x", False]), "NotAuthorized")
        self.assertEqual(w.get_tags(holder.pid), [("ptags:app:add", False, "")])


class RightsChange(PolicyTestCase):
    world_options = {"admin_rules": {"40-test-rights.rules": ADMIN_RULE_RIGHTS}}

    def test_rights_tags_need_the_rights_action(self):
        w = self.world
        adder = w.spawn_client_as("nobody")
        # The rule is live: an ordinary tag is allowed...
        self.assertOk(adder.call("AddTag", "usb", [0, "app:x", False]))
        # ...but a rights tag is org.ptags.rights.change, not tag.add.
        self.assertError(adder.call("AddTag", "usb", [0, "ptags:app:add", False]),
                         "NotAuthorized")
        self.assertEqual(w.get_tags(adder.pid), [("app:x", False, "")])

        rights_admin = w.spawn_client_as("daemon")
        self.assertOk(rights_admin.call("AddTag", "usb", [0, "ptags:app:add", False]))
        self.assertEqual(w.get_tags(rights_admin.pid), [("ptags:app:add", False, "")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
