// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-echo.h: what the two reference services of the call benchmark
 * (bench-echo-gdbus, bench-echo-sdbus) answer: the shapes of ptagsd's
 * replies and signal, with canned contents. */
#pragma once

#define ECHO_PATH      "/org/ptags/Manager"
#define ECHO_INTERFACE "org.ptags.Manager"

/* GetTags answers 10 tags, TagsChanged carries 11, as for the benchmark's
 * target; FindTagged answers 1000 processes for this pattern, else 100,
 * each with the one tag that matched. */
#define ECHO_TAG_PREFIX   "bench:t"
#define ECHO_SIGNAL_LINE  "+bench:flip"
#define ECHO_PATTERN_100  "group:hundred"
#define ECHO_PATTERN_1000 "group:all"
#define ECHO_FIRST_PID    100000u

/* A change of this tag (the polkit row's) first asks polkitd, as ptagsd
 * asks for a caller that is not root: the same action, a subject naming
 * the caller's connection, and details like ptagsd's, which the
 * benchmark's rule allows. */
#define ECHO_POLKIT_TAG    "bench:mine"
#define ECHO_POLKIT_ACTION "org.ptags.tag.add"
#define ECHO_POLKIT_N      12
static const char *const echo_polkit_details[ECHO_POLKIT_N][2] = {
        {"tag", ECHO_POLKIT_TAG},
        {"prefix", "bench"},
        {"value", ""},
        {"keep", "false"},
        {"pid", "100000"},
        {"target-uid", "65534"},
        {"target-user", "nobody"},
        {"target-exe", "/usr/bin/sleep"},
        {"target-comm", "sleep"},
        {"target-unit", "bench.service"},
        {"self", "false"},
        {"caller-holds-right", "false"},
};

#define ECHO_XML                                                                                   \
        "<node><interface name='" ECHO_INTERFACE "'>"                                              \
        "<method name='GetTags'><arg type='u' direction='in'/>"                                    \
        "<arg type='a(sbs)' direction='out'/></method>"                                            \
        "<method name='AddTag'><arg type='u' direction='in'/><arg type='s' direction='in'/>"       \
        "<arg type='b' direction='in'/></method>"                                                  \
        "<method name='RemoveTag'><arg type='u' direction='in'/>"                                  \
        "<arg type='s' direction='in'/></method>"                                                  \
        "<method name='FindTagged'><arg type='s' direction='in'/>"                                 \
        "<arg type='a(ua(sbs))' direction='out'/></method>"                                        \
        "<signal name='TagsChanged'><arg type='u'/><arg type='as'/><arg type='a(sbs)'/>"           \
        "</signal></interface></node>"
