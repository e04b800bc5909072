#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_cases_listed.py: every test method of the policy tests (the test modules here) is run by
# meson, where the cases are listed by hand ('Class.test_method' in tests/policy/meson.build):
# a new method left out of the list would never run, and the run would stay green.
#
# Usage: check_cases_listed.py TESTS_POLICY_DIR

import ast
import glob
import os
import re
import sys


def methods(path):
    """'Class.test_method' for each test method a class of @path defines or
    inherits from another class of the same file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def own(cls):
        return [n.name for n in cls.body
                if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]

    def all_of(cls, seen=()):
        found = own(cls)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                found += all_of(classes[base.id], seen + (cls.name,))
        return found

    # A class named by another as its base only lends its methods (it runs
    # as that subclass).
    bases = {b.id for c in classes.values() for b in c.bases if isinstance(b, ast.Name)}
    return {"%s.%s" % (name, m) for name, cls in classes.items() if name not in bases
            for m in all_of(cls)}


def main(directory):
    with open(os.path.join(directory, "meson.build"), encoding="utf-8") as f:
        listed = set(re.findall(r"'(\w+\.test_\w+)'", f.read()))
    missing = []
    for path in sorted(glob.glob(os.path.join(directory, "test_*.py"))):
        missing += ["%s: %s" % (os.path.basename(path), m) for m in sorted(methods(path) - listed)]
    for line in missing:
        print("not run by meson (add it to tests/policy/meson.build): " + line)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
