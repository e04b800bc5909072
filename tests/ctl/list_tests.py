# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# list_tests.py: prints "module.Class.test_method" for every test method of the given modules'
# classes named *Tests, so tests/ctl/meson.build registers one meson test per method; fails
# when a module of the directory is in no list there, or a class with tests is not named so.
# Reads the sources with ast: configuring needs no GLib bindings and no built program.
import ast
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
# Every module of the directory is listed in meson.build (in one of its
# calls of this script), or it would silently not run.
with open(os.path.join(here, "meson.build")) as f:
    build = f.read()
for module in sorted(n for n in os.listdir(here) if n.startswith("test_") and n.endswith(".py")):
    if "'%s'" % module not in build:
        sys.exit("list_tests.py: %s is in no list of tests/ctl/meson.build" % module)
for name in sys.argv[1:]:
    tree = ast.parse(open(os.path.join(here, name)).read(), name)
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        tests = [item.name for item in node.body
                 if isinstance(item, ast.FunctionDef) and item.name.startswith("test_")]
        if tests and not node.name.endswith("Tests"):
            # Only classes named *Tests are registered.
            sys.exit("list_tests.py: %s: class %s has tests but is not named *Tests"
                     % (name, node.name))
        for test in tests:
            print("%s.%s.%s" % (name[:-3], node.name, test))
