# test_daemon.py: ptagsd as a process: one instance per bus, bad options
# refused with a message, a clean exit on SIGTERM (checked by the harness).
#
# These run the real executable next to the world's own instance.

import subprocess
import unittest

from ptags_harness import PtagsTestCase


class DaemonLifecycleTests(PtagsTestCase):
    def run_ptagsd(self, *args):
        return subprocess.run([self.world.ptagsd, *args], env=self.world.child_env(),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30)

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
        for args in (["--backend=nope"], ["--polkit-timeout=0"], ["--polkit-timeout=x"],
                     ["--proc-root=/nonexistent"], ["--no-such-option"]):
            with self.subTest(args=args):
                result = self.run_ptagsd(*args)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn("ptagsd", result.stderr, "the refusal must say why")
        self.assertTrue(self.world.daemon_alive())


if __name__ == "__main__":
    unittest.main()
