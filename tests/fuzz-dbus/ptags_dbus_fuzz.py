# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags_dbus_fuzz.py: sends random, oversized and ill-typed calls to ptagsd
# as fast as its replies come back, and counts the answers (test_dbus_fuzz.py).
#
# Calls go through a real bus (so the bus drops what is not D-Bus at all):
# known methods with the right signature and random values, known methods
# with wrong signatures, unknown members, interfaces and paths, property
# calls, huge arrays and strings, bad UTF-8-free but hostile text, fds where
# none is expected. Up to WINDOW calls are outstanding at once.
#
# Usage: ptags_dbus_fuzz.py [--targets-only] BUS_ADDRESS SEED CALLS PID... ; prints a
# JSON summary. With --targets-only (a caller whose calls take effect: root),
# every pid is one of the PIDs, 0 (the caller itself) or one no process can
# have, so the machine's other processes are never changed.

import json
import os
import random
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

BUS_NAME = "org.ptags.Manager"
PATH = "/org/ptags/Manager"
IFACE = "org.ptags.Manager"
WINDOW = 64  # below the bus's limit on replies one connection awaits (128)

METHODS = {
    "GetTags": "u", "GetTagsFd": "h", "HasTag": "us", "GetPeerTags": "s",
    "PeerHasTag": "ss", "FindTagged": "s", "AddTag": "usb", "RemoveTag": "us",
    "SetValue": "uss", "SetKeep": "usb", "Apply": "uas", "ApplyFd": "has",
    "RegisterContainer": "uta{sv}", "RegisterContainerFd": "hta{sv}",
    "GetContainerId": "u", "GetContainer": "t", "ListContainers": "",
}
BASIC = "ybnqiuxtdsogh"
CHANGES = {"AddTag", "RemoveTag", "SetValue", "SetKeep", "Apply", "ApplyFd",
           "RegisterContainer", "RegisterContainerFd"}


class Fuzzer:
    def __init__(self, conn, seed, pids, targets_only=False):
        self.conn = conn
        self.rng = random.Random(seed)
        self.pids = pids
        self.targets_only = targets_only
        self.outstanding = 0
        self.sent = 0
        self.answers = {}  # error name or "ok" -> count
        self.changed = 0  # change and registration calls that succeeded
        self.fd = os.open("/dev/null", os.O_RDONLY)
        self.pidfds = [os.pidfd_open(p) for p in pids] if targets_only else []

    # ------------------------------------------------------------ values

    def text(self):
        r = self.rng
        choice = r.randrange(12)
        if choice == 0:
            return ""
        if choice == 1:
            return "x" * r.choice((255, 256, 4096, 4097, 32768 if r.random() < 0.1 else 300))
        if choice == 2:
            return "".join(chr(r.randrange(1, 0x80)) for _ in range(r.randrange(1, 40)))
        if choice == 3:
            return "".join(chr(r.choice((r.randrange(0x80, 0xD800), r.randrange(0xE000, 0x110000))))
                           for _ in range(r.randrange(1, 20)))
        if choice == 4:
            return r.choice(("*", "@", "@*", "app:*", "ptags:*", ":", "a::b", "a:", "@app:*",
                             "ptags:add", "ptags:ptags:add", "?x", "+x", "-", "!a=b", "a=b",
                             "a\nb", "a b", "a\tb", "\u202e", "app:\u00e9"))
        if choice == 5:
            return "%s:%s=%s" % (r.choice(("app", "ptags", "usb")), r.randrange(1 << 30),
                                 "v" * r.randrange(0, 40000, 997))
        if choice == 6:
            return ":1.%d" % r.randrange(1000)  # a bus name
        if choice == 7:
            return r.choice(("org.ptags.Manager", "org.freedesktop.DBus", ":1.0", "nope"))
        return "fz:%d" % r.randrange(50)

    def line(self):
        r = self.rng
        return r.choice("+-!?#@ ") + r.choice(("", "@")) + self.text()

    def pid(self):
        r = self.rng
        if self.targets_only:
            # Above the kernel's largest pid (2^22): no process has these.
            return r.choice(self.pids * 3 + [0, 0xFFFFFFFF, 0x7FFFFFFF,
                                             r.randrange(1 << 23, 1 << 32)])
        return r.choice(self.pids + [0, 1, 2, os.getpid(), 0xFFFFFFFF, 0x7FFFFFFF,
                                     r.randrange(1 << 32), r.randrange(1, 400000)])

    def value(self, sig):
        """A GLib.Variant-ready Python value for the single complete type @sig."""
        r = self.rng
        if sig == "u":
            return self.pid()
        if sig in "yq":
            return r.randrange(256 if sig == "y" else 65536)
        if sig in "ni":
            return r.randrange(-(1 << 15), 1 << 15)
        if sig == "x":
            return r.randrange(-(1 << 63), 1 << 63)
        if sig == "t":
            return r.choice((0, 1, (1 << 64) - 1, (1 << 64) - 2, r.randrange(1 << 64)))
        if sig == "d":
            return r.random() * 1e300
        if sig == "b":
            return r.random() < 0.5
        if sig in "s":
            return self.text()
        if sig == "o":
            return r.choice(("/", PATH, "/org/ptags", "/a/b/c"))
        if sig == "g":
            return r.choice(("", "s", "a{sv}", "(uas)"))
        if sig == "h":
            return r.choice((0, 0, 1, 7, -1, 1 << 30))
        if sig == "as":
            # Oversized batches (past the 16000-change bound) now and then:
            # each costs ptagsd real work, so they are rare.
            n = r.choice((4000, 16001, 20000)) if r.random() < 0.003 else \
                r.choice((0, 1, 2, 3, 5, 8, 40))
            return [self.line() if r.random() < 0.7 else self.text() for _ in range(n)] \
                if n < 5000 else ["+fz:%d" % i for i in range(n)]
        if sig == "a{sv}":
            info = {}
            for _ in range(r.randrange(4)):
                key = r.choice(("uuid", "name", "x", "", "uuid\u00e9"))
                kind = r.choice(("ay", "s", "u", "as"))
                if kind == "ay":
                    val = GLib.Variant("ay", bytes(r.randrange(256) for _ in range(
                        r.choice((0, 15, 16, 17, 4096)))))
                else:
                    val = GLib.Variant(kind, self.value(kind))
                info[key] = val
            return info
        raise ValueError(sig)

    def random_signature(self):
        r = self.rng
        parts = []
        for _ in range(r.randrange(5)):
            parts.append(r.choice(list(BASIC) + ["as", "a{sv}", "ay"]))
        return "".join(parts)

    def split(self, sig):
        """A method signature as its complete types."""
        types, i = [], 0
        while i < len(sig):
            if sig.startswith("a{sv}", i):
                types.append("a{sv}")
                i += 5
            elif sig[i] == "a":
                types.append(sig[i:i + 2])
                i += 2
            else:
                types.append(sig[i])
                i += 1
        return types

    def build(self, sig):
        types = self.split(sig)
        vals = []
        for t in types:
            if t == "ay":
                vals.append(bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(64))))
            else:
                vals.append(self.value(t))
        return GLib.Variant("(%s)" % sig, tuple(vals)) if types else None

    # ------------------------------------------------------------ calls

    def one_call(self):
        r = self.rng
        path, iface = PATH, IFACE
        kind = r.random()
        if kind < 0.6:
            method, sig = r.choice(list(METHODS.items()))
        elif kind < 0.8:
            method, sig = r.choice(list(METHODS)), self.random_signature()
        elif kind < 0.9:
            iface = "org.freedesktop.DBus.Properties"
            method, sig = r.choice((("Get", "ss"), ("GetAll", "s"), ("Set", "ss")))
        else:
            method = r.choice(("Nope", "gettags", "Introspect", "Ping", "GetMachineId"))
            iface = r.choice((IFACE, "org.freedesktop.DBus.Introspectable",
                              "org.freedesktop.DBus.Peer", "org.ptags.Nope"))
            path = r.choice((PATH, "/", "/org/ptags/Manager/x"))
            sig = self.random_signature()
        if iface == "org.freedesktop.DBus.Properties":
            names = ["Version", "Backend", "Features", "MaxTags", "Nope", ""]
            args = [r.choice((IFACE, "org.nope", "")), r.choice(names)][:len(sig)]
            params = GLib.Variant("(%s)" % sig, tuple(args)) if method != "Set" else \
                GLib.Variant("(ssv)", (IFACE, r.choice(names), GLib.Variant("u", 1)))
        else:
            params = self.build(sig)
        fds = None
        if "h" in sig or r.random() < 0.05:
            fds = Gio.UnixFDList.new()
            for _ in range(r.choice((1, 1, 2))):
                fds.append(self.fd_to_pass())
        flags = Gio.DBusCallFlags.NONE
        if r.random() < 0.2:
            flags |= Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION
        self.outstanding += 1
        self.sent += 1
        changes = iface == IFACE and method in CHANGES
        self.conn.call_with_unix_fd_list(BUS_NAME, path, iface, method, params, None, flags,
                                         30000, fds, None, self.done, changes)

    def fd_to_pass(self):
        """/dev/null, or for a caller whose calls take effect now and then
        a pidfd of a target, so the pidfd methods change something too."""
        if self.targets_only and self.pidfds and self.rng.random() < 0.5:
            return self.rng.choice(self.pidfds)
        return self.fd

    def done(self, conn, res, changes):
        self.outstanding -= 1
        try:
            conn.call_with_unix_fd_list_finish(res)
            name = "ok"
        except GLib.Error as e:
            name = Gio.DBusError.get_remote_error(e) or "local:%s" % e.message[:60]
        self.answers[name] = self.answers.get(name, 0) + 1
        if changes and name == "ok":
            self.changed += 1

    def run(self, calls):
        ctx = GLib.MainContext.default()
        while self.sent < calls or self.outstanding:
            while self.sent < calls and self.outstanding < WINDOW:
                self.one_call()
            ctx.iteration(True)


def main():
    args = sys.argv[1:]
    targets_only = args[:1] == ["--targets-only"]
    if targets_only:
        args = args[1:]
    address, seed, calls = args[0], int(args[1]), int(args[2])
    pids = [int(p) for p in args[3:]]
    flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
             | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
    conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
    conn.set_exit_on_close(False)
    fuzzer = Fuzzer(conn, seed, pids, targets_only)
    start = time.monotonic()
    fuzzer.run(calls)
    print(json.dumps({"sent": fuzzer.sent, "seconds": time.monotonic() - start,
                      "answers": fuzzer.answers, "changed": fuzzer.changed}))


if __name__ == "__main__":
    main()
