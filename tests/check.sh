#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# The one test command: installs missing Debian packages, configures with
# -Werror, builds, and runs every test: every integration test on both
# backends, each backend in one of two builds (optimized, and ASan/UBSan;
# tests/check_split.py), the model, fixture and daemon tests in both, 30 s
# of the model parser's libFuzzer target, the bus-thread reads under
# ThreadSanitizer, the LSM path in QEMU, and `meson test` as an
# unprivileged user on a fresh build.
# Usage (as root on Debian 12): tests/check.sh [extra meson test args]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
# Each step's wall time goes to the log, so a slow CI run says where it went.
step_start=$SECONDS
step() {
  echo "check.sh: ${1} took $((SECONDS - step_start)) s (total ${SECONDS} s)"
  step_start=$SECONDS
}

# 1. Packages: install only what is missing.
tests/install-deps.sh
step "installing packages"

# Debian's python3 (with dbusmock) first, whatever shims PATH has.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

builddir=${BUILDDIR:-$top/build}
asandir=${ASANDIR:-$top/build-asan}
fuzzdir=${FUZZDIR:-$top/build-fuzz}
tsandir=${TSANDIR:-$top/build-tsan}
uchardir=${UCHARDIR:-$top/build-uchar}
fuzz_seconds=${PTAGS_FUZZ_SECONDS:-30}

# 2. Main build: every component, warnings are errors.
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" -Dwerror=true -Dbuildtype=debugoptimized
else
  meson configure "$builddir" -Dwerror=true >/dev/null
fi
ninja -C "$builddir"
step "main build"

# 3. Sanitizer build of the model, the kernel fixture and the daemon with
#    both backends: the integration suites then run a daemon built with
#    ASan/UBSan (the bpf one includes the reads answered in the bus thread).
if [ ! -f "$asandir/build.ninja" ]; then
  meson setup "$asandir" -Dwerror=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dcomponents=model,fixture,daemon,bpf
else
  meson configure "$asandir" -Dcomponents=model,fixture,daemon,bpf >/dev/null
fi
ninja -C "$asandir"
step "ASan build"

# 3b. ThreadSanitizer build of the daemon with the bpf backend (step 7).
if [ ! -f "$tsandir/build.ninja" ]; then
  meson setup "$tsandir" -Dwerror=true -Db_sanitize=thread -Db_lundef=false \
    -Dbuildtype=debugoptimized -Dcomponents=model,fixture,daemon,bpf
fi
ninja -C "$tsandir"
step "TSan build"

# 3c. Everything built with char unsigned, as on arm64 and other
#     architectures Debian builds for: code reading a byte of text as a
#     signed char passes on x86 and fails there (run in step 6b).
if [ ! -f "$uchardir/build.ninja" ]; then
  meson setup "$uchardir" -Dwerror=true -Dbuildtype=debugoptimized -Dc_args=-funsigned-char
fi
ninja -C "$uchardir"
step "unsigned char build"

# 4. The parser fuzz target (libFuzzer, clang): built here, run below.
if [ ! -f "$fuzzdir/build.ninja" ]; then
  CC=clang meson setup "$fuzzdir" -Dwerror=true -Dcomponents=model -Dfuzzing=true
fi
meson compile -C "$fuzzdir" fuzz-model
step "fuzz build"

# 5. The LSM-path tests boot Debian's 6.1 kernel under QEMU; the tests never
#    download anything themselves, so the kernel is fetched here.
PTAGS_QEMU_KERNEL=$(tests/bpf/fetch-qemu-kernel.sh "$top/build-qemu-kernel")
export PTAGS_QEMU_KERNEL
step "QEMU kernel fetch"
# Some policy tests run on dbus-broker too: unpacked, not installed (that
# would make it the machine's system bus at the next boot).
PTAGS_DBUS_BROKER=$(tests/policy/fetch-dbus-broker.sh "$top/build-dbus-broker")
export PTAGS_DBUS_BROKER
step "dbus-broker fetch"

status=0
# The QEMU boot is one core's work for most of a minute: it runs while the
# fuzz run and the unprivileged build below use the other core, and the main
# test run waits for it.
qemulog=$(mktemp "${TMPDIR:-/tmp}/ptags-qemu.XXXXXX")
rm -f "$builddir/meson-logs/qemu.json"  # counted below: never an old run's
meson test -C "$builddir" --print-errorlogs --suite bpf-qemu --logbase qemu >"$qemulog" 2>&1 &
qemu_pid=$!
# If a step below aborts the script, the QEMU run must not outlive it.
trap 'kill "$qemu_pid" 2>/dev/null || true' EXIT

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
step "fuzz run"

# 6. What a distribution's build user sees: a fresh build and `meson test` as
#    nobody, from a copy of the tree nobody can read. Tests that need root
#    skip there (exit 77, naming why); nothing may fail.
rm -f "$top/unprivileged-testlog.json"
unpriv=$(mktemp -d /tmp/ptags-nobody.XXXXXX)
chown nobody: "$unpriv"
chmod 755 "$unpriv"
runuser -u nobody -- mkdir "$unpriv/src"
tar --exclude='./build*' --exclude=./.git -cf - . | runuser -u nobody -- tar -C "$unpriv/src" -xf -
as_nobody() { runuser -u nobody -- env HOME="$unpriv" PATH="$PATH" "$@"; }
if as_nobody meson setup "$unpriv/build" "$unpriv/src" -Dwerror=true >"$unpriv.log" 2>&1 &&
   as_nobody ninja -C "$unpriv/build" >>"$unpriv.log" 2>&1; then
  as_nobody meson test -C "$unpriv/build" --num-processes 2 --no-suite bpf-qemu >>"$unpriv.log" 2>&1 ||
    { status=1; tail -40 "$unpriv.log"; }
  cp "$unpriv/build/meson-logs/testlog.json" "$top/unprivileged-testlog.json" 2>/dev/null || true
else
  status=1
  tail -40 "$unpriv.log"
  echo '{"name": "unprivileged build", "result": "FAIL"}' >"$top/unprivileged-testlog.json"
fi
rm -rf "$unpriv" "$unpriv.log"
step "unprivileged build and tests"

# 6b. With char unsigned (step 3c): the model, the kernel fixture, ptagsd's
#     unit tests and ptagsctl against ptagsd, two at a time (the QEMU run
#     is mostly over by now, and none of them times anything tightly).
meson test -C "$uchardir" --print-errorlogs --num-processes 2 --suite model --suite fixture \
  --suite daemon --suite ctl || status=1
step "unsigned char tests"

if ! wait "$qemu_pid"; then
  status=1
fi
trap - EXIT
cat "$qemulog"
rm -f "$qemulog"
step "QEMU LSM tests (waited for)"

# The plain and the ASan/UBSan runs share the integration tests: each test
# runs once on each backend, on one backend in each build
# (tests/check_split.py says which and why). With arguments, both runs
# take them as they are.
main_tests=(--no-suite bpf-qemu)
asan_tests=(--suite model --suite fixture --suite daemon --suite integration
            --suite integration-bpf)
if [ $# -eq 0 ]; then
  mapfile -t main_tests < <(meson test -C "$builddir" --list 2>/dev/null | python3 tests/check_split.py main)
  mapfile -t asan_tests < <(meson test -C "$asandir" --list 2>/dev/null | python3 tests/check_split.py asan)
  if [ ${#main_tests[@]} -eq 0 ] || [ ${#asan_tests[@]} -eq 0 ]; then
    echo "check.sh: meson listed no tests for the plain or the ASan run" >&2
    exit 1
  fi
fi

# The random load test runs 600 operations per caller here (2000 by
# default) and 300 under ASan, and the D-Bus fuzz test 30000 calls here and
# 12000 under ASan (50000 by default; LeakSanitizer finds leaks without the
# heap measure the longer run feeds, and a leak of 300 bytes a call still
# shows in 30000): 16 callers still mix every kind of operation thousands
# of times on each backend, and the whole run stays under 20 minutes on 2
# cores. Under ASan GLib takes its small objects from malloc (G_SLICE), so
# LeakSanitizer sees them too.
PTAGS_LOAD_OPS=600 PTAGS_DBUS_FUZZ_CALLS=30000 \
  meson test -C "$builddir" --print-errorlogs --num-processes 2 "${main_tests[@]}" "$@" || status=1
step "main tests"
PTAGS_LOAD_OPS=300 PTAGS_DBUS_FUZZ_CALLS=12000 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  G_SLICE=always-malloc meson test -C "$asandir" --print-errorlogs --num-processes 2 \
    "${asan_tests[@]}" "$@" || status=1
step "ASan tests"

# 7. The reads and root's changes ptagsd answers in GDBus's worker thread,
#    and what they share with the main loop, under ThreadSanitizer on the
#    bpf backend (with 20000 fuzzed calls by root among them): any report
#    with ptagsd's code off the main thread fails the run (tests/tsan_check.py
#    explains the GLib reports it leaves aside). Each thread keeps the last
#    4M memory accesses (history_size=7, the most TSan offers), so the stack
#    of the earlier access of a race can still be shown after 20000 calls:
#    with the default, a main-thread stack was sometimes lost, and a report
#    that shows no stack on one side cannot be judged and fails the run.
tsan_failed=0
tsanreports=$(mktemp -d "${TMPDIR:-/tmp}/ptags-tsan.XXXXXX")
chmod 755 "$tsanreports"
tsan_tests=$(meson test -C "$tsandir" --list 2>/dev/null |
  sed -n 's#^.* / \(bpf/test_\(fast_reads\|bus_thread_changes\|peers\|concurrency\)\..*\)$#\1#p')
if [ -z "$tsan_tests" ]; then
  echo "tsan: no tests found in $tsandir"
  tsan_failed=1
elif ! TSAN_OPTIONS="exitcode=0 halt_on_error=0 history_size=7 log_path=$tsanreports/report" \
    PTAGS_DBUS_FUZZ_CALLS=20000 \
    meson test -C "$tsandir" --print-errorlogs --suite integration-bpf $tsan_tests dbus-fuzz-root; then
  tsan_failed=1
elif ! (shopt -s nullglob; python3 tests/tsan_check.py "$tsanreports"/report.*); then
  tsan_failed=1
fi
[ "$tsan_failed" = 0 ] || status=1
rm -rf "$tsanreports"
step "TSan tests"

# The plain closing line CI reads, summed over every run (and the fuzz run).
# It fails the run on any test not passed: meson's own status passes
# skipped tests (exit 77), which CI must not.
PTAGS_FUZZ_FAILED=$fuzz_failed PTAGS_TSAN_FAILED=$tsan_failed python3 - "$builddir" "$asandir" \
    "$tsandir" "$uchardir" "$top/unprivileged-testlog.json" <<'PY' || status=1
import json, sys, os
passed = failed = 0
def results(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line).get("result") for line in open(path) if line.strip()]
logs = [os.path.join(d, "meson-logs", "testlog.json") for d in sys.argv[1:5]]
logs.append(os.path.join(sys.argv[1], "meson-logs", "qemu.json"))  # the QEMU run
for log in logs:
    for r in results(log):
        if r in ("OK", "EXPECTEDFAIL"): passed += 1
        else: failed += 1  # a skipped test is a failure here: CI never passes on skipped work
# Each failure in a few lines, next to the closing line: where a CI view
# keeps only the start and the end of the output, the end says what failed.
for log in logs:
    if not os.path.exists(log):
        continue
    for line in open(log):
        t = json.loads(line) if line.strip() else {}
        if t.get("result") in (None, "OK", "EXPECTEDFAIL"):
            continue
        out = ((t.get("stdout") or "") + (t.get("stderr") or "")).splitlines()
        said = [l for l in out if "Error" in l or "error:" in l or "FAIL" in l][-4:]
        print(f"failed: {t['name']} ({os.path.basename(os.path.dirname(os.path.dirname(log)))}, "
              f"{t.get('result')}, {t.get('duration', 0):.1f} s)")
        for l in said or out[-4:]:
            print("  " + l[:300])
# As nobody, tests that need root skip by design; the others must pass.
unpriv = results(sys.argv[5])
u_ok = sum(r in ("OK", "EXPECTEDFAIL") for r in unpriv)
u_skip = sum(r == "SKIP" for r in unpriv)
u_bad = len(unpriv) - u_ok - u_skip
print(f"unprivileged meson test: {u_ok} passed, {u_skip} skipped (need root), {u_bad} failed")
if not unpriv:
    u_bad = 1
fuzz_failed = int(os.environ.get("PTAGS_FUZZ_FAILED", "0"))
# The fuzz run and the TSan report check count as one test each.
tsan_failed = int(os.environ.get("PTAGS_TSAN_FAILED", "0"))
total_failed = failed + u_bad + fuzz_failed + tsan_failed
print(f"{passed + u_ok + 2 - fuzz_failed - tsan_failed} passed, {total_failed} failed")
sys.exit(1 if total_failed else 0)
PY
exit $status
