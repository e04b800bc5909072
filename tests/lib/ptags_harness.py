# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags_harness.py: a private world for each ptagsd integration test (temp
# dir, private system-like bus, polkit stand-in, kernel fixture, ptagsd).
#
# Used by tests/integration (with the polkit mock) and by the deployment
# tests (with their own bus policy and a real polkitd). Everything that is
# started is stopped in World.stop(), which is safe to call after a partial
# start and after failures; every wait has a deadline.
#
# Environment read at start (set by meson's test(env: ...)):
#   PTAGSD            ptagsd executable (required)
#   PTAGS_FIXTURE     ptags-kernel-fixture executable (required)
#   PTAGS_SOURCE_ROOT source tree (optional; defaults to this file's ../..)
#   PTAGS_BACKEND     ptags-lsm (default: the kernel fixture stands in for a
#                     patched kernel) or bpf (the real kernel, no fixture)
#   PTAGS_DAEMON_WRAPPER optional command prefix for ptagsd (e.g. strace);
#                     ptagsd must exit 0 on SIGTERM either way. (valgrind
#                     3.19 lacks pidfd_open: use a -Db_sanitize build, whose
#                     ASAN/UBSAN/LSAN_OPTIONS are passed on to ptagsd.)
# A missing executable is a test FAILURE (HarnessError), never a skip.
#
# Minimal use:
#   class T(ptags_harness.PtagsTestCase):
#       def test_x(self):
#           pid = self.world.spawn_target()
#           self.assertOk(self.world.root_call("AddTag", "usb", [pid, "a", False]))

import contextlib
import ctypes
import fcntl
import json
import os
import pwd
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptags_client  # noqa: E402
from ptags_client import Reply  # noqa: E402,F401  (re-exported for tests)

PYTHON = "/usr/bin/python3"  # Debian's, with gi and dbusmock; never a shim
# Held while a test steers the kernel's next pid (spawn_target_at); in /run,
# which only root may write, as only root steers.
PID_STEERING_LOCK = "/run/ptags-tests-pid-steering.lock"
LIB_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("PTAGS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(LIB_DIR))
# The daemon under test was built with ASan or TSan (its build directory
# says so): slower, and holding freed memory back, so timing and growth
# bounds are widened for it.
DAEMON_SANITIZED = any(s in os.environ.get("PTAGSD", "") for s in ("asan", "tsan"))
NOBODY_UID = 65534
NOBODY_GID = 65534
POLKIT_NAME = "org.freedesktop.PolicyKit1"
POLKIT_PATH = "/org/freedesktop/PolicyKit1/Authority"
MOCK_IFACE = "org.freedesktop.DBus.Mock"
ERROR_PREFIX = "org.ptags.Error."
INTERACTIVE_REQUIRED = "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"



def unprivileged_argv(uid=NOBODY_UID, gid=NOBODY_GID):
    """setpriv arguments that make a child an ordinary unprivileged user
    (@uid need not exist): no supplementary groups, no inheritable or
    ambient capabilities."""
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups",
            "--inh-caps=-all"]


UNPRIVILEGED = unprivileged_argv()


def second_user_uid():
    """An unprivileged uid other than nobody's, for tests about two users.
    It must exist in passwd: dbus-daemon refuses unknown uids."""
    for entry in sorted(pwd.getpwall(), key=lambda e: e.pw_uid):
        if 0 < entry.pw_uid < NOBODY_UID:
            return entry.pw_uid
    raise HarnessError("no second unprivileged user in passwd")


class HarnessError(AssertionError):
    """The world could not be built or a bounded wait ran out. An
    AssertionError, so unittest reports a FAILURE, never a skip."""


def wait_until(predicate, timeout, what, interval=0.02):
    """Poll @predicate until it returns a true value or @timeout seconds
    pass (then HarnessError naming @what). Returns the value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise HarnessError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def sleep_sleeps(pid):
    """Whether process @pid has exec'd sleep and sleep itself sleeps, in
    clock_nanosleep (230) or nanosleep (35). /proc/PID/exe names sleep
    before the exec has finished, and so before the kernel's exec hook has
    dropped the unkept tags: only a sleeping sleep has run past both."""
    try:
        if os.path.basename(os.readlink("/proc/%d/exe" % pid)) != "sleep":
            return False
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split(" ", 1)[0] in ("230", "35")
    except OSError:
        return False


def rss_kib(pid, field="VmRSS"):
    """The resident size of process @pid, in KiB (its peak so far with
    field="VmHWM")."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise HarnessError("no %s for process %d" % (field, pid))


def default_bus_config(socket_path):
    """A system-bus-like dbus-daemon config for tests: EXTERNAL auth on a
    unix socket, any user may connect, own any name and send anything. The
    real (restrictive) policy is tested separately by the deployment tests,
    which pass their own config to World(bus_config=...)."""
    return """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
</busconfig>
""" % socket_path


class ClientProcess:
    """A ptags_client.py subprocess (one bus connection, one pid) that makes
    calls on request. Requests are answered in order; send() + receive()
    let a test leave a call pending while others proceed."""

    def __init__(self, popen, ready_timeout=10.0):
        self.popen = popen
        self._buf = b""
        hello = self._read_line(ready_timeout, "client start")
        if not hello.get("ready"):
            raise HarnessError("client did not start: %r" % hello)
        self.pid = hello["pid"]
        self.host_pid = self.pid
        self.unique_name = hello["unique_name"]

    def _read_line(self, timeout, what):
        deadline = time.monotonic() + timeout
        fd = self.popen.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise HarnessError("timed out after %.1fs waiting for %s" % (timeout, what))
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise HarnessError("client exited while waiting for %s" % what)
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, method, sig="", args=(), interactive=False, pidfd_of=None, file_fd=None,
             timeout_ms=ptags_client.DEFAULT_TIMEOUT_MS, destination=None):
        """destination: (bus_name, path, interface) to call someone other
        than ptagsd, e.g. the bus itself to request a well-known name."""
        req = {
            "destination": list(destination) if destination else None,
            "method": method,
            "sig": sig,
            "args": list(args),
            "interactive": interactive,
            "pidfd_of": pidfd_of,
            "file_fd": file_fd,
            "timeout_ms": timeout_ms,
        }
        self.popen.stdin.write((json.dumps(req) + "\n").encode())
        self.popen.stdin.flush()

    def pending(self, wait=0.0):
        """True when a reply is ready to be read (after up to @wait s)."""
        if b"\n" in self._buf:
            return True
        ready, _, _ = select.select([self.popen.stdout.fileno()], [], [], wait)
        return bool(ready)

    def receive(self, timeout=25.0):
        return Reply.from_json(self._read_line(timeout, "a reply"))

    def call(self, method, sig="", args=(), timeout=25.0, **kw):
        self.send(method, sig, args, **kw)
        return self.receive(timeout)

    def stop(self):
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(timeout=10)


class PolkitMock:
    """Control of the ptags_polkit_mock template on the private bus."""

    def __init__(self, conn):
        self._conn = conn

    def _call(self, method, sig="", args=()):
        reply = ptags_client.call(self._conn, method, sig, args, bus_name=POLKIT_NAME,
                                  path=POLKIT_PATH, interface=MOCK_IFACE, timeout_ms=10000)
        if not reply.ok:
            raise HarnessError("polkit mock %s failed: %s" % (method, reply))
        return reply.value

    def set_allowed(self, actions):
        self._call("SetAllowed", "as", [list(actions)])

    def set_challenge(self, actions):
        self._call("SetChallenge", "as", [list(actions)])

    def set_interactive_answer(self, answer):
        self._call("SetInteractiveAnswer", "b", [bool(answer)])

    def set_denied_tags(self, tags):
        self._call("SetDeniedTags", "as", [list(tags)])

    def set_right_allows(self, actions):
        self._call("SetRightAllows", "as", [list(actions)])

    def set_hang(self, actions):
        self._call("SetHangActions", "as", [list(actions)])

    def release(self):
        self._call("ReleaseHangingCalls")

    def hanging_count(self):
        return self._call("HangingCallCount")[0]

    def wait_hanging(self, count, timeout=10.0):
        wait_until(lambda: self.hanging_count() >= count, timeout,
                   "%d hanging polkit check(s)" % count)

    def checks(self):
        """Every CheckAuthorization so far: dicts with subject_kind, subject,
        action, details, flags, cancellation_id."""
        return json.loads(self._call("GetChecksJson")[0])

    def clear_checks(self):
        self._call("ClearChecks")

    def cancellations(self):
        return json.loads(self._call("GetCancellationsJson")[0])

    def set_random_tags(self, prefixes, probability, seed):
        """Checks for tags starting with one of @prefixes are authorized
        with @probability, else denied (seeded pseudo-random)."""
        self._call("SetRandomTags", "asdu", [list(prefixes), float(probability), int(seed)])

    def set_cancel_fails(self, fails):
        """Make cancellations fail the way polkitd's do when its answer has
        already left (see the mock's SetCancelFails)."""
        self._call("SetCancelFails", "b", [bool(fails)])


def preload_env(env):
    """@env for a ptagsd a test module is preloaded into (preloaded()):
    ASan wants its runtime first, and accepts a test's module only so."""
    return dict(env, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "")
                                   + ":verify_asan_link_order=0").lstrip(":"))


@contextlib.contextmanager
def preloaded(variable):
    """Within the block, worlds start ptagsd with the shared module the
    environment @variable names (set by meson) in LD_PRELOAD."""
    if not os.environ.get(variable):
        raise AssertionError("%s (a test module to preload) is not set" % variable)
    with daemon_wrapper("env LD_PRELOAD=%s" % os.environ[variable]):
        yield


@contextlib.contextmanager
def daemon_wrapper(prefix):
    """Within the block, worlds start ptagsd behind @prefix (a command line
    prefix), before any wrapper the runner set (PTAGS_DAEMON_WRAPPER)."""
    saved = os.environ.get("PTAGS_DAEMON_WRAPPER")
    os.environ["PTAGS_DAEMON_WRAPPER"] = ("%s %s" % (prefix, saved or "")).strip()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["PTAGS_DAEMON_WRAPPER"]
        else:
            os.environ["PTAGS_DAEMON_WRAPPER"] = saved


def pump_main_context(duration=0.0):
    """Dispatch what the default main context has (D-Bus signals) for
    @duration seconds, at least once."""
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + duration
    while True:
        while ctx.iteration(False):
            pass
        if time.monotonic() >= deadline:
            return
        time.sleep(0.01)


class SignalRecorder:
    """Records TagsChanged(u, as, a(sbs)) from ptagsd on a connection."""

    def __init__(self, conn):
        self.events = []
        self._conn = conn
        self._id = conn.signal_subscribe(
            ptags_client.BUS_NAME, ptags_client.INTERFACE, "TagsChanged",
            ptags_client.OBJECT_PATH, None, Gio.DBusSignalFlags.NONE, self._on_signal)
        # A round trip to the bus orders our AddMatch before later calls.
        conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus",
                       "org.freedesktop.DBus", "GetId", None, None,
                       Gio.DBusCallFlags.NONE, 5000, None)

    def _on_signal(self, _conn, _sender, _path, _iface, _name, params):
        pid, lines, tags = params.unpack()
        self.events.append((pid, list(lines), [tuple(t) for t in tags]))

    def drain(self, duration):
        """Dispatch signals for @duration seconds; returns all events."""
        ctx = GLib.MainContext.default()
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            while ctx.iteration(False):
                pass
            time.sleep(0.01)
        return self.events

    def wait(self, count, timeout=10.0):
        ctx = GLib.MainContext.default()

        def enough():
            while ctx.iteration(False):
                pass
            return len(self.events) >= count

        wait_until(enough, timeout, "%d TagsChanged signal(s)" % count)
        return self.events

    def close(self):
        self._conn.signal_unsubscribe(self._id)


class World:
    """One private world: temp dir, bus, polkit (mock, none or external),
    kernel fixture, ptagsd. start() builds it, stop() tears it all down.

    bus_config: None for default_bus_config, or a callable(socket_path) ->
      config XML text (deployment tests pass the real policy here).
    polkit: "mock" (ptags_polkit_mock), "none" (nothing owns
      org.freedesktop.PolicyKit1) or "external" (the caller starts its own
      after start_bus(), e.g. a real polkitd, before start_daemon()).
    """

    def __init__(self, bus_config=None, polkit="mock", polkit_timeout=None, daemon_args=(),
                 fixture_args=(), daemon_env=None):
        self.bus_config = bus_config or default_bus_config
        self.polkit_kind = polkit
        self.polkit_timeout = polkit_timeout
        self.daemon_args = list(daemon_args)
        self.fixture_args = list(fixture_args)
        self.daemon_env = dict(daemon_env or {})
        self.bpf_pin_dir = None  # private pins of a bpf world, removed by stop()
        self.tmp = None
        self.address = None
        self.mount = None
        self.backend = os.environ.get("PTAGS_BACKEND", "ptags-lsm")
        self.polkit = None
        self.conn = None
        self._procs = []  # (label, Popen), stopped in reverse order
        self._clients = []
        self._mounted = False
        self.daemon = None
        self.daemon_log_path = None

    # ------------------------------------------------------------ building

    def start(self):
        self.ptagsd = self._required_exe("PTAGSD", "ptagsd (meson variable ptagsd_exe)")
        self.backend = os.environ.get("PTAGS_BACKEND", "ptags-lsm")
        if self.backend not in ("ptags-lsm", "bpf"):
            raise HarnessError("PTAGS_BACKEND=%s: expected ptags-lsm or bpf" % self.backend)
        if self.backend == "ptags-lsm":
            self.fixture_exe = self._required_exe(
                "PTAGS_FIXTURE", "ptags-kernel-fixture (meson variable ptags_kernel_fixture)")
        self.tmp = tempfile.mkdtemp(prefix="ptags-it-")
        # Unprivileged clients must reach the bus socket and the client script.
        os.chmod(self.tmp, 0o755)
        if self.backend == "bpf":
            self._isolate_bpf_state()
        else:
            # ptagsd's runtime state (container registry, crash journal)
            # stays in this world, never in the host's /run/ptags.
            run_dir = os.path.join(self.tmp, "run")
            os.mkdir(run_dir, 0o700)
            self.daemon_env.setdefault("RUNTIME_DIRECTORY", run_dir)
        if self.polkit_kind not in ("mock", "none", "external"):
            raise HarnessError("unknown polkit kind %r" % (self.polkit_kind,))
        self.start_bus()
        # The mock's Python start-up is the slowest part of a world: it runs
        # while the fixture and ptagsd start (ptagsd asks polkit only at the
        # first check), and start() returns once it owns its name.
        mock = self._spawn_polkit_mock() if self.polkit_kind == "mock" else None
        if self.backend == "ptags-lsm":
            self.start_fixture()
        if self.polkit_kind != "external":
            self.start_daemon()
        if mock is not None:
            self._wait_polkit_mock(mock)

    def _isolate_bpf_state(self):
        """Give this world's ptagsd its own pins and state, so tests never
        share (or leave behind) the system's /sys/fs/bpf/ptags and /run/ptags;
        a test that sets these itself keeps its own."""
        run_dir = os.path.join(self.tmp, "run")
        os.mkdir(run_dir, 0o700)
        self.bpf_pin_dir = "/sys/fs/bpf/" + os.path.basename(self.tmp)
        self.daemon_env.setdefault("PTAGS_BPF_PIN_DIR", self.bpf_pin_dir)
        self.daemon_env.setdefault("RUNTIME_DIRECTORY", run_dir)

    def _remove_bpf_pins(self):
        pin_dir = self.bpf_pin_dir
        if pin_dir is None or not os.path.isdir(pin_dir):
            return
        for name in os.listdir(pin_dir):
            os.unlink(os.path.join(pin_dir, name))
        os.rmdir(pin_dir)
        self.bpf_pin_dir = None

    @staticmethod
    def _required_exe(var, what):
        path = os.environ.get(var, "")
        if not path:
            raise HarnessError("%s is not set: %s was not built/defined, so this test cannot run"
                               % (var, what))
        if not os.access(path, os.X_OK):
            raise HarnessError("%s=%s is not an executable (%s)" % (var, path, what))
        return path

    def child_env(self, extra=None):
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
            "DBUS_SYSTEM_BUS_ADDRESS": self.address or "",
        }
        # Sanitizer settings reach the daemon and fixture of a sanitizer build.
        for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
            if var in os.environ:
                env[var] = os.environ[var]
        # GLib hands out GVariants, GBytes and list nodes from slabs that
        # stay reachable, which hides their leaks from LeakSanitizer: each
        # comes from malloc itself in a sanitizer build.
        if DAEMON_SANITIZED:
            env["G_SLICE"] = "always-malloc"
        env.update(extra or {})
        return env

    def spawn(self, label, argv, log_name=None, stdin=subprocess.DEVNULL,
               stdout=None, env=None):
        """Start a child that stop() will terminate (reverse start order);
        stdout+stderr go to tmp/LOG_NAME when given. For helpers such as a
        real polkitd started with polkit="external"."""
        log = None
        if log_name is not None:
            log = open(os.path.join(self.tmp, log_name), "wb")
        try:
            proc = subprocess.Popen(
                argv, stdin=stdin,
                stdout=stdout if stdout is not None else (log or subprocess.DEVNULL),
                stderr=log or subprocess.DEVNULL,
                env=env if env is not None else self.child_env(), close_fds=True)
        finally:
            if log is not None:
                log.close()
        self._procs.append((label, proc))
        return proc

    def start_bus(self):
        socket_path = os.path.join(self.tmp, "system_bus_socket")
        config = os.path.join(self.tmp, "bus.conf")
        with open(config, "w") as f:
            f.write(self.bus_config(socket_path))
        # dbus-daemon prints its address once it listens (the socket file
        # alone appears before listen(), so connecting to it may be refused).
        proc = self.spawn("dbus-daemon", ["dbus-daemon", "--nofork", "--nopidfile",
                                           "--print-address=1", "--config-file=" + config],
                           log_name="bus.log", stdout=subprocess.PIPE)
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        line = proc.stdout.readline() if ready else b""
        proc.stdout.close()  # the address is all it prints
        if not line.strip():
            raise HarnessError("dbus-daemon did not start listening: %s"
                               % self.read_log("bus.log"))
        os.chmod(socket_path, 0o666)
        self.address = "unix:path=" + socket_path
        self.conn = ptags_client.connect(self.address)

    def name_has_owner(self, name):
        reply = ptags_client.call(self.conn, "NameHasOwner", "s", [name],
                                  bus_name="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                  interface="org.freedesktop.DBus", timeout_ms=5000)
        return reply.ok and reply.value[0]

    def start_polkit_mock(self):
        self._wait_polkit_mock(self._spawn_polkit_mock())

    def _spawn_polkit_mock(self):
        template = os.path.join(LIB_DIR, "ptags_polkit_mock.py")
        return self.spawn("polkit-mock", [PYTHON, "-m", "dbusmock", "--template", template,
                                           "--system"], log_name="polkit-mock.log")

    def _wait_polkit_mock(self, proc):
        wait_until(lambda: self.name_has_owner(POLKIT_NAME) or proc.poll() is not None, 15,
                   "the polkit mock on the bus")
        if proc.poll() is not None:
            raise HarnessError("polkit mock exited: %s" % self.read_log("polkit-mock.log"))
        self.polkit = PolkitMock(self.conn)

    def stop_polkit_mock(self):
        """Kill the polkit mock (as if polkitd crashed) and wait until its
        name is gone from the bus."""
        for label, proc in self._procs:
            if label == "polkit-mock" and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        wait_until(lambda: not self.name_has_owner(POLKIT_NAME), 10,
                   "org.freedesktop.PolicyKit1 to leave the bus")
        self.polkit = None

    def start_fixture(self):
        self.mount = os.path.join(self.tmp, "proc")
        os.mkdir(self.mount)
        proc = self.spawn("fixture", [self.fixture_exe, self.mount] + self.fixture_args,
                           log_name="fixture.log")
        probe = os.path.join(self.mount, "1", "attr", "ptags")

        def ready():
            if os.path.exists(probe):
                return True
            if proc.poll() not in (None, 0):  # 0: it may have daemonized
                raise HarnessError("kernel fixture exited (%s): %s"
                                   % (proc.returncode, self.read_log("fixture.log")))
            return False

        self._mounted = True  # unmount is attempted in stop() from here on
        wait_until(ready, 10, "the kernel fixture at %s" % probe)

    def start_daemon(self, extra_args=()):
        wrapper = self.spawn_daemon(extra_args)
        wait_until(lambda: self.name_has_owner(ptags_client.BUS_NAME)
                   or self.daemon.poll() is not None, 60 if wrapper else 15,
                   "ptagsd to own org.ptags.Manager")
        if self.daemon.poll() is not None:
            raise HarnessError("ptagsd exited with %s at start:\n%s"
                               % (self.daemon.returncode, self.read_log("ptagsd.log")))

    def spawn_daemon(self, extra_args=()):
        """Start ptagsd without waiting for it (tests that time its start);
        returns the wrapper prefix used, if any."""
        wrapper = os.environ.get("PTAGS_DAEMON_WRAPPER", "").split()
        argv = wrapper + [self.ptagsd, "--backend=" + self.backend]
        # Debug logging by default (tests read it); benchmarks turn it off.
        if getattr(self, "daemon_verbose", True):
            argv.append("--verbose")
        if self.backend == "ptags-lsm":
            argv.append("--proc-root=" + self.mount)
        if self.polkit_timeout is not None:
            argv.append("--polkit-timeout=%s" % self.polkit_timeout)
        argv += self.daemon_args + list(extra_args)
        # Criticals are bugs: make them fatal so "the daemon stays up" means it.
        env = self.child_env({"G_DEBUG": "fatal-criticals", **self.daemon_env})
        self.daemon_log_path = os.path.join(self.tmp, "ptagsd.log")
        self.daemon = self.spawn("ptagsd", argv, log_name="ptagsd.log", env=env)
        return wrapper

    # ------------------------------------------------------------ teardown

    def read_log(self, name, tail_lines=200):
        try:
            with open(os.path.join(self.tmp, name), "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return "(no %s)" % name
        return "\n".join(lines[-tail_lines:])

    def daemon_alive(self):
        return self.daemon is not None and self.daemon.poll() is None

    HEAP_TRIMMED = re.compile(rb"heap trimmed: (\d+) bytes in use")

    def heap_in_use(self, timeout=10):
        """The bytes ptagsd's heap (or, in a sanitizer build, the
        sanitizer's allocator) holds once the calls answered so far are
        done: the figure of the first trim ptagsd logs from now on. Any
        incoming message arms a trim 2 s later; the property read here arms
        one when none is armed."""
        offset = os.path.getsize(self.daemon_log_path)
        self.get_property("Version")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.daemon_log_path, "rb") as f:
                f.seek(offset)
                found = self.HEAP_TRIMMED.search(f.read())
            if found:
                return int(found.group(1))
            time.sleep(0.1)
        raise AssertionError("ptagsd logged no heap trim within %d s" % timeout)

    def rss_after_trim(self):
        """ptagsd's RSS in KiB once it has trimmed its heap after the calls
        answered so far (see heap_in_use)."""
        self.heap_in_use()
        return rss_kib(self.daemon.pid)

    def stop(self):
        for client in self._clients:
            try:
                client.stop()
            except Exception:  # keep tearing down
                pass
        if self.conn is not None:
            self.conn.close_sync(None)
            self.conn = None
        # Reverse start order: targets, daemon, mock, fixture, bus.
        daemon_problem = None
        for label, proc in reversed(self._procs):
            if label == "fixture" and self._mounted:
                self._unmount()
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30 if proc is self.daemon else 5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
                    if proc is self.daemon:
                        daemon_problem = "ptagsd ignored SIGTERM for 30 s"
                if proc is self.daemon and proc.returncode != 0 and daemon_problem is None:
                    daemon_problem = "ptagsd exited with %s on SIGTERM" % proc.returncode
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        if self._mounted:
            self._unmount()
        self._procs = []
        # The programs stay attached while pinned: unpin once ptagsd is gone.
        self._remove_bpf_pins()
        if self.tmp is not None:
            if self.daemon_log_path is not None:
                sys.stderr.write("---- ptagsd log (tail) ----\n%s\n" % self.read_log("ptagsd.log"))
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        if daemon_problem is not None:
            raise HarnessError(daemon_problem + " (see its log above)")

    def _unmount(self):
        for argv in (["fusermount3", "-u", self.mount], ["umount", "-l", self.mount]):
            if subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=10).returncode == 0:
                break
        self._mounted = False

    # ------------------------------------------------------------ processes

    def spawn_target(self, unprivileged=False, uid=None):
        """A `sleep 600` target (as nobody when @unprivileged, as @uid when
        given); returns its pid once it runs sleep (so exec cannot drop tags
        set afterwards)."""
        prefix = unprivileged_argv(uid, uid) if uid is not None else (
            UNPRIVILEGED if unprivileged else [])
        argv = prefix + ["sleep", "600"]
        proc = self.spawn("target", argv)
        wait_until(lambda: sleep_sleeps(proc.pid), 10, "target %d to exec sleep" % proc.pid)
        return proc.pid

    def _spawn_named_target(self, comm, lines, what):
        """A root python process named @comm, which the kernel fixture
        treats specially, given the tags of @lines by ptagsd. Returns its
        pid."""
        script = ("import sys\n"
                  "open('/proc/self/comm', 'w').write(%r)\n"
                  "print('ready', flush=True)\n"
                  "sys.stdin.readline()\n" % comm)
        proc = self.spawn("target", [PYTHON, "-c", script], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE)
        if proc.stdout.readline().strip() != b"ready":
            raise HarnessError("%s did not start" % what)
        reply = self.root_call("Apply", "uas", [proc.pid, lines])
        if not reply.ok:
            raise HarnessError("cannot tag %s: %r" % (what, reply))
        return proc.pid

    def spawn_target_losing_tags(self):
        """A root process named ptags-lost-tags: the kernel fixture removes
        all its tags just before any other process writes to it, as a third
        writer would after ptagsd's last read. It holds app:a=v, set in one
        write. Returns its pid."""
        pid = self._spawn_named_target("ptags-lost-tags", ["+app:a", "!app:a=v"],
                                       "the target losing its tags")
        if self.get_tags(pid) != [("app:a", False, "v")]:
            raise HarnessError("the target losing its tags holds %r" % (self.get_tags(pid),))
        return pid

    def spawn_target_that_execs(self, lines):
        """A root process named ptags-execs: the kernel fixture drops its
        tags without the keep flag just before any other process writes to
        it, as its exec would after that writer last read them. It holds
        @lines, set by ptagsd. Returns its pid."""
        return self._spawn_named_target("ptags-execs", lines, "the target that execs")

    def spawn_with_a_thread(self):
        """A root python process with a second thread, both sleeping.
        Returns (pid, the second thread's id)."""
        proc = self.spawn("threads", [sys.executable, "-c",
                                      "import threading, time\n"
                                      "threading.Thread(target=time.sleep, args=(600,)).start()\n"
                                      "time.sleep(600)\n"])
        tasks = "/proc/%d/task" % proc.pid
        wait_until(lambda: len(os.listdir(tasks)) == 2, 10, "a second thread of %d" % proc.pid)
        return proc.pid, [int(t) for t in os.listdir(tasks) if int(t) != proc.pid][0]

    def sleep_named_not_utf8(self):
        """A copy of sleep whose file name (and so the comm of a process
        running it, and its /proc/PID/exe path) is not UTF-8. Returns the
        path as bytes; any user may run it."""
        workdir = tempfile.mkdtemp(dir=self.tmp)
        os.chmod(workdir, 0o755)
        path = os.path.join(os.fsencode(workdir), b"\xffsleep")
        shutil.copy(shutil.which("sleep"), path)
        os.chmod(path, 0o755)
        return path

    def spawn_target_at(self, pid, attempts=100, unprivileged=False):
        """A `sleep 600` target (root's, or nobody's when @unprivileged) that
        gets exactly @pid (a freed pid),
        for pid-reuse tests: the kernel's next pid is steered through
        /proc/sys/kernel/ns_last_pid. Other forks on the machine may take
        the pid first, so it retries; HarnessError when it never wins."""
        counter = "/proc/sys/kernel/ns_last_pid"
        # Tests running side by side steer one at a time: two interleaved
        # steerings hand each other's pids out, and one's restore undoes
        # the other's steering.
        lock = os.open(PID_STEERING_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                       0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(counter) as f:
            before = int(f.read())
        try:
            for _ in range(attempts):
                with open(counter, "w") as f:
                    f.write("%d" % (pid - 1))
                argv = (UNPRIVILEGED if unprivileged else []) + ["sleep", "600"]
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
                if proc.pid == pid:
                    self._procs.append(("target", proc))
                    wait_until(lambda: sleep_sleeps(pid), 10, "target %d to exec sleep" % pid)
                    return pid
                proc.kill()
                proc.wait(timeout=10)
        finally:
            # Never hand recently freed pids back to other tests early.
            with open(counter) as f:
                if int(f.read()) < before:
                    with open(counter, "w") as f:
                        f.write("%d" % before)
            os.close(lock)
        raise HarnessError("could not get pid %d back after %d attempts" % (pid, attempts))

    def kill(self, pid):
        """Kill and reap a tracked child (target or client) by pid."""
        for _label, proc in self._procs:
            if proc.pid == pid:
                proc.kill()
                proc.wait(timeout=10)
                return
        raise HarnessError("pid %d is not a child of this world" % pid)

    def spawn_client(self, unprivileged=True, uid=NOBODY_UID, undumpable=False,
                     pid_namespace=False):
        """A ClientProcess connected to the bus (as @uid, nobody by default;
        as root when not @unprivileged); @undumpable: one that made itself
        not dumpable before connecting; @pid_namespace: one that runs as
        pid 1 of a pid namespace of its own, as in a container (its
        host_pid is then the pid ptagsd sees). Making the namespace takes
        CAP_SYS_ADMIN, which an unprivileged client then keeps (ambient):
        ptagsd does not take such a process for its connection's."""
        script = os.path.join(self.tmp, "ptags_client.py")
        if not os.path.exists(script):
            shutil.copy(os.path.join(LIB_DIR, "ptags_client.py"), script)
            os.chmod(script, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
        privilege = unprivileged_argv(uid, uid) if unprivileged else []
        if pid_namespace and unprivileged:
            privilege = privilege[:-1] + ["--inh-caps=-all,+sys_admin",
                                          "--ambient-caps=+sys_admin"]
        argv = privilege + (
            ["unshare", "--pid", "--fork", "--kill-child"] if pid_namespace else []) + [
            PYTHON, "-I", script, self.address] + (["--undumpable"] if undumpable else [])
        proc = self.spawn("client", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        client = ClientProcess(proc)
        self._clients.append(client)
        if pid_namespace:
            with open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)) as f:
                client.host_pid = int(f.read().split()[0])
        return client

    def busctl(self, args, unprivileged=True, timeout=20):
        """Run `busctl --address=BUS ARGS` (as nobody by default), the way a
        shell script would call ptagsd. Note: on Debian 12 (systemd 252)
        busctl sets ALLOW_INTERACTIVE_AUTHORIZATION unless given
        --allow-interactive-authorization=no. Returns CompletedProcess."""
        argv = (UNPRIVILEGED if unprivileged else []) + ["busctl", "--address=" + self.address]
        return subprocess.run(argv + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=self.child_env(), timeout=timeout, text=True)

    def dead_pid(self):
        """The pid of a process that has exited and been reaped."""
        proc = subprocess.Popen(["true"])
        proc.wait(timeout=10)
        return proc.pid

    def daemon_pid(self):
        """ptagsd's pid, as the bus knows it."""
        reply = self.conn.call_sync(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
            "GetConnectionUnixProcessID", GLib.Variant("(s)", ("org.ptags.Manager",)),
            GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, 5000, None)
        return reply.unpack()[0]

    # ------------------------------------------------------------ calling

    def root_call(self, method, sig="", args=(), fds=(), interactive=False,
                  timeout_ms=ptags_client.DEFAULT_TIMEOUT_MS):
        """Call ptagsd in-process as root (polkit is skipped for uid 0)."""
        return ptags_client.call(self.conn, method, sig, args, interactive=interactive,
                                 fds=fds, timeout_ms=timeout_ms)

    def get_tags(self, pid):
        """The target's tags as [(name, keep, value)], via ptagsd as root."""
        reply = self.root_call("GetTags", "u", [pid])
        if not reply.ok:
            raise AssertionError("GetTags(%d) failed: %s" % (pid, reply))
        return [tuple(t) for t in reply.value[0]]

    def require_fixture(self, why):
        """Fail (never skip) a test that needs the kernel fixture on bpf."""
        if self.mount is None:
            raise HarnessError("%s needs the kernel fixture (PTAGS_BACKEND=ptags-lsm)" % why)

    def fixture_tags(self, pid):
        """The raw kernel-format attr file of @pid in the fixture."""
        self.require_fixture("reading the attr file")
        with open(os.path.join(self.mount, str(pid), "attr", "ptags"), "rb") as f:
            return f.read()

    def get_property(self, name):
        reply = ptags_client.call(self.conn, "Get", "ss", [ptags_client.INTERFACE, name],
                                  interface="org.freedesktop.DBus.Properties")
        if not reply.ok:
            raise AssertionError("Get(%s) failed: %s" % (name, reply))
        return reply.value[0]

    def record_signals(self):
        return SignalRecorder(self.conn)


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_CONT, PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 7, 17, 0x4206, 0x4207
PTRACE_LISTEN_OR_CONT = PTRACE_CONT
WALL = 0x40000000


def ptrace(request, tid):
    if LIBC.ptrace(request, tid, None, None) != 0:
        raise OSError(ctypes.get_errno(), "ptrace(%#x, %d)" % (request, tid))


class HeldThread:
    """Stops one thread of a process (ptrace works per thread), leaving the
    others running, until the with-block ends. With idle=True it is stopped
    only while waiting in poll(), holding no lock another thread could need
    (it is let go and caught again until it is)."""

    POLL_SYSCALLS = ("7", "271")  # poll, ppoll (x86-64)

    def __init__(self, tid, idle=True, timeout=10.0):
        self.tid = tid
        self.idle = idle
        self.timeout = timeout

    def syscall(self):
        with open("/proc/%d/task/%d/syscall" % (self.tid, self.tid)) as f:
            return f.read().split()[0]

    def __enter__(self):
        ptrace(PTRACE_SEIZE, self.tid)
        deadline = time.monotonic() + self.timeout
        while True:
            ptrace(PTRACE_INTERRUPT, self.tid)
            os.waitpid(self.tid, WALL)
            if not self.idle or self.syscall() in self.POLL_SYSCALLS:
                return self
            if time.monotonic() > deadline:
                ptrace(PTRACE_DETACH, self.tid)
                raise HarnessError("thread %d never idle in poll()" % self.tid)
            # Let it run on (a group-stop restart) and look again shortly.
            ptrace(PTRACE_LISTEN_OR_CONT, self.tid)
            time.sleep(0.005)

    def __exit__(self, *exc):
        ptrace(PTRACE_DETACH, self.tid)


def message_details():
    """{action id: the $(key)s its polkit message shows}, from the shipped
    policy's source: polkitd shows a key no check carries as "$(key)"."""
    path = os.path.join(SOURCE_ROOT, "data", "polkit-1", "org.ptags.policy.in")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = {}
    for action, body in re.findall(r'<action id="([^"]+)">(.*?)</action>', text, re.S):
        message = re.search(r"<message>(.*?)</message>", body, re.S)
        found[action] = re.findall(r"\$\(([^)]+)\)", message.group(1) if message else "")
    return found


class PtagsTestCase(unittest.TestCase):
    """Base class: self.world is started before each test and torn down
    after it, even when the test fails. Subclasses may set world_options."""

    world_options = {}
    _message_details = None

    def setUp(self):
        self.world = World(**self.world_options)
        self.addCleanup(self.world.stop)
        self.world.start()

    def tearDown(self):
        # Every test also checks that ptagsd survived it.
        if self.world.daemon is not None:
            self.assertTrue(self.world.daemon_alive(),
                            "ptagsd died (exit %s) during the test"
                            % self.world.daemon.returncode)
        # And that each polkit check it made carries every detail the
        # action's message shows (an authentication dialog would show the
        # placeholder instead).
        if getattr(self.world, "polkit", None) is not None:
            if PtagsTestCase._message_details is None:
                PtagsTestCase._message_details = message_details()
            for check in self.world.polkit.checks():
                shown = PtagsTestCase._message_details.get(check["action"], [])
                missing = [k for k in shown if k not in check["details"]]
                self.assertEqual(missing, [], "a check of %s without the details its message "
                                 "shows: %r" % (check["action"], check["details"]))

    def assertOk(self, reply, msg=None):
        """Assert success; returns the out args (a list)."""
        self.assertIsNone(reply.error, msg or "expected success, got %r" % (reply,))
        return reply.value

    def assertError(self, reply, name, msg=None):
        """Assert the named error; short names get the org.ptags.Error. prefix."""
        full = name if "." in name else ERROR_PREFIX + name
        self.assertEqual(reply.error, full, msg or "expected %s, got %r" % (full, reply))
        self.assertTrue(reply.message, "error %s carries no message" % full)
        if full.startswith(ERROR_PREFIX):
            # Messages end up in logs and dialogs: quoted input must be
            # escaped and shortened, never copied raw.
            raw = [ch for ch in reply.message if ord(ch) < 0x20 or ord(ch) == 0x7F]
            self.assertEqual(raw, [], "raw control bytes in the message: %r" % reply.message)
            self.assertLess(len(reply.message), 4096, "an unshortened message")
