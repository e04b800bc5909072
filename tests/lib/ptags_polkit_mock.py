# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# ptags_polkit_mock.py: a python-dbusmock template standing in for polkitd on
# the private test bus, written for ptags (load with --template PATH).
#
# The stock dbusmock polkitd template cannot return a challenge, does not
# record what it was asked and has no CancelCheckAuthorization; ptags tests
# need all three to check the details every change is authorized with and
# the InteractiveAuthorizationRequired path. Every check is recorded (subject,
# action, details, flags, cancellation id) and can be read back as JSON.
#
# Control methods (interface org.freedesktop.DBus.Mock):
#   SetAllowed(as)          actions answered "authorized"
#   SetChallenge(as)        actions answered "challenge" (auth_admin): without
#                           the AllowUserInteraction flag (1) the result is
#                           is_challenge=true; with it, a simulated agent
#                           answers SetInteractiveAnswer's value
#   SetInteractiveAnswer(b) what the simulated agent answers (default false)
#   SetDeniedTags(as)       checks whose "tag" detail is one of these are
#                           denied whatever the action (per-tag decisions)
#   SetRightAllows(as)      for these actions, a check whose
#                           "caller-holds-right" detail is "true" is
#                           authorized, as the shipped 50-org.ptags.rules
#                           does for the tag actions
#   SetHangActions(as)      checks for these actions get no reply until
#                           ReleaseHangingCalls() (the answer is decided then)
#   ReleaseHangingCalls()   answer every hanging check
#   HangingCallCount() -> u how many checks are hanging
#   GetChecksJson() -> s    JSON list of every check so far
#   ClearChecks()           forget the recorded checks
#   GetCancellationsJson() -> s  JSON list of cancellation ids cancelled
#   SetCancelFails(b)       when true, CancelCheckAuthorization answers a
#                           hanging check normally and then fails the cancel
#                           with "No such cancellation_id", as polkitd does
#                           when its answer crossed the cancel on the bus
#   SetRandomTags(as, d, u) checks whose "tag" detail starts with one of
#                           these prefixes are answered "authorized" with the
#                           given probability, else denied (seeded, for load
#                           tests whose callers cannot know the outcome)
# Anything not allowed or challenged is denied (polkit's "no").

import json
import random

import dbus

from dbusmock import MOCK_IFACE

BUS_NAME = "org.freedesktop.PolicyKit1"
MAIN_OBJ = "/org/freedesktop/PolicyKit1/Authority"
MAIN_IFACE = "org.freedesktop.PolicyKit1.Authority"
SYSTEM_BUS = True

ALLOW_USER_INTERACTION = 1
CANCELLED_ERROR = "org.freedesktop.PolicyKit1.Error.Cancelled"


def load(mock, _parameters):
    mock.AddProperties(
        MAIN_IFACE,
        dbus.Dictionary(
            {
                "BackendName": "ptags-test-mock",
                "BackendVersion": "0.0",
                "BackendFeatures": dbus.UInt32(1, variant_level=1),
            },
            signature="sv",
        ),
    )
    mock.ptags_allowed = set()
    mock.ptags_challenge = set()
    mock.ptags_interactive_answer = False
    mock.ptags_hang = set()
    mock.ptags_denied_tags = set()
    mock.ptags_right_allows = set()
    mock.ptags_hanging = []  # [(ok_cb, err_cb, action_id, flags, cancellation_id, details)]
    mock.ptags_checks = []
    mock.ptags_cancelled = []
    mock.ptags_cancel_fails = False
    mock.ptags_random_prefixes = ()
    mock.ptags_random_p = 0.0
    mock.ptags_random = random.Random(0)


def _plain(value):
    """dbus-python types as plain JSON-friendly Python values."""
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.String, dbus.ObjectPath, dbus.Signature)):
        return str(value)
    if isinstance(value, (int,)):
        return int(value)
    if isinstance(value, (dbus.Array, dbus.Struct, list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (dbus.Dictionary, dict)):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _answer(mock, action_id, flags, details):
    """The (is_authorized, is_challenge, details) for one check, now."""
    tag = str(details.get("tag", ""))
    if tag in mock.ptags_denied_tags:
        return (False, False, {})
    if mock.ptags_random_prefixes and tag.startswith(mock.ptags_random_prefixes):
        return (mock.ptags_random.random() < mock.ptags_random_p, False, {})
    if action_id in mock.ptags_allowed:
        return (True, False, {})
    if action_id in mock.ptags_right_allows and details.get("caller-holds-right") == "true":
        return (True, False, {})
    if action_id in mock.ptags_challenge:
        if flags & ALLOW_USER_INTERACTION:
            return (bool(mock.ptags_interactive_answer), False, {})
        return (False, True, {})
    return (False, False, {})


@dbus.service.method(
    MAIN_IFACE,
    in_signature="(sa{sv})sa{ss}us",
    out_signature="(bba{ss})",
    async_callbacks=("ok_cb", "err_cb"),
)
def CheckAuthorization(self, subject, action_id, details, flags, cancellation_id, ok_cb, err_cb):
    self.ptags_checks.append(
        {
            "subject_kind": str(subject[0]),
            "subject": _plain(subject[1]),
            "action": str(action_id),
            "details": _plain(details),
            "flags": int(flags),
            "cancellation_id": str(cancellation_id),
        }
    )
    if action_id in self.ptags_hang:
        self.ptags_hanging.append(
            (ok_cb, err_cb, str(action_id), int(flags), str(cancellation_id), dict(details))
        )
        return
    ok_cb(_answer(self, action_id, flags, details))


@dbus.service.method(MAIN_IFACE, in_signature="s", out_signature="")
def CancelCheckAuthorization(self, cancellation_id):
    self.ptags_cancelled.append(str(cancellation_id))
    still = []
    for entry in self.ptags_hanging:
        if entry[4] != cancellation_id or cancellation_id == "":
            still.append(entry)
        elif self.ptags_cancel_fails:
            entry[0](_answer(self, entry[2], entry[3], entry[5]))
        else:
            entry[1](dbus.exceptions.DBusException("check cancelled", name=CANCELLED_ERROR))
    self.ptags_hanging = still
    if self.ptags_cancel_fails:
        raise dbus.exceptions.DBusException(
            "No such cancellation_id `%s'" % cancellation_id,
            name="org.freedesktop.PolicyKit1.Error.Failed")


@dbus.service.method(MAIN_IFACE, in_signature="(sa{sv})ss", out_signature="")
def RegisterAuthenticationAgent(_self, _subject, _locale, _object_path):
    pass


@dbus.service.method(MOCK_IFACE, in_signature="as", out_signature="")
def SetAllowed(self, actions):
    self.ptags_allowed = set(str(a) for a in actions)


@dbus.service.method(MOCK_IFACE, in_signature="as", out_signature="")
def SetChallenge(self, actions):
    self.ptags_challenge = set(str(a) for a in actions)


@dbus.service.method(MOCK_IFACE, in_signature="b", out_signature="")
def SetInteractiveAnswer(self, answer):
    self.ptags_interactive_answer = bool(answer)


@dbus.service.method(MOCK_IFACE, in_signature="as", out_signature="")
def SetDeniedTags(self, tags):
    self.ptags_denied_tags = set(str(t) for t in tags)


@dbus.service.method(MOCK_IFACE, in_signature="as", out_signature="")
def SetRightAllows(self, actions):
    self.ptags_right_allows = set(str(a) for a in actions)


@dbus.service.method(MOCK_IFACE, in_signature="as", out_signature="")
def SetHangActions(self, actions):
    self.ptags_hang = set(str(a) for a in actions)


@dbus.service.method(MOCK_IFACE, in_signature="", out_signature="")
def ReleaseHangingCalls(self):
    hanging, self.ptags_hanging = self.ptags_hanging, []
    for ok_cb, _err_cb, action_id, flags, _cid, details in hanging:
        ok_cb(_answer(self, action_id, flags, details))


@dbus.service.method(MOCK_IFACE, in_signature="", out_signature="u")
def HangingCallCount(self):
    return dbus.UInt32(len(self.ptags_hanging))


@dbus.service.method(MOCK_IFACE, in_signature="", out_signature="s")
def GetChecksJson(self):
    return json.dumps(self.ptags_checks)


@dbus.service.method(MOCK_IFACE, in_signature="", out_signature="")
def ClearChecks(self):
    self.ptags_checks = []


@dbus.service.method(MOCK_IFACE, in_signature="asdu", out_signature="")
def SetRandomTags(self, prefixes, probability, seed):
    self.ptags_random_prefixes = tuple(str(p) for p in prefixes)
    self.ptags_random_p = float(probability)
    self.ptags_random = random.Random(int(seed))


@dbus.service.method(MOCK_IFACE, in_signature="b", out_signature="")
def SetCancelFails(self, fails):
    self.ptags_cancel_fails = bool(fails)


@dbus.service.method(MOCK_IFACE, in_signature="", out_signature="s")
def GetCancellationsJson(self):
    return json.dumps(self.ptags_cancelled)
