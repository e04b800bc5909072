# list_tests.py: prints "module.Class.test_method" for every test in the
# integration modules, so meson registers exactly one test() per method.
#
# It reads the sources with ast (no imports), so configuring needs neither
# GLib bindings nor a built daemon, and a new test method cannot be forgotten.
import ast
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
for name in sorted(os.listdir(here)):
    if not (name.startswith("test_") and name.endswith(".py")):
        continue
    tree = ast.parse(open(os.path.join(here, name)).read(), name)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Tests"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                    print("%s.%s.%s" % (name[:-3], node.name, item.name))
sys.exit(0)
