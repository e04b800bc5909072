# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_licensing.py: every file of the tree says its licence and copyright (an SPDX header, or
# an entry of .reuse/dep5 for files that cannot carry a comment), and the interface XML, which
# clients feed to code generators, is under the permissive MIT licence.
# Usage: check_licensing.py SOURCE_ROOT

import fnmatch
import os
import subprocess
import sys

HEAD_BYTES = 800
INTERFACE = "data/dbus-1/org.ptags.Manager.xml"


def tree_files(root):
    # A checkout's .git is a directory, a worktree's a file.
    if os.path.exists(os.path.join(root, ".git")):
        out = subprocess.run(["git", "-C", root, "ls-files"], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
        return [f for f in out.split("\n") if f and os.path.isfile(os.path.join(root, f))]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(("build", ".git", "_build"))]
        for name in filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def dep5_patterns(root):
    patterns = []
    with open(os.path.join(root, ".reuse", "dep5")) as f:
        for line in f:
            if line.startswith("Files:"):
                patterns += line.split(":", 1)[1].split()
    return patterns


def main():
    root = sys.argv[1]
    covered = dep5_patterns(root)
    bad = []
    for rel in sorted(tree_files(root)):
        if any(fnmatch.fnmatch(rel, p) for p in covered):
            continue
        with open(os.path.join(root, rel), "rb") as f:
            head = f.read(HEAD_BYTES)
        if b"SPDX-License-Identifier:" not in head:
            bad.append(rel + ": no SPDX-License-Identifier")
        elif b"SPDX-FileCopyrightText:" not in head:
            bad.append(rel + ": no SPDX-FileCopyrightText (copyright line)")
    with open(os.path.join(root, INTERFACE), "rb") as f:
        if b"SPDX-License-Identifier: MIT " not in f.read(HEAD_BYTES):
            bad.append(INTERFACE + ": not under the MIT licence")
    for line in bad:
        print("FAIL:", line)
    if bad:
        sys.exit(1)
    print("licensing: every file is covered")


if __name__ == "__main__":
    main()
