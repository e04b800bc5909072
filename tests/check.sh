#!/usr/bin/env bash
# The one test command: installs missing Debian packages, configures with
# -Werror, builds, and runs every test (plus the model under ASan/UBSan).
# Usage (as root on Debian 12): tests/check.sh [extra meson test args]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

# 1. Packages: install only what is missing.
tests/install-deps.sh

# Debian's python3 (with dbusmock) first, whatever shims PATH has.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

builddir=${BUILDDIR:-$top/build}
asandir=${ASANDIR:-$top/build-asan}

# 2. Main build: every component, warnings are errors.
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" -Dwerror=true -Dbuildtype=debugoptimized
else
  meson configure "$builddir" -Dwerror=true >/dev/null
fi
ninja -C "$builddir"

# 3. Sanitizer build of the model, the kernel fixture and the daemon: the
#    integration suite then runs a daemon built with ASan/UBSan.
if [ ! -f "$asandir/build.ninja" ]; then
  meson setup "$asandir" -Dwerror=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dcomponents=model,fixture,daemon
else
  meson configure "$asandir" -Dcomponents=model,fixture,daemon >/dev/null
fi
ninja -C "$asandir"

status=0
meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || status=1
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C "$asandir" --print-errorlogs --num-processes 2 \
    --suite model --suite fixture --suite daemon --suite integration "$@" || status=1

# The plain closing line CI reads, summed over both runs.
python3 - "$builddir" "$asandir" <<'PY'
import json, sys, os
passed = failed = skipped = 0
for d in sys.argv[1:]:
    path = os.path.join(d, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        continue
    for line in open(path):
        r = json.loads(line).get("result")
        if r == "OK" or r == "EXPECTEDFAIL": passed += 1
        elif r == "SKIP": skipped += 1
        else: failed += 1
# A skipped test is a failure here: CI must not pass on skipped work.
print(f"{passed} passed, {failed + skipped} failed")
PY
exit $status
