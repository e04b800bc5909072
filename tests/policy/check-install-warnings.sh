#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check-install-warnings.sh: configuring with a prefix whose paths the bus and polkitd do not
# read warns and says so in the summary; the system prefix stays quiet.
# Usage: check-install-warnings.sh SOURCE_ROOT
set -eu
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

meson setup "$tmp/local" "$src" --prefix=/usr/local -Dcomponents=data >"$tmp/local.log" 2>&1 ||
  { cat "$tmp/local.log"; exit 1; }
for what in "D-Bus policy" "polkit actions" "polkit rules"; do
  grep -q "WARNING: $what: installed to /usr/local/.*which .* does not read" "$tmp/local.log" ||
    { echo "no warning for $what with --prefix=/usr/local:"; cat "$tmp/local.log"; exit 1; }
  grep -q "$what *: /usr/local/.*(NOT read by" "$tmp/local.log" ||
    { echo "the summary does not flag $what:"; cat "$tmp/local.log"; exit 1; }
done

meson setup "$tmp/usr" "$src" --prefix=/usr -Dcomponents=data >"$tmp/usr.log" 2>&1 ||
  { cat "$tmp/usr.log"; exit 1; }
if grep -q "NOT read by\|which .* does not read" "$tmp/usr.log"; then
  echo "--prefix=/usr warns about its own install paths:"; cat "$tmp/usr.log"; exit 1
fi
echo "install path warnings: ok"
