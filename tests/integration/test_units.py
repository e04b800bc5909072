# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_units.py: the target-unit and target-user-unit polkit details, read
# through sd-login from a target placed in real cgroups named like units.
#
# A user's own camera-app.service (under user@UID.service) must not pass for
# the system's camera-app.service: polkit rules trust target-unit.

import os
import unittest

from ptags_harness import HarnessError, PtagsTestCase

ADD = "org.ptags.tag.add"


def systemd_hierarchy():
    """The cgroup hierarchy sd-login reads /proc/PID/cgroup against: the
    unified one (pure or hybrid), else the legacy name=systemd one."""
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(path, "cgroup.procs")) and \
                os.path.exists(os.path.join(path, "cgroup.controllers")):
            return path
    if os.path.exists("/sys/fs/cgroup/systemd/cgroup.procs"):
        return "/sys/fs/cgroup/systemd"
    raise HarnessError("no writable systemd cgroup hierarchy: units cannot be tested")


class UnitDetailTests(PtagsTestCase):
    # The details do not depend on where tags live.
    backends = ("ptags-lsm",)

    def setUp(self):
        super().setUp()
        # A private top slice of our own, removed at the end: the host's
        # user.slice and system.slice are never touched.
        self.top = os.path.join(systemd_hierarchy(), "ptags-it-%d.slice" % os.getpid())
        self.addCleanup(self.remove_cgroups)
        self.client = self.world.spawn_client()

    def remove_cgroups(self):
        if not os.path.isdir(self.top):
            return
        # Deepest first; a cgroup can only go once it holds no process.
        for dirpath, _dirs, _files in sorted(os.walk(self.top), key=lambda w: -len(w[0])):
            os.rmdir(dirpath)

    def target_in(self, relative):
        """A nobody target moved into TOP/@relative (created here)."""
        path = os.path.join(self.top, relative)
        os.makedirs(path, exist_ok=True)
        pid = self.world.spawn_target(unprivileged=True)
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("%d\n" % pid)
        self.addCleanup(self.world.kill, pid)
        return pid

    def details_for(self, pid):
        self.world.polkit.clear_checks()
        self.assertError(self.client.call("AddTag", "usb", [pid, "app:cam", False]),
                         "NotAuthorized")
        checks = self.world.polkit.checks()
        self.assertEqual(len(checks), 1, checks)
        self.assertEqual(checks[0]["action"], ADD)
        return checks[0]["details"]

    def test_user_service_is_not_the_system_unit(self):
        pid = self.target_in("user@1500.service/app.slice/camera-app.service")
        details = self.details_for(pid)
        self.assertEqual(details.get("target-unit"), "user@1500.service", details)
        self.assertEqual(details.get("target-user-unit"), "camera-app.service", details)

    def test_system_service(self):
        pid = self.target_in("camera-app.service")
        details = self.details_for(pid)
        self.assertEqual(details.get("target-unit"), "camera-app.service", details)
        self.assertNotIn("target-user-unit", details)

    def test_user_scope(self):
        pid = self.target_in("user@1500.service/app.slice/app-gnome-cam-42.scope")
        details = self.details_for(pid)
        self.assertEqual(details.get("target-unit"), "user@1500.service", details)
        self.assertEqual(details.get("target-user-unit"), "app-gnome-cam-42.scope", details)


if __name__ == "__main__":
    unittest.main()
