# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# stuck_readers.py: connections that read one big reply each and then never dispatch again, so
# they never answer the Peer.Ping ptagsd confirms reads with.
#
# Usage: stuck_readers.py BUS_ADDRESS PID COUNT [PAUSE]
# Opens COUNT libdbus connections, calls GetTags(PID) once on each (blocking, like sync_reader.py),
# prints "ready" and then waits, dispatching nothing, until its stdin closes.
# With PAUSE (seconds), COUNT is instead the number of calls on one connection: it prints their
# outcomes as one JSON list, waits PAUSE seconds, calls once more and prints that outcome.

import json
import sys
import time

import dbus


def outcome(manager, pid):
    try:
        tags = manager.GetTags(dbus.UInt32(pid), dbus_interface="org.ptags.Manager", timeout=20)
        return {"ok": len(tags)}
    except dbus.exceptions.DBusException as e:
        return {"error": e.get_dbus_name(), "message": e.get_dbus_message()}


def main():
    address, pid, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if len(sys.argv) > 4:
        bus = dbus.bus.BusConnection(address)
        manager = bus.get_object("org.ptags.Manager", "/org/ptags/Manager", introspect=False)
        print(json.dumps([outcome(manager, pid) for _ in range(count)]), flush=True)
        time.sleep(float(sys.argv[4]))
        print(json.dumps(outcome(manager, pid)), flush=True)
        return
    connections = []
    for _ in range(count):
        bus = dbus.bus.BusConnection(address)
        manager = bus.get_object("org.ptags.Manager", "/org/ptags/Manager", introspect=False)
        manager.GetTags(dbus.UInt32(pid), dbus_interface="org.ptags.Manager", timeout=20)
        connections.append(bus)
    print("ready", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
