// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-error.c: how ptagsctl turns a bad command line or a D-Bus error into
 * a message on stderr and one of the exit codes of man/ptagsctl.1. */
#include "ctl-error.h"

#include <errno.h>
#include <libintl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-output.h"

#define _(s) gettext(s)

static const struct {
        const char *name;
        int code;
} error_codes[] = {
        {"org.ptags.Error.InvalidTag", EXIT_INVALID},
        {"org.ptags.Error.InvalidValue", EXIT_INVALID},
        {"org.ptags.Error.InvalidPattern", EXIT_INVALID},
        {"org.ptags.Error.InvalidCommand", EXIT_INVALID},
        {"org.ptags.Error.NoSuchTag", EXIT_INVALID},
        {"org.freedesktop.DBus.Error.InvalidArgs", EXIT_INVALID},
        /* The container rules refuse this pid and ID; the message says why. */
        {"org.ptags.Error.InvalidContainerId", EXIT_INVALID},
        {"org.ptags.Error.SelfTarget", EXIT_INVALID},
        {"org.ptags.Error.NotDescendant", EXIT_INVALID},
        {"org.ptags.Error.TargetBusy", EXIT_INVALID},
        {"org.ptags.Error.AlreadyRegistered", EXIT_INVALID},
        {"org.ptags.Error.ContainerIdInUse", EXIT_INVALID},
        {"org.ptags.Error.NotAuthorized", EXIT_DENIED},
        {"org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", EXIT_DENIED},
        {"org.freedesktop.DBus.Error.AccessDenied", EXIT_DENIED},
        {"org.ptags.Error.NoSuchProcess", EXIT_NO_PROCESS},
        {"org.ptags.Error.NoSuchContainer", EXIT_NO_PROCESS},
        {"org.freedesktop.DBus.Error.ServiceUnknown", EXIT_UNREACHABLE},
        {"org.freedesktop.DBus.Error.NameHasNoOwner", EXIT_UNREACHABLE},
        /* ptagsd died before it answered. */
        {"org.freedesktop.DBus.Error.NoReply", EXIT_UNREACHABLE},
        /* No answer in time: sd-bus names its own timeout so (never ptagsd,
         * whose polkit timeout is NotAuthorized). */
        {"org.freedesktop.DBus.Error.Timeout", EXIT_UNREACHABLE},
        {"org.freedesktop.DBus.Error.TimedOut", EXIT_UNREACHABLE},
        {"org.freedesktop.DBus.Error.Disconnected", EXIT_UNREACHABLE},
};

int ctl_usage_error(const char *fmt, ...)
{
        va_list ap;

        fputs("ptagsctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n%s\n", _("Try 'ptagsctl --help' for more information."));
        return EXIT_USAGE;
}

int ctl_invalid(const char *what, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "ptagsctl: %s: ", what);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_INVALID;
}

int ctl_call_failed(const char *what, int r, const sd_bus_error *error)
{
        int code = EXIT_FAILED;

        if (sd_bus_error_is_set(error)) {
                for (size_t i = 0; i < sizeof(error_codes) / sizeof(error_codes[0]); i++) {
                        if (strcmp(error->name, error_codes[i].name) == 0)
                                code = error_codes[i].code;
                }
                /* The bus could not start ptagsd: dbus-daemon's own
                 * errors, or systemd's when it starts the unit. */
                if (strncmp(error->name, "org.freedesktop.DBus.Error.Spawn.", 33) == 0 ||
                    strncmp(error->name, "org.freedesktop.systemd1.", 25) == 0)
                        code = EXIT_UNREACHABLE;
                fprintf(stderr, "ptagsctl: %s: %s (%s)\n", what,
                        error->message ? error->message : error->name, error->name);
                if (strcmp(error->name,
                           "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired") == 0)
                        fprintf(stderr, "ptagsctl: %s\n",
                                _("Authentication is required; run ptagsctl on a terminal "
                                  "without --no-ask-password, or ask your administrator for a "
                                  "polkit rule."));
                return code;
        }
        if (r == -ENOENT || r == -ECONNREFUSED || r == -ECONNRESET || r == -ETIMEDOUT)
                code = EXIT_UNREACHABLE;
        else if (r == -ESRCH)
                code = EXIT_NO_PROCESS;
        fprintf(stderr, "ptagsctl: %s: %s\n", what, strerror(-r));
        return code;
}

int ctl_check_utf8(const char *what, const char *given)
{
        bool valid = ctl_utf8_valid(given);
        long nonchar = valid ? ctl_noncharacter(given) : 0;

        if (valid && nonchar == 0)
                return EXIT_OK;
        /* Not raw: the bytes are not text, and the user chose them. */
        char *shown = ctl_escape(given);
        int r = valid ? ctl_invalid(what,
                                    _("'%s' holds U+%04lX, a Unicode noncharacter, which "
                                      "ptagsd does not take"),
                                    shown ? shown : "?", nonchar)
                      : ctl_invalid(what, _("'%s' is not valid UTF-8"), shown ? shown : "?");
        free(shown);
        return r;
}

/* A decimal pid, or "self" (this ptagsctl process, pid 0 on the bus) where
 * @allow_self. 0 is refused: on the bus it would mean ptagsctl itself. */
int ctl_parse_pid(const char *s, bool allow_self, uint32_t *ret)
{
        char *end;

        if (allow_self && strcmp(s, "self") == 0) {
                *ret = 0;
                return 0;
        }
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v == 0 || v > INT32_MAX)
                return ctl_usage_error(allow_self
                                               ? _("Invalid process '%s': expected a process id "
                                                   "or 'self'.")
                                               : _("Invalid process '%s': expected a process id."),
                                       s);
        *ret = (uint32_t)v;
        return 0;
}
