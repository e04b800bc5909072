#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# without-sinks.sh: runs a test where neither the journal nor audit can be
# reached, whoever runs it: a new user namespace (the kernel refuses audit
# messages from it) with a private, empty /run/systemd (no journal socket).
# Usage: without-sinks.sh PROGRAM ARGS...
set -eu

if [ "${1:-}" != "--inside" ]; then
        exec unshare --user --map-root-user --mount --propagation private -- \
                /bin/sh "$0" --inside "$@"
fi
shift
# An empty tmpfs over /run/systemd (or over /run where it is missing: the
# mount point must exist, and the host's /run must not gain a directory).
if [ -d /run/systemd ]; then
        mount -t tmpfs -o mode=0755,size=64k ptags-no-sinks /run/systemd
else
        mount -t tmpfs -o mode=0755,size=64k ptags-no-sinks /run
fi
exec "$@"
