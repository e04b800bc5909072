# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_data_files.py: content checks of the built data files that no schema expresses:
# the polkit actions and their translations, and the names the three D-Bus/systemd files must share.
#
# Usage: check_data_files.py CASE FILE...
#   polkit-actions  BUILT_POLICY            six actions, documented defaults and details
#   polkit-german   BUILT_POLICY            every string translated, same $(detail)s
#   activation      BUS_POLICY DBUS_SERVICE UNIT LIBEXECDIR
#   unit-sandbox    UNIT                    sandbox settings systemd would defeat
#   unit-syscalls   UNIT                    the system calls the unit's filter lets through

import configparser
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
BUS_NAME = "org.ptags.Manager"

# org.ptags.Manager(5): action -> (allow_any, allow_inactive, allow_active)
ACTION_DEFAULTS = {
    "org.ptags.tag.add": ("no", "no", "auth_admin"),
    "org.ptags.tag.remove": ("no", "no", "auth_admin"),
    "org.ptags.tag.set-value": ("no", "no", "auth_admin"),
    "org.ptags.rights.change": ("no", "no", "auth_admin"),
    "org.ptags.container.register": ("no", "no", "auth_admin"),
    "org.ptags.container.inspect": ("no", "no", "yes"),
}
DETAILS = ("tag", "prefix", "value", "keep", "pid", "target-uid", "target-user", "target-exe",
           "target-comm", "target-unit", "target-user-unit", "self", "caller-holds-right",
           "contid", "container-name", "shown-tag", "shown-value", "shown-target-comm")
# Text a caller chooses: a message shows it only escaped, as shown-KEY.
NOT_IN_MESSAGES = ("tag", "value", "target-comm")
PLACEHOLDER = re.compile(r"\$\(([^)]*)\)")


def fail(message):
    sys.exit("check_data_files: " + message)


def texts(action, element):
    """{lang or '': text} of @element's variants in @action."""
    return {node.get(XML_LANG, ""): node.text or "" for node in action.findall(element)}


def check_polkit_actions(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    actions = {a.get("id"): a for a in ET.fromstring(source.encode()).findall("action")}
    if set(actions) != set(ACTION_DEFAULTS):
        fail("actions %s, expected %s" % (sorted(actions), sorted(ACTION_DEFAULTS)))
    if "auth_admin_keep" in source.replace("Defaults never use auth_admin_keep", ""):
        fail("auth_admin_keep used: a kept authorization would ignore later details")
    for action_id, expected in ACTION_DEFAULTS.items():
        defaults = actions[action_id].find("defaults")
        got = tuple(defaults.findtext(k) for k in ("allow_any", "allow_inactive", "allow_active"))
        if got != expected:
            fail("%s defaults %s, org.ptags.Manager(5) says %s" % (action_id, got, expected))
        for element in ("description", "message"):
            if not texts(actions[action_id], element).get(""):
                fail("%s has no untranslated %s" % (action_id, element))
        for key in PLACEHOLDER.findall(" ".join(texts(actions[action_id], "message").values())):
            if key not in DETAILS:
                fail("%s message uses $(%s), which ptagsd never passes" % (action_id, key))
            if key in NOT_IN_MESSAGES:
                fail("%s message uses $(%s) as it is: use $(shown-%s)" % (action_id, key, key))
    comment = source[source.index("<!--", source.index("<!DOCTYPE")):source.index("<policyconfig>")]
    for key in DETAILS:
        if not re.search(r"^\s+%s\s" % re.escape(key), comment, re.M):
            fail("detail %r is not documented in the policy's comment" % key)


def check_polkit_german(path):
    actions = ET.parse(path).getroot().findall("action")
    for action in actions:
        for element in ("description", "message"):
            variants = texts(action, element)
            german = variants.get("de")
            if not german:
                fail("%s %s has no German translation" % (action.get("id"), element))
            if german == variants[""]:
                fail("%s %s: German equals English" % (action.get("id"), element))
            if sorted(PLACEHOLDER.findall(german)) != sorted(PLACEHOLDER.findall(variants[""])):
                fail("%s %s: German uses other $(details) than English: %r"
                     % (action.get("id"), element, german))


def read_ini(path):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    with open(path) as f:
        parser.read_file(f)
    return parser


def check_activation(bus_policy, dbus_service, unit, libexecdir):
    service = read_ini(dbus_service)["D-BUS Service"]
    systemd = read_ini(unit)
    expect = {
        "activation Name": (service.get("Name"), BUS_NAME),
        "unit BusName": (systemd["Service"].get("BusName"), BUS_NAME),
        "activation Exec": (service.get("Exec"), libexecdir + "/ptagsd"),
        "unit ExecStart": (systemd["Service"].get("ExecStart"), libexecdir + "/ptagsd"),
        "activation User": (service.get("User"), "root"),
        "activation SystemdService": (service.get("SystemdService"), "ptagsd.service"),
        "unit Type": (systemd["Service"].get("Type"), "dbus"),
    }
    for what, (got, wanted) in expect.items():
        if got != wanted:
            fail("%s is %r, expected %r" % (what, got, wanted))
    owners = [p for p in ET.parse(bus_policy).getroot().iter("policy")
              if any(r.get("own") == BUS_NAME for r in p.findall("allow"))]
    if [p.attrib for p in owners] != [{"user": "root"}]:
        fail("the bus policy lets %s own %s, expected only root"
             % ([p.attrib for p in owners], BUS_NAME))


def unit_values(path, key):
    """Every value of @key in the unit file (systemd takes many keys more
    than once, where configparser keeps the last)."""
    values = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith(key + "="):
                values.append(line[len(key) + 1:])
    return values


def check_unit_sandbox(unit):
    """What ptagsd needs of its unit's sandbox, by systemd's rules, which
    no test here can run (no systemd as PID 1):
    - ProtectKernelTunables= mounts /sys/fs/bpf read-only, and a
      ReadWritePaths= of that same path loses to it (of two mounts of one
      path systemd keeps the more restrictive), so the bpf backend could not
      make its pins: the unit must name the pin directory itself, which must
      exist before the sandbox is set up, so an ExecStartPre= run outside it
      ("+") makes it.
    - Type=dbus gets no notification socket without NotifyAccess=, and
      ptagsd reports readiness and its backend through it."""
    pin_dir = "/sys/fs/bpf/ptags"
    writable = [p.lstrip("-") for v in unit_values(unit, "ReadWritePaths") for p in v.split()]
    if unit_values(unit, "ProtectKernelTunables") == ["yes"]:
        if "/sys/fs/bpf" in writable:
            fail("ReadWritePaths=/sys/fs/bpf loses to ProtectKernelTunables=: name %s" % pin_dir)
        if pin_dir not in writable:
            fail("ReadWritePaths= does not name %s" % pin_dir)
        if not any("+" in v.split()[0] and "mkdir" in v and pin_dir in v
                   for v in unit_values(unit, "ExecStartPre")):
            fail("no ExecStartPre=+ makes %s before the sandbox is set up" % pin_dir)
    if unit_values(unit, "NotifyAccess") not in (["main"], ["all"]):
        fail("NotifyAccess= is %r: a Type=dbus unit gets no NOTIFY_SOCKET without it"
             % unit_values(unit, "NotifyAccess"))
    if unit_values(unit, "Restart") != ["on-failure"]:
        fail("Restart= is %r, expected on-failure" % unit_values(unit, "Restart"))
    # journald would drop applied changes' entries past its rate limit
    # without ptagsd knowing.
    if unit_values(unit, "LogRateLimitIntervalSec") != ["0"]:
        fail("LogRateLimitIntervalSec= is %r, expected 0"
             % unit_values(unit, "LogRateLimitIntervalSec"))


def syscall_groups():
    """{"@name": set of system calls}, as this systemd expands them."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], stdout=subprocess.PIPE,
                         check=True, text=True, timeout=30).stdout
    groups, current = {}, None
    for line in out.splitlines():
        word = line.strip()
        if line.startswith("@"):
            current = groups.setdefault(word, set())
        elif word and not word.startswith("#") and current is not None:
            current.add(word)

    def expand(name):
        calls = set()
        for item in groups[name]:
            calls |= expand(item) if item.startswith("@") else {item}
        return calls

    return {name: expand(name) for name in groups}


def check_unit_syscalls(unit):
    """The system calls ptagsd's unit lets through, by systemd's rules for
    SystemCallFilter= (the first line's sense makes it a list of calls
    allowed; then each line adds, or with "~" takes away, in order).
    CAP_SYS_PTRACE is kept for reading /proc/PID/exe and the namespace
    links of other users' processes: nothing that would let ptagsd read or
    write their memory or take their descriptors may pass."""
    groups = syscall_groups()
    allowed = None
    for value in unit_values(unit, "SystemCallFilter"):
        deny = value.startswith("~")
        calls = set()
        for item in value.lstrip("~").split():
            calls |= groups[item] if item.startswith("@") else {item}
        if allowed is None:
            if deny:
                fail("SystemCallFilter= starts with a deny list")
            allowed = set()
        allowed = allowed - calls if deny else allowed | calls
    if not allowed:
        fail("no SystemCallFilter=")
    for call in ("bpf", "capset", "prctl", "pidfd_open", "pidfd_send_signal", "sendmsg"):
        if call not in allowed:
            fail("ptagsd needs %s(2), which the unit's filter refuses" % call)
    for call in ("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
                 "pidfd_getfd", "perf_event_open", "init_module", "kexec_load", "setuid"):
        if call in allowed:
            fail("the unit's filter lets %s(2) through" % call)


CASES = {
    "polkit-actions": (check_polkit_actions, 1),
    "polkit-german": (check_polkit_german, 1),
    "activation": (check_activation, 4),
    "unit-sandbox": (check_unit_sandbox, 1),
    "unit-syscalls": (check_unit_syscalls, 1),
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CASES or len(sys.argv) - 2 != CASES[sys.argv[1]][1]:
        sys.exit("usage: check_data_files.py %s FILE..." % "|".join(CASES))
    CASES[sys.argv[1]][0](*sys.argv[2:])
    print("check_data_files: %s OK" % sys.argv[1])
