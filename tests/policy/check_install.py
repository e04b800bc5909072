# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_install.py: installs the build into a temp DESTDIR and checks every data file landed
# where pkg-config (dbus-1, polkit-gobject-1, systemd) says, re-rooted at the build's prefix.
#
# Usage: check_install.py MESON BUILD_DIR PREFIX
# Asks pkg-config itself rather than trusting data/meson.build, so a path
# hard-coded there (or a variable read from the wrong package) fails here.

import os
import shutil
import subprocess
import sys
import tempfile


def pkg_variable(package, variable, define):
    out = subprocess.run(["pkg-config", "--define-variable=%s" % define, "--variable=" + variable,
                          package], stdout=subprocess.PIPE, check=True, text=True)
    value = out.stdout.strip()
    if not value:
        sys.exit("check_install: pkg-config %s has no %s" % (package, variable))
    return value


def expected_files(prefix):
    at_prefix = "prefix=" + prefix
    unit_root = "rootprefix=" + ("" if prefix == "/usr" else prefix)
    polkit_data = pkg_variable("polkit-gobject-1", "datadir", at_prefix)
    return [
        os.path.join(pkg_variable("dbus-1", "datadir", at_prefix), "dbus-1", "system.d",
                     "org.ptags.Manager.conf"),
        os.path.join(pkg_variable("dbus-1", "system_bus_services_dir", at_prefix),
                     "org.ptags.Manager.service"),
        os.path.join(pkg_variable("dbus-1", "interfaces_dir", at_prefix), "org.ptags.Manager.xml"),
        os.path.join(pkg_variable("polkit-gobject-1", "actiondir", at_prefix), "org.ptags.policy"),
        os.path.join(polkit_data, "polkit-1", "rules.d", "50-org.ptags.rules"),
        os.path.join(pkg_variable("systemd", "systemdsystemunitdir", unit_root), "ptagsd.service"),
    ]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_install.py MESON BUILD_DIR PREFIX")
    meson, build_dir, prefix = sys.argv[1:]
    destdir = tempfile.mkdtemp(prefix="ptags-install-")
    try:
        subprocess.run([meson, "install", "-C", build_dir, "--no-rebuild", "--quiet",
                        "--destdir", destdir], check=True, stdout=subprocess.DEVNULL)
        missing = [p for p in expected_files(prefix)
                   if not os.path.isfile(destdir + p)]
        if missing:
            installed = sorted(os.path.join(d, f)[len(destdir):]
                               for d, _, files in os.walk(destdir) for f in files)
            sys.exit("check_install: not installed where pkg-config says: %s\ninstalled: %s"
                     % (missing, installed))
        # polkitd runs as its own user: everything it reads must be world-readable.
        for path in expected_files(prefix):
            if not os.stat(destdir + path).st_mode & 0o004:
                sys.exit("check_install: %s is not world-readable" % path)
    finally:
        shutil.rmtree(destdir, ignore_errors=True)
    print("check_install: every data file at its pkg-config path under prefix %s" % prefix)


if __name__ == "__main__":
    main()
