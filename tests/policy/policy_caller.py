# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# policy_caller.py: makes one D-Bus call to any destination and interface on its own connection
# and prints the outcome as JSON; run under setpriv to call as an unprivileged user.
#
# Usage: policy_caller.py BUS_ADDRESS '{"destination": ..., "path": ..., "interface": ...|null,
#                                       "method": ..., "sig": ..., "args": [...]}'
# Prints {"ok": [...]} or {"error": NAME, "message": TEXT}. The bus-policy
# tests need calls the harness client cannot make: to org.freedesktop.DBus
# (RequestName) and to interfaces ptagsd does not implement.

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptags_client  # noqa: E402  (copied beside this script by policy_world.py)
from gi.repository import Gio, GLib  # noqa: E402  (ptags_client required the versions)


def call_without_interface(conn, request):
    """A method call whose header has no interface field, which GDBus's
    call() cannot send: the bus policy must still refuse it."""
    sig = request.get("sig", "")
    message = Gio.DBusMessage.new_method_call(request["destination"], request["path"], None,
                                              request["method"])
    if sig:
        message.set_body(GLib.Variant("(" + sig + ")", tuple(request.get("args", []))))
    reply, _serial = conn.send_message_with_reply_sync(
        message, Gio.DBusSendMessageFlags.NONE, 20000, None)
    if reply.get_message_type() == Gio.DBusMessageType.ERROR:
        body = reply.get_body()
        return ptags_client.Reply(error=reply.get_error_name(),
                                  message=body.unpack()[0] if body is not None else "")
    body = reply.get_body()
    return ptags_client.Reply(value=ptags_client._plain(body.unpack()) if body else [])


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: policy_caller.py BUS_ADDRESS REQUEST_JSON")
    request = json.loads(sys.argv[2])
    conn = ptags_client.connect(sys.argv[1])
    if request.get("interface") is None:
        print(json.dumps(call_without_interface(conn, request).to_json()))
        return
    reply = ptags_client.call(
        conn,
        request["method"],
        request.get("sig", ""),
        request.get("args", []),
        bus_name=request["destination"],
        path=request["path"],
        interface=request.get("interface"),
        timeout_ms=20000,
    )
    print(json.dumps(reply.to_json()))


if __name__ == "__main__":
    main()
