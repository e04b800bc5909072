# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ctl_run.py: runs the built ptagsctl (PTAGSCTL, set by meson) inside a harness World, as root or
# as an unprivileged user, and returns what a script would see: exit code, stdout, stderr.

import contextlib
import json
import os
import subprocess

import ptags_harness
from ptags_harness import HarnessError


def ptagsctl_path():
    path = os.environ.get("PTAGSCTL", "")
    if not path or not os.access(path, os.X_OK):
        raise HarnessError("PTAGSCTL=%r is not an executable: ptagsctl was not built" % path)
    return path


def run(world, *args, uid=None, stdin=None, input=None, address=True, timeout=30, env=None,
        wrapper=(), stdout=subprocess.PIPE):
    """ptagsctl ARGS against @world's bus (through --address when @address,
    else through DBUS_SYSTEM_BUS_ADDRESS alone), as root or as @uid (no
    groups, no capabilities), started by the command @wrapper when given,
    its standard output @stdout (a pipe, read into the result, unless told).
    Returns a CompletedProcess with text output."""
    argv = unprivileged_prefix(uid) + list(wrapper) + [ptagsctl_path()]
    if address:
        argv.append("--address=" + world.address)
    argv += list(args)
    return subprocess.run(argv, input=input, stdin=stdin if input is None else None,
                          stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=env or world.child_env(), timeout=timeout)


def run_json(test, world, *args, **kw):
    """Runs ptagsctl --json ARGS, asserts exit 0 and returns the parsed JSON."""
    out = run(world, "--json", *args, **kw)
    test.assertEqual(out.returncode, 0, "ptagsctl --json %s: %s" % (" ".join(args), out.stderr))
    return json.loads(out.stdout)


def tags_json(tags):
    """The harness's [(name, keep, value)] in ptagsctl's JSON tag shape."""
    return [{"name": n, "keep": k, "value": v} for n, k, v in tags]


def complete(test, world, line):
    """The candidates bash completion (data/completion/ptagsctl) offers at
    the end of @line, with the built ptagsctl first on PATH."""
    root = os.environ.get("PTAGS_SOURCE_ROOT") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    script = ("source %s/data/completion/ptagsctl\n"
              "COMP_LINE=$1; COMP_POINT=${#1}; read -ra COMP_WORDS <<< \"$1\"\n"
              "[[ $1 == *' ' ]] && COMP_WORDS+=('')\n"
              "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
              "_ptagsctl; printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % root)
    env = world.child_env()
    env["PATH"] = os.path.dirname(ptagsctl_path()) + ":" + env["PATH"]
    out = subprocess.run(["bash", "--norc", "-c", script, "bash", line],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         timeout=30)
    test.assertEqual(out.returncode, 0, out.stderr)
    return [c for c in out.stdout.splitlines() if c]


def unprivileged_prefix(uid):
    """setpriv arguments running a child as @uid (None: stay root)."""
    return [] if uid is None else ptags_harness.unprivileged_argv(uid, uid)


@contextlib.contextmanager
def monitor(world, json_mode, **popen_kw):
    """`ptagsctl [--json] monitor` on @world's bus, its pipes open for the
    with-block, stopped on leaving it."""
    argv = [ptagsctl_path()] + (["--json"] if json_mode else []) + [
        "--address=" + world.address, "monitor"]
    mon = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=world.child_env(), **popen_kw)
    try:
        yield mon
    finally:
        mon.terminate()
        mon.wait(timeout=10)
        mon.stdout.close()
        mon.stderr.close()
