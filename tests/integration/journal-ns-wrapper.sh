#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# journal-ns-wrapper.sh: runs ptagsd alone in a private mount namespace whose
# /run/systemd/journal/socket is a test's own datagram socket (test_logging.py).
#
# Usage (as PTAGS_DAEMON_WRAPPER): journal-ns-wrapper.sh SOCKET PTAGSD ARGS...
# The host's /run is never touched: everything is mounted inside the new
# namespace, which dies with ptagsd. unshare and the final exec keep one pid,
# so the harness signals ptagsd itself and audit records carry its pid.
set -eu

if [ "${1:-}" != "--inside" ]; then
        exec unshare --mount --propagation private -- /bin/sh "$0" --inside "$@"
fi
shift
socket=$1
shift
if [ ! -S "$socket" ]; then
        echo "journal-ns-wrapper: $socket is not a socket" >&2
        exit 1
fi
# A machine without /run/systemd gets a private /run instead (mounting needs
# an existing directory, and the host's /run must not gain one).
if [ -d /run/systemd ]; then
        mount -t tmpfs -o mode=0755,size=64k ptags-journal /run/systemd
else
        mount -t tmpfs -o mode=0755,size=64k ptags-journal /run
        mkdir /run/systemd
fi
mkdir /run/systemd/journal
: >/run/systemd/journal/socket
mount --bind "$socket" /run/systemd/journal/socket
exec "$@"
