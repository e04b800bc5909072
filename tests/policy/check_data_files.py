# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# check_data_files.py: content checks of the built data files that no schema expresses:
# the polkit actions and their translations, and the names the three D-Bus/systemd files must share.
#
# Usage: check_data_files.py CASE FILE...
#   polkit-actions  BUILT_POLICY            six actions, documented defaults and details
#   polkit-german   BUILT_POLICY            every string translated, same $(detail)s
#   activation      BUS_POLICY DBUS_SERVICE UNIT LIBEXECDIR

import configparser
import re
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


CASES = {
    "polkit-actions": (check_polkit_actions, 1),
    "polkit-german": (check_polkit_german, 1),
    "activation": (check_activation, 4),
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CASES or len(sys.argv) - 2 != CASES[sys.argv[1]][1]:
        sys.exit("usage: check_data_files.py %s FILE..." % "|".join(CASES))
    CASES[sys.argv[1]][0](*sys.argv[2:])
    print("check_data_files: %s OK" % sys.argv[1])
