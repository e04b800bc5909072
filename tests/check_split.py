# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_split.py: which tests check.sh runs in its plain build and which in
# its ASan/UBSan build.
#
# Usage: meson test -C BUILD --list | check_split.py main|asan
#
# `meson test` alone runs every integration test on both backends. check.sh
# runs each of them once on each backend it exists for, sharing them
# between its two builds: under ASan, each integration module runs on its
# home backend (HOME below), and the optimized build runs it on the other.
# So a test held by both backends meets ASan on one and the optimized
# daemon on the other, and the home split puts each backend's code under
# ASan through several modules; a test held by one backend runs in the
# build its backend goes to. A module not named in HOME runs in both
# builds. The ASan run also takes the model, fixture and daemon unit tests;
# the optimized run takes every other suite but bpf-qemu, which check.sh
# runs on its own.
import sys

ASAN_SUITES = {"model", "fixture", "daemon", "integration", "integration-bpf"}
INTEGRATION = {"integration", "integration-bpf"}

HOME = {
    # The calls, batches and bad input: they reach every read and write path
    # of the ptags-lsm backend (attr files, pages, undo).
    "test_apply": "ptags-lsm",
    "test_bad_input": "ptags-lsm",
    "test_concurrency": "ptags-lsm",
    "test_daemon": "ptags-lsm",
    "test_load": "ptags-lsm",
    "test_logging": "ptags-lsm",
    "test_mainline": "ptags-lsm",
    "test_methods": "ptags-lsm",
    "test_peers": "ptags-lsm",
    "test_units": "ptags-lsm",
    # Containers, polkit, bounds and the bus thread: on bpf, whose task
    # storage, set table and iterators they reach.
    "test_bus_thread_changes": "bpf",
    "test_containers": "bpf",
    "test_fast_reads": "bpf",
    "test_faults": "bpf",
    "test_inheritance": "bpf",
    "test_limits": "bpf",
    "test_polkit": "bpf",
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("main", "asan"):
        sys.exit("usage: meson test --list | check_split.py main|asan")
    run = sys.argv[1]
    tests = []  # (suites, name, backend, "module.Class.test" or None)
    for line in sys.stdin:
        if " / " not in line:
            continue
        suites, name = line.rstrip("\n").split(" / ", 1)
        suites = set(suites.split(":", 1)[-1].split("+"))
        if suites & INTEGRATION:
            backend = "bpf" if "integration-bpf" in suites else "ptags-lsm"
            tests.append((suites, name, backend, name.removeprefix("bpf/")))
        else:
            tests.append((suites, name, None, None))
    out = []
    for suites, name, backend, test in tests:
        if test is None:
            wanted = bool(suites & ASAN_SUITES) if run == "asan" else "bpf-qemu" not in suites
        else:
            home = HOME.get(test.split(".")[0])
            wanted = home is None or (home == backend) == (run == "asan")
        if wanted:
            out.append(name)
    if not out:
        sys.exit("check_split.py: meson listed no tests")
    print("\n".join(out))


if __name__ == "__main__":
    main()
