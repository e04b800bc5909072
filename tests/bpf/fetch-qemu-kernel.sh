#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# fetch-qemu-kernel.sh: downloads and unpacks Debian's newest stock 6.1 kernel (the bpf LSM is in
# its default LSM list) for the bpf-qemu tests, and prints the vmlinuz path. Cached in DIR.
# Needs the network (Debian's archive); tests/check.sh runs it before `meson test`, so the tests
# themselves never download anything.
# Usage: fetch-qemu-kernel.sh DIR
set -euo pipefail
. "$(dirname "$0")/../lib/debian-package.sh"
dir=$1
mkdir -p "$dir"
cd "$dir"
newest_61() {
  apt-cache search '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1
}
pkg=$(apt_query newest_61)
if [ -z "$pkg" ]; then
  echo "fetch-qemu-kernel: no linux-image-6.1.0-*-amd64 in apt-cache" >&2
  exit 1
fi
unpack_package "$pkg" "kernel-$pkg"
ls "$PWD/kernel-$pkg"/boot/vmlinuz-* | head -1
