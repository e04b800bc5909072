#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# needs-root.sh: run a test that needs root (private buses as other users, FUSE and bind mounts,
# BPF, mount namespaces), or skip it (exit 77, which meson counts as SKIP) naming why.
# tests/check.sh runs as root and counts a skip as a failure, so CI never skips.
# Usage: needs-root.sh WHY COMMAND [ARG...]
why=$1
shift
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root: $why"
  exit 77
fi
exec "$@"
