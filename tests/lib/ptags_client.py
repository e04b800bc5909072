# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags_client.py: a D-Bus caller for the integration tests, used in-process
# (root) and as a JSON-lines subprocess run as an unprivileged user.
#
# Why a subprocess speaking JSON rather than busctl: busctl prints only the
# error *message*, and the tests must compare exact error names, pass pidfds
# and control the ALLOW_INTERACTIVE_AUTHORIZATION flag per call. GDBus gives
# all three. The subprocess keeps one bus connection for its whole life, so
# its unique name and pid are stable (the daemon resolves callers by both).
#
# Subprocess protocol (one JSON object per line, both ways):
#   first line out: {"ready": true, "pid": N, "unique_name": ":1.x"}
#   request:  {"method": "AddTag", "sig": "usb", "args": [0, "app:x", false],
#              "interactive": false, "timeout_ms": 20000,
#              "pidfd_of": PID | null, "file_fd": PATH | null,
#              "destination": [BUS_NAME, PATH, INTERFACE] | null (default ptagsd)}
#   reply:    {"ok": [...out args...]} or {"error": NAME, "message": TEXT}
# An "h" argument is sent as fd index 0 of the message's fd list: the client
# opens a pidfd of "pidfd_of" itself (so the fd belongs to the caller) or
# opens "file_fd" read-only (a deliberately wrong kind of fd).

import json
import os
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

BUS_NAME = "org.ptags.Manager"
OBJECT_PATH = "/org/ptags/Manager"
INTERFACE = "org.ptags.Manager"
DEFAULT_TIMEOUT_MS = 20000


class Reply:
    """Outcome of one call: either ok (value = list of out args) or an error.

    error is the D-Bus error name (e.g. 'org.ptags.Error.InvalidTag'), or a
    'local:' name when the call never got a D-Bus reply (e.g. a timeout)."""

    def __init__(self, value=None, error=None, message=None):
        self.value = value
        self.error = error
        self.message = message

    @property
    def ok(self):
        return self.error is None

    def to_json(self):
        if self.ok:
            return {"ok": self.value}
        return {"error": self.error, "message": self.message}

    @classmethod
    def from_json(cls, obj):
        if "ok" in obj:
            return cls(value=obj["ok"])
        return cls(error=obj["error"], message=obj.get("message"))

    def __repr__(self):
        if self.ok:
            return "Reply(ok=%r)" % (self.value,)
        return "Reply(error=%s: %s)" % (self.error, self.message)


def connect(address):
    """A new private message-bus connection to @address (blocking)."""
    flags = (
        Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
        | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    )
    return Gio.DBusConnection.new_for_address_sync(address, flags, None, None)


def _plain(value):
    """GVariant-unpacked values (tuples) as JSON-friendly lists."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def call(
    conn,
    method,
    sig,
    args,
    interactive=False,
    fds=(),
    timeout_ms=DEFAULT_TIMEOUT_MS,
    bus_name=BUS_NAME,
    path=OBJECT_PATH,
    interface=INTERFACE,
):
    """Call @method with the D-Bus signature @sig; never raises for D-Bus
    errors (they come back as Reply.error). @fds are raw fds to attach (an
    'h' argument holds their index)."""
    params = GLib.Variant("(" + sig + ")", tuple(args)) if sig else None
    flags = Gio.DBusCallFlags.NONE
    if interactive:
        flags |= Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION
    fd_list = Gio.UnixFDList.new() if fds else None
    for fd in fds:
        fd_list.append(fd)
    try:
        result, _out_fds = conn.call_with_unix_fd_list_sync(
            bus_name, path, interface, method, params, None, flags, timeout_ms, fd_list, None
        )
    except GLib.Error as e:
        name = Gio.DBusError.get_remote_error(e)
        if name is None:
            return Reply(error="local:" + e.message, message=e.message)
        # PyGObject copies the GError, so strip the "GDBus.Error:NAME: " prefix here.
        message = e.message
        prefix = "GDBus.Error:%s: " % name
        if message.startswith(prefix):
            message = message[len(prefix):]
        return Reply(error=name, message=message)
    return Reply(value=_plain(result.unpack()) if result is not None else [])


def _serve(address):
    conn = connect(address)
    out = sys.stdout
    out.write(
        json.dumps({"ready": True, "pid": os.getpid(), "unique_name": conn.get_unique_name()})
        + "\n"
    )
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        fds = []
        try:
            if req.get("pidfd_of") is not None:
                fds.append(os.pidfd_open(int(req["pidfd_of"])))
            if req.get("file_fd") is not None:
                fds.append(os.open(req["file_fd"], os.O_RDONLY | os.O_CLOEXEC))
        except OSError as e:
            reply = Reply(error="local:client-fd", message=str(e))
        else:
            where = req.get("destination") or [BUS_NAME, OBJECT_PATH, INTERFACE]
            reply = call(
                conn,
                req["method"],
                req.get("sig", ""),
                req.get("args", []),
                interactive=bool(req.get("interactive", False)),
                fds=fds,
                timeout_ms=int(req.get("timeout_ms", DEFAULT_TIMEOUT_MS)),
                bus_name=where[0],
                path=where[1],
                interface=where[2],
            )
        for fd in fds:
            os.close(fd)
        out.write(json.dumps(reply.to_json()) + "\n")
        out.flush()


if __name__ == "__main__":
    # --undumpable: prctl(PR_SET_DUMPABLE, 0) before connecting, as hardened
    # programs do, so processes of the same uid cannot trace this one.
    if len(sys.argv) == 3 and sys.argv[2] == "--undumpable":
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
            sys.exit("prctl(PR_SET_DUMPABLE) failed")
    elif len(sys.argv) != 2:
        sys.exit("usage: ptags_client.py BUS_ADDRESS [--undumpable]")
    _serve(sys.argv[1])
