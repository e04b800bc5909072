# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# list_tests.py: prints "module.Class.test_method" for every test in the
# integration modules that runs on one backend, so meson registers exactly
# one test() per method and backend.
#
# It reads the sources with ast (no imports), so configuring needs neither
# GLib bindings nor a built daemon, and a new test method cannot be forgotten.
# A class limits itself with `backends = ("ptags-lsm",)`; default: both.
# Usage: list_tests.py BACKEND MODULE.py...
import ast
import os
import sys

ALL_BACKENDS = ("ptags-lsm", "bpf")


def class_backends(node):
    for item in node.body:
        if (isinstance(item, ast.Assign) and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name) and item.targets[0].id == "backends"):
            return tuple(ast.literal_eval(item.value))
    return ALL_BACKENDS


backend = sys.argv[1]
if backend not in ALL_BACKENDS:
    sys.exit("list_tests.py: unknown backend %r" % backend)
here = os.path.dirname(os.path.abspath(__file__))
on_disk = sorted(n for n in os.listdir(here) if n.startswith("test_") and n.endswith(".py"))
listed = sorted(sys.argv[2:])
if listed != on_disk:
    # A module missing from meson.build would silently not run.
    sys.exit("list_tests.py: meson.build lists %s but the directory holds %s" % (listed, on_disk))
for name in on_disk:
    tree = ast.parse(open(os.path.join(here, name)).read(), name)
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name.endswith("Tests")):
            continue
        if backend not in class_backends(node):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                print("%s.%s.%s" % (name[:-3], node.name, item.name))
