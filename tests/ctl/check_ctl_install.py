# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_ctl_install.py: installs the build into a temp DESTDIR and checks that ptagsctl, the
# manual pages, the journal catalog and the bash completion land where the system looks.
#
# Usage: check_ctl_install.py MESON BUILD_DIR PREFIX BINDIR MANDIR with-catalog|without-catalog
# The catalog and completion directories are asked of pkg-config here, not
# taken from the build files, so a hard-coded path there fails.
import os
import shutil
import subprocess
import sys
import tempfile


def pkg_variable(package, variable, defines):
    argv = ["pkg-config"] + ["--define-variable=" + d for d in defines]
    out = subprocess.run(argv + ["--variable=" + variable, package], stdout=subprocess.PIPE,
                         text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def main():
    meson, build_dir, prefix, bindir, mandir, catalog = sys.argv[1:]
    catalog_dir = pkg_variable("systemd", "catalogdir", ["prefix=" + prefix])
    if not catalog_dir:
        sys.exit("check_ctl_install: pkg-config systemd has no catalogdir")
    completion_dir = (pkg_variable("bash-completion", "completionsdir",
                                   ["prefix=" + prefix, "datadir=" + prefix + "/share"])
                      or os.path.join(prefix, "share", "bash-completion", "completions"))
    expected = {
        os.path.join(prefix, bindir, "ptagsctl"): 0o755,
        os.path.join(completion_dir, "ptagsctl"): 0o644,
    }
    if catalog == "with-catalog":
        for name in ("ptags.catalog", "ptags.fr.catalog"):
            expected[os.path.join(catalog_dir, name)] = 0o644
    for page in ("ptags.7", "org.ptags.Manager.5", "ptagsd.8", "ptagsctl.1"):
        section = "man" + page.rsplit(".", 1)[1]
        expected[os.path.join(prefix, mandir, section, page)] = 0o644
    destdir = tempfile.mkdtemp(prefix="ptags-ctl-install-")
    try:
        subprocess.run([meson, "install", "-C", build_dir, "--no-rebuild", "--quiet",
                        "--destdir", destdir], check=True, stdout=subprocess.DEVNULL)
        problems = []
        for path, mode in expected.items():
            full = destdir + path
            if not os.path.isfile(full):
                problems.append("%s is not installed" % path)
            elif os.stat(full).st_mode & 0o777 & mode != mode:
                problems.append("%s has mode %o, needs at least %o"
                                % (path, os.stat(full).st_mode & 0o777, mode))
        if problems:
            installed = sorted(os.path.join(d, f)[len(destdir):]
                               for d, _, files in os.walk(destdir) for f in files)
            sys.exit("check_ctl_install: %s\ninstalled: %s" % ("; ".join(problems), installed))
    finally:
        shutil.rmtree(destdir, ignore_errors=True)
    print("check_ctl_install: ptagsctl, man pages, catalog and completion in place")


if __name__ == "__main__":
    main()
