# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_ctl_agent.py: ptagsctl on a terminal starts polkit's text agent when the REAL polkitd wants
# a password (an administrator's AUTH_SELF rule), and fails cleanly when the answer is wrong.
#
# A user with a known password exists only inside this test's private mount namespace (copies of
# /etc/passwd, /etc/shadow and /etc/group bind-mounted over the real ones), so PAM can check it.
# Run one case per meson test inside `unshare --mount --propagation private`, as test_ctl_policy.

import fcntl
import os
import pwd
import select
import subprocess
import sys
import termios
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "policy"))
from policy_world import PolicyTestCase, PolicyWorld, setpriv_argv  # noqa: E402
import ctl_run  # noqa: E402,I100  (policy_world put tests/lib on the path)
from ptags_harness import HarnessError, wait_until  # noqa: E402

USER = "ptagsctl-test"
PASSWORD = "correct horse battery staple"
NOGROUP = 65534
DENIED = 4  # man/ptagsctl.1
PAM_CONFIG = "/usr/lib/pam.d/polkit-1"
HELPER = "/usr/lib/polkit-1/polkit-agent-helper-1"
# polkit-agent-helper-1 (setuid) clears its environment, so it reaches
# polkitd only at the standard socket path.
SYSTEM_BUS_DIR = "/run/dbus"

# What an administrator writes to make USER prove it is USER before tagging.
AUTH_SELF_RULE = """
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "%s")
        return polkit.Result.AUTH_SELF;
});
""" % USER


def free_uid():
    for uid in range(61000, 62000):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise HarnessError("no free uid in 61000..61999")


class AgentWorld(PolicyWorld):
    """A PolicyWorld with USER (password PASSWORD) in this namespace's user
    database and the private bus at the standard system bus socket path."""

    def _install_polkit_files(self):
        # Before polkitd starts: it must see USER and the socket path.
        super()._install_polkit_files()
        self._add_user()
        self._standard_bus_path()

    def _add_user(self):
        uid = free_uid()
        hashed = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=PASSWORD,
                                stdout=subprocess.PIPE, text=True, check=True,
                                timeout=10).stdout.strip()
        entries = {
            "passwd": "%s:x:%d:%d:ptagsctl agent test:/nonexistent:/usr/sbin/nologin\n"
                      % (USER, uid, NOGROUP),
            "shadow": "%s:%s:19000:0:99999:7:::\n" % (USER, hashed),
        }
        for name, line in entries.items():
            copy = os.path.join(self.tmp, name)
            with open("/etc/" + name) as f:
                text = f.read()
            with open(copy, "w") as f:
                f.write(text + line)
            st = os.stat("/etc/" + name)
            os.chown(copy, st.st_uid, st.st_gid)
            os.chmod(copy, st.st_mode & 0o7777)
            self._bind(copy, "/etc/" + name)
        self.user = pwd.getpwnam(USER)

    def _standard_bus_path(self):
        socket_path = self.address.split("path=", 1)[1].split(",", 1)[0]
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", SYSTEM_BUS_DIR],
                       check=True, timeout=10)
        self._bind_mounts.append(SYSTEM_BUS_DIR)
        os.symlink(socket_path, os.path.join(SYSTEM_BUS_DIR, "system_bus_socket"))


class Terminal:
    """ptagsctl as USER on a new pseudo-terminal that is its controlling
    terminal (pkttyagent talks to /dev/tty); stdout and stderr are pipes."""

    def __init__(self, world, *args):
        self.world = world
        self.master, slave = os.openpty()
        argv = setpriv_argv(world.user) + [ctl_run.ptagsctl_path(), *args]

        def controlling_tty():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=world.child_env(),
                                     start_new_session=True, preexec_fn=controlling_tty)
        os.close(slave)
        self.screen = ""

    def read_until(self, text, timeout=30):
        """Everything the terminal showed until @text, or HarnessError."""
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                self._fail("%r never appeared on the terminal" % text)
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: every process closed the terminal
                data = b""
            if not data:
                self._fail("the terminal closed before %r appeared" % text)
            self.screen += data.decode(errors="replace")
        return self.screen

    def _fail(self, what):
        err = ""
        if self.proc.poll() is not None:
            err = "ptagsctl exited %d: %s" % (self.proc.returncode, self.proc.stderr.read())
        raise HarnessError("%s: %r\n%s\npolkitd:\n%s" % (what, self.screen, err,
                                                          self.world.read_log("polkitd.log")))

    def type_password(self, line):
        """Answer the password prompt. The agent turns echo off with
        TCSAFLUSH after printing it, discarding what was typed before: wait
        for that (the master reports the terminal's modes)."""
        wait_until(lambda: not termios.tcgetattr(self.master)[3] & termios.ECHO, 30,
                   "the agent to turn echo off")
        os.write(self.master, line.encode() + b"\n")

    def finish(self, timeout=60):
        out, err = self.proc.communicate(timeout=timeout)
        try:
            while select.select([self.master], [], [], 0)[0]:
                data = os.read(self.master, 4096)
                if not data:
                    break
                self.screen += data.decode(errors="replace")
        except OSError:
            pass
        os.close(self.master)
        return self.proc.returncode, out, err


class AgentTestCase(PolicyTestCase):
    world_options = {"admin_rules": {"40-test-auth-self.rules": AUTH_SELF_RULE}}

    def setUp(self):
        for path in (PAM_CONFIG, HELPER, ctl_run.ptagsctl_path()):
            if not os.path.exists(path):
                raise HarnessError("%s is missing (packages polkitd, libpam-runtime)" % path)
        self.world = AgentWorld(**self.world_options)
        self.addCleanup(self.world.stop)
        self.world.start()
        self.target = self.world.spawn("target", setpriv_argv(self.world.user) + ["sleep", "600"])
        wait_until(lambda: os.path.basename(os.readlink("/proc/%d/exe" % self.target.pid))
                   == "sleep", 10, "the target to run sleep")

    def add(self, *options):
        return Terminal(self.world, "--address=" + self.world.address, *options, "add",
                        str(self.target.pid), "app:camera")


class TextAgentTests(AgentTestCase):
    def test_wrong_password_is_refused_and_reported(self):
        term = self.add()
        screen = term.read_until("Password: ")
        self.assertIn("==== AUTHENTICATING FOR org.ptags.tag.add ====", screen)
        self.assertIn("Authenticating as: ptagsctl agent test (%s)" % USER, screen)
        term.type_password("not the password")
        code, out, err = term.finish()
        self.assertEqual(code, DENIED, "stderr: %s; terminal: %r" % (err, term.screen))
        self.assertEqual(out, "")
        # The agent's helper says why first (on the stderr it inherited).
        self.assertIn("pam_authenticate failed", err)
        self.assertTrue(err.splitlines()[-1].startswith("ptagsctl: Cannot add the tag: "), err)
        self.assertIn("org.ptags.Error.NotAuthorized", err)
        self.assertIn("AUTHENTICATION FAILED", term.screen)
        self.assertEqual(self.world.get_tags(self.target.pid), [])

    def test_right_password_authorizes_the_change(self):
        term = self.add()
        term.read_until("Password: ")
        term.type_password(PASSWORD)
        code, out, err = term.finish()
        self.assertEqual(code, 0, "stderr: %s; terminal: %r" % (err, term.screen))
        self.assertIn("==== AUTHENTICATION COMPLETE ====", term.screen)
        self.assertEqual(self.world.get_tags(self.target.pid), [("app:camera", False, "")])

    def test_prompt_shows_the_tag_quoted_and_escaped(self):
        """Real polkitd builds the message from shown-tag: a bidi override
        or a closing quote in a tag cannot rewrite what the prompt says."""
        term = Terminal(self.world, "--address=" + self.world.address, "add",
                        str(self.target.pid), "app:\u202ecamera\u201d to \u201cinit")
        screen = term.read_until("Password: ")
        self.assertIn("Authentication is required to add tag "
                      "\u201capp:\\u{202E}camera\\u{201D} to \\u{201C}init\u201d to "
                      "\u201csleep\u201d (%d)" % self.target.pid, screen)
        term.type_password("not the password")
        code, out, err = term.finish()
        self.assertEqual(code, DENIED, "stderr: %s; terminal: %r" % (err, term.screen))
        self.assertEqual(self.world.get_tags(self.target.pid), [])

    def test_no_ask_password_starts_no_agent(self):
        term = self.add("--no-ask-password")
        code, out, err = term.finish()
        self.assertEqual(code, DENIED, err)
        self.assertIn("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", err)
        self.assertIn("Authentication is required", err)
        self.assertNotIn("AUTHENTICATING", term.screen)
        self.assertEqual(self.world.get_tags(self.target.pid), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
