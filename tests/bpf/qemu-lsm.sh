#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# qemu-lsm.sh: runs the BPF kernel-semantics tests on the LSM path inside
# Debian's own stock 6.1 kernel under QEMU (software emulation), one command.
# Usage: PTAGS_QEMU_KERNEL=/path/to/vmlinuz tests/bpf/qemu-lsm.sh [BUILDDIR]
#   (default BUILDDIR: build; tests/bpf/fetch-qemu-kernel.sh DIR prints such a path)
# BUILDDIR must hold a configured build with the 'bpf' component (for the
# generated skeleton). Prints the guest's result line; exit 0 = all passed.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
work=$build/qemu-lsm
mkdir -p "$work"
cd "$work"
start=$(date +%s)

# 1. The kernel to boot: given, never downloaded here (build machines have
#    no network). tests/bpf/fetch-qemu-kernel.sh fetches Debian's 6.1 one.
vmlinuz=${PTAGS_QEMU_KERNEL:-}
if [ -z "$vmlinuz" ]; then
  echo "SKIP: no kernel image given: set PTAGS_QEMU_KERNEL (or meson -Dqemu_kernel=) to a"
  echo "      vmlinuz whose LSM list has bpf, e.g. from tests/bpf/fetch-qemu-kernel.sh DIR"
  exit 77
fi
[ -r "$vmlinuz" ] || { echo "qemu-lsm: cannot read the kernel image $vmlinuz" >&2; exit 1; }
pkg=$(basename "$vmlinuz")

# 2. Static test binaries from the same sources as the meson tests. BPF,
#    task storage and the bpf LSM are built into Debian's kernel: no modules.
ninja -C "$build" src/bpf/ptags.skel.h >/dev/null
cflags=(-static -O2 -std=gnu11 -D_GNU_SOURCE -pthread -I"$build/src/bpf" -I"$top/src/bpf"
        -I"$top/src/model" -I"$build")
for t in bpf-test bpf-sets-test; do
  cc "${cflags[@]}" -o $t "$top"/tests/bpf/$t.c "$top"/tests/bpf/bpf-test-util.c \
     "$top"/src/bpf/ptags-bpf*.c "$top"/src/model/*.c -lbpf -lelf -lz
done
cc "${cflags[@]}" -o bpf-child "$top"/tests/bpf/bpf-child.c

# 3. A busybox initramfs whose /init mounts what the tests need, runs them
#    on the LSM path (PTAGS_BPF_TEST_MODE=lsm refuses any fallback),
#    prints one result line and powers off.
rm -rf initramfs && mkdir -p initramfs/{bin,dev,proc,sys,tmp,run}
cp /bin/busybox initramfs/bin/busybox
cp bpf-test bpf-sets-test bpf-child initramfs/bin/
cat > initramfs/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t devtmpfs dev /dev
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t securityfs securityfs /sys/kernel/security
mount -t bpf bpf /sys/fs/bpf
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
echo "guest: kernel $(uname -r), lsm=$(cat /sys/kernel/security/lsm)"
export PTAGS_BPF_TEST_MODE=lsm
pass=0; fail=0; failed=""
for prog in bpf-test bpf-sets-test; do
  for t in $($prog --list); do
    s=$(date +%s)
    if $prog "$t" /bin/bpf-child; then pass=$((pass+1)); else fail=$((fail+1)); failed="$failed $t"; fi
    echo "guest: $t took $(( $(date +%s) - s ))s"
  done
done
echo "PTAGS-QEMU-RESULT pass=$pass fail=$fail failed=${failed:-none}"
poweroff -f
INIT
chmod +x initramfs/init
(cd initramfs && find . | cpio -o -H newc --quiet | gzip -1) > initramfs.gz

# 4. Boot it (TCG: KVM here cannot boot a stock kernel) and read the console.
expected=$(( $(./bpf-test --list | wc -l) + $(./bpf-sets-test --list | wc -l) ))
timeout 1500 qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
  -kernel "$vmlinuz" -initrd initramfs.gz -append "console=ttyS0 panic=-1 quiet" \
  -nographic -no-reboot -monitor none -serial stdio </dev/null | tee console.log | \
  grep --line-buffered -E '^(guest:|PTAGS-QEMU-RESULT|FAIL|FATAL|[a-z-]+: (PASS|FAIL))' || true

elapsed=$(( $(date +%s) - start ))
result=$(grep -a 'PTAGS-QEMU-RESULT' console.log | tr -d '\r' | tail -1)
echo "qemu-lsm: $pkg, ${elapsed}s, ${result:-no result line (see $work/console.log)}"
case "$result" in
  "PTAGS-QEMU-RESULT pass=$expected fail=0 "*) exit 0 ;;
  *) exit 1 ;;
esac
