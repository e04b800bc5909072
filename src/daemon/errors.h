// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* errors.h: the daemon's one error domain (org.ptags.Error.*) and the one
 * table mapping model results and kernel errnos onto it. */
#pragma once

#include <gio/gio.h>

#include "ptags-model.h"

#define PTAGS_ERROR (ptags_error_quark())

/* Order matches the table in errors.c; names are API (org.ptags.Manager(5)). */
typedef enum {
        PTAGS_ERROR_INVALID_TAG,
        PTAGS_ERROR_INVALID_VALUE,
        PTAGS_ERROR_INVALID_PATTERN,
        PTAGS_ERROR_INVALID_COMMAND,
        PTAGS_ERROR_NO_SUCH_PROCESS,
        PTAGS_ERROR_NO_SUCH_TAG,
        PTAGS_ERROR_TOO_MANY_TAGS,
        PTAGS_ERROR_NOT_AUTHORIZED,
        PTAGS_ERROR_NOT_SUPPORTED,
        PTAGS_ERROR_SELF_TARGET,
        PTAGS_ERROR_NOT_DESCENDANT,
        PTAGS_ERROR_TARGET_BUSY,
        PTAGS_ERROR_ALREADY_REGISTERED,
        PTAGS_ERROR_CONTAINER_ID_IN_USE,
        PTAGS_ERROR_INVALID_CONTAINER_ID,
        PTAGS_ERROR_NO_SUCH_CONTAINER,
        /* A budget or size bound (budgets.h) would be exceeded. */
        PTAGS_ERROR_LIMIT_EXCEEDED,
        PTAGS_ERROR_FAILED,
        /* The standard D-Bus name for "polkit would ask, but the caller did
         * not allow interaction"; GLib 2.74 has no code for it. */
        PTAGS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
        PTAGS_ERROR_N_CODES,
} PtagsError;

/* Registers the D-Bus names on first use. */
GQuark ptags_error_quark(void);

/* The full D-Bus error name of @code ("org.ptags.Error.InvalidTag"), or NULL
 * for an unknown code. (transfer none, static) */
const char *ptags_error_dbus_name(PtagsError code);

/* The error for a model result other than PTAGS_OK (NOT_PERMITTED maps to
 * NotAuthorized, NOMEM to Failed). */
PtagsError ptags_error_from_result(ptags_result r);

/* The error for a positive kernel/backend errno, as the kernel's interfaces
 * use them (EACCES = a mainline kernel refusing foreign attr writes, hence
 * NotSupported; ESRCH/ENOENT of a process file = NoSuchProcess). */
PtagsError ptags_error_from_errno(int errnum);

/* The error for a backend failure (-errno) on process @pid, its message
 * "@what process PID: reason". (transfer full) */
GError *ptags_errno_error(int neg_errno, const char *what, pid_t pid);
