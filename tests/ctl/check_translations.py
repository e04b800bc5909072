# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_translations.py: the built ptagsctl speaks French and German from the built catalogs,
# found where it will look once installed (LOCALEDIR), inside a private mount namespace.
#
# Usage (under `unshare --mount --propagation private`):
#   check_translations.py PTAGSCTL LOCALEDIR BUILD_PO_DIR
# The catalogs are mounted at LOCALEDIR only in this namespace, so this checks
# ptagsctl's gettext wiring (setlocale, bindtextdomain, the domain name)
# without touching the system.
import os
import shutil
import subprocess
import sys
import tempfile

EXPECTED = {
    # language: (--help line, usage error for "list abc")
    "fr": ("Commandes :", "Processus « abc » invalide"),
    "de": ("Befehle:", "Ungültiger Prozess „abc“"),
}


def mount_catalogs(localedir, build_po):
    if os.readlink("/proc/self/ns/mnt") == os.readlink("/proc/%d/ns/mnt" % os.getppid()):
        sys.exit("not in a private mount namespace: run under unshare --mount")
    staging = tempfile.mkdtemp(prefix="ptags-locale-")
    for lang in EXPECTED:
        target = os.path.join(staging, lang, "LC_MESSAGES")
        os.makedirs(target)
        shutil.copy(os.path.join(build_po, lang, "LC_MESSAGES", "ptags.mo"), target)
    # LOCALEDIR may not exist yet (nothing installed): cover its nearest
    # existing ancestor with a tmpfs and build the path inside.
    anchor = localedir
    while not os.path.isdir(anchor):
        anchor = os.path.dirname(anchor)
    if anchor != localedir:
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", anchor], check=True)
        os.makedirs(localedir)
    subprocess.run(["mount", "--bind", staging, localedir], check=True)


def main():
    ptagsctl, localedir, build_po = sys.argv[1:]
    mount_catalogs(localedir, build_po)
    failures = []
    for lang, (help_line, usage_error) in EXPECTED.items():
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LANGUAGE": lang}
        out = subprocess.run([ptagsctl, "--help"], stdout=subprocess.PIPE, text=True, env=env)
        if help_line not in out.stdout:
            failures.append("%s: --help lacks %r:\n%s" % (lang, help_line, out.stdout))
        out = subprocess.run([ptagsctl, "list", "abc"], stderr=subprocess.PIPE, text=True,
                             env=env)
        if out.returncode != 2 or usage_error not in out.stderr:
            failures.append("%s: usage error %d %r" % (lang, out.returncode, out.stderr))
    # Untranslated without a language, so scripts parsing C output keep working.
    out = subprocess.run([ptagsctl, "--help"], stdout=subprocess.PIPE, text=True,
                         env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    if "Commands:" not in out.stdout:
        failures.append("C: --help is not English")
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
