#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check-reproducible.sh: the BPF object ptagsd embeds is the same whatever directory the tree is
# built in, and carries no DWARF. Builds it twice from copies of the tree at different paths.
# Usage: check-reproducible.sh SOURCE_ROOT
set -eu
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

build_copy() { # DIR: copy the tree there (no build dirs, no .git) and build the object
  mkdir -p "$1"
  (cd "$src" && tar --exclude='./build*' --exclude=./.git -cf - .) | (cd "$1" && tar -xf -)
  meson setup "$1/_build" "$1" -Dcomponents=model,bpf >"$1.log" 2>&1 || { cat "$1.log"; exit 1; }
  ninja -C "$1/_build" src/bpf/ptags.bpf.o >>"$1.log" 2>&1 || { cat "$1.log"; exit 1; }
}
build_copy "$tmp/a"
build_copy "$tmp/a-much-longer-directory/b"
one=$tmp/a/_build/src/bpf/ptags.bpf.o
two=$tmp/a-much-longer-directory/b/_build/src/bpf/ptags.bpf.o
if ! cmp "$one" "$two"; then
  echo "the BPF object depends on the build directory"; exit 1
fi
if readelf -S "$one" | grep -q '\.debug_'; then
  echo "the embedded BPF object still carries DWARF:"; readelf -S "$one"; exit 1
fi
if grep -q "$tmp" "$one"; then
  echo "the embedded BPF object names the build directory"; exit 1
fi
echo "reproducible: $(sha256sum "$one" | cut -c1-16)..., $(stat -c %s "$one") bytes"
