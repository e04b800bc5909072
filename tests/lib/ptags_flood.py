# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags_flood.py: a hostile reader for the limits tests: fires many calls at
# ptagsd at once over one or more connections, without waiting for replies.
#
# Usage: ptags_flood.py ADDRESS METHOD SIG ARGS_JSON CALLS [CONNECTIONS] [FLAG...]
# ARGS_JSON: the arguments as JSON, or @FILE holding them.
# FLAG: no-reply (fire and forget), warm (each connection first makes one
# call and waits for its reply, so ptagsd knows the connection beforehand),
# each (print {"reply": NAME} for each reply as it arrives).
# Prints {"sent": N} once every call is on its way (the test may then SIGSTOP
# this process, so it stops reading), then {"replies": {"ok": n, ERROR: n}}
# once every reply arrived (never, with no-reply: it then exits at once).

import json
import os
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

# Run with python3 -I, which leaves the script's directory off the path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptags_client  # noqa: E402


def main():
    address, method, sig, args_json, calls = sys.argv[1:6]
    if args_json.startswith("@"):  # arguments too long for a command line
        with open(args_json[1:]) as f:
            args_json = f.read()
    connections = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    flags = sys.argv[7:]
    no_reply = "no-reply" in flags
    params = GLib.Variant("(" + sig + ")", tuple(json.loads(args_json)))
    conns = [ptags_client.connect(address) for _ in range(connections)]
    if "warm" in flags:
        for conn in conns:
            conn.call_sync(ptags_client.BUS_NAME, ptags_client.OBJECT_PATH,
                           ptags_client.INTERFACE, method, params, None,
                           Gio.DBusCallFlags.NONE, -1, None)
    loop = GLib.MainLoop()
    counts = {}
    total = int(calls) * connections
    left = [total]

    def done(conn, res, _data):
        try:
            conn.call_finish(res)
            name = "ok"
        except GLib.Error as e:
            name = Gio.DBusError.get_remote_error(e) or "local"
        counts[name] = counts.get(name, 0) + 1
        if "each" in flags:
            print(json.dumps({"reply": name}), flush=True)
        left[0] -= 1
        if left[0] == 0:
            loop.quit()

    for _ in range(int(calls)):
        for conn in conns:
            if no_reply:
                msg = Gio.DBusMessage.new_method_call(ptags_client.BUS_NAME,
                                                      ptags_client.OBJECT_PATH,
                                                      ptags_client.INTERFACE, method)
                msg.set_body(params)
                msg.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
                conn.send_message(msg, Gio.DBusSendMessageFlags.NONE)
            else:
                conn.call(ptags_client.BUS_NAME, ptags_client.OBJECT_PATH,
                          ptags_client.INTERFACE, method, params, None,
                          Gio.DBusCallFlags.NONE, GLib.MAXINT, None, done, None)
    for conn in conns:
        conn.flush_sync(None)
    print(json.dumps({"sent": total}), flush=True)
    if no_reply:
        return
    loop.run()
    print(json.dumps({"replies": counts}), flush=True)


if __name__ == "__main__":
    main()
