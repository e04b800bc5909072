# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# unread_flood.py: a bus client that sends calls to ptagsd and never reads a byte, so every reply
# stays queued in the bus for it (charged to ptagsd, the sender, by dbus-daemon).
#
# Usage: unread_flood.py BUS_ADDRESS COUNT KIND [CALLS_PER_SECOND]
# KIND: introspect (org.freedesktop.DBus.Introspectable.Introspect), getall (Properties.GetAll of
# org.ptags.Manager) or bad (AddTag of an invalid tag: an InvalidTag error each); or subscribe:
# COUNT connections each subscribed to ptagsd's signals, reading none.
# Speaks the wire protocol on a bare socket (libdbus and GDBus read whatever arrives), prints
# "sent" once 1280 calls (64 when paced, or all) are written, goes on, then waits until its
# stdin closes.

import os
import socket
import sys
import time

from gi.repository import Gio, GLib

NAME, PATH = "org.ptags.Manager", "/org/ptags/Manager"


def connect(address):
    path = None
    for part in address.split(";")[0].split(":", 1)[1].split(","):
        key, _, value = part.partition("=")
        if key == "path":
            path = value
        elif key == "abstract":
            path = "\0" + value
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
    line = b""
    while not line.endswith(b"\r\n"):
        line += sock.recv(1)
    if not line.startswith(b"OK "):
        raise SystemExit("auth refused: %r" % line)
    sock.sendall(b"BEGIN\r\n")
    return sock


def call(serial, dest, path, iface, member, body=None):
    msg = Gio.DBusMessage.new_method_call(dest, path, iface, member)
    if body is not None:
        msg.set_body(body)
    msg.set_serial(serial)
    return msg.to_blob(Gio.DBusCapabilityFlags.NONE)


def main():
    address, count, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    pace = 1.0 / float(sys.argv[4]) if len(sys.argv) > 4 else 0
    first = 64 if pace else 1280  # "sent" after this many
    if kind == "subscribe":
        # COUNT connections, each subscribed to ptagsd's signals.
        socks = [connect(address) for _ in range(count)]
        for sock in socks:
            sock.sendall(call(1, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                              "org.freedesktop.DBus", "Hello"))
            sock.sendall(call(2, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                              "org.freedesktop.DBus", "AddMatch",
                              GLib.Variant("(s)", ("type='signal',sender='%s'" % NAME,))))
        print("sent", flush=True)
        sys.stdin.read()
        return
    sock = connect(address)
    sock.sendall(call(1, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                      "Hello"))
    for serial in range(2, count + 2):
        if kind == "introspect":
            blob = call(serial, NAME, PATH, "org.freedesktop.DBus.Introspectable", "Introspect")
        elif kind == "getall":
            blob = call(serial, NAME, PATH, "org.freedesktop.DBus.Properties", "GetAll",
                        GLib.Variant("(s)", (NAME,)))
        else:
            blob = call(serial, NAME, PATH, NAME, "AddTag",
                        GLib.Variant("(usb)", (0, "not\na tag", False)))
        sock.sendall(blob)
        # dbus-daemon refuses a call while the caller awaits 128 replies
        # (max_replies_per_connection, 32 on some test buses): a few at a
        # time, each burst answered before the next.
        if pace:
            time.sleep(pace)
        elif serial % 16 == 0:
            time.sleep(0.008)
        if serial == first:
            print("sent", flush=True)  # the rest goes on meanwhile
    if count + 1 < first:
        print("sent", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
