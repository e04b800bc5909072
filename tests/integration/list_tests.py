# list_tests.py: prints "module.Class.test_method" for every test in the
# integration modules, so meson registers exactly one test() per method.
#
# It reads the sources with ast (no imports), so configuring needs neither
# GLib bindings nor a built daemon, and a new test method cannot be forgotten.
import ast
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
on_disk = sorted(n for n in os.listdir(here) if n.startswith("test_") and n.endswith(".py"))
listed = sorted(sys.argv[1:])
if listed != on_disk:
    # A module missing from meson.build would silently not run.
    sys.exit("list_tests.py: meson.build lists %s but the directory holds %s" % (listed, on_disk))
for name in on_disk:
    tree = ast.parse(open(os.path.join(here, name)).read(), name)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Tests"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                    print("%s.%s.%s" % (name[:-3], node.name, item.name))
