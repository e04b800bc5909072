#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# fetch-dbus-broker.sh: downloads and unpacks Debian's dbus-broker (the other bus ptagsd runs on)
# for the policy tests that run on it, and prints the directory it unpacked to. Cached in DIR.
# Unpacked, not installed: installing the package would make dbus-broker the machine's system bus
# at its next boot. The tests start it inside their own mount namespace.
# Needs the network (Debian's archive); tests/check.sh runs it before `meson test`, so the tests
# themselves never download anything.
# Usage: fetch-dbus-broker.sh DIR
set -euo pipefail
. "$(dirname "$0")/../lib/debian-package.sh"
dir=$1
mkdir -p "$dir"
cd "$dir"
candidate() {
  apt-cache policy dbus-broker 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" {print $2}'
}
version=$(apt_query candidate)
if [ -z "$version" ]; then
  echo "fetch-dbus-broker: no dbus-broker in apt-cache" >&2
  exit 1
fi
root="dbus-broker-${version//[^A-Za-z0-9.+~-]/_}"
unpack_package "dbus-broker=$version" "$root"
echo "$PWD/$root"
