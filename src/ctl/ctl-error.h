// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-error.h: ptagsctl's exit codes and the one way it reports a bad
 * command line or a failed call, shared by every command. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/* Exit codes, documented in man/ptagsctl.1; scripts depend on them. */
enum {
        EXIT_OK = 0,
        EXIT_NO_MATCH = 1,    /* check: no matching tag */
        EXIT_USAGE = 2,       /* bad command line, nothing was asked */
        EXIT_INVALID = 3,     /* ptagsd refused the input */
        EXIT_DENIED = 4,      /* not authorized */
        EXIT_NO_PROCESS = 5,  /* no such process, peer or container */
        EXIT_UNREACHABLE = 6, /* no bus, or no ptagsd on it */
        EXIT_FAILED = 7,      /* any other failure */
        EXIT_EXEC_FAILED = 126,
        EXIT_EXEC_NOT_FOUND = 127,
};

/* "ptagsctl: MESSAGE" and the --help hint on stderr; returns EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Says on stderr what failed (@what) and why (the D-Bus error's message
 * and name, else strerror(-r)); returns the documented exit code. */
int ctl_call_failed(const char *what, int r, const sd_bus_error *error);

/* "ptagsctl: WHAT: MESSAGE" on stderr, for input ptagsctl refuses on its
 * own as ptagsd would; returns EXIT_INVALID. */
int ctl_invalid(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Text the command line gives for a D-Bus string (@given; "@what: " is
 * said first): EXIT_OK, or EXIT_INVALID after saying, with the text shown
 * escaped, that it is not valid UTF-8, as no D-Bus string can be, or that
 * it holds a Unicode noncharacter, which sd-bus does not send and ptagsd
 * does not take. */
int ctl_check_utf8(const char *what, const char *given);

/* A decimal pid, or "self" (pid 0 on the bus: ptagsctl's own process)
 * where @allow_self. Returns 0, or EXIT_USAGE after saying why. */
int ctl_parse_pid(const char *s, bool allow_self, uint32_t *ret);
