#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags: the README Quick start: installs what is missing, builds, and shows ptagsd working in a
# throwaway sandbox (private system bus with our real policy, the real polkitd, ptagsd), then a shell.
#
# Usage (root, Debian 12): tests/sandbox.sh [--no-shell] [--no-build] [--build-dir=DIR]
#   --no-shell   walk through the demo and exit (also what happens without a terminal)
#   --no-build   use the binaries already built (CI's meson test quick-start-sandbox)
# Environment overrides (set by that meson test): PTAGSD, PTAGS_FIXTURE, PTAGS_POLKIT_POLICY.
#
# Nothing on the system changes: everything runs in a private mount namespace
# (unshare -m), polkit's action and rule dirs are bind-mounted over only
# there, the bus and the fixture live in a temp dir removed on exit.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
shell=yes
build=yes
builddir=$top/build
inner=no
for arg in "$@"; do
  case $arg in
    --no-shell) shell=no ;;
    --no-build) build=no ;;
    --build-dir=*) builddir=${arg#--build-dir=} ;;
    --inner) inner=yes ;; # internal: we are already in the mount namespace
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "sandbox: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

# Debian's tools and python3 first, whatever shims PATH has.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export LANG=C.UTF-8

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() {
  printf 'sandbox: %s\n' "$*" >&2
  exit 1
}
# Print a command exactly as it could be typed (on stderr, so $(show ...)
# captures only the command's output), then run it.
print_command() {
  local arg line='#'
  for arg in "$@"; do
    if [[ $arg =~ ^[][A-Za-z0-9_./:=@%+,-]+$ ]]; then
      line+=" $arg"
    else # double quotes read best for busctl matches and tags
      arg=${arg//\\/\\\\}
      arg=${arg//\"/\\\"}
      arg=${arg//\$/\\\$}
      arg=${arg//\`/\\\`}
      line+=" \"$arg\""
    fi
  done
  printf '\033[36m%s\033[0m\n' "$line" >&2
}
show() {
  print_command "$@"
  "$@"
}

if [ "$(id -u)" -ne 0 ]; then
  die "run me as root (I start a bus, polkitd and ptagsd in a private mount namespace)"
fi

# ---------------------------------------------------------------- outside
if [ "$inner" = no ]; then
  if [ "$build" = yes ]; then
    say "Installing missing Debian packages (tests/install-deps.sh)"
    "$top/tests/install-deps.sh" build run
    say "Building in $builddir"
    if [ ! -f "$builddir/build.ninja" ]; then
      meson setup "$builddir" "$top"
    fi
    ninja -C "$builddir"
  fi
  exec unshare --mount --propagation private -- "$0" --inner "$@"
fi

# ---------------------------------------------------------------- inside
ptagsd=${PTAGSD:-$builddir/src/daemon/ptagsd}
fixture=${PTAGS_FIXTURE:-$builddir/tests/fixture/ptags-kernel-fixture}
polkit_policy=${PTAGS_POLKIT_POLICY:-$builddir/data/org.ptags.policy}
bus_policy=$top/data/dbus-1/org.ptags.Manager.conf
shipped_rule=$top/data/polkit-1/rules.d/50-org.ptags.rules
bus_template=$top/tests/policy/system-bus.conf.in
polkitd=/usr/lib/polkit-1/polkitd
for f in "$ptagsd" "$fixture" "$polkitd"; do
  [ -x "$f" ] || die "$f is missing: build first (drop --no-build) or set PTAGSD/PTAGS_FIXTURE"
done
for f in "$polkit_policy" "$bus_policy" "$shipped_rule" "$bus_template"; do
  [ -f "$f" ] || die "$f is missing: build first (drop --no-build)"
done
polkit_bus_policy=
for f in /usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf \
  /etc/dbus-1/system.d/org.freedesktop.PolicyKit1.conf; do
  [ -f "$f" ] && polkit_bus_policy=$f && break
done
[ -n "$polkit_bus_policy" ] || die "polkit's bus policy is missing (package polkitd)"
# Whoever ran us (unshare exec'd us) stays outside the new namespace.
[ "$(readlink /proc/self/ns/mnt)" != "$(readlink "/proc/$PPID/ns/mnt")" ] ||
  die "not in a private mount namespace; refusing to bind-mount over polkit's dirs"

sandbox=$(mktemp -d /tmp/ptags-sandbox.XXXXXX)
chmod 755 "$sandbox" # unprivileged callers reach the bus socket through it
pids=()
fixture_mounted=no
cleanup() {
  local status=$?
  set +e
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[$i]}" 2>/dev/null
  done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    wait "${pids[$i]}" 2>/dev/null
  done
  if [ "$fixture_mounted" = yes ]; then
    fusermount3 -u "$sandbox/proc" 2>/dev/null || umount -l "$sandbox/proc" 2>/dev/null
  fi
  rm -rf "$sandbox"
  echo "sandbox: stopped and removed (exit $status)"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for WHAT SECONDS COMMAND...: poll COMMAND until it succeeds.
wait_for() {
  local what=$1 seconds=$2 i
  shift 2
  for ((i = 0; i < seconds * 20; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  die "timed out after ${seconds}s waiting for $what"
}
name_owned() {
  busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
    NameHasOwner s "$1" | grep -qx 'b true'
}
alive() { kill -0 "$1" 2>/dev/null; }

nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)

# ---- the bus
say "A private system bus with our real bus policy (and polkit's)"
sed -e "s|@SOCKET@|$sandbox/system_bus_socket|" \
  -e "s|@PTAGS_BUS_POLICY@|$bus_policy|" \
  -e "s|@POLKIT_BUS_POLICY@|$polkit_bus_policy|" "$bus_template" >"$sandbox/bus.conf"
dbus-daemon --nofork --nopidfile --config-file="$sandbox/bus.conf" >"$sandbox/bus.log" 2>&1 &
pids+=($!)
wait_for "the bus socket" 10 test -S "$sandbox/system_bus_socket"
chmod 666 "$sandbox/system_bus_socket"
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$sandbox/system_bus_socket
echo "DBUS_SYSTEM_BUS_ADDRESS=$DBUS_SYSTEM_BUS_ADDRESS"
echo "bus config: $sandbox/bus.conf (includes $bus_policy)"

# ---- polkit
say "The real polkitd, seeing only ptags' actions and rules"
polkit_dir() { # NAME: a dir only polkitd (and root) reads, as on Debian
  mkdir "$sandbox/$1"
  chown polkitd:root "$sandbox/$1"
  chmod 700 "$sandbox/$1"
  echo "$sandbox/$1"
}
actions=$(polkit_dir polkit-actions)
chmod 755 "$actions"
cp "$polkit_policy" "$actions/org.ptags.policy"
vendor_rules=$(polkit_dir polkit-vendor-rules)
cp "$shipped_rule" "$vendor_rules/"
admin_rules=$(polkit_dir polkit-admin-rules)
cat >"$admin_rules/40-ptags-sandbox.rules" <<'EOF'
// Sandbox example of an administrator's rule (/etc/polkit-1/rules.d):
// nobody may add tags under app: to its own processes, nothing else.
polkit.addRule(function (action, subject) {
    if (action.id == "org.ptags.tag.add" && subject.user == "nobody" &&
        action.lookup("prefix") == "app" &&
        action.lookup("target-uid") == "65534") {
        return polkit.Result.YES;
    }
});
EOF
chmod 644 "$actions"/* "$vendor_rules"/* "$admin_rules"/*
mount --bind "$actions" /usr/share/polkit-1/actions
mount --bind "$vendor_rules" /usr/share/polkit-1/rules.d
mount --bind "$admin_rules" /etc/polkit-1/rules.d
echo "bind-mounted (in this namespace only):"
echo "  /usr/share/polkit-1/actions  <- org.ptags.policy"
echo "  /usr/share/polkit-1/rules.d  <- 50-org.ptags.rules (shipped)"
echo "  /etc/polkit-1/rules.d        <- 40-ptags-sandbox.rules (example admin rule):"
sed 's/^/      /' "$admin_rules/40-ptags-sandbox.rules"
# polkitd reads DBUS_SYSTEM_BUS_ADDRESS and drops to the polkitd user itself.
"$polkitd" >"$sandbox/polkitd.log" 2>&1 &
pids+=($!)
wait_for "polkitd on the bus" 15 name_owned org.freedesktop.PolicyKit1

# ---- ptagsd on the best backend
say "ptagsd on the best backend this machine has"
mkdir -m 700 "$sandbox/run" # ptagsd's RUNTIME_DIRECTORY (the bpf backend's state)
start_ptagsd() { # ARGS...: start ptagsd; succeed once it owns its name
  RUNTIME_DIRECTORY=$sandbox/run "$ptagsd" "$@" --verbose >"$sandbox/ptagsd.log" 2>&1 &
  ptagsd_pid=$!
  local i
  for ((i = 0; i < 200; i++)); do
    name_owned org.ptags.Manager && return 0
    alive "$ptagsd_pid" || {
      wait "$ptagsd_pid" 2>/dev/null
      return 1
    }
    sleep 0.05
  done
  kill "$ptagsd_pid" 2>/dev/null
  wait "$ptagsd_pid" 2>/dev/null
  return 1
}
# The bpf backend pins maps in bpffs so they outlive ptagsd; a bpffs of our
# own, mounted in this namespace only, dies with the sandbox. Without one,
# the bpf backend is not tried: its pins would stay on the host.
bpf_started=no
if mount -t bpf bpf /sys/fs/bpf 2>/dev/null; then
  if start_ptagsd --backend=bpf; then
    bpf_started=yes
  else
    echo "(the bpf backend did not start here:"
    tail -n 3 "$sandbox/ptagsd.log" | sed 's/^/   /'
    echo ")"
  fi
else
  echo "(no private bpffs in this namespace: not trying the bpf backend)"
fi
if [ "$bpf_started" = yes ]; then
  pids+=("$ptagsd_pid")
  backend_note="the bpf backend: tags live in this kernel's BPF task storage (bpffs private to the sandbox)"
else
  mkdir "$sandbox/proc"
  "$fixture" "$sandbox/proc" >"$sandbox/fixture.log" 2>&1 &
  pids+=($!)
  fixture_mounted=yes
  wait_for "the kernel fixture" 10 test -e "$sandbox/proc/1/attr/ptags"
  start_ptagsd --backend=ptags-lsm --proc-root="$sandbox/proc" ||
    die "ptagsd did not start: $(tail -n 20 "$sandbox/ptagsd.log")"
  pids+=("$ptagsd_pid")
  backend_note="NOT the kernel: the kernel-imitating FUSE fixture (tests/fixture) at
   $sandbox/proc; tags live in that fixture, /proc/PID/attr/ptags is untouched"
  printf '\n\033[1;33m!! No BPF backend on this machine yet: ptagsd runs on the ptags-lsm backend\n'
  printf '!! against the kernel-imitating FUSE fixture, not against the kernel.\033[0m\n'
fi
show busctl get-property org.ptags.Manager /org/ptags/Manager org.ptags.Manager Backend Version
echo "ptagsd pid $ptagsd_pid, log $sandbox/ptagsd.log"

# ---- the walk-through
say "Live processes to tag"
sleep infinity &
target=$!
pids+=("$target")
"${nobody[@]}" sleep infinity &
nobodys=$!
pids+=("$nobodys")
runs_sleep() { [ "$(basename "$(readlink "/proc/$1/exe")")" = sleep ]; }
wait_for "root's target to run sleep" 10 runs_sleep "$target"
wait_for "nobody's target to run sleep" 10 runs_sleep "$nobodys"
echo "root's process: $target   nobody's process: $nobodys"

say "Listening for TagsChanged in the background"
monitor=(busctl monitor --match="type='signal',interface='org.ptags.Manager',member='TagsChanged'")
print_command "${monitor[@]}"
"${monitor[@]}" >"$sandbox/signals.txt" 2>&1 &
pids+=($!)
# busctl says this once the bus has made it a monitor: no signal is missed.
wait_for "busctl monitor" 10 grep -q 'Monitoring bus message stream' "$sandbox/signals.txt"

say "Tag a live process (root: polkit always says yes to uid 0)"
show busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager AddTag usb "$target" app:camera false

say "Read it back (tags are public: anyone may read)"
tags=$(show "${nobody[@]}" busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager GetTags u "$target")
echo "$tags"
[ "$tags" = 'a(sbs) 1 "app:camera" false ""' ] || die "unexpected tags: $tags"

say "A denial: nobody tries to tag root's process"
if show "${nobody[@]}" busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager AddTag usb "$target" app:mic false; then
  die "nobody was allowed to tag root's process"
fi
echo "-> denied, as it must be (no rule allows it; allow_any is no)"
tags=$(busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager GetTags u "$target")
[ "$tags" = 'a(sbs) 1 "app:camera" false ""' ] || die "a denied call changed the tags: $tags"

say "The example admin rule at work: nobody tags its own process under app:"
show "${nobody[@]}" busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager AddTag usb "$nobodys" app:demo false
if show "${nobody[@]}" busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager AddTag usb "$nobodys" sys:demo false; then
  die "nobody was allowed a sys: tag"
fi
echo "-> app:demo allowed, sys:demo denied"

say "The TagsChanged signals ptagsd sent"
got_signals() { [ "$(grep -c 'Member=TagsChanged' "$sandbox/signals.txt")" -ge 2 ]; }
wait_for "two TagsChanged signals" 10 got_signals
grep -A12 'Member=TagsChanged' "$sandbox/signals.txt" | grep -E 'Member=|UINT32|STRING "[^"]*"' |
  sed 's/^ */   /'
grep -q "UINT32 $target;" "$sandbox/signals.txt" || die "no TagsChanged for $target"

say "Done: the sandbox works"
echo "backend: $backend_note"
if [ "$shell" = yes ] && [ -t 0 ]; then
  say "A shell inside the sandbox (exit it to stop everything)"
  cat <<EOF
  DBUS_SYSTEM_BUS_ADDRESS points at the sandbox bus; try:
    busctl call org.ptags.Manager /org/ptags/Manager org.ptags.Manager GetTags u $target
    busctl introspect org.ptags.Manager /org/ptags/Manager
    setpriv --reuid=65534 --regid=65534 --clear-groups busctl call org.ptags.Manager \\
        /org/ptags/Manager org.ptags.Manager AddTag usb 0 app:mine false
  Logs: $sandbox/{bus,polkitd,ptagsd}.log   Rules: /etc/polkit-1/rules.d (edit live)
EOF
  PS1='(ptags-sandbox) \w # ' bash --norc -i || true
else
  echo "For a shell inside the sandbox, run tests/sandbox.sh from a terminal (without --no-shell)."
fi
