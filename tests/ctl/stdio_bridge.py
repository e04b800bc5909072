# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# stdio_bridge.py: a bus bridge for the ptagsctl tests, as systemd-stdio-bridge
# is: a client reaching the bus through "unixexec:" talks to this process,
# which carries the bytes (and no file descriptors) to the bus socket at
# argv[1]. To the bus and ptagsd, the client's connection is this process's.
import os
import select
import socket
import sys

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
ends = {0: sock.fileno(), sock.fileno(): 1}
while True:
    ready, _, _ = select.select([0, sock.fileno()], [], [])
    for fd in ready:
        data = os.read(fd, 65536)
        if not data:
            sys.exit(0)
        os.write(ends[fd], data)
