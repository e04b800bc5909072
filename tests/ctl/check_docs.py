# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_docs.py: the documentation checks of suite docs: manual pages format without warnings,
# every journal MESSAGE_ID has a catalog entry journalctl accepts, no file cites a missing document.
#
# Usage:
#   check_docs.py man PAGE...                 groff formats each page, no warning
#   check_docs.py catalog NAMES_H CATALOG...    every MESSAGE_ID of NAMES_H explained in each CATALOG
#   check_docs.py references SOURCE_ROOT      every cited document is in the repository
import os
import re
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def check_man(pages):
    for page in pages:
        name, section = os.path.basename(page).rsplit(".", 1)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        th = re.search(r"^\.TH (\S+) (\S+)", text, re.M)
        if th is None or th.group(1) != name.upper() or th.group(2) != section:
            fail("%s: .TH does not name %s(%s)" % (page, name, section))
        # -ww: every warning; -t: the tables some pages hold; -z: no output.
        out = subprocess.run(["groff", "-t", "-ww", "-z", "-man", page],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if out.returncode != 0 or out.stderr:
            fail("%s: groff: %s" % (page, out.stderr.strip() or "exit %d" % out.returncode))
        # A line starting with ' or . that is not a request is swallowed.
        for n, line in enumerate(text.splitlines(), 1):
            if line.startswith("'") and not line.startswith("'\\\""):
                fail("%s:%d: a text line starts with an apostrophe" % (page, n))


def check_catalog(names_h, *catalogs):
    with open(names_h) as f:
        ids = re.findall(r'#define\s+PTAGS_MESSAGE_\w+\s+"([0-9a-f]{32})"', f.read())
    if not ids:
        fail("%s defines no MESSAGE_ID" % names_h)
    for catalog in catalogs:
        with open(catalog, encoding="utf-8") as f:
            entries = re.findall(r"^-- ([0-9a-f]{32})\b", f.read(), re.M)
        for message_id in ids:
            if message_id not in entries:
                fail("%s: MESSAGE_ID %s has no entry" % (catalog, message_id))
        for message_id in entries:
            if message_id not in ids:
                fail("%s: entry %s is no MESSAGE_ID of %s" % (catalog, message_id, names_h))
    # What journalctl --update-catalog would do, in a private root.
    with tempfile.TemporaryDirectory() as root:
        target = os.path.join(root, "usr/lib/systemd/catalog")
        os.makedirs(target)
        for catalog in catalogs:
            with open(catalog, "rb") as src, \
                    open(os.path.join(target, os.path.basename(catalog)), "wb") as dst:
                dst.write(src.read())
        for args in (["--update-catalog"], ["--list-catalog"]):
            out = subprocess.run(["journalctl", "--root=" + root] + args, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env={"LANG": "C.UTF-8"})
            if out.returncode != 0 or out.stderr:
                fail("journalctl %s: %s" % (" ".join(args), out.stderr.strip()))
        # Every language's text made it into the database journalctl reads.
        with open(os.path.join(root, "var/lib/systemd/catalog/database"), "rb") as f:
            database = f.read()
        for catalog in catalogs:
            with open(catalog, encoding="utf-8") as f:
                for subject in re.findall(r"^Subject: (.*)$", f.read(), re.M):
                    if subject.encode() not in database:
                        fail("%s: %r is not in the catalog database" % (catalog, subject))
        listed = re.findall(r"^([0-9a-f]{32}) ptags: ", out.stdout, re.M)
        if sorted(listed) != sorted(ids):
            fail("journalctl lists %s, expected %s" % (listed, ids))


# What counts as citing a document: a Markdown file by name, the internal
# notes by their short names (SOMETHING-NOTES), one of our manual pages, or a
# path in the tree.
DOC_NAME = re.compile(r"\b([A-Za-z][\w-]*\.md)\b")
NOTE_NAME = re.compile(r"\b([A-Z][A-Z0-9]*-NOTES)\b")
OUR_PAGE = re.compile(r"\b(ptags|ptagsd|ptagsctl|org\.ptags\.Manager)\((\d)\)")
TREE_PATH = re.compile(r"(?<![\w./-])((?:src|data|tests|man|po)/[\w./-]*[\w])")
REAL_CAPS = {"README", "NEWS", "COPYING", "LICENSE"}
GENERATED = (".pot", ".skel.h", ".mo", ".o")
SKIP_DIRS = {".git", "build", "subprojects", "corpus", "__pycache__"}
TEXT_SUFFIXES = (".c", ".h", ".py", ".sh", ".md", ".txt", ".build", ".xml", ".in", ".conf",
                 ".rules", ".po", ".catalog", ".1", ".5", ".7", ".8", ".dict", ".yml")


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True)
        return [f for f in out.stdout.splitlines() if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            found += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return found


def check_references(root):
    files = repo_files(root)
    names = {os.path.basename(f) for f in files}
    pages = {os.path.basename(f) for f in files if f.startswith("man/")}
    me = os.path.relpath(os.path.abspath(__file__), root)
    for rel in files:
        base = os.path.basename(rel)
        if rel == me or not (base.endswith(TEXT_SUFFIXES) or "." not in base):
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(lines, 1):
            where = "%s:%d" % (rel, n)
            for doc in DOC_NAME.findall(line):
                if doc not in names:
                    fail("%s cites %s, which is not in the repository" % (where, doc))
            for note in NOTE_NAME.findall(line):
                if not any(name.split(".")[0] == note for name in names):
                    fail("%s cites %s, which is not in the repository" % (where, note))
            for page, section in OUR_PAGE.findall(line):
                if "%s.%s" % (page, section) not in pages:
                    fail("%s cites %s(%s), which is not in man/" % (where, page, section))
            for path in TREE_PATH.findall(line):
                path = path.rstrip(".")
                full = os.path.join(root, path)
                # Globs, placeholders (po/CODE.po) and files the build
                # generates (po/ptags.pot, src/bpf/ptags.skel.h) are no sources.
                placeholder = any(p.isupper() and p not in REAL_CAPS
                                  for p in re.split(r"[/.]", path))
                if ("*" in path or placeholder or path.endswith(GENERATED)
                        or os.path.exists(full) or os.path.exists(full + ".in")):
                    continue
                fail("%s names %s, which is not in the repository" % (where, path))


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == "man":
        check_man(args)
    elif mode == "catalog":
        check_catalog(*args)
    elif mode == "references":
        check_references(*args)
    else:
        sys.exit("unknown mode %r" % mode)
    if failures:
        sys.exit("%d problem(s)" % len(failures))
    print("ok")


if __name__ == "__main__":
    main(sys.argv)
