# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_apply.py: Apply is all-or-nothing, "?" is a precondition, changes are
# announced by TagsChanged with normalized lines, and no-ops are free.
#
# Root makes the changes here unless polkit is the point (root skips polkit).

import re
import unittest

from ptags_harness import PtagsTestCase


class ApplyTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call(
            "Apply", "uas", [self.target, ["+app:a", "+app:b", "!app:b=old", "+@keep"]]))
        self.before = self.world.get_tags(self.target)
        self.assertEqual(self.before, [("app:a", False, ""), ("app:b", False, "old"),
                                       ("keep", True, "")])

    def test_last_line_failure_changes_nothing(self):
        signals = self.world.record_signals()
        for lines, error, line_no in [
            (["+new:1", "-app:a", "!app:b=new", "+bad="], "InvalidTag", 4),
            (["+new:1", "-app:*", "!missing=v"], "NoSuchTag", 3),
            (["+new:1", "-keep", "+"], "InvalidCommand", 3),
            (["+new:1", "-@keep", "?app:zz"], "NoSuchTag", 3),
        ]:
            with self.subTest(lines=lines):
                reply = self.world.root_call("Apply", "uas", [self.target, lines])
                self.assertError(reply, error)
                self.assertRegex(reply.message, r"\b%d\b" % line_no,
                                 "the error must name line %d (numbered from 1)" % line_no)
                self.assertEqual(self.world.get_tags(self.target), self.before)
        self.assertEqual(signals.drain(0.3), [])

    def test_query_precondition(self):
        self.assertError(self.world.root_call(
            "Apply", "uas", [self.target, ["?app:trusted", "+app:camera"]]), "NoSuchTag")
        self.assertEqual(self.world.get_tags(self.target), self.before)
        # "?@" needs a kept tag: app:a is not kept.
        self.assertError(self.world.root_call(
            "Apply", "uas", [self.target, ["?@app:a", "+app:camera"]]), "NoSuchTag")
        self.assertEqual(self.world.get_tags(self.target), self.before)
        # A query sees the batch's earlier lines.
        self.assertError(self.world.root_call(
            "Apply", "uas", [self.target, ["-app:a", "?app:a", "+app:camera"]]), "NoSuchTag")
        self.assertEqual(self.world.get_tags(self.target), self.before)
        self.assertOk(self.world.root_call(
            "Apply", "uas", [self.target, ["?app:*", "?@keep", "+app:camera", "# ok", ""]]))
        self.assertIn(("app:camera", False, ""), self.world.get_tags(self.target))

    def test_tags_changed_signal(self):
        signals = self.world.record_signals()
        self.assertOk(self.world.root_call("Apply", "uas", [
            self.target, ["+new", "+@app:*", "!app:a=v=w", "-@keep", "# comment", "!app:b"]]))
        pid, lines, tags = signals.wait(1)[0]
        self.assertEqual(pid, self.target)
        self.assertEqual(lines, ["+new", "+@app:a", "+@app:b", "!app:a=v=w", "-@keep", "!app:b"])
        expected = [("app:a", True, "v=w"), ("app:b", True, ""), ("keep", False, ""),
                    ("new", False, "")]
        self.assertEqual(tags, expected)
        self.assertEqual(self.world.get_tags(self.target), expected)

        self.assertOk(self.world.root_call("RemoveTag", "us", [self.target, "app:*"]))
        pid, lines, tags = signals.wait(2)[1]
        self.assertEqual((pid, lines), (self.target, ["-app:a", "-app:b"]))
        self.assertEqual(tags, [("keep", False, ""), ("new", False, "")])

        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "k", True]))
        self.assertOk(self.world.root_call("SetValue", "uss", [self.target, "k", "1"]))
        events = signals.wait(4)
        self.assertEqual(events[2][1], ["+@k"])
        self.assertEqual(events[3][1], ["!k=1"])
        self.assertEqual(events[3][2], [("k", True, "1"), ("keep", False, ""),
                                        ("new", False, "")])
        self.assertEqual(len(signals.drain(0.3)), 4, "one signal per change call")

    def test_noop_needs_no_authorization_and_is_silent(self):
        client = self.world.spawn_client()  # polkit mock denies everything
        signals = self.world.record_signals()
        self.world.polkit.clear_checks()
        for method, sig, args in [
            ("AddTag", "usb", [self.target, "app:a", False]),
            ("AddTag", "usb", [self.target, "keep", True]),
            ("RemoveTag", "us", [self.target, "absent"]),
            ("RemoveTag", "us", [self.target, "absent:*"]),
            ("SetKeep", "usb", [self.target, "keep", True]),
            ("SetKeep", "usb", [self.target, "app:a", False]),
            ("SetValue", "uss", [self.target, "app:b", "old"]),
            ("SetValue", "uss", [self.target, "app:a", ""]),
            ("Apply", "uas", [self.target, ["+app:a", "-nothing", "?app:b", "# x", ""]]),
        ]:
            with self.subTest(method=method, args=args):
                self.assertOk(client.call(method, sig, args))
        self.assertEqual(self.world.polkit.checks(), [], "no-ops must not ask polkit")
        self.assertEqual(signals.drain(0.5), [], "no-ops must not be signalled")
        self.assertEqual(self.world.get_tags(self.target), self.before)
        # Positive control: a real change next to no-ops is asked about (alone)
        # and signalled (alone).
        self.world.polkit.set_allowed(["org.ptags.tag.add"])
        self.assertOk(client.call("Apply", "uas", [self.target, ["+app:a", "+real", "-gone"]]))
        self.assertEqual([c["details"]["tag"] for c in self.world.polkit.checks()], ["real"])
        self.assertEqual(signals.wait(1)[0][1], ["+real"])

    def test_valid_edge_inputs(self):
        long_tag = "l:" + "x" * 3998
        odd = [":x::a", "a b+c-d!e?f#g", "ptags", "ptags:app:others", "café:ü",
               "Z", "z", "日本:語"]
        lines = ["-"] + ["+" + t for t in odd] + ["+" + long_tag, "!café:ü=wert = ü",
                                                  "!z=" + "v" * 4000]
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, lines]))
        got = self.world.get_tags(self.target)
        names = [t[0] for t in got]
        self.assertEqual(names, sorted(odd + [long_tag], key=lambda n: n.encode()),
                         "sorted byte-wise by name")
        self.assertIn(("café:ü", False, "wert = ü"), got)
        self.assertIn(("z", False, "v" * 4000), got)
        self.assertIn((long_tag, False, ""), got)
        self.assertTrue(self.assertOk(self.world.root_call("HasTag", "us",
                                                           [self.target, "日本:*"]))[0])
        if self.world.backend == "ptags-lsm":
            # The kernel file holds exactly the same list.
            raw = self.world.fixture_tags(self.target).decode()
            self.assertEqual(raw.count("\n"), len(got))
            self.assertIn("café:ü=wert = ü\n", raw)

    def test_batch_at_the_documented_limits(self):
        # 4096 lines and up to 1 MiB of text are accepted (4097 are not,
        # see test_bad_input).
        lines = ["#" + "c" * 250] * 4095 + ["+edge"]
        self.assertLessEqual(sum(len(l) for l in lines), 1 << 20)
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, lines]))
        self.assertIn(("edge", False, ""), self.world.get_tags(self.target))

    def test_set_keep_on_absent_tag_adds_it(self):
        signals = self.world.record_signals()
        self.assertOk(self.world.root_call("SetKeep", "usb", [self.target, "fresh", True]))
        self.assertIn(("fresh", True, ""), self.world.get_tags(self.target))
        self.assertEqual(signals.wait(1)[0][1], ["+@fresh"])
        # Clearing keep on an absent tag creates nothing.
        self.assertOk(self.world.root_call("SetKeep", "usb", [self.target, "ghost", False]))
        self.assertNotIn("ghost", [t[0] for t in self.world.get_tags(self.target)])

    def test_signal_names_the_real_pid_for_pid_0(self):
        client = self.world.spawn_client()
        self.world.polkit.set_allowed(["org.ptags.tag.add"])
        signals = self.world.record_signals()
        self.assertOk(client.call("AddTag", "usb", [0, "me", False]))
        pid, lines, tags = signals.wait(1)[0]
        self.assertEqual((pid, lines, tags), (client.pid, ["+me"], [("me", False, "")]))
        self.assertEqual(self.world.get_tags(client.pid), [("me", False, "")])

    def test_error_messages_name_the_argument(self):
        reply = self.world.root_call("AddTag", "usb", [self.target, "bad=tag", False])
        self.assertError(reply, "InvalidTag")
        self.assertTrue(re.search(r"bad=tag|tag", reply.message), reply.message)


if __name__ == "__main__":
    unittest.main()
