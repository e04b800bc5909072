#!/usr/bin/env bash
# The one test command: installs missing Debian packages, configures with
# -Werror, builds, and runs every test (plus the model under ASan/UBSan and
# 60 s of the model parser's libFuzzer target).
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
fuzzdir=${FUZZDIR:-$top/build-fuzz}
fuzz_seconds=${PTAGS_FUZZ_SECONDS:-60}

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

# 4. The parser fuzz target (libFuzzer, clang): built here, run below.
if [ ! -f "$fuzzdir/build.ninja" ]; then
  CC=clang meson setup "$fuzzdir" -Dwerror=true -Dcomponents=model -Dfuzzing=true
fi
ninja -C "$fuzzdir" tests/fuzz/fuzz-model

status=0
# The model parser is fuzzed for a fixed time in every run; a crash, leak or
# sanitizer finding fails the run (libFuzzer exits non-zero and writes the
# input as crash-*/leak-* in the work dir, kept for reproduction). New
# inputs go to a scratch copy, never into the seed corpus.
fuzz_failed=0
fuzzwork=$(mktemp -d "${TMPDIR:-/tmp}/ptags-fuzz.XXXXXX")
cp -r tests/fuzz/corpus "$fuzzwork/corpus"
if (cd "$fuzzwork" && "$fuzzdir/tests/fuzz/fuzz-model" -dict="$top/tests/fuzz/model.dict" \
      -max_total_time="$fuzz_seconds" -print_final_stats=1 corpus \
      >fuzz.log 2>&1); then
  tail -n 3 "$fuzzwork/fuzz.log"
  echo "fuzz-model: ${fuzz_seconds} s without a finding"
  rm -rf "$fuzzwork"
else
  tail -n 60 "$fuzzwork/fuzz.log"
  echo "fuzz-model: FAILED (input and log kept in $fuzzwork)"
  fuzz_failed=1
  status=1
fi

meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || status=1
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C "$asandir" --print-errorlogs --num-processes 2 \
    --suite model --suite fixture --suite daemon --suite integration "$@" || status=1

# The plain closing line CI reads, summed over both runs (and the fuzz run).
PTAGS_FUZZ_FAILED=$fuzz_failed python3 - "$builddir" "$asandir" <<'PY'
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
fuzz_failed = int(os.environ.get("PTAGS_FUZZ_FAILED", "0"))
print(f"{passed + 1 - fuzz_failed} passed, {failed + skipped + fuzz_failed} failed")
PY
exit $status
