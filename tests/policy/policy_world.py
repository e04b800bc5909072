# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# policy_world.py: the integration harness's World with our REAL bus policy and the REAL polkitd,
# its actions and rules bind-mounted over the system's inside this test's private mount namespace.
#
# What the harness lacks and this file adds around it (by subclassing):
# - a bus config built from tests/policy/system-bus.conf.in (the stock system
#   bus defaults + our org.ptags.Manager.conf + polkit's own system.d file);
# - polkitd itself (harness polkit="external"), started after our actions and
#   rules are bind-mounted, so the tests never touch the real system's files;
# - unprivileged clients of any uid (the harness makes only nobody ones);
# - one-shot calls to any destination/interface as any uid (the harness's
#   client speaks only org.ptags.Manager);
# - ptagsd run with only a given capability set (the unit's), as systemd would.
#
# Environment (set by tests/policy/meson.build), besides the harness's:
#   PTAGS_BUS_POLICY      data/dbus-1/org.ptags.Manager.conf
#   PTAGS_BUS_TEMPLATE    tests/policy/system-bus.conf.in
#   PTAGS_POLKIT_POLICY   the built (translated) org.ptags.policy
#   PTAGS_POLKIT_RULE     data/polkit-1/rules.d/50-org.ptags.rules
#   PTAGS_SYSTEMD_UNIT    the built ptagsd.service (for its capability set)
#   PTAGS_TEST_BUS        dbus-daemon (the default) or dbus-broker: the bus under test
#   PTAGS_DBUS_BROKER     where tests/policy/fetch-dbus-broker.sh unpacked
#                         dbus-broker (unset: the one installed, if any)

import json
import os
import pwd
import select
import shutil
import socket
import subprocess
import sys
import threading
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import ptags_harness  # noqa: E402
from ptags_harness import HarnessError, wait_until  # noqa: E402,F401

POLKITD = "/usr/lib/polkit-1/polkitd"
POLKIT_ACTIONS_DIR = "/usr/share/polkit-1/actions"
POLKIT_ADMIN_RULES_DIR = "/etc/polkit-1/rules.d"
POLKIT_VENDOR_RULES_DIR = "/usr/share/polkit-1/rules.d"
# Where Debian (and upstream) install polkit's own bus policy.
POLKIT_BUS_POLICY_CANDIDATES = (
    "/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf",
    "/etc/dbus-1/system.d/org.freedesktop.PolicyKit1.conf",
)
CALLER_SCRIPT = os.path.join(HERE, "policy_caller.py")
# The bus under test, and how it words its own policy denials (ptagsd never
# says either).
BUS_KIND = os.environ.get("PTAGS_TEST_BUS", "dbus-daemon")
if BUS_KIND == "dbus-broker":
    BUS_REJECTION = "Sender is not authorized to send message"
    BUS_OWN_REJECTION = "Request to own name refused by policy"
elif BUS_KIND == "dbus-daemon":
    BUS_REJECTION = "Rejected send message"
    BUS_OWN_REJECTION = "is not allowed to own the service"
else:
    raise HarnessError("PTAGS_TEST_BUS=%s: expected dbus-daemon or dbus-broker" % BUS_KIND)


# Runs argv[2:] with the listening socket argv[1] as fd 3, as systemd's socket
# activation hands it over.
SOCKET_ACTIVATE = """import os, sys
fd = int(sys.argv[1])
os.dup2(fd, 3, inheritable=True)
os.close(fd)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execv(sys.argv[2], sys.argv[2:])
"""


def dbus_broker_root():
    """The directory whose usr/bin holds dbus-broker-launch and dbus-broker:
    PTAGS_DBUS_BROKER (unpacked by fetch-dbus-broker.sh), else the system's;
    None when neither has it."""
    root = os.environ.get("PTAGS_DBUS_BROKER") or "/"
    if os.access(os.path.join(root, "usr/bin/dbus-broker-launch"), os.X_OK):
        return root
    return None


if BUS_KIND == "dbus-broker" and dbus_broker_root() is None:
    # meson counts exit 77 as skipped, and tests/check.sh counts a skip as a
    # failure: it always fetches dbus-broker first.
    print("SKIP: no dbus-broker: run tests/policy/fetch-dbus-broker.sh DIR and set "
          "PTAGS_DBUS_BROKER to the directory it prints (tests/check.sh does)")
    sys.exit(77)


def required_file(var):
    path = os.environ.get(var, "")
    if not path or not os.path.isfile(path):
        raise HarnessError("%s=%r is not a file: the meson test must set it" % (var, path))
    return path


def polkit_bus_policy():
    for path in POLKIT_BUS_POLICY_CANDIDATES:
        if os.path.isfile(path):
            return path
    raise HarnessError("polkit's bus policy is not installed (package polkitd): looked in %s"
                       % ", ".join(POLKIT_BUS_POLICY_CANDIDATES))


def real_bus_config(socket_path):
    """The private system bus config: our real policy, polkit's real policy."""
    with open(required_file("PTAGS_BUS_TEMPLATE")) as f:
        text = f.read()
    return (text.replace("@SOCKET@", socket_path)
            .replace("@PTAGS_BUS_POLICY@", os.path.abspath(required_file("PTAGS_BUS_POLICY")))
            .replace("@POLKIT_BUS_POLICY@", polkit_bus_policy()))


def unit_capabilities():
    """CapabilityBoundingSet= of the built unit, as ['CAP_X', ...]."""
    caps = []
    with open(required_file("PTAGS_SYSTEMD_UNIT")) as f:
        for line in f:
            if line.startswith("CapabilityBoundingSet="):
                caps += line.split("=", 1)[1].split()
    if not caps:
        raise HarnessError("the unit sets no CapabilityBoundingSet=")
    return caps


def in_private_mount_namespace():
    # Our parent (meson, or whoever ran unshare) is outside the new namespace.
    return os.readlink("/proc/self/ns/mnt") != os.readlink("/proc/%d/ns/mnt" % os.getppid())


class PolicyWorld(ptags_harness.World):
    """A World whose bus enforces our real policy and whose polkit is the
    real polkitd reading only our actions and the rules a test provides.

    admin_rules: {file name: JavaScript} written to /etc/polkit-1/rules.d.
    shipped_rule: install our 50-org.ptags.rules in polkit's vendor dir.
    with_daemon: start ptagsd (False leaves org.ptags.Manager unowned).
    daemon_capabilities: None (root's full set) or ['CAP_X', ...]: ptagsd
      runs with exactly these, as systemd would run it from the unit.
    service_policy: <policy> elements added to the bus config after ours,
      as another service's system.d file would add them (letting its user
      own its well-known name, say)."""

    def __init__(self, admin_rules=None, shipped_rule=True, with_daemon=True,
                 daemon_capabilities=None, service_policy=None, **kw):
        def bus_config(socket_path):
            head, end, tail = real_bus_config(socket_path).rpartition("</busconfig>")
            return head + (service_policy or "") + end + tail

        super().__init__(bus_config=bus_config, polkit="external", **kw)
        self.admin_rules = dict(admin_rules or {})
        self.shipped_rule = shipped_rule
        self.with_daemon = with_daemon
        self.daemon_capabilities = daemon_capabilities
        self._bind_mounts = []

    def start(self):
        # Bind mounts over /usr/share and /etc must never leak to the host.
        if not in_private_mount_namespace():
            raise HarnessError("not in a private mount namespace: run under "
                               "`unshare --mount --propagation private`")
        super().start()  # temp dir, bus (real policy), kernel fixture
        if self.backend == "bpf":
            self._private_bpf_state()
        self._install_polkit_files()
        self.start_polkitd()
        if self.daemon_capabilities is not None:
            self.ptagsd = self._capability_wrapper(self.ptagsd, self.daemon_capabilities)
        if self.with_daemon:
            self.start_daemon()

    def _capability_wrapper(self, exe, caps):
        """A script running @exe as root with only @caps (bounding set; root's
        permitted and effective sets follow it at exec) and no_new_privs."""
        bounding = ",".join(["-all"] + ["+" + c.lower().replace("cap_", "", 1) for c in caps])
        path = os.path.join(self.tmp, "ptagsd-with-unit-caps")
        with open(path, "w") as f:
            f.write("#!/bin/sh\nexec setpriv --bounding-set=%s --inh-caps=-all --no-new-privs "
                    "%s \"$@\"\n" % (bounding, exe))
        os.chmod(path, 0o755)
        return path

    def daemon_capability_mask(self, field="CapEff"):
        """ptagsd's capability set as the kernel reports it (an int)."""
        with open("/proc/%d/status" % self.daemon.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
        raise HarnessError("no %s in ptagsd's status" % field)

    def _private_bpf_state(self):
        """The harness already gives a bpf world its own pin directory and
        RUNTIME_DIRECTORY; here they also live on a bpffs of this namespace's
        own, so not even an empty directory reaches the host."""
        subprocess.run(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"], check=True, timeout=10)
        self._bind_mounts.append("/sys/fs/bpf")

    # ------------------------------------------------------------ the bus

    def start_bus(self):
        if BUS_KIND == "dbus-broker":
            self._start_dbus_broker()
        else:
            super().start_bus()

    def _start_dbus_broker(self):
        """dbus-broker as its launcher runs it for systemd: the launcher gets
        the listening socket as fd 3 (socket activation), reads our config,
        and connects to the bus it serves (DBUS_SYSTEM_BUS_ADDRESS). It logs
        only to the journal, so this namespace gets a journal socket of its
        own that writes to tmp/bus.log."""
        root = dbus_broker_root()
        if root != "/":
            # The launcher runs the broker from /usr/bin: here that is an
            # overlay showing the unpacked package's usr/bin over the system's.
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            "lowerdir=%s:/usr/bin" % os.path.join(root, "usr/bin"), "/usr/bin"],
                           check=True, timeout=10)
            self._bind_mounts.append("/usr/bin")
        journal = self._private_journal_socket()
        socket_path = os.path.join(self.tmp, "system_bus_socket")
        config = os.path.join(self.tmp, "bus.conf")
        with open(config, "w") as f:
            f.write(self.bus_config(socket_path))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(socket_path)
        listener.listen(128)
        os.chmod(socket_path, 0o666)
        self.address = "unix:path=" + socket_path
        fd = listener.fileno()
        proc = subprocess.Popen(
            [ptags_harness.PYTHON, "-c", SOCKET_ACTIVATE, str(fd), "/usr/bin/dbus-broker-launch",
             "--scope", "system", "--config-file", config],
            stdin=subprocess.DEVNULL, stdout=journal.log, stderr=journal.log,
            env=self.child_env(), pass_fds=(fd,), close_fds=True)
        self._procs.append(("dbus-broker", proc))
        listener.close()
        wait_until(lambda: journal.ready.is_set() or proc.poll() is not None, 10,
                   "dbus-broker ready")
        if proc.poll() is not None:
            raise HarnessError("dbus-broker-launch exited: %s" % self.read_log("bus.log"))
        self.conn = ptags_harness.ptags_client.connect(self.address)

    def _private_journal_socket(self):
        """A journal socket for this namespace only (the host's journal, if
        any, is hidden here): a thread copies each entry's MESSAGE to
        tmp/bus.log and notes the broker's "Ready"."""
        base = "/run/systemd/journal"
        # The tmpfs goes over the journal's directory, or where there is
        # none, over /run/systemd (hiding nothing a test uses). Only a host
        # without even that gets an empty /run/systemd.
        mount_point = base if os.path.isdir(base) else "/run/systemd"
        os.makedirs(mount_point, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", mount_point],
                       check=True, timeout=10)
        self._bind_mounts.append(mount_point)
        os.makedirs(base, exist_ok=True)
        sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sink.bind(os.path.join(base, "socket"))
        os.chmod(os.path.join(base, "socket"), 0o666)
        journal = types.SimpleNamespace(
            ready=threading.Event(), log=open(os.path.join(self.tmp, "bus.log"), "ab", buffering=0))

        def copy():
            while True:
                ready, _, _ = select.select([sink], [], [], 0.5)
                if self.tmp is None:  # stopped
                    break
                if not ready:
                    continue
                entry = sink.recv(1 << 20)
                for line in entry.split(b"\n"):
                    if line.startswith(b"MESSAGE="):
                        journal.log.write(line[len(b"MESSAGE="):] + b"\n")
                        if line == b"MESSAGE=Ready":
                            journal.ready.set()
            sink.close()
            journal.log.close()

        threading.Thread(target=copy, name="journal-sink", daemon=True).start()
        return journal

    # ------------------------------------------------------------ polkit

    def _polkit_dir(self, name, files):
        """A dir only polkitd (and root) can read, as on Debian."""
        try:
            polkitd_user = pwd.getpwnam("polkitd")
        except KeyError:
            raise HarnessError("no polkitd user: is the polkitd package installed?")
        path = os.path.join(self.tmp, name)
        os.mkdir(path)
        for file_name, content in files.items():
            with open(os.path.join(path, file_name), "w") as f:
                f.write(content)
            os.chmod(os.path.join(path, file_name), 0o644)
        os.chown(path, polkitd_user.pw_uid, 0)
        os.chmod(path, 0o700)
        return path

    def _bind(self, source, target):
        subprocess.run(["mount", "--bind", source, target], check=True, timeout=10)
        self._bind_mounts.append(target)

    def _install_polkit_files(self):
        with open(required_file("PTAGS_POLKIT_POLICY")) as f:
            actions = {"org.ptags.policy": f.read()}
        vendor_rules = {}
        if self.shipped_rule:
            with open(required_file("PTAGS_POLKIT_RULE")) as f:
                vendor_rules["50-org.ptags.rules"] = f.read()
        # The actions dir must be world-readable, like the real one.
        actions_dir = self._polkit_dir("polkit-actions", actions)
        os.chmod(actions_dir, 0o755)
        self._bind(actions_dir, POLKIT_ACTIONS_DIR)
        self._bind(self._polkit_dir("polkit-admin-rules", self.admin_rules),
                   POLKIT_ADMIN_RULES_DIR)
        self._bind(self._polkit_dir("polkit-vendor-rules", vendor_rules),
                   POLKIT_VENDOR_RULES_DIR)

    def start_polkitd(self):
        """The real polkitd, on our bus (it reads DBUS_SYSTEM_BUS_ADDRESS),
        started as root: it drops to the polkitd user by itself."""
        if not os.access(POLKITD, os.X_OK):
            raise HarnessError("%s missing (package polkitd)" % POLKITD)
        proc = self.spawn("polkitd", [POLKITD], log_name="polkitd.log")
        wait_until(lambda: self.name_has_owner(ptags_harness.POLKIT_NAME)
                   or proc.poll() is not None, 15, "polkitd on the bus")
        if proc.poll() is not None:
            raise HarnessError("polkitd exited: %s" % self.read_log("polkitd.log"))
        self.polkitd = proc

    # ------------------------------------------------------------ callers

    def spawn_client_as(self, user):
        """A harness ClientProcess running as @user (name), no groups, no caps."""
        entry = pwd.getpwnam(user)
        script = os.path.join(self.tmp, "ptags_client.py")
        if not os.path.exists(script):
            shutil.copy(os.path.join(ptags_harness.LIB_DIR, "ptags_client.py"), script)
            os.chmod(script, 0o644)
        argv = setpriv_argv(entry) + [ptags_harness.PYTHON, "-I", script, self.address]
        proc = self.spawn("client", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client = ptags_harness.ClientProcess(proc)
        self._clients.append(client)
        return client

    def call_as(self, user, destination, path, interface, method, sig="", args=()):
        """One call on a fresh connection as @user (None: root) to any
        destination and interface; returns a harness Reply."""
        script = os.path.join(self.tmp, "policy_caller.py")
        if not os.path.exists(script):
            shutil.copy(CALLER_SCRIPT, script)
            shutil.copy(os.path.join(ptags_harness.LIB_DIR, "ptags_client.py"),
                        os.path.join(self.tmp, "ptags_client.py"))
            for name in ("policy_caller.py", "ptags_client.py"):
                os.chmod(os.path.join(self.tmp, name), 0o644)
        request = json.dumps({"destination": destination, "path": path, "interface": interface,
                              "method": method, "sig": sig, "args": list(args)})
        prefix = setpriv_argv(pwd.getpwnam(user)) if user else []
        out = subprocess.run(prefix + [ptags_harness.PYTHON, "-I", script, self.address, request],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                             env=self.child_env())
        if out.returncode != 0:
            raise HarnessError("policy_caller failed (%d): %s" % (out.returncode,
                                                                   out.stderr.decode()))
        return ptags_harness.Reply.from_json(json.loads(out.stdout))

    # ------------------------------------------------------------ teardown

    def stop(self):
        super().stop()
        for target in reversed(self._bind_mounts):
            subprocess.run(["umount", "-l", target], timeout=10)
        self._bind_mounts = []


def setpriv_argv(entry):
    """setpriv making a child an ordinary user: its own uid and primary gid,
    no supplementary groups, no capabilities to inherit."""
    return ["setpriv", "--reuid=%d" % entry.pw_uid, "--regid=%d" % entry.pw_gid,
            "--clear-groups", "--inh-caps=-all"]


class PolicyTestCase(ptags_harness.PtagsTestCase):
    """PtagsTestCase on a PolicyWorld; subclasses set world_options."""

    def setUp(self):
        self.world = PolicyWorld(**self.world_options)
        self.addCleanup(self.world.stop)
        self.world.start()

    def assertRejectedByBus(self, reply, wording=BUS_REJECTION):
        """The bus, not the daemon, refused: AccessDenied worded by dbus-daemon."""
        self.assertEqual(reply.error, "org.freedesktop.DBus.Error.AccessDenied",
                         "expected the bus to refuse, got %r" % (reply,))
        self.assertIn(wording, reply.message or "",
                      "AccessDenied did not come from the bus policy: %r" % (reply,))
