# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# sync_reader.py: a synchronous libdbus client that never dispatches: it makes blocking calls in a
# loop and never runs a main loop, so it reads every reply but never answers a Peer.Ping.
#
# Usage: sync_reader.py BUS_ADDRESS PID COUNT
# Calls GetTags(PID) COUNT times on one connection and prints one JSON list:
# [{"ok": N_TAGS} | {"error": NAME, "message": TEXT}, ...]. Run under setpriv
# to call as an unprivileged user. dbus-python's blocking calls (like sd-bus's
# sd_bus_call) queue any incoming method call without handling it.

import json
import sys

import dbus


def main():
    address, pid, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    bus = dbus.bus.BusConnection(address)
    manager = bus.get_object("org.ptags.Manager", "/org/ptags/Manager", introspect=False)
    outcomes = []
    for _ in range(count):
        try:
            tags = manager.GetTags(dbus.UInt32(pid), dbus_interface="org.ptags.Manager",
                                   timeout=20)
            outcomes.append({"ok": len(tags)})
        except dbus.exceptions.DBusException as e:
            outcomes.append({"error": e.get_dbus_name(), "message": e.get_dbus_message()})
    print(json.dumps(outcomes))


if __name__ == "__main__":
    main()
