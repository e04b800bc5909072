# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_polkit.py: what ptagsd asks polkit (action ids, details), and how it
# behaves when polkit hangs, is slow or is absent.
#
# The polkit mock records every CheckAuthorization, so the details an
# administrator's rules would see are checked exactly.

import os
import shutil
import subprocess
import sys
import time
import unittest

from ptags_harness import (UNPRIVILEGED, PtagsTestCase, preload_env, preloaded,
                           second_user_uid, wait_until)

ADD = "org.ptags.tag.add"
REMOVE = "org.ptags.tag.remove"
SET_VALUE = "org.ptags.tag.set-value"
RIGHTS = "org.ptags.rights.change"
NOBODY = 65534


def tool(name):
    return os.path.realpath(shutil.which(name, path="/usr/bin:/bin"))


class PolkitDetailsTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("Apply", "uas", [self.target, ["+app:a", "+@app:b"]]))
        self.client = self.world.spawn_client()
        self.world.polkit.clear_checks()

    def only_check(self):
        checks = self.world.polkit.checks()
        self.assertEqual(len(checks), 1, "expected exactly one polkit check: %r" % checks)
        check = checks[0]
        self.assertEqual(check["subject_kind"], "system-bus-name")
        self.assertEqual(check["subject"]["name"], self.client.unique_name)
        return check

    def assertDetails(self, details, **want):
        """want: detail=value, '_' for '-' ("self_" for the "self" detail)."""
        for key, value in want.items():
            key = key.rstrip("_").replace("_", "-")
            self.assertIn(key, details, "detail %s missing from %r" % (key, details))
            self.assertEqual(details[key], value, "detail %s" % key)

    def wait_runs_as(self, proc, faked, log, runs):
        """Until @proc runs, under the path @faked, a program whose inode
        @runs(inode) accepts."""
        def ready():
            if proc.poll() is not None:
                self.fail("the target exited (%s): %s" % (proc.returncode,
                                                         self.world.read_log(log)))
            try:
                return (os.readlink("/proc/%d/exe" % proc.pid) == faked and
                        runs(os.stat("/proc/%d/exe" % proc.pid).st_ino))
            except OSError:
                return False
        wait_until(ready, 10, "target %d to run its own program as %s" % (proc.pid, faked))

    def assert_exe_not_told(self, pid):
        self.assertError(self.client.call("AddTag", "usb", [pid, "app:cam", False]),
                         "NotAuthorized")
        details = self.only_check()["details"]
        self.assertDetails(details, pid=str(pid), target_uid=str(NOBODY))
        self.assertNotIn("target-exe", details, "an exe that is not the target's program")

    def test_add_details(self):
        self.assertError(self.client.call("AddTag", "usb", [self.target, "app:cam:front", True]),
                         "NotAuthorized")
        check = self.only_check()
        self.assertEqual(check["action"], ADD)
        self.assertDetails(check["details"], tag="app:cam:front", prefix="app", keep="true",
                           pid=str(self.target), target_uid=str(NOBODY), self_="false",
                           caller_holds_right="false")
        self.assertDetails(check["details"], target_comm="sleep", target_user="nobody")
        self.assertTrue(check["details"].get("target-exe", "").endswith("/sleep"),
                        check["details"])
        self.assertEqual(check["details"].get("target-unit", ""), "",
                         "no systemd here, so no unit")

    def test_exe_faked_in_a_mount_namespace_is_not_told(self):
        """/proc/PID/exe reads as a path in the target's own mount namespace,
        where any user can bind-mount a program of theirs over a trusted
        path. polkit must not hear that path: the program is not the one
        it names on the system."""
        faked, sleep = tool("true"), tool("sleep")
        script = ("%s -t tmpfs tmpfs /tmp && cp %s /tmp/own && %s --bind /tmp/own %s && "
                  "exec %s 600" % (tool("mount"), sleep, tool("mount"), faked, faked))
        proc = self.world.spawn("target", UNPRIVILEGED + [tool("unshare"), "-Urm", "sh", "-c",
                                                          script], log_name="faker.log")

        self.wait_runs_as(proc, faked, "faker.log", lambda ino: ino != os.stat(faked).st_ino)
        self.assert_exe_not_told(proc.pid)

    def test_exe_faked_in_a_mount_namespace_of_roots_is_not_told(self):
        """The same in a mount namespace root made for a user, as setuid
        sandbox helpers (bubblewrap, firejail) do: the namespace is root's,
        but the user chose what is mounted where. Only a path that names
        the target's very program on the system (in pid 1's view) is
        told."""
        faked, sleep = tool("true"), tool("sleep")
        own = os.path.join(self.world.tmp, "own")
        shutil.copy(sleep, own)
        os.chmod(own, 0o755)
        script = "%s --bind %s %s && exec %s %s 600" % (
            tool("mount"), own, faked, " ".join(UNPRIVILEGED), faked)
        proc = self.world.spawn("target", [tool("unshare"), "-m", "--propagation", "private",
                                           "sh", "-c", script], log_name="faker.log")

        self.wait_runs_as(proc, faked, "faker.log", lambda ino: ino == os.stat(own).st_ino)
        self.assert_exe_not_told(proc.pid)

    def test_exe_on_another_namespaces_mount_is_not_told(self):
        """A program that lies on a mount of another namespace, run through
        a descriptor by a process of the system's namespace: its link
        reads as the path in that other namespace, where anything may be
        mounted. The mount tables of the target and of the system agree
        about that path; the mount the program lies on is in neither."""
        faked = tool("true")
        own = os.path.join(self.world.tmp, "own")
        shutil.copy(tool("sleep"), own)
        os.chmod(own, 0o755)
        holder = self.world.spawn("holder", [
            tool("unshare"), "-m", "--propagation", "private", "sh", "-c",
            "%s --bind %s %s && exec %s 600" % (tool("mount"), own, faked, tool("sleep"))],
            log_name="holder.log")
        wait_until(lambda: holder.poll() is not None or
                   os.readlink("/proc/%d/exe" % holder.pid).endswith("sleep"), 10,
                   "the holder to bind its program")
        self.assertIsNone(holder.poll(), self.world.read_log("holder.log"))
        run = ("import os; fd = os.open('/proc/%d/root%s', os.O_RDONLY); os.setgroups([]); "
               "os.setgid(%d); os.setuid(%d); os.execve(fd, ['true', '600'], {})"
               % (holder.pid, faked, NOBODY, NOBODY))
        proc = self.world.spawn("target", [sys.executable, "-c", run], log_name="fexec.log")

        self.wait_runs_as(proc, faked, "fexec.log", lambda ino: ino == os.stat(own).st_ino)
        self.assert_exe_not_told(proc.pid)

    def test_exe_under_a_mount_hidden_by_a_later_one_is_not_told(self):
        """A mount at /usr/bin, then another over /usr: the first is still
        listed, and deeper, but what /usr/bin/true runs is the second's."""
        faked = tool("true")
        if not faked.startswith("/usr/bin/"):
            self.fail("true is not in /usr/bin: %s" % faked)
        fake_usr = os.path.join(self.world.tmp, "usr")
        for sub in ("bin", "lib", "lib64"):
            os.makedirs(os.path.join(fake_usr, sub))
        shutil.copy(tool("sleep"), os.path.join(fake_usr, "bin", "true"))
        shutil.copy(tool("setpriv"), os.path.join(fake_usr, "bin", "setpriv"))
        for root, dirs, _ in os.walk(fake_usr):
            os.chmod(root, 0o755)
        # The fake /usr keeps the system's libraries, for the programs it runs.
        mount = tool("mount")
        script = ("%s --bind /usr/bin /usr/bin && %s --bind /usr/lib %s/lib && "
                  "%s --bind /usr/lib64 %s/lib64 && %s --rbind %s /usr && exec %s %s 600" % (
                      mount, mount, fake_usr, mount, fake_usr, mount, fake_usr,
                      " ".join(UNPRIVILEGED), faked))
        proc = self.world.spawn("target", [tool("unshare"), "-m", "--propagation", "private",
                                           "sh", "-c", script], log_name="hidden.log")
        own = os.stat(os.path.join(fake_usr, "bin", "true")).st_ino

        self.wait_runs_as(proc, faked, "hidden.log", lambda ino: ino == own)
        with open("/proc/%d/mountinfo" % proc.pid) as f:
            self.assertIn(" /usr/bin /usr/bin ", f.read(), "no hidden mount at /usr/bin")
        self.assert_exe_not_told(proc.pid)

    def test_exe_in_a_service_like_mount_namespace_is_told(self):
        """A service's own mount namespace (ProtectSystem= mounts /usr
        again, read-only, over itself) names the same files as the
        system's: its target-exe is told."""
        sleep = tool("sleep")
        script = "%s --bind /usr /usr && %s -o remount,bind,ro /usr && exec %s %s 600" % (
            tool("mount"), tool("mount"), " ".join(UNPRIVILEGED), sleep)
        proc = self.world.spawn("target", [tool("unshare"), "-m", "--propagation", "private",
                                           "sh", "-c", script], log_name="service.log")
        wait_until(lambda: proc.poll() is not None or
                   os.readlink("/proc/%d/exe" % proc.pid) == sleep, 10,
                   "target %d to run %s" % (proc.pid, sleep))
        self.assertIsNone(proc.poll(), self.world.read_log("service.log"))
        with open("/proc/%d/mountinfo" % proc.pid) as f:
            self.assertIn(" /usr /usr ", f.read(), "no mount of /usr of its own")
        self.assertError(self.client.call("AddTag", "usb", [proc.pid, "app:cam", False]),
                         "NotAuthorized")
        self.assertEqual(self.only_check()["details"].get("target-exe"), sleep)

    def test_exe_is_judged_again_once_the_mounts_change(self):
        """The mount tables behind target-exe are kept, and read again
        only once the kernel says their namespace's mounts changed: a
        program told at one check is not told at the next once a mount
        hides its path on the system, and is told again once it is gone."""
        with open("/proc/1/mountinfo") as f1, open("/proc/self/mountinfo") as f2:
            if f1.read() != f2.read():
                self.fail("pid 1 must share this test's mount namespace: the mount below "
                          "stands for a change of the system's mounts")
        bindir = os.path.join(self.world.tmp, "bin")
        os.mkdir(bindir, 0o755)
        prog = os.path.join(bindir, "prog")
        shutil.copy(tool("sleep"), prog)
        os.chmod(prog, 0o755)
        proc = self.world.spawn("target", UNPRIVILEGED + [prog, "600"])
        wait_until(lambda: os.readlink("/proc/%d/exe" % proc.pid) == prog, 10,
                   "target %d to run %s" % (proc.pid, prog))

        def told():
            self.world.polkit.clear_checks()
            self.assertError(self.client.call("AddTag", "usb", [proc.pid, "app:cam", False]),
                             "NotAuthorized")
            return self.only_check()["details"].get("target-exe")

        self.assertEqual(told(), prog)
        self.assertEqual(told(), prog)
        subprocess.run([tool("mount"), "-t", "tmpfs", "-o", "mode=755", "tmpfs", bindir],
                       check=True, timeout=10)
        self.addCleanup(subprocess.run, [tool("umount"), "-l", bindir], timeout=10)
        self.assertIsNone(told(), "a path another file system now holds")
        subprocess.run([tool("umount"), bindir], check=True, timeout=10)
        self.assertEqual(told(), prog)

    def test_target_text_that_is_not_utf8_is_unknown(self):
        """A user names their program with bytes that are not UTF-8; its
        comm and path are not text polkit can carry. ptagsd must neither
        fail nor send them: the comm reads as unknown, the path is left
        out."""
        program = self.world.sleep_named_not_utf8()
        proc = self.world.spawn("target", UNPRIVILEGED + [program, "600"])
        wait_until(lambda: os.readlink(b"/proc/%d/exe" % proc.pid) == program, 10,
                   "target %d to run %r" % (proc.pid, program))
        self.assertError(self.client.call("AddTag", "usb", [proc.pid, "app:cam", False]),
                         "NotAuthorized")
        details = self.only_check()["details"]
        self.assertDetails(details, pid=str(proc.pid), target_uid=str(NOBODY), target_comm="",
                           target_user="nobody")
        self.assertNotIn("target-exe", details)

    def test_remove_details_per_matching_tag(self):
        self.assertError(self.client.call("RemoveTag", "us", [self.target, "app:*"]),
                         "NotAuthorized")
        checks = self.world.polkit.checks()
        self.assertTrue(checks)
        self.assertEqual({c["action"] for c in checks}, {REMOVE})
        # Denial of the first may stop the rest, but each check names one tag.
        for c in checks:
            self.assertIn(c["details"]["tag"], ("app:a", "app:b"))
            self.assertDetails(c["details"], prefix="app", pid=str(self.target), self_="false")
        self.world.polkit.set_allowed([REMOVE])
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("RemoveTag", "us", [self.target, "app:*"]))
        tags = sorted(c["details"]["tag"] for c in self.world.polkit.checks())
        self.assertEqual(tags, ["app:a", "app:b"], "every matching tag is authorized")

    def test_set_value_details(self):
        self.assertError(self.client.call("SetValue", "uss", [self.target, "app:a", "v=1"]),
                         "NotAuthorized")
        check = self.only_check()
        self.assertEqual(check["action"], SET_VALUE)
        self.assertDetails(check["details"], tag="app:a", prefix="app", value="v=1",
                           pid=str(self.target), target_uid=str(NOBODY), self_="false",
                           caller_holds_right="false")

    def test_shown_details_cannot_pass_for_the_message(self):
        """The prompt's message shows shown-tag and shown-value: what does
        not print (a bidi override, a line separator), quotes and
        backslashes are escaped, and text past 80 characters is cut. The
        exact text stays in tag and value, for rules."""
        tag = "app:\u202ex\u201d to sleep (1) \\ \"q\" \u2028" + "y" * 100
        # U+034F and U+FE0F are invisible marks, U+2800 and U+3164 blanks.
        value = "v\u2066 \u201eok\u201c\u034f\ufe0f\u2800\u3164"
        self.assertError(self.client.call("SetValue", "uss", [self.target, "app:a", value]),
                         "NotAuthorized")
        details = self.only_check()["details"]
        self.assertDetails(details, value=value, tag="app:a", shown_tag="app:a",
                           shown_value="v\\u{2066} \\u{201E}ok\\u{201C}\\u{034F}\\u{FE0F}"
                           "\\u{2800}\\u{3164}",
                           shown_target_comm="sleep")
        self.world.polkit.clear_checks()
        self.assertError(self.client.call("AddTag", "usb", [self.target, tag, False]),
                         "NotAuthorized")
        details = self.only_check()["details"]
        shown = ("app:\\u{202E}x\\u{201D} to sleep (1) \\u{005C} \\u{0022}q\\u{0022} "
                 "\\u{2028}" + "y" * (80 - tag.index("y")) + "\u2026")
        self.assertDetails(details, tag=tag, value="", shown_tag=shown, shown_value="")

    def test_refusal_names_a_long_tag_shortened(self):
        tag = "app:" + "x" * 3996
        reply = self.client.call("AddTag", "usb", [self.target, tag, False])
        self.assertError(reply, "NotAuthorized")
        self.assertLess(len(reply.message), 300, reply.message)
        self.assertIn("app:xxx", reply.message)

    def test_rights_tag_uses_rights_action(self):
        self.assertError(self.client.call("AddTag", "usb", [self.target, "ptags:app:add", False]),
                         "NotAuthorized")
        check = self.only_check()
        self.assertEqual(check["action"], RIGHTS)
        self.assertDetails(check["details"], tag="ptags:app:add", prefix="ptags", keep="false")

    def test_rights_tags_always_use_rights_action(self):
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "ptags:app:add", False]))
        self.world.polkit.set_allowed([RIGHTS])
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("Apply", "uas", [
            self.target, ["!ptags:app:add=v", "+@ptags:app:add", "+ptags:sub", "-ptags:app:*"]]))
        checks = self.world.polkit.checks()
        self.assertEqual(sorted((c["action"], c["details"]["tag"]) for c in checks),
                         [(RIGHTS, "ptags:app:add")] * 3 + [(RIGHTS, "ptags:sub")])
        self.assertEqual([t[0] for t in self.world.get_tags(self.target)],
                         ["app:a", "app:b", "ptags:sub"])

    def test_keep_and_remove_details(self):
        self.world.polkit.set_allowed([ADD, REMOVE])
        self.assertOk(self.client.call("SetKeep", "usb", [self.target, "app:a", True]))
        check = self.only_check()
        self.assertEqual(check["action"], ADD)
        self.assertDetails(check["details"], tag="app:a", keep="true", self_="false")
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("SetKeep", "usb", [self.target, "app:b", False]))
        check = self.only_check()
        self.assertEqual(check["action"], REMOVE)
        self.assertDetails(check["details"], tag="app:b", keep="false")

        # The caller holding ptags:app:sub removes its own app:x: a right it holds.
        self.assertOk(self.world.root_call("Apply", "uas",
                                           [self.client.pid, ["+ptags:app:sub", "+app:x"]]))
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("RemoveTag", "us", [0, "app:x"]))
        check = self.only_check()
        self.assertEqual(check["action"], REMOVE)
        self.assertDetails(check["details"], tag="app:x", pid=str(self.client.pid),
                           self_="true", caller_holds_right="true")

    def test_caller_holds_right_for_itself(self):
        # The caller holds ptags:app:add: adding app:* to itself is a right it has.
        self.assertOk(self.world.root_call("AddTag", "usb",
                                           [self.client.pid, "ptags:app:add", False]))
        self.world.polkit.set_allowed([ADD])
        self.assertOk(self.client.call("AddTag", "usb", [0, "app:self", False]))
        check = self.only_check()
        self.assertEqual(check["action"], ADD)
        self.assertDetails(check["details"], tag="app:self", prefix="app",
                           pid=str(self.client.pid), target_uid=str(NOBODY), self_="true",
                           caller_holds_right="true")
        self.assertIn(("app:self", False, ""), self.world.get_tags(self.client.pid))

        # Outside the right (prefix other) it is false, even for itself.
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("AddTag", "usb", [self.client.pid, "web:x", False]))
        self.assertDetails(self.only_check()["details"], self_="true",
                           caller_holds_right="false")

        # Another process needs ptags:others too: false.
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("AddTag", "usb", [self.target, "app:other", False]))
        self.assertDetails(self.only_check()["details"], self_="false",
                           caller_holds_right="false")

        # Its own pidfd is "self" as much as pid 0 is.
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("ApplyFd", "has", [0, ["+app:viafd"]],
                                       pidfd_of=self.client.pid))
        self.assertDetails(self.only_check()["details"], pid=str(self.client.pid), self_="true",
                           caller_holds_right="true")

        # With ptags:app:others as well, true for the other process.
        self.assertOk(self.world.root_call("AddTag", "usb",
                                           [self.client.pid, "ptags:app:others", False]))
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("AddTag", "usb", [self.target, "app:other2", False]))
        self.assertDetails(self.only_check()["details"], self_="false",
                           caller_holds_right="true")

    def test_an_undumpable_caller_is_not_proven_by_its_pid(self):
        """Without the bus's ProcessFD, a process of the caller's uid at the
        reported pid counted as the caller's even when not dumpable, yet a
        process of one uid cannot trace one that is not dumpable: taken for
        it (the connector gone, its pid reused), an attacker gained its
        rights. Such a process is now unknown, as one with a capability is."""
        self.assertOk(self.world.root_call("AddTag", "usb",
                                           [self.client.pid, "ptags:app:add", False]))
        guarded = self.world.spawn_client(undumpable=True)
        self.assertOk(self.world.root_call("AddTag", "usb",
                                           [guarded.pid, "ptags:app:add", False]))
        self.world.polkit.set_allowed([ADD])
        reply = guarded.call("AddTag", "usb", [0, "app:self", False])
        self.assertError(reply, "NoSuchProcess")
        self.assertIn("cannot be identified", reply.message)
        # A registration needs the caller's process (the descendant rule,
        # the registrant): refused before polkit is asked, with no prompt.
        self.world.polkit.clear_checks()
        reply = guarded.call("RegisterContainer", "uta{sv}", [self.target, 77, {}])
        self.assertError(reply, "NoSuchProcess")
        self.assertIn("cannot be identified", reply.message)
        self.assertEqual(self.world.polkit.checks(), [])
        self.assertOk(guarded.call("AddTag", "usb", [guarded.pid, "app:named", False]))
        checks = self.world.polkit.checks()
        self.assertEqual([c["subject"]["name"] for c in checks], [guarded.unique_name])
        self.assertDetails(checks[0]["details"], self_="false", caller_holds_right="false")
        # The same caller, dumpable: itself, with the right its tags grant.
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("AddTag", "usb", [0, "app:self", False]))
        self.assertDetails(self.only_check()["details"], self_="true",
                           caller_holds_right="true")

    def test_caller_holds_right_follows_the_call(self):
        # Judged as the kernel judges lines in order: a caller changing
        # itself holds the rights tags the earlier changes of the same call
        # add, and no longer those they remove.
        self.assertOk(self.world.root_call("Apply", "uas", [self.client.pid, [
            "+ptags:ptags:add", "+ptags:ptags:sub", "+ptags:app:sub", "+app:old"]]))
        self.world.polkit.set_allowed([ADD, REMOVE, RIGHTS])
        self.world.polkit.clear_checks()
        self.assertOk(self.client.call("Apply", "uas", [0, [
            "+ptags:app:add", "+app:new", "-ptags:app:sub", "-app:old"]]))
        got = {c["details"]["tag"]: (c["action"], c["details"]["caller-holds-right"])
               for c in self.world.polkit.checks()}
        self.assertEqual(got, {"ptags:app:add": (RIGHTS, "true"),
                               "app:new": (ADD, "true"),
                               "ptags:app:sub": (RIGHTS, "true"),
                               "app:old": (REMOVE, "false")})
        tags = [t[0] for t in self.world.get_tags(self.client.pid)]
        self.assertIn("app:new", tags)
        self.assertNotIn("app:old", tags)


class PolkitHangTests(PtagsTestCase):
    def setUp(self):
        super().setUp()
        self.slow_target = self.world.spawn_target(unprivileged=True)
        self.other_target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("AddTag", "usb", [self.other_target, "app:x", False]))
        self.slow = self.world.spawn_client()
        self.fast = self.world.spawn_client()

    def test_hanging_check_does_not_block_others(self):
        polkit = self.world.polkit
        polkit.set_hang([ADD])
        polkit.set_allowed([ADD, REMOVE])
        self.slow.send("AddTag", "usb", [self.slow_target, "app:slow", False])
        polkit.wait_hanging(1)

        # Reads and other changes by others are answered meanwhile.
        started = time.monotonic()
        got = self.assertOk(self.fast.call("GetTags", "u", [self.other_target], timeout=5))[0]
        self.assertEqual([tuple(t) for t in got], [("app:x", False, "")])
        self.assertOk(self.fast.call("RemoveTag", "us", [self.other_target, "app:x"], timeout=5))
        self.assertOk(self.world.root_call("AddTag", "usb", [self.other_target, "root:y", False],
                                           timeout_ms=5000))
        self.assertEqual(self.world.get_tags(self.other_target), [("root:y", False, "")])
        self.assertLess(time.monotonic() - started, 5)
        self.assertFalse(self.slow.pending(0.2), "the hanging call must still wait")
        self.assertEqual(self.world.get_tags(self.slow_target), [])

        polkit.release()
        self.assertOk(self.slow.receive(timeout=10))
        self.assertEqual(self.world.get_tags(self.slow_target), [("app:slow", False, "")])

    def test_big_hanging_batch_does_not_block_others(self):
        """One caller's batch of 40 changes, all waiting for polkit (say, for
        password dialogs), must not hold up another caller's check."""
        polkit = self.world.polkit
        polkit.set_hang([ADD])
        polkit.set_allowed([ADD, REMOVE])
        self.slow.send("Apply", "uas", [self.slow_target, ["+big:%02d" % i for i in range(40)]])
        polkit.wait_hanging(1)
        self.fast.send("RemoveTag", "us", [self.other_target, "app:x"])
        self.assertTrue(self.fast.pending(5.0),
                        "another caller's check waited behind a hanging batch")
        self.assertOk(self.fast.receive())
        self.assertEqual(self.world.get_tags(self.other_target), [])
        polkit.set_hang([])
        polkit.release()
        self.assertOk(self.slow.receive(timeout=15))
        self.assertEqual(len(self.world.get_tags(self.slow_target)), 40)

    def test_one_users_flood_does_not_block_another_user(self):
        """13 callers of one user keep 104 checks waiting (open password
        dialogs, say); a caller of another user must still be answered.
        ptagsd caps checks in flight (the bus limits pending replies), so
        the cap must be shared fairly between users, not first come."""
        polkit = self.world.polkit
        polkit.set_hang([ADD])
        polkit.set_allowed([ADD, REMOVE])
        flood = [self.world.spawn_client() for _ in range(13)]
        for i, client in enumerate(flood):
            client.send("Apply", "uas", [self.slow_target, ["+f%d:%d" % (i, j) for j in range(8)]],
                        timeout_ms=60000)
        polkit.wait_hanging(8)
        other_user = self.world.spawn_client(uid=second_user_uid())
        other_user.send("RemoveTag", "us", [self.other_target, "app:x"])
        self.assertTrue(other_user.pending(5.0),
                        "another user's check waited behind one user's flood")
        self.assertOk(other_user.receive())
        polkit.set_hang([])
        polkit.release()
        for client in flood:
            self.assertOk(client.receive(timeout=30))

    def test_target_exits_during_authorization(self):
        polkit = self.world.polkit
        polkit.set_hang([ADD])
        polkit.set_allowed([ADD])
        signals = self.world.record_signals()
        self.slow.send("AddTag", "usb", [self.slow_target, "app:late", False])
        polkit.wait_hanging(1)
        self.world.kill(self.slow_target)
        polkit.release()
        self.assertError(self.slow.receive(timeout=10), "NoSuchProcess")
        self.assertEqual(signals.drain(0.5), [], "nothing was changed, nothing signalled")
        found = self.assertOk(self.world.root_call("FindTagged", "s", ["app:late"]))[0]
        self.assertEqual(found, [], "the tag must not land on any process")
        # The daemon keeps serving.
        self.assertEqual(self.world.get_tags(self.other_target), [("app:x", False, "")])


    def test_target_exits_during_authorization_fd(self):
        self.world.polkit.set_hang([REMOVE])
        self.world.polkit.set_allowed([REMOVE])
        self.assertOk(self.world.root_call("AddTag", "usb", [self.slow_target, "app:z", False]))
        self.slow.send("ApplyFd", "has", [0, ["-app:z"]], pidfd_of=self.slow_target)
        self.world.polkit.wait_hanging(1)
        self.world.kill(self.slow_target)
        self.world.polkit.release()
        self.assertError(self.slow.receive(timeout=10), "NoSuchProcess")

    def test_pid_reused_during_authorization(self):
        """The target exits while polkit thinks and a new process gets its
        pid: the change must not land on the newcomer."""
        polkit = self.world.polkit
        polkit.set_hang([ADD])
        polkit.set_allowed([ADD])
        signals = self.world.record_signals()
        pid = self.slow_target
        self.slow.send("AddTag", "usb", [pid, "app:stolen", False])
        polkit.wait_hanging(1)
        self.world.kill(pid)
        self.assertEqual(self.world.spawn_target_at(pid), pid)
        self.assertEqual(self.world.get_tags(pid), [], "a new process starts empty")
        polkit.release()
        self.assertError(self.slow.receive(timeout=10), "NoSuchProcess")
        self.assertEqual(self.world.get_tags(pid), [], "the newcomer got the old target's tag")
        self.assertEqual(signals.drain(0.3), [])


class PolkitTimeoutTests(PtagsTestCase):
    world_options = {"polkit_timeout": 2}

    def test_check_slower_than_timeout_is_denied(self):
        target = self.world.spawn_target(unprivileged=True)
        client = self.world.spawn_client()
        self.world.polkit.set_hang([ADD])
        self.world.polkit.set_allowed([ADD])
        started = time.monotonic()
        self.assertError(client.call("AddTag", "usb", [target, "app:x", False], timeout=15),
                         "NotAuthorized")
        self.assertLess(time.monotonic() - started, 8, "the polkit timeout was not honoured")
        self.assertEqual(self.world.get_tags(target), [])
        # The abandoned check is cancelled, so a real agent's dialog closes.
        self.assertTrue(self.world.polkit.cancellations(),
                        "ptagsd gave up on polkit without CancelCheckAuthorization")
        # A late "yes" must not apply the change afterwards.
        self.world.polkit.release()
        time.sleep(0.3)
        self.assertEqual(self.world.get_tags(target), [])


class PolkitTimeoutBatchTests(PtagsTestCase):
    # The timer is ptagsd's alone: one backend is enough.
    backends = ("bpf",)
    world_options = {"polkit_timeout": 2}

    def test_the_timeout_bounds_each_wait_not_the_whole_batch(self):
        """A batch's checks go to polkit 8 at a time and may each ask a
        person in turn: the timeout bounds how long polkit keeps the batch
        without an answer. Three rounds, each answered inside the 2 s,
        together outlast it (and the up to 1 s the timer may round up)."""
        target = self.world.spawn_target(unprivileged=True)
        client = self.world.spawn_client()
        self.world.polkit.set_allowed([ADD])
        self.world.polkit.set_hang([ADD])
        batch = ["+app:%02d" % i for i in range(24)]
        started = time.monotonic()
        client.send("Apply", "uas", [target, batch], timeout_ms=30000)
        for _ in range(3):
            self.world.polkit.wait_hanging(8)
            time.sleep(1.3)
            self.world.polkit.release()
        self.assertOk(client.receive(timeout=15))
        self.assertGreater(time.monotonic() - started, 3.5)
        self.assertEqual(len(self.world.get_tags(target)), 24)

    def test_a_call_queued_behind_others_gets_the_whole_timeout(self):
        """One user has 16 checks at polkit at most: a third call waits for
        its turn, and its check, once sent, gets the whole timeout (the
        timer fires from 2 s to 3 s after it is armed)."""
        targets = [self.world.spawn_target(unprivileged=True) for _ in range(3)]
        clients = [self.world.spawn_client() for _ in range(3)]
        self.world.polkit.set_allowed([ADD])
        self.world.polkit.set_hang([ADD])
        for client, target in zip(clients[:2], targets):
            client.send("Apply", "uas", [target, ["+x:%d" % i for i in range(8)]],
                        timeout_ms=30000)
        self.world.polkit.wait_hanging(16)
        clients[2].send("AddTag", "usb", [targets[2], "z", False], timeout_ms=30000)
        time.sleep(1.5)
        self.world.polkit.release()
        self.world.polkit.wait_hanging(1)
        time.sleep(1.6)  # 3.1 s after the call: past its first timer
        self.world.polkit.release()
        for client in clients:
            self.assertOk(client.receive(timeout=15))
        self.assertEqual(self.world.get_tags(targets[2]), [("z", False, "")])


class PolkitCrashTests(PtagsTestCase):
    world_options = {"polkit_timeout": 20}

    def test_polkit_crash_mid_check_denies_then_recovers(self):
        target = self.world.spawn_target(unprivileged=True)
        client = self.world.spawn_client()
        self.world.polkit.set_allowed([ADD])
        self.world.polkit.set_hang([ADD])
        client.send("AddTag", "usb", [target, "app:x", False])
        self.world.polkit.wait_hanging(1)
        started = time.monotonic()
        self.world.stop_polkit_mock()
        # Denied at once (the bus reports the lost reply), not after 20 s.
        self.assertError(client.receive(timeout=15), "NotAuthorized")
        self.assertLess(time.monotonic() - started, 10)
        self.assertEqual(self.world.get_tags(target), [])
        # A restarted polkit is used for the next check.
        self.world.start_polkit_mock()
        self.world.polkit.set_allowed([ADD])
        self.assertOk(client.call("AddTag", "usb", [target, "app:x", False]))
        self.assertEqual(self.world.get_tags(target), [("app:x", False, "")])
        self.assertEqual(len(self.world.polkit.checks()), 1)


class SlowUserDatabaseTests(PtagsTestCase):
    """The user database answers for nobody only after 5 s, as a stalled
    NSS daemon (sssd, nslcd) would: ptagsd asked it on its main loop for
    target-user, so every call waited, and everyone's with it."""
    world_options = {"daemon_env": preload_env({
        "PTAGS_SLOW_NAME_UID": str(NOBODY), "PTAGS_SLOW_NAME_SECONDS": "5"})}

    def setUp(self):
        with preloaded("PTAGS_SLOW_NAMES"):
            super().setUp()

    def details_of_a_check(self, client, target, tag):
        """The details of the check AddTag(@target, @tag) makes, and the
        seconds the call took."""
        self.world.polkit.clear_checks()
        started = time.monotonic()
        self.assertError(client.call("AddTag", "usb", [target, tag, False]), "NotAuthorized")
        took = time.monotonic() - started
        return self.world.polkit.checks()[-1]["details"], took

    def test_a_stalled_user_database_stalls_no_call(self):
        client = self.world.spawn_client()
        ours = self.world.spawn_target()  # root's: the database answers at once
        theirs = self.world.spawn_target(unprivileged=True)
        details, _ = self.details_of_a_check(client, ours, "app:a")
        self.assertEqual(details.get("target-user"), "root")
        time.sleep(1.1)  # root's name is no longer fresh

        # nobody's name takes 5 s: the call waits half a second at most.
        details, took = self.details_of_a_check(client, theirs, "app:a")
        self.assertLess(took, 1.5, "the change waited for the user database")
        self.assertEqual(details["target-uid"], str(NOBODY))
        self.assertNotIn("target-user", details, "the name came though the database stalled")

        # Stuck for more than half a second: nobody waits at all, and root's
        # name, known before, is told while the database is stuck.
        time.sleep(0.6)
        details, took = self.details_of_a_check(client, ours, "app:b")
        self.assertLess(took, 0.3, "a call waited for a stuck user database")
        self.assertEqual(details.get("target-user"), "root")

        # Once the database answers, nobody's name is kept and told.
        wait_until(lambda: self.details_of_a_check(client, theirs, "app:c")[0].get(
            "target-user") == "nobody", 12, "the name to come once the database answers",
            interval=0.5)


class PolkitAbsentTests(PtagsTestCase):
    world_options = {"polkit": "none", "polkit_timeout": 3}

    def test_changes_denied_reads_work(self):
        target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "app:a", False]))
        client = self.world.spawn_client()
        for method, sig, args in [
            ("AddTag", "usb", [target, "app:b", False]),
            ("RemoveTag", "us", [target, "app:a"]),
            ("SetValue", "uss", [target, "app:a", "v"]),
            ("Apply", "uas", [target, ["+app:c"]]),
        ]:
            with self.subTest(method=method):
                started = time.monotonic()
                self.assertError(client.call(method, sig, args, timeout=15), "NotAuthorized")
                self.assertLess(time.monotonic() - started, 6)
        self.assertEqual(self.world.get_tags(target), [("app:a", False, "")])
        got = self.assertOk(client.call("GetTags", "u", [target]))[0]
        self.assertEqual([tuple(t) for t in got], [("app:a", False, "")])
        self.assertTrue(self.assertOk(client.call("HasTag", "us", [target, "app:a"]))[0])
        # Root still works without polkit.
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "app:root", False]))


if __name__ == "__main__":
    unittest.main()
