# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# list_tests.py: prints "module.Class.test_method" for every test method of the given modules'
# classes named *Tests, so tests/ctl/meson.build registers one meson test per method.
# Reads the sources with ast: configuring needs no GLib bindings and no built program.
import ast
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
for name in sys.argv[1:]:
    tree = ast.parse(open(os.path.join(here, name)).read(), name)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Tests"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                    print("%s.%s.%s" % (name[:-3], node.name, item.name))
