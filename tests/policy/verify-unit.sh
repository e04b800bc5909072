#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags: checks the built ptagsd.service with systemd-analyze, pointed at the built ptagsd
# (verify needs ExecStart to exist); any warning fails, and so does weaker hardening.
# Usage: verify-unit.sh BUILT_UNIT PTAGSD_EXECUTABLE
set -eu
unit=$1
ptagsd=$2
if [ ! -x "$ptagsd" ]; then
  echo "verify-unit: ptagsd '$ptagsd' is not an executable (configure with the daemon component)" >&2
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Same unit name, so verify sees what systemd would load; only ExecStart moves.
grep -q '^ExecStart=' "$unit" || { echo "verify-unit: no ExecStart= in $unit" >&2; exit 1; }
sed "s|^ExecStart=.*|ExecStart=$ptagsd|" "$unit" > "$dir/ptagsd.service"

messages=$(systemd-analyze verify "$dir/ptagsd.service" 2>&1) || {
  printf '%s\n' "$messages" >&2
  echo "verify-unit: systemd-analyze verify failed" >&2
  exit 1
}
if [ -n "$messages" ]; then
  printf '%s\n' "$messages" >&2
  echo "verify-unit: systemd-analyze verify warned" >&2
  exit 1
fi

# Exposure 2.0 when written; the threshold (x10) catches a hardening line
# lost in an edit without failing on systemd's own rescoring.
systemd-analyze security --offline=true --threshold=25 "$dir/ptagsd.service" >"$dir/security.txt" 2>&1 || {
  cat "$dir/security.txt" >&2
  echo "verify-unit: exposure above 2.5" >&2
  exit 1
}
tail -n 1 "$dir/security.txt"
echo "verify-unit: OK"
