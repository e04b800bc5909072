#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# daemon-bpf.sh: end-to-end check that `ptagsd --backend=bpf` serves real
# tags over D-Bus: apply, fork and exec inheritance, FindTagged, SIGKILL.
# Usage (root): daemon-bpf.sh PTAGSD BPF-CHILD
set -euo pipefail
ptagsd=$1
child=$2
tmp=$(mktemp -d /tmp/ptags-daemon-bpf.XXXXXX)
pins=/sys/fs/bpf/ptags-daemon-test-$$
pids=()
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -f "$pins"/* 2>/dev/null || true
  rmdir "$pins" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cat > "$tmp/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$tmp/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/>
    <allow send_type="method_call"/><allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/><allow receive_type="method_return"/>
    <allow receive_type="error"/><allow receive_type="signal"/>
  </policy>
</busconfig>
CONF
dbus-daemon --nofork --config-file="$tmp/bus.conf" >"$tmp/bus.log" 2>&1 &
pids+=($!)
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$tmp/bus.sock
export PTAGS_BPF_PIN_DIR=$pins RUNTIME_DIRECTORY=$tmp/run
mkdir -p "$tmp/run"
for _ in $(seq 100); do [ -S "$tmp/bus.sock" ] && break; sleep 0.05; done

daemon_pid=
start_daemon() {
  "$ptagsd" --backend=bpf >>"$tmp/ptagsd.log" 2>&1 &
  daemon_pid=$!
  pids+=("$daemon_pid")
  for _ in $(seq 200); do
    busctl --system status org.ptags.Manager >/dev/null 2>&1 && return 0
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$tmp/ptagsd.log" >&2
  fail "ptagsd --backend=bpf did not start"
}
call() { busctl --system call org.ptags.Manager /org/ptags/Manager org.ptags.Manager "$@"; }
expect_tags() { # PID EXPECTED-BUSCTL-OUTPUT WHAT
  local got
  got=$(call GetTags u "$1")
  [ "$got" = "$2" ] || fail "$3: pid $1 has '$got', expected '$2'"
}

start_daemon
backend=$(busctl --system get-property org.ptags.Manager /org/ptags/Manager org.ptags.Manager Backend)
case "$backend" in
  's "bpf-tracepoint"'|'s "bpf-lsm"') ;;
  *) fail "Backend property is $backend" ;;
esac

# A scriptable target (tests/bpf/bpf-child.c) on a coprocess.
coproc TARGET { exec "$child"; }
pids+=("$TARGET_PID")
read -r word target <&"${TARGET[0]}"
[ "$word" = ready ] || fail "bpf-child did not start"
ask() { echo "$1" >&"${TARGET[1]}"; read -r word value <&"${TARGET[0]}"; [ "$word" = "$2" ] || fail "bpf-child: $word $value"; echo "$value"; }

full='a(sbs) 3 "app:camera" false "" "session" true "42" "x" false ""'
kept='a(sbs) 1 "session" true "42"'
call Apply uas "$target" 4 "+app:camera" "+@session" "!session=42" "+x" >/dev/null
expect_tags "$target" "$full" "after Apply"
grandchild=$(ask fork pid); pids+=("$grandchild")
expect_tags "$grandchild" "$full" "fork inherits"
ask exec ready >/dev/null
expect_tags "$target" "$kept" "exec keeps the kept tag"
found=$(call FindTagged s "app:*")
# FindTagged lists only the matching tags of each process.
case "$found" in
  *" $grandchild 1 \"app:camera\" "*) ;;
  *) fail "FindTagged app:* misses $grandchild: $found" ;;
esac
case "$found" in
  *" $target "*) fail "FindTagged app:* lists $target after its exec: $found" ;;
esac

# SIGKILL: the hooks keep running and the next daemon knows every set.
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
second=$(ask fork pid); pids+=("$second")
start_daemon
expect_tags "$grandchild" "$full" "after a SIGKILL restart"
expect_tags "$second" "$kept" "fork while no daemon ran"
# Sets left behind by Applies go within seconds, not at the next minute's
# collection: 40 Applies of 8 KB values leave one live set, and the journal
# shrinks back to it and at most the 64 KiB of garbage allowed before a
# rewrite.
pad=$(printf 'v%.0s' $(seq 8000))
for i in $(seq 40); do
  call Apply uas "$target" 2 "+app:big" "!app:big=$pad$i" >/dev/null
done
# (320 KB of sets were written: keeping them all would fail below.)
grown=$(stat -c %s "$tmp/run/sets")
for _ in $(seq 100); do
  size=$(stat -c %s "$tmp/run/sets")
  [ "$size" -lt 100000 ] && break
  sleep 0.1
done
[ "$size" -lt 100000 ] || fail "the journal still holds $size bytes 10 s after the Applies"
expect_tags "$target" 'a(sbs) 2 "app:big" false "'"$pad"'40" "session" true "42"' "after the churn"
echo "daemon-bpf: journal $grown -> $size bytes after 40 Applies"

# A registered container, and the copy a save killed midway leaves: both
# are runtime state, which --remove-state removes with the container IDs.
call RegisterContainer 'uta{sv}' "$second" 4242 0 >/dev/null
[ -e "$tmp/run/containers" ] || fail "no registry file after RegisterContainer"
: >"$tmp/run/containers.Ab12Cd"

# A second ptagsd (auto picks bpf on a kernel without the ptags LSM) says
# that the state is in use, not that the kernel has no ptags provider.
if "$ptagsd" --backend=auto >"$tmp/second.log" 2>&1; then
  fail "a second ptagsd started while one runs"
fi
grep -q "in use by another ptagsd" "$tmp/second.log" || fail "second ptagsd: $(cat "$tmp/second.log")"
! grep -q "no ptags provider" "$tmp/second.log" || fail "second ptagsd: $(cat "$tmp/second.log")"

# Teardown: refused while a daemon runs, then everything goes.
if "$ptagsd" --remove-state >"$tmp/remove.log" 2>&1; then
  fail "--remove-state succeeded while ptagsd runs"
fi
grep -q "in use" "$tmp/remove.log" || fail "--remove-state while running: $(cat "$tmp/remove.log")"
[ -e "$pins/task_records" ] || fail "a refused --remove-state removed the pins"
kill -TERM "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
fork_link=$(bpftool link show pinned "$pins/fork" | sed -n 's/^\([0-9]*\):.*/\1/p')
[ -n "$fork_link" ] || fail "no pinned fork link to watch"
"$ptagsd" --remove-state >"$tmp/remove.log" 2>&1 || fail "--remove-state: $(cat "$tmp/remove.log")"
[ ! -e "$pins" ] || fail "--remove-state left $pins: $(ls "$pins")"
[ -z "$(ls -A "$tmp/run")" ] || fail "--remove-state left runtime state: $(ls "$tmp/run")"
if bpftool link show id "$fork_link" >/dev/null 2>&1; then
  fail "--remove-state left the fork hook attached (link $fork_link)"
fi
echo "daemon-bpf: PASS ($backend)"
