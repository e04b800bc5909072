#!/usr/bin/env bash
# Installs whichever Debian packages of tests/debian-packages.txt are missing
# (apt-get update once, only when something is missing). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t pkgs < <(grep -v '^\s*#' tests/debian-packages.txt | awk 'NF{print $1}')
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
