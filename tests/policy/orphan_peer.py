# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# orphan_peer.py: a bus connection whose connecting process is gone. The process that connects
# forks, prints its pid and unique name, and exits; the child keeps the socket and serves calls.
#
# Usage (run as the attacker's uid):
#       orphan_peer.py BUS_ADDRESS [own NAME] [call-first] [exec PROGRAM [on-signal]]
#    or: orphan_peer.py BUS_ADDRESS many N: N connections that say Hello, their names printed
#   as one JSON list; they stay until stdin closes.
#   own NAME: the connection owns the well-known NAME too (a service's name), asked for by the
#   connector before anything else.
#   call-first: the connector calls ptagsd (HasTag on itself) before it leaves, so ptagsd has
#   already identified the connection's process once.
#   exec PROGRAM: the connector does not leave but executes PROGRAM 600 (a setuid-root sleep in
#   the tests), so the process ptagsd identified keeps running, as root.
#   on-signal: it executes PROGRAM only once sent SIGUSR1, so that ptagsd may first forget it.
# Protocol on stdin/stdout, one JSON object per line (as ptags_client.py):
#   first line out (from the connector): {"pid": N, "unique_name": ":1.x"}
#   request:  {"destination": [NAME, PATH, IFACE] | null, "method": M, "sig": S, "args": [...]}
#   reply:    {"ok": [...]} or {"error": NAME, "message": TEXT}
# No GDBus connection object here: its worker thread would not survive the fork, so the
# handshake and messages are written by hand on a plain socket (Gio only encodes messages).

import json
import os
import signal
import socket
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

PTAGS = ("org.ptags.Manager", "/org/ptags/Manager", "org.ptags.Manager")
BUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


def connect(address):
    path = address.split("unix:path=", 1)[1].split(",", 1)[0]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    uid_hex = str(os.getuid()).encode().hex()
    sock.sendall(b"\0AUTH EXTERNAL " + uid_hex.encode() + b"\r\n")
    line = recv_line(sock)
    if not line.startswith(b"OK "):
        raise SystemExit("authentication refused: %r" % line)
    sock.sendall(b"BEGIN\r\n")
    return sock


def recv_line(sock):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise SystemExit("bus closed the connection")
        data += chunk
    return data


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise SystemExit("bus closed the connection")
        data += chunk
    return data


class Peer:
    def __init__(self, sock):
        self.sock = sock
        self.serial = 0

    def call(self, destination, method, sig, args):
        self.serial += 1
        msg = Gio.DBusMessage.new_method_call(*destination, method)
        if sig:
            msg.set_body(GLib.Variant("(" + sig + ")", tuple(args)))
        msg.set_serial(self.serial)
        self.sock.sendall(msg.to_blob(Gio.DBusCapabilityFlags.NONE))
        while True:
            head = recv_exact(self.sock, 16)
            blob = head + recv_exact(self.sock, Gio.DBusMessage.bytes_needed(head) - 16)
            reply = Gio.DBusMessage.new_from_blob(blob, Gio.DBusCapabilityFlags.NONE)
            if reply.get_reply_serial() != self.serial:
                continue  # NameAcquired and other signals
            body = reply.get_body()
            if reply.get_message_type() == Gio.DBusMessageType.ERROR:
                text = body.unpack()[0] if body is not None and body.n_children() else ""
                return {"error": reply.get_error_name(), "message": text}
            return {"ok": list(body.unpack()) if body is not None else []}


def many(address, n):
    peers, names = [], []
    for _ in range(n):  # each says Hello at once: the bus bounds those that have not
        peers.append(Peer(connect(address)))
        names.append(peers[-1].call(BUS, "Hello", "", [])["ok"][0])
    print(json.dumps(names), flush=True)
    sys.stdin.read()


def main():
    if sys.argv[2:3] == ["many"]:
        many(sys.argv[1], int(sys.argv[3]))
        return
    args, options = sys.argv[2:], {}
    while args:
        word = args.pop(0)
        options[word] = args.pop(0) if word in ("own", "exec") else True
    peer = Peer(connect(sys.argv[1]))
    hello = peer.call(BUS, "Hello", "", [])
    if "ok" not in hello:
        raise SystemExit("Hello failed: %r" % hello)
    if "own" in options:
        # DBUS_NAME_FLAG_DO_NOT_QUEUE; 1 is the primary owner.
        owned = peer.call(BUS, "RequestName", "su", [options["own"], 4])
        if owned.get("ok") != [1]:
            raise SystemExit("RequestName failed: %r" % owned)
    if "call-first" in options:
        first = peer.call(PTAGS, "HasTag", "us", [0, "app:x"])
        if "ok" not in first:
            raise SystemExit("the connector's own call failed: %r" % first)
    child = os.fork()
    if child != 0:
        # The connector: announce and leave; the child keeps the connection.
        if "on-signal" in options:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        print(json.dumps({"pid": os.getpid(), "unique_name": hello["ok"][0]}), flush=True)
        if "exec" in options:
            peer.sock.close()
            if "on-signal" in options:
                signal.sigwait({signal.SIGUSR1})
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
            os.execv(options["exec"], [options["exec"], "600"])
        os._exit(0)
    for line in sys.stdin:
        req = json.loads(line)
        destination = tuple(req.get("destination") or PTAGS)
        print(json.dumps(peer.call(destination, req["method"], req.get("sig", ""),
                                   req.get("args", []))), flush=True)


if __name__ == "__main__":
    main()
