# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_mainline.py: ptagsd on a mainline-like kernel, where writing another
# process's attr file fails with EACCES: changes are NotSupported, reads work.
#
# The kernel fixture imitates that kernel with --mainline.

import unittest

from ptags_harness import PtagsTestCase


class MainlineKernelTests(PtagsTestCase):
    backends = ("ptags-lsm",)  # the fixture imitates the mainline kernel
    world_options = {"fixture_args": ["--mainline"]}

    def test_changes_not_supported_reads_work(self):
        target = self.world.spawn_target(unprivileged=True)
        signals = self.world.record_signals()
        for method, sig, args in [
            ("AddTag", "usb", [target, "app:x", False]),
            ("Apply", "uas", [target, ["+app:x", "+app:y"]]),
            ("SetKeep", "usb", [target, "app:x", True]),
        ]:
            with self.subTest(method=method):
                self.assertError(self.world.root_call(method, sig, args), "NotSupported")
        self.assertEqual(self.world.get_tags(target), [])
        self.assertFalse(self.assertOk(self.world.root_call("HasTag", "us", [target, ""]))[0])
        self.assertEqual(signals.drain(0.3), [], "a refused change is not signalled")


class AsciiOnlyKernelTests(PtagsTestCase):
    """The 2016 code refuses bytes past 0x7f where char is signed (x86-64),
    which ptags(7) allows: the kernel's EINVAL is NotSupported, not another
    writer's doing, and a batch is taken back whole."""
    backends = ("ptags-lsm",)
    world_options = {"fixture_args": ["--ascii-only"]}

    def test_a_line_the_kernel_refuses_is_not_supported(self):
        target = self.world.spawn_target()
        reply = self.world.root_call("AddTag", "usb", [target, "app:caf\u00e9", False])
        self.assertError(reply, "NotSupported")
        self.assertIn("past 0x7f", reply.message)
        self.assertNotIn("another writer", reply.message)
        reply = self.world.root_call("Apply", "uas", [target, ["+app:a", "+app:\u00e9"]])
        self.assertError(reply, "NotSupported")
        self.assertIn('line 2 ("+app:\u00e9")', reply.message)
        self.assertEqual(self.world.get_tags(target), [])
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "app:cafe", False]))

    def test_a_batch_the_kernel_would_refuse_midway_writes_nothing(self):
        """ptagsd learns at start that the kernel takes no bytes past 0x7f
        and refuses such a batch before writing: "-app:x" would apply, and
        its undo may not give back a tag held without the keep flag (an
        exec may have dropped it), so the process would keep part of it."""
        target = self.world.spawn_target()
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+app:x", "!app:x=v"]]))
        reply = self.world.root_call("Apply", "uas", [target, ["-app:x", "+app:caf\u00e9"]])
        self.assertError(reply, "NotSupported")
        self.assertIn('line 2 ("+app:caf\u00e9")', reply.message)
        self.assertIn("nothing changed", reply.message)
        self.assertEqual(self.world.get_tags(target), [("app:x", False, "v")])


if __name__ == "__main__":
    unittest.main()
