# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_ptagsctl.py: the built ptagsctl against the real ptagsd on a private bus (polkit mock):
# every command's success and failure, its exit code, its table and its --json shape.
#
# Changes are made as nobody (root skips polkit) so authorization is exercised;
# reads as root or nobody. One meson test per method (tests/ctl/meson.build).

import errno
import json
import os
import pty
import re
import signal
import subprocess
import time
import unittest

import ctl_run
from ctl_run import run, run_json, tags_json
from ptags_harness import NOBODY_UID, PYTHON, PtagsTestCase, sleep_sleeps, wait_until

ADD = "org.ptags.tag.add"
REMOVE = "org.ptags.tag.remove"
SET_VALUE = "org.ptags.tag.set-value"

# Exit codes of man/ptagsctl.1.
OK, NO_MATCH, USAGE, INVALID, DENIED, NO_PROCESS, UNREACHABLE, FAILED = 0, 1, 2, 3, 4, 5, 6, 7


class CtlTestCase(PtagsTestCase):
    def assertExit(self, out, code, error_name=None):
        self.assertEqual(out.returncode, code, "exit %d, expected %d; stderr: %s"
                         % (out.returncode, code, out.stderr))
        if code not in (OK, NO_MATCH):
            self.assertTrue(out.stderr.startswith("ptagsctl: "), out.stderr)
            self.assertEqual(out.stdout, "", "errors belong on stderr")
        if error_name:
            self.assertIn(error_name, out.stderr)

    def target(self, lines=()):
        pid = self.world.spawn_target(unprivileged=True)
        if lines:
            self.assertOk(self.world.root_call("Apply", "uas", [pid, list(lines)]))
        return pid


class ReadTests(CtlTestCase):
    def test_status(self):
        out = run(self.world, "status")
        self.assertExit(out, OK)
        self.assertRegex(out.stdout, r"(?m)^ *Backend: %s$" % re.escape(
            self.world.get_property("Backend")))
        self.assertRegex(out.stdout, r"(?m)^ *Max tags: 4000$")
        got = run_json(self, self.world, "status")
        self.assertEqual(got, {
            "version": self.world.get_property("Version"),
            "backend": self.world.get_property("Backend"),
            "features": list(self.world.get_property("Features")),
            "max_tags": 4000, "max_tag_length": 4000, "max_value_length": 32700})

    def test_list_table_json_and_self(self):
        pid = self.target(["+app:a", "+@app:longer-name", "!app:a=x y", "+z"])
        expected = [("app:a", False, "x y"), ("app:longer-name", True, ""), ("z", False, "")]
        out = run(self.world, "list", str(pid), uid=NOBODY_UID)
        self.assertExit(out, OK)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["TAG", "KEEP", "VALUE"])
        self.assertEqual([ln.split()[0] for ln in lines[1:4]], [t[0] for t in expected])
        # Aligned: every row's KEEP cell starts under the KEEP header.
        col = lines[0].index("KEEP")
        self.assertEqual({ln[col:col + 3].strip() for ln in lines[1:4]}, {"no", "yes"})
        self.assertEqual(lines[4:], ["", "3 tags listed."])
        self.assertFalse(any(ln.endswith(" ") for ln in lines), "trailing blanks")

        bare = run(self.world, "--no-legend", "list", str(pid))
        self.assertEqual(len(bare.stdout.splitlines()), 3)
        self.assertEqual(run_json(self, self.world, "list", str(pid)),
                         {"pid": pid, "tags": tags_json(expected)})
        # self is ptagsctl's own process: untagged here.
        got = run_json(self, self.world, "list", "self")
        self.assertEqual(got["tags"], [])
        self.assertIsInstance(got["pid"], int)
        self.assertEqual(run(self.world, "list", "self").stdout, "No tags.\n")

    def test_list_failures(self):
        self.assertExit(run(self.world, "list", "12abc"), USAGE)
        self.assertExit(run(self.world, "list", "0"), USAGE)
        self.assertExit(run(self.world, "list"), USAGE)
        self.assertExit(run(self.world, "list", "1", "2"), USAGE)
        # No pidfd can be had of a process that is gone: ptagsd is not asked.
        out = run(self.world, "list", str(self.world.dead_pid()))
        self.assertExit(out, NO_PROCESS, "No such process")
        self.assertNotIn("org.ptags.Error", out.stderr, "the answer came from ptagsd")

    def test_check_exit_status(self):
        pid = self.target(["+app:a", "+@app:b"])
        self.assertExit(run(self.world, "check", str(pid), "app:a"), OK)
        self.assertExit(run(self.world, "check", str(pid), "@app:*"), OK)
        self.assertExit(run(self.world, "check", str(pid), "@app:a"), NO_MATCH)
        self.assertExit(run(self.world, "check", str(pid), "other"), NO_MATCH)
        self.assertEqual(run(self.world, "check", str(pid), "other").stdout, "")
        self.assertEqual(run(self.world, "--json", "check", str(pid), "app:*").stdout,
                         json.dumps({"pid": pid, "pattern": "app:*", "match": True}) + "\n")
        out = run(self.world, "--json", "check", str(pid), "x")
        self.assertEqual((out.returncode, json.loads(out.stdout)["match"]), (NO_MATCH, False))
        self.assertExit(run(self.world, "check", str(pid), "a*b"), INVALID,
                        "org.ptags.Error.InvalidPattern")
        self.assertExit(run(self.world, "check", str(self.world.dead_pid()), "x"), NO_PROCESS)

    def test_check_of_ptagsd_itself(self):
        """ptagsd takes no changes to its own tags, but a check asks only:
        it exited 7 (NotSupported), which a script reads as neither yes nor
        no."""
        out = run(self.world, "check", str(self.world.daemon.pid), "app:none")
        self.assertExit(out, NO_MATCH)
        self.assertNotIn("ptagsd itself", out.stderr)

    def test_peer(self):
        client = self.world.spawn_client()
        self.assertOk(self.world.root_call("AddTag", "usb", [client.pid, "app:peer", True]))
        out = run(self.world, "peer", client.unique_name, uid=NOBODY_UID)
        self.assertExit(out, OK)
        self.assertEqual(out.stdout.splitlines()[1].split(), ["app:peer", "yes"])
        self.assertEqual(run_json(self, self.world, "peer", client.unique_name),
                         {"bus_name": client.unique_name,
                          "tags": [{"name": "app:peer", "keep": True, "value": ""}]})
        self.assertExit(run(self.world, "peer", ":1.99999"), NO_PROCESS,
                        "org.ptags.Error.NoSuchProcess")

    def test_find(self):
        one = self.target(["+app:found", "+other"])
        two = self.target(["+app:found", "!app:found=v"])
        self.target(["+unrelated"])
        got = run_json(self, self.world, "find", "app:found")
        self.assertEqual(got["pattern"], "app:found")
        mine = [p for p in got["processes"] if p["pid"] in (one, two)]
        self.assertEqual(mine, [
            # FindTagged lists each process's matching tags only.
            {"pid": one, "tags": tags_json([("app:found", False, "")])},
            {"pid": two, "tags": tags_json([("app:found", False, "v")])}])
        out = run(self.world, "find", "app:found")
        self.assertExit(out, OK)
        rows = [ln.split() for ln in out.stdout.splitlines()[1:] if ln.strip()]
        self.assertIn([str(one), "app:found", "no"], rows)
        self.assertIn([str(two), "app:found", "no", "v"], rows)
        self.assertEqual(run(self.world, "find", "nothing:here").stdout,
                         "No process holds a matching tag.\n")
        self.assertExit(run(self.world, "find", "bad*"), INVALID, "InvalidPattern")

    def test_pids_in_a_pid_namespace_of_its_own_name_its_processes(self):
        """In a container with a pid namespace of its own, ptagsctl reads a
        PID there as the container does (through a pidfd it opens itself):
        every per-process command acts on the container's process, never on
        the host's process of that number. find and container show, which
        only pids could answer, are refused by name (exit 7)."""
        # sh is pid 1 of the namespace, its sleep pid 2.
        box = self.world.spawn("container", ["unshare", "--pid", "--fork", "--kill-child",
                                             "sh", "-c", "sleep 600 & wait"])
        # unshare ignores SIGTERM while its child runs; --kill-child ends
        # the namespace with it.
        self.addCleanup(box.kill)

        def child_of(pid):
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(c) for c in f.read().split()]
        wait_until(lambda: child_of(box.pid) and child_of(child_of(box.pid)[0]), 10,
                   "the container's sleep")
        sh = child_of(box.pid)[0]
        sleep = child_of(sh)[0]
        # Tags without keep set before it runs sleep would go with the exec.
        wait_until(lambda: sleep_sleeps(sleep), 10, "the container's sleep to run sleep")

        def inside(*args, uid=None, **kw):
            """ptagsctl ARGS in the container's pid namespace, as root or
            as @uid."""
            wrapper = ["nsenter", "--target", str(sh), "--pid", "--"]
            return run(self.world, *args, wrapper=wrapper + ctl_run.unprivileged_prefix(uid),
                       **kw)

        self.world.polkit.set_allowed([ADD, REMOVE, SET_VALUE])
        self.world.polkit.clear_checks()
        self.assertExit(inside("add", "2", "app:b=one", uid=NOBODY_UID), OK)
        self.assertEqual(self.world.get_tags(sleep), [("app:b", False, "one")])
        # polkit is told of the process by the number ptagsd knows it by.
        self.assertEqual({c["details"]["pid"] for c in self.world.polkit.checks()},
                         {str(sleep)})
        self.assertEqual(json.loads(inside("--json", "list", "2").stdout),
                         {"pid": 2, "tags": tags_json([("app:b", False, "one")])})
        for pattern, code in (("app:b", OK), ("app:*", OK), ("@app:b", NO_MATCH),
                              ("other", NO_MATCH)):
            with self.subTest(check=pattern):
                self.assertExit(inside("check", "2", pattern, uid=NOBODY_UID), code)
        self.assertExit(inside("check", "2", "a*b"), INVALID, "InvalidPattern")
        for args in (["set", "2", "app:b", "two"], ["keep", "2", "app:b"],
                     ["add", "2", "app:c"], ["unkeep", "2", "app:b"], ["remove", "2", "app:c"]):
            with self.subTest(args=args):
                self.assertExit(inside(*args, uid=NOBODY_UID), OK)
        self.assertExit(inside("apply", "2", input="+app:d\n-app:b\n"), OK)
        self.assertEqual(self.world.get_tags(sleep), [("app:d", False, "")])

        for args in (["find", "app:*"], ["container", "show", "pid:2"]):
            with self.subTest(args=args):
                out = inside(*args)
                self.assertExit(out, 7, "org.ptags.Error.NotSupported")
                self.assertIn("pid namespace", out.stderr)
        self.assertExit(inside("list", "self"), OK)
        # A pid the container does not have names no process.
        self.assertExit(inside("list", str(sleep)), NO_PROCESS, "No such process")


# Valid tag text (no byte below 0x20, no DEL) that a terminal must never get
# raw: U+009B is CSI on xterm, U+202E turns the rest of the line around,
# U+2028 ends it, U+FE0F (a variation selector) is invisible and U+3164 (a
# Hangul filler) shows as a blank. Anyone allowed to tag a process chooses
# such text.
SNEAKY_TAG = "app:\u009b2J\u202ex\ufe0f\u3164"
# U+E0041 (an invisible tag character) beyond the BMP; the rest prints.
SNEAKY_VALUE = "one\u2028two\\u{0041}\U000e0041\U0001f600\u00e9"
SHOWN_TAG = "app:\\u{009B}2J\\u{202E}x\\u{FE0F}\\u{3164}"
# The backslash too, so that no text can pass for an escaped character.
SHOWN_VALUE = "one\\u{2028}two\\u{005C}u{0041}\\u{E0041}\U0001f600\u00e9"
RAW = ("\u009b", "\u202e", "\u2028", "\ufe0f", "\u3164")


class EscapeTests(CtlTestCase):
    def assertNoRaw(self, text):
        self.assertEqual([c for c in RAW if c in text], [], repr(text))

    def test_text_that_does_not_print_is_escaped_but_exact_in_json(self):
        pid = self.target()
        lines = ["+" + SNEAKY_TAG, "!%s=%s" % (SNEAKY_TAG, SNEAKY_VALUE)]
        with ctl_run.monitor(self.world, False, text=True) as mon:
            self.assertIn("Monitoring", mon.stderr.readline())
            self.assertOk(self.world.root_call("Apply", "uas", [pid, lines]))
            event = mon.stdout.readline()
        self.assertNoRaw(event)
        self.assertEqual(event, "%d: +%s !%s=%s\n" % (pid, SHOWN_TAG, SHOWN_TAG, SHOWN_VALUE))

        out = run(self.world, "list", str(pid))
        self.assertExit(out, OK)
        self.assertNoRaw(out.stdout)
        rows = out.stdout.split("\n")
        self.assertEqual(rows[1].split(), [SHOWN_TAG, "no", SHOWN_VALUE])
        # Widths are those of the escaped text: KEEP stays in its column.
        self.assertEqual(rows[0].index("KEEP"), rows[1].index(" no ") + 1)

        out = run(self.world, "find", "app:*")
        self.assertExit(out, OK)
        self.assertNoRaw(out.stdout)
        self.assertIn([str(pid), SHOWN_TAG, "no", SHOWN_VALUE],
                      [row.split() for row in out.stdout.split("\n")])

        # JSON is exact once parsed, and escapes these characters too.
        out = run(self.world, "--json", "list", str(pid))
        self.assertExit(out, OK)
        self.assertNoRaw(out.stdout)
        self.assertIn("\\u009b", out.stdout)
        self.assertIn("\\udb40\\udc41", out.stdout)  # U+E0041 as JSON spells it
        self.assertEqual(json.loads(out.stdout)["tags"],
                         tags_json([(SNEAKY_TAG, False, SNEAKY_VALUE)]))


    def test_spaces_cannot_make_text_read_as_other_text(self):
        """A tag or value may hold spaces: whoever may add app: tags to
        their own process chooses "app:camera -ptags:others +ptags:add",
        which root's monitor must not show as three changes, nor a table
        as more cells. Spaces inside them are escaped too; JSON is exact."""
        pid = self.target()
        tag = "app:camera -ptags:others +ptags:add"
        value = "a  b"
        shown_tag = "app:camera\\u{0020}-ptags:others\\u{0020}+ptags:add"
        shown_value = "a\\u{0020}\\u{0020}b"
        with ctl_run.monitor(self.world, False, text=True) as mon:
            self.assertIn("Monitoring", mon.stderr.readline())
            self.assertOk(self.world.root_call("AddTag", "usb", [pid, tag, True]))
            self.assertOk(self.world.root_call("SetValue", "uss", [pid, tag, value]))
            events = [mon.stdout.readline(), mon.stdout.readline()]
        self.assertEqual(events, ["%d: +@%s\n" % (pid, shown_tag),
                                  "%d: !%s=%s\n" % (pid, shown_tag, shown_value)])
        out = run(self.world, "list", str(pid))
        self.assertExit(out, OK)
        self.assertEqual(out.stdout.split("\n")[1].split(), [shown_tag, "yes", shown_value])
        out = run(self.world, "find", "app:*")
        self.assertIn([str(pid), shown_tag, "yes", shown_value],
                      [row.split() for row in out.stdout.split("\n")])
        self.assertEqual(run_json(self, self.world, "list", str(pid))["tags"],
                         tags_json([(tag, True, value)]))


    def test_monitor_shows_ptagsds_comment_lines_as_written(self):
        """A line starting with "#" is ptagsd's own (no change is spelled
        so): its spaces separate words, not changes, and stay as they are.
        4.8 MB of tag names removed at once are over MaxMessageBytes, so the
        signal carries such a line in their place."""
        pid = self.target()
        path = os.path.join(self.world.mount, str(pid), "attr", "ptags")
        fd = os.open(path, os.O_WRONLY)
        try:
            # Written as a kernel writer would, around ptagsd's budgets.
            for i in range(1200):
                os.write(fd, ("+app:%04d:%s\n" % (i, "x" * 3980)).encode())
        finally:
            os.close(fd)
        with ctl_run.monitor(self.world, False, text=True) as mon:
            self.assertIn("Monitoring", mon.stderr.readline())
            self.assertOk(self.world.root_call("RemoveTag", "us", [pid, "app:*"],
                                               timeout_ms=60000))
            event = mon.stdout.readline()
        self.assertEqual(event, "%d: # 1200 changes not listed: over MaxMessageBytes\n" % pid)


class ChangeTests(CtlTestCase):
    def test_add_allowed_denied_invalid(self):
        pid = self.target()
        self.world.polkit.set_allowed([ADD, SET_VALUE])
        self.assertExit(run(self.world, "add", str(pid), "app:x", uid=NOBODY_UID), OK)
        got = run_json(self, self.world, "add", str(pid), "app:y=1 2", "--keep", uid=NOBODY_UID)
        want = [("app:x", False, ""), ("app:y", True, "1 2")]
        self.assertEqual(got, {"pid": pid, "tags": tags_json(want)})
        self.assertEqual(self.world.get_tags(pid), want)
        # A tag starting with '-' is an operand after "--".
        self.assertExit(run(self.world, "add", str(pid), "--", "-dash", uid=NOBODY_UID), OK)

        self.world.polkit.set_allowed([])
        out = run(self.world, "add", str(pid), "app:z", uid=NOBODY_UID)
        self.assertExit(out, DENIED, "org.ptags.Error.NotAuthorized")
        self.assertIn("Cannot add the tag", out.stderr)
        self.assertExit(run(self.world, "add", str(pid), "app:z=v", uid=NOBODY_UID), DENIED)
        # A line "+bad*tag" would be read as a pattern: refused as a tag.
        self.assertExit(run(self.world, "add", str(pid), "bad*tag"), INVALID, "contains '*'")
        out = run(self.world, "add", str(pid), "bad\x01tag")
        self.assertExit(out, INVALID, "org.ptags.Error.InvalidTag")
        self.assertIn('line 1 ("+bad', out.stderr)
        self.assertExit(run(self.world, "add", str(pid)), USAGE)
        self.assertEqual(self.world.get_tags(pid), [("-dash", False, "")] + want)

    def test_remove(self):
        pid = self.target(["+app:a", "+app:b", "+keep:me"])
        self.assertExit(run(self.world, "remove", str(pid), "app:*", uid=NOBODY_UID), DENIED,
                        "NotAuthorized")
        self.world.polkit.set_allowed([REMOVE])
        self.assertExit(run(self.world, "remove", str(pid), "app:*", uid=NOBODY_UID), OK)
        self.assertEqual(self.world.get_tags(pid), [("keep:me", False, "")])
        self.assertExit(run(self.world, "remove", str(pid), "x*y"), INVALID, "InvalidPattern")
        self.assertExit(run(self.world, "remove", str(self.world.dead_pid()), "a"), NO_PROCESS)

    def test_set(self):
        pid = self.target(["+app:a"])
        self.assertExit(run(self.world, "set", str(pid), "app:a", "v", uid=NOBODY_UID), DENIED)
        self.world.polkit.set_allowed([SET_VALUE])
        got = run_json(self, self.world, "set", str(pid), "app:a", "a=b", uid=NOBODY_UID)
        self.assertEqual(got["tags"], tags_json([("app:a", False, "a=b")]))
        self.assertExit(run(self.world, "set", str(pid), "app:missing", "v"), INVALID,
                        "org.ptags.Error.NoSuchTag")
        self.assertExit(run(self.world, "set", str(pid), "app:a", "bad\x7f"), INVALID,
                        "org.ptags.Error.InvalidValue")
        self.assertExit(run(self.world, "set", str(pid), "app:a"), USAGE)
        self.assertEqual(self.world.get_tags(pid), [("app:a", False, "a=b")])

    def test_keep_and_unkeep(self):
        pid = self.target(["+app:a", "+app:b"])
        self.assertExit(run(self.world, "keep", str(pid), "app:*", uid=NOBODY_UID), DENIED)
        self.world.polkit.set_allowed([ADD])
        self.assertExit(run(self.world, "keep", str(pid), "app:*", uid=NOBODY_UID), OK)
        self.assertEqual(self.world.get_tags(pid), [("app:a", True, ""), ("app:b", True, "")])
        self.assertExit(run(self.world, "unkeep", str(pid), "app:a", uid=NOBODY_UID), DENIED)
        self.world.polkit.set_allowed([REMOVE])
        self.assertExit(run(self.world, "unkeep", str(pid), "app:a", uid=NOBODY_UID), OK)
        self.assertEqual(self.world.get_tags(pid), [("app:a", False, ""), ("app:b", True, "")])
        self.assertExit(run(self.world, "keep", str(pid), "@x"), INVALID, "starts with '@'")

    def test_arguments_keep_their_meaning_in_the_lines_sent(self):
        """Each change goes to ptagsd as a command line: an argument that
        would change what the line means is refused, and nothing changes."""
        pid = self.target(["+@app:a", "!app:a=v", "+app:c"])
        before = self.world.get_tags(pid)
        cases = [
            # "+@app:b" would add app:b with the keep flag.
            (["add", str(pid), "@app:b"], "starts with '@'"),
            (["add", str(pid), "@app:b=v"], "starts with '@'"),
            # "+@" and "+@app:*" would keep every tag, or every app: tag.
            (["add", "--keep", str(pid), ""], "cannot be empty"),
            (["add", "--keep", str(pid), "app:*"], "contains '*'"),
            (["add", "--keep", str(pid), "app:*=v"], "contains '*'"),
            # "-@app:a" would clear app:a's keep flag.
            (["remove", str(pid), "@app:a"], "starts with '@'"),
            # "!app:a=b=w" would set app:a's value to "b=w".
            (["set", str(pid), "app:a=b", "w"], "contains '='"),
            # "-", "+@" and "-@" act on every tag: an unset shell variable
            # must not remove them all.
            (["remove", str(pid), ""], "empty pattern"),
            (["keep", str(pid), ""], "empty pattern"),
            (["unkeep", str(pid), ""], "empty pattern"),
            (["check", str(pid), ""], "empty pattern"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                self.assertExit(run(self.world, *argv), INVALID, message)
        self.assertEqual(self.world.get_tags(pid), before)
        # exec tags its own process, which holds the tags passed on to it:
        # "+@" would keep them all across the exec.
        for tag, message in (("", "cannot be empty"), ("app:*", "contains '*'")):
            with self.subTest(exec_tag=tag):
                out = run(self.world, "exec", "--tag", tag, "--", "echo", "ran")
                self.assertExit(out, INVALID, message)
                self.assertEqual(out.stdout, "", "the command ran")

    def test_apply_file_and_stdin(self):
        pid = self.target(["+app:trusted"])
        path = os.path.join(self.world.tmp, "batch")
        with open(path, "w") as f:
            f.write("# camera for trusted apps\n?app:trusted\n+app:camera\n!app:camera=rear\n")
        self.assertExit(run(self.world, "apply", str(pid), path), OK)
        self.assertEqual(self.world.get_tags(pid),
                         [("app:camera", False, "rear"), ("app:trusted", False, "")])
        # stdin, without a final newline; a failing precondition changes nothing.
        out = run(self.world, "apply", str(pid), "-", input="+app:mic\n?app:absent")
        self.assertExit(out, INVALID, "org.ptags.Error.NoSuchTag")
        self.assertIn("line 2", out.stderr)
        self.world.polkit.set_allowed([ADD])
        self.assertExit(run(self.world, "apply", str(pid), input="+app:mic\n-app:camera",
                            uid=NOBODY_UID), DENIED)
        self.assertExit(run(self.world, "apply", str(pid), input="+app:mic\n", uid=NOBODY_UID),
                        OK)
        self.assertExit(run(self.world, "apply", str(pid), input="+a\0b\n"), INVALID)
        self.assertExit(run(self.world, "apply", str(pid), "/nonexistent/batch"), INVALID)
        self.assertEqual(self.world.get_tags(pid), [("app:camera", False, "rear"),
                                                    ("app:mic", False, ""),
                                                    ("app:trusted", False, "")])

    def test_apply_names_why_its_file_cannot_be_read(self):
        """A read that fails says why (a directory, here), never "Cannot
        allocate memory"."""
        pid = self.target()
        directory = os.open("/etc", os.O_RDONLY | os.O_DIRECTORY)
        self.addCleanup(os.close, directory)
        for name, out in (("/etc", run(self.world, "apply", str(pid), "/etc")),
                          ("-", run(self.world, "apply", str(pid), stdin=directory))):
            self.assertExit(out, INVALID)
            self.assertEqual(out.stderr, "ptagsctl: %s: %s\n" % (name, os.strerror(errno.EISDIR)))
        self.assertEqual(self.world.get_tags(pid), [])

    def test_text_that_is_not_utf8_is_refused_naming_the_line(self):
        """D-Bus strings are UTF-8: a Latin-1 line or argument is input
        ptagsctl refuses (3) naming the line or argument, shown escaped,
        not a failure of sd-bus (7). Each byte that is not UTF-8 is shown
        as itself, \\x{XX}, never as a U+FFFD the text may really hold."""
        pid = self.target(["+app:a"])
        path = os.path.join(self.world.tmp, "latin1")
        with open(path, "wb") as f:
            f.write(b"+app:ok\n+app:cam\xe9ra\n")
        with open(path, "rb") as batch:
            for out in (run(self.world, "apply", str(pid), path),
                        run(self.world, "apply", str(pid), stdin=batch)):
                self.assertExit(out, INVALID)
                self.assertIn('line 2 ("+app:cam\\x{E9}ra") is not valid UTF-8', out.stderr)
        # "\udce9" is the byte 0xe9 (Latin-1 for "\u00e9") in argv.
        for argv in (["add", str(pid), "app:cam\udce9ra"], ["add", str(pid), "app:b=\udce9"],
                     ["set", str(pid), "app:a", "caf\udce9"], ["remove", str(pid), "\udce9"],
                     ["keep", str(pid), "\udce9"], ["unkeep", str(pid), "\udce9"],
                     ["check", str(pid), "\udce9"], ["find", "\udce9"],
                     ["exec", "--tag", "app:\udce9", "--", "echo", "RAN"]):
            with self.subTest(argv=argv):
                out = run(self.world, *argv)
                self.assertExit(out, INVALID, "is not valid UTF-8")
                self.assertIn("\\x{E9}", out.stderr)
                self.assertNotIn("FFFD", out.stderr)
        # A real U+FFFD prints as itself; the bytes 0xff, and 0xc3 cut short
        # (the start of a two-byte sequence), do not pass for it.
        out = run(self.world, "add", str(pid), "app:\ufffd\udcff\udcc3x")
        self.assertExit(out, INVALID)
        self.assertIn("'app:\ufffd\\x{FF}\\x{C3}x' is not valid UTF-8", out.stderr)

    def test_noncharacters_are_refused_as_bad_input(self):
        """sd-bus refuses to send a string holding a Unicode noncharacter:
        that was "Invalid argument" (7). It is input ptagsctl refuses (3),
        naming the character; its neighbours are sent as usual."""
        pid = self.target(["+app:a"])
        path = os.path.join(self.world.tmp, "nonchar")
        with open(path, "w", encoding="utf-8") as f:
            f.write("+app:ok\n+app:\ufdd0\n")
        with open(path, "rb") as batch:
            for out in (run(self.world, "apply", str(pid), path),
                        run(self.world, "apply", str(pid), stdin=batch)):
                self.assertExit(out, INVALID)
                self.assertIn('line 2 ("+app:\\u{FDD0}")', out.stderr)
                self.assertIn("U+FDD0", out.stderr)
        for c in ("\ufdd0", "\ufdef", "\ufffe", "\uffff", "\U0001fffe", "\U0010ffff"):
            for argv in (["add", str(pid), "u:" + c], ["add", str(pid), "app:b=" + c],
                         ["set", str(pid), "app:a", "v" + c], ["remove", str(pid), c + ":*"],
                         ["keep", str(pid), "app:" + c], ["unkeep", str(pid), "app:" + c],
                         ["check", str(pid), c], ["find", "app:" + c + ":*"],
                         ["exec", "--tag", "app:" + c, "--", "echo", "RAN"]):
                with self.subTest(argv=argv):
                    out = run(self.world, *argv)
                    self.assertExit(out, INVALID, "U+%04X" % ord(c))
                    self.assertIn("noncharacter", out.stderr)
                    self.assertNotIn(c, out.stderr)
        self.assertEqual(self.world.get_tags(pid), [("app:a", False, "")])
        for c in ("\ufdcf", "\ufdf0", "\ufffd", "\U0010fffd"):
            with self.subTest(ok="U+%04X" % ord(c)):
                self.assertExit(run(self.world, "add", str(pid), "n:" + c), OK)
        self.assertEqual(len(self.world.get_tags(pid)), 5)

    def test_a_noncharacter_written_to_the_kernel_breaks_no_reply(self):
        """A kernel writer other than ptagsd gives a process a tag holding a
        noncharacter: sd-bus clients could then read neither that process's
        tags, nor anyone FindTagged, nor the signal of its next change.
        ptagsd sends each noncharacter as U+001A, which no tag or value
        holds, so the entry is seen and never taken for another."""
        pid = self.target(["+app:a"])
        path = os.path.join(self.world.mount, str(pid), "attr", "ptags")
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, "+app:x\ufdd0\n!app:a=v\U0010ffff\n".encode())
        finally:
            os.close(fd)
        want = [("app:a", False, "v\x1a"), ("app:x\x1a", False, "")]
        self.assertEqual(run_json(self, self.world, "list", str(pid))["tags"], tags_json(want))
        out = run(self.world, "list", str(pid))
        self.assertExit(out, OK)
        self.assertIn("app:x\\u{001A}", out.stdout)
        found = run_json(self, self.world, "find")["processes"]
        self.assertIn({"pid": pid, "tags": tags_json(want)}, found)
        found = run_json(self, self.world, "find", "app:*")["processes"]
        self.assertIn({"pid": pid, "tags": tags_json(want)}, found)
        self.assertExit(run(self.world, "check", str(pid), "app:a"), OK)
        with ctl_run.monitor(self.world, True, text=True) as mon:
            self.assertIn("Monitoring", mon.stderr.readline())
            self.assertOk(self.world.root_call("AddTag", "usb", [pid, "app:b", False]))
            self.assertOk(self.world.root_call("RemoveTag", "us", [pid, "app:*"]))
            events = [json.loads(mon.stdout.readline()), json.loads(mon.stdout.readline())]
        self.assertEqual(events[0]["lines"], ["+app:b"])
        self.assertEqual(events[0]["tags"], tags_json(sorted(want + [("app:b", False, "")])))
        self.assertEqual(sorted(events[1]["lines"]), ["-app:a", "-app:b", "-app:x\x1a"])
        self.assertEqual(events[1]["tags"], [])
        self.assertEqual(self.world.get_tags(pid), [])

    def test_monitor_sees_another_clients_change(self):
        pid = self.target()
        for json_mode in (False, True):
            with ctl_run.monitor(self.world, json_mode, text=True) as mon:
                # The subscription is in place once it says so.
                self.assertIn("Monitoring", mon.stderr.readline())
                tag = "app:seen-%d" % json_mode
                self.assertOk(self.world.root_call("AddTag", "usb", [pid, tag, True]))
                line = mon.stdout.readline()
            if json_mode:
                self.assertEqual(json.loads(line), {
                    "event": "tags-changed", "pid": pid, "lines": ["+@app:seen-1"],
                    "tags": tags_json([("app:seen-0", True, ""), ("app:seen-1", True, "")])})
            else:
                self.assertEqual(line, "%d: +@app:seen-0\n" % pid)


class WriteErrorTests(CtlTestCase):
    def test_output_that_cannot_be_written_is_a_failure(self):
        """A full disk on standard output is a failure named on stderr (7),
        never success: a script must not take an empty file for the answer."""
        pid = self.target(["+app:a"])
        with open("/dev/full", "w") as full:
            for args in (["--json", "find"], ["list", str(pid)], ["--json", "status"],
                         ["--json", "check", str(pid), "app:b"], ["--help"], ["--version"]):
                with self.subTest(args=args):
                    out = run(self.world, *args, stdout=full)
                    self.assertEqual(out.returncode, FAILED, out.stderr)
                    self.assertEqual(out.stderr, "ptagsctl: Cannot write the output: %s\n"
                                     % os.strerror(errno.ENOSPC))

    def test_monitor_ends_when_its_output_is_gone(self):
        """With SIGPIPE ignored, as systemd starts services, a monitor whose
        reader exited gets EPIPE: it ends naming it (7) rather than run on
        dropping every event."""
        pid = self.target()
        for json_mode in (False, True):
            with self.subTest(json=json_mode), ctl_run.monitor(
                    self.world, json_mode, text=True, restore_signals=False) as mon:
                self.assertIn("Monitoring", mon.stderr.readline())
                mon.stdout.close()
                self.assertOk(self.world.root_call("AddTag", "usb",
                                                   [pid, "app:gone-%d" % json_mode, False]))
                try:
                    mon.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.fail("the monitor ran on, its reader gone")
                self.assertEqual(mon.returncode, FAILED)
                self.assertEqual(mon.stderr.read(), "ptagsctl: Cannot write the output: %s\n"
                                 % os.strerror(errno.EPIPE))


class AskPasswordTests(CtlTestCase):
    def checks_flags(self):
        return [c["flags"] for c in self.world.polkit.checks()]

    def test_terminal_allows_interactive_authorization_unless_told_not_to(self):
        pid = self.target()
        self.world.polkit.set_challenge([ADD])
        self.world.polkit.set_interactive_answer(True)
        # Not a terminal: nobody can answer, so no interaction is offered.
        out = run(self.world, "add", str(pid), "app:a", uid=NOBODY_UID, stdin=subprocess.DEVNULL)
        self.assertExit(out, DENIED, "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired")
        self.assertEqual(self.checks_flags(), [0])
        master, slave = pty.openpty()
        try:
            self.world.polkit.clear_checks()
            out = run(self.world, "--no-ask-password", "add", str(pid), "app:a",
                      uid=NOBODY_UID, stdin=slave)
            self.assertExit(out, DENIED, "InteractiveAuthorizationRequired")
            self.assertEqual(self.checks_flags(), [0])
            self.world.polkit.clear_checks()
            out = run(self.world, "add", str(pid), "app:a", uid=NOBODY_UID, stdin=slave)
            self.assertExit(out, OK)
            self.assertEqual(self.checks_flags(), [1])  # AllowUserInteraction
        finally:
            os.close(master)
            os.close(slave)
        self.assertEqual(self.world.get_tags(pid), [("app:a", False, "")])


class ExecTests(CtlTestCase):
    def exec_target(self, *tag_args, uid=NOBODY_UID):
        argv = ctl_run.unprivileged_prefix(uid) + [ctl_run.ptagsctl_path(), "exec"]
        for t in tag_args:
            argv += ["--tag", t]
        argv += ["--", "sleep", "600"]
        proc = self.world.spawn("target", argv, env=self.world.child_env())

        def running_sleep():
            if proc.poll() is not None:
                return True
            try:
                return os.path.basename(os.readlink("/proc/%d/exe" % proc.pid)) == "sleep"
            except OSError:
                return False

        wait_until(running_sleep, 15, "ptagsctl exec to run sleep")
        self.assertIsNone(proc.poll(), "ptagsctl exec exited %s" % proc.returncode)
        return proc.pid

    def test_exec_gives_the_command_exactly_the_kept_tags(self):
        self.world.polkit.set_allowed([ADD, SET_VALUE])
        pid = self.exec_target("app:session=42", "app:camera")
        self.assertEqual(self.world.get_tags(pid),
                         [("app:camera", True, ""), ("app:session", True, "42")])
        checks = self.world.polkit.checks()
        self.assertTrue(checks)
        self.assertEqual({c["details"]["self"] for c in checks}, {"true"},
                         "exec must change its own process, so polkit sees self")

    def test_exec_through_a_bridge_never_tags_the_bridge(self):
        """Through a bridge (--address=unixexec:..., as with
        systemd-stdio-bridge), the bus connection is the bridge's process:
        exec tagged "pid 0", which named the bridge, then ran COMMAND
        without the tag, with exit status 0. It now names itself by its own
        pidfd, which a bridge cannot carry, so it fails and never runs
        COMMAND. (This bridge drops the descriptor, and the bus then drops
        the connection; systemd-stdio-bridge refuses to carry one, which
        ptagsctl names.)"""
        self.world.polkit.set_allowed([ADD, SET_VALUE])
        bridge = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stdio_bridge.py")
        socket_path = self.world.address.split("path=", 1)[1].split(",")[0]
        address = "unixexec:path=%s,argv0=bridge,argv1=-I,argv2=%s,argv3=%s" % (
            PYTHON, bridge.replace("=", "%3d"), socket_path.replace("=", "%3d"))
        out = ctl_run.run(self.world, "--address=" + address, "exec", "--tag", "app:x", "--",
                          "echo", "RAN", address=False)
        self.assertNotIn("RAN", out.stdout)
        self.assertIn(out.returncode, (UNREACHABLE, FAILED), out.stderr)
        self.assertIn("Cannot tag this process", out.stderr)
        # The bridge itself works: a read through it is answered.
        self.assertExit(ctl_run.run(self.world, "--address=" + address, "status",
                                    address=False), OK)

    def test_exec_refused_never_runs_the_command(self):
        out = run(self.world, "exec", "--tag", "app:x", "--", "echo", "RAN", uid=NOBODY_UID)
        self.assertExit(out, DENIED, "org.ptags.Error.NotAuthorized")
        self.assertNotIn("RAN", out.stdout)
        self.assertExit(run(self.world, "exec", "--tag", "bad*", "--", "echo", "RAN"), INVALID)

    def test_exec_usage_and_missing_command(self):
        self.assertExit(run(self.world, "exec", "echo"), USAGE)
        self.assertExit(run(self.world, "exec", "--"), USAGE)
        self.assertExit(run(self.world, "list", "1", "--tag", "x"), USAGE)
        out = run(self.world, "exec", "--", "/nonexistent/command")
        self.assertEqual(out.returncode, 127, out.stderr)
        self.assertEqual(run(self.world, "exec", "--", "echo", "--json").stdout, "--json\n")


class UsageTests(CtlTestCase):
    def test_help_version_and_bad_command_lines(self):
        out = run(self.world, "--help")
        self.assertExit(out, OK)
        for command in ("status", "list", "add", "remove", "set", "keep", "unkeep", "apply",
                        "check", "peer", "find", "monitor", "exec", "container register",
                        "container show", "container list"):
            self.assertRegex(out.stdout, r"(?m)^  %s\b" % command)
        out = run(self.world, "--version")
        self.assertExit(out, OK)
        self.assertEqual(out.stdout, "ptagsctl %s\n" % self.world.get_property("Version"))
        self.assertExit(run(self.world), USAGE)
        self.assertExit(run(self.world, "frobnicate"), USAGE)
        self.assertExit(run(self.world, "--frobnicate", "status"), USAGE)
        self.assertExit(run(self.world, "list", "1", "--keep"), USAGE)

    def test_help_and_version_after_the_command_are_refused(self):
        """GNU getopt takes options anywhere, but a --help or --version after
        the command is an operand gone astray (a tag from a variable):
        answering it would exit 0, "match" for check, "done" for remove
        having removed nothing. It is a usage error; after "--" it is a tag."""
        pid = self.target(["+--version", "+-h"])
        for argv in (["check", str(pid), "--help"], ["check", str(pid), "-h"],
                     ["remove", str(pid), "--version"], ["remove", str(pid), "--vers"],
                     ["list", str(pid), "--help"], ["--json", "status", "--version"],
                     ["container", "show", "--help"]):
            with self.subTest(argv=argv):
                out = run(self.world, *argv)
                self.assertExit(out, USAGE, "must come before the command")
        self.assertEqual(self.world.get_tags(pid), [("--version", False, ""), ("-h", False, "")])
        self.assertExit(run(self.world, "check", str(pid), "--", "--help"), NO_MATCH)
        self.assertExit(run(self.world, "check", str(pid), "--", "-h"), OK)
        self.assertExit(run(self.world, "remove", str(pid), "--", "--version"), OK)
        self.assertEqual(self.world.get_tags(pid), [("-h", False, "")])
        # Before the command they are options, whatever follows.
        self.assertExit(run(self.world, "--json", "--help", "list", str(pid)), OK)
        self.assertEqual(run(self.world, "--version", "status").stdout,
                         "ptagsctl %s\n" % self.world.get_property("Version"))
        # Completion offers them there only.
        self.assertIn("--help", ctl_run.complete(self, self.world, "ptagsctl --json --"))
        offered = ctl_run.complete(self, self.world, "ptagsctl check %d --" % pid)
        self.assertIn("--json", offered)
        self.assertEqual([o for o in offered if o in ("--help", "--version")], [])

    def test_bad_long_option_is_named(self):
        """glibc reports a long option by its code, not a character: the
        message must name it as typed, never print a control byte."""
        for argv, message in (
                (["status", "--address"], "Option '--address' is unknown or lacks its argument."),
                (["--json=1", "status"], "Option '--json' takes no argument."),
                (["--help=1"], "Option '--help' takes no argument."),
                (["--frobnicate=1", "status"], "Option '--frobnicate' is unknown"),
                (["-x", "status"], "Option '-x' is unknown"),
                # A byte from 0x80 up, which glibc gives as a negative char.
                (["--json", "-\u00e9", "status"], "Option '-\\xc3' is unknown")):
            with self.subTest(argv=argv):
                out = run(self.world, *argv, address=False)
                self.assertExit(out, USAGE)
                self.assertIn(message, out.stderr.splitlines()[0])
                self.assertTrue(out.stderr.replace("\n", "").isprintable(), repr(out.stderr))

    def test_system_bus_from_the_environment(self):
        # No --address: DBUS_SYSTEM_BUS_ADDRESS names the bus, as for busctl.
        self.assertExit(run(self.world, "status", address=False), OK)

    def test_unreachable_bus_and_daemon(self):
        for command in (["status"], ["monitor"], ["list", "1"], ["exec", "--tag", "a", "--",
                                                                  "echo", "RAN"]):
            out = run(self.world, "--address=unix:path=/nonexistent/socket", *command,
                      address=False)
            self.assertExit(out, UNREACHABLE, "Cannot connect to the bus at "
                            "'unix:path=/nonexistent/socket': ")
        # An address that is no address (empty, say, from an unset
        # variable) cannot be reached either; the message names it.
        for address in ("garbage", "", "unix:frobnicate=1"):
            with self.subTest(address=address):
                out = run(self.world, "--address=" + address, "list", "1", address=False)
                self.assertExit(out, UNREACHABLE, "Cannot connect to the bus at '%s': "
                                % address)
        # A bad command line is a usage error whether or not there is a bus.
        out = run(self.world, "--address=unix:path=/nonexistent/socket", "list", "abc",
                  address=False)
        self.assertExit(out, USAGE)
        self.world.daemon.terminate()
        self.world.daemon.wait(timeout=30)
        self.assertExit(run(self.world, "status"), UNREACHABLE)
        self.world.daemon = None  # stopped on purpose

    def run_bounded(self, *args, **kw):
        """run(), failing the test rather than waiting past 20 s."""
        try:
            return run(self.world, *args, timeout=20, **kw)
        except subprocess.TimeoutExpired:
            self.fail("ptagsctl %s still waits after 20 s" % " ".join(args))

    def test_monitor_without_ptagsd_is_unreachable(self):
        """monitor asks for ptagsd before it waits for changes, as every
        other command asks before it prints: with no ptagsd on the bus (nor
        one the bus could start) it fails with 6, not wait for signals that
        no one will send."""
        self.world.daemon.terminate()
        self.world.daemon.wait(timeout=30)
        self.world.daemon = None  # stopped on purpose
        for json_mode in ([], ["--json"]):
            with self.subTest(json=json_mode):
                out = self.run_bounded(*json_mode, "monitor")
                self.assertExit(out, UNREACHABLE, "org.freedesktop.DBus.Error.ServiceUnknown")
                self.assertNotIn("Monitoring", out.stderr)

    def test_daemon_that_never_answers_is_unreachable(self):
        """A ptagsd that hangs, or dies before it answers, cannot be
        reached (6), not "any other failure" (7)."""
        self.world.daemon.terminate()
        self.world.daemon.wait(timeout=30)
        self.world.daemon = None  # stopped on purpose
        # A stand-in owns ptagsd's name, then stops: calls to it queue up unanswered.
        stub = self.world.spawn_client(unprivileged=False)
        self.assertOk(stub.call("RequestName", "su", ["org.ptags.Manager", 4], destination=(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")))
        os.kill(stub.pid, signal.SIGSTOP)
        env = self.world.child_env({"SYSTEMD_BUS_TIMEOUT": "1s"})
        for command in (["status"], ["list", "1"], ["--json", "find"]):
            with self.subTest(command=command):
                started = time.monotonic()
                out = run(self.world, *command, env=env)
                self.assertExit(out, UNREACHABLE, "org.freedesktop.DBus.Error.Timeout")
                self.assertLess(time.monotonic() - started, 20, "SYSTEMD_BUS_TIMEOUT was ignored")
        # Gone mid-call: the bus answers NoReply.
        argv = [ctl_run.ptagsctl_path(), "--address=" + self.world.address, "list", "1"]
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=self.world.child_env()) as pending:
            time.sleep(0.5)
            os.kill(stub.pid, signal.SIGKILL)
            stdout, stderr = pending.communicate(timeout=30)
        self.assertEqual((pending.returncode, stdout), (UNREACHABLE, ""), stderr)

    def test_daemon_that_cannot_be_started_is_unreachable(self):
        """When the bus cannot start ptagsd (its unit masked, its program
        failing), the bus answers with an activation error: unreachable (6),
        as documented, not "any other failure" (7)."""
        self.world.daemon.terminate()
        self.world.daemon.wait(timeout=30)
        self.world.daemon = None  # stopped on purpose
        # A stand-in for the bus's activation: ptagsd's name answers every
        # call with the error a bus gives when starting it failed.
        script = (
            "import sys\n"
            "from gi.repository import Gio, GLib\n"
            "bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1], "
            "Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | "
            "Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)\n"
            "def filt(conn, msg, incoming):\n"
            "    if incoming and msg.get_message_type() == Gio.DBusMessageType.METHOD_CALL:\n"
            "        err = msg.new_method_error_literal(sys.argv[2], 'cannot start ptagsd')\n"
            "        conn.send_message(err, Gio.DBusSendMessageFlags.NONE)\n"
            "        return None\n"
            "    return msg\n"
            "bus.add_filter(filt)\n"
            "bus.call_sync('org.freedesktop.DBus', '/org/freedesktop/DBus', "
            "'org.freedesktop.DBus', 'RequestName', GLib.Variant('(su)', "
            "('org.ptags.Manager', 4)), None, 0, -1, None)\n"
            "print('ready', flush=True)\n"
            "GLib.MainLoop().run()\n")
        for name in ("org.freedesktop.DBus.Error.Spawn.ChildExited",
                     "org.freedesktop.systemd1.UnitMasked"):
            with self.subTest(error=name):
                stub = self.world.spawn("stand-in", [PYTHON, "-c", script, self.world.address,
                                                     name], stdout=subprocess.PIPE)
                try:
                    self.assertEqual(stub.stdout.readline().strip(), b"ready")
                    # monitor too: it calls ptagsd's name, which the bus starts.
                    for command in (["list", "1"], ["monitor"]):
                        out = self.run_bounded(*command)
                        self.assertExit(out, UNREACHABLE, name)
                finally:
                    stub.kill()
                    stub.wait()


class ReadmeTests(CtlTestCase):
    def test_using_it_examples_run_as_typed(self):
        root = os.environ.get("PTAGS_SOURCE_ROOT") or os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(root, "README.md")) as f:
            readme = f.read()
        section = readme[readme.index("## Using it"):readme.index("### Who may change what")]
        blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
        self.assertEqual(len(blocks), 2, "the ptagsctl and the busctl examples")
        env = self.world.child_env()
        env["PATH"] = os.path.dirname(ctl_run.ptagsctl_path()) + ":" + env["PATH"]
        for block in blocks:
            # Only the example pid and program are placeholders.
            pid = self.target()
            script = block.replace("1234", str(pid)).replace("/usr/bin/camera-app", "true")
            out = subprocess.run(["bash", "-e", "-x", "-c", script], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=env, timeout=60)
            self.assertEqual(out.returncode, 0, out.stdout)
            self.assertEqual(self.world.get_tags(pid), [("app:camera", False, "front"),
                                                        ("app:microphone", False, "")])
        self.assertIn("may record", subprocess.run(
            ["bash", "-c", blocks[0].replace("1234", str(pid)).replace("/usr/bin/camera-app",
                                                                         "true")],
            stdout=subprocess.PIPE, text=True, env=env, timeout=60).stdout)


class CompletionTests(CtlTestCase):
    def complete(self, line):
        return ctl_run.complete(self, self.world, line)

    def test_commands_options_pids_and_tags(self):
        self.assertEqual(self.complete("ptagsctl un"), ["unkeep"])
        self.assertIn("monitor", self.complete("ptagsctl "))
        self.assertIn("--no-ask-password", self.complete("ptagsctl --no"))
        self.assertIn("--keep", self.complete("ptagsctl add 1 x --"))
        pid = self.target(["+app:camera", "+app:micro phone", "+other"])
        self.assertIn(str(pid), self.complete("ptagsctl list %s" % str(pid)[:-1]))
        self.assertIn("self", self.complete("ptagsctl list "))
        self.assertEqual(self.complete("ptagsctl remove %d app:" % pid),
                         ["app:camera", "app:micro\\ phone"])
        self.assertEqual(self.complete("ptagsctl exec --tag a -- ptagsc"), ["ptagsctl"])

    def test_tag_names_are_offered_never_run(self):
        """Tags are chosen by whoever may tag a process, and completion runs
        in an administrator's shell: a name is text to offer, quoted so
        that the command line it lands on names the tag, and runs nothing
        either on Tab or on Enter."""
        ran = os.path.join(self.world.tmp, "completion-ran")
        names = ["app:$(touch %s)" % ran, "app:`touch %s`" % ran, "app:${PATH:+x}",
                 "app:a b;touch %s" % ran]
        pid = self.target(["+" + n for n in names] + ["+app:back\\slash"])
        offered = self.complete("ptagsctl remove %d app:" % pid)
        self.assertFalse(os.path.exists(ran), "completion ran a tag name as a command")
        self.assertEqual(len(offered), len(names), offered)
        # What the shell makes of each word completion puts on the line.
        words = [subprocess.run(["bash", "--norc", "-c", 'eval "set -- $1"; printf "%s" "$*"',
                                 "bash", word], stdout=subprocess.PIPE, text=True,
                                check=True).stdout for word in offered]
        self.assertFalse(os.path.exists(ran), "a completed name ran as a command")
        self.assertEqual(sorted(words), sorted(names))


if __name__ == "__main__":
    unittest.main(verbosity=2)
