#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags: xmllint as a test: fails on a non-zero exit AND on any message (a DTD that
# cannot be loaded offline is only a warning to xmllint, and must fail here).
# Usage: xml-check.sh XMLLINT_OPTION... FILE
set -eu
messages=$(xmllint --noout --nonet "$@" 2>&1) || {
  printf '%s\n' "$messages" >&2
  echo "xml-check: xmllint rejected $*" >&2
  exit 1
}
if [ -n "$messages" ]; then
  printf '%s\n' "$messages" >&2
  echo "xml-check: xmllint complained about $*" >&2
  exit 1
fi
echo "xml-check: $* OK"
