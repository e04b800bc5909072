# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# debian-package.sh: sourced by the scripts that fetch a Debian package for the tests (a kernel to
# boot under QEMU, dbus-broker): downloaded and unpacked, never installed. Needs the network.

# apt_query CMD...: what CMD prints; when that is nothing, the package lists are fetched once (a
# machine that had every build package may never have fetched them) and CMD is asked again.
apt_query() {
  local out
  out=$("$@")
  if [ -z "$out" ]; then
    apt-get update -q >/dev/null
    out=$("$@")
  fi
  printf '%s\n' "$out"
}

# unpack_package PACKAGE[=VERSION] DEST: Debian's package unpacked into DEST (in the current
# directory) unless DEST is there already, from a finished earlier run.
unpack_package() {
  local pkg=$1 dest=$2 name=${1%%=*}
  [ -d "$dest" ] && return 0
  rm -rf ./"$name"_*.deb "$dest.tmp"
  apt-get download "$pkg" >/dev/null
  dpkg-deb -x ./"$name"_*.deb "$dest.tmp"
  rm -f ./"$name"_*.deb
  mv "$dest.tmp" "$dest"
}
