#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# Installs whichever Debian packages of the given lists in tests/deps/ are missing (apt-get update
# once, only when something is missing). Needs root.
# Usage: tests/install-deps.sh [LIST...]   LIST: build, run, test, dev (default: build run test)
#   build  what building needs           run  what the Quick start sandbox runs
#   test   what `meson test` needs too   dev  developer tools (valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
lists=("$@")
((${#lists[@]})) || lists=(build run test)
files=()
for l in "${lists[@]}"; do
  [ -f "tests/deps/$l.txt" ] || { echo "install-deps: no list tests/deps/$l.txt" >&2; exit 2; }
  files+=("tests/deps/$l.txt")
done
mapfile -t pkgs < <(cat "${files[@]}" | grep -v '^\s*#' | awk 'NF{print $1}' | sort -u)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root to install packages" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
