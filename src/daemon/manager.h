// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager.h: the one exported object, /org/ptags/Manager, and the handlers of
 * every org.ptags.Manager method. */
#pragma once

#include <gio/gio.h>

#include "authority.h"
#include "backend.h"
#include "budgets.h"

/* Limits of one Apply batch, checked before any work (documented in the
 * interface XML). */
#define PTAGS_APPLY_MAX_LINES 4096u
#define PTAGS_APPLY_MAX_BYTES (1024u * 1024u)

typedef struct _PtagsService PtagsService;

/* Export the manager on @connection with the budgets @limits (copied).
 * Borrows @backend and @authority, which must outlive the service.
 * (transfer full: ptags_service_free) */
PtagsService *ptags_service_new(GDBusConnection *connection, PtagsBackend *backend,
                                PtagsAuthority *authority, const PtagsLimits *limits,
                                GError **error);
void ptags_service_free(PtagsService *svc);

/* The a(sbs) form of a tag list. (transfer floating) */
GVariant *ptags_set_to_variant(const ptags_set *set);

/* Check only the size limits of Apply's @lines. */
gboolean ptags_lines_check_limits(const char *const *lines, GError **error);

/* Check the size limits and the shape of Apply's @lines (no '\n', every line
 * parses), naming the first bad line. */
gboolean ptags_lines_validate(const char *const *lines, GError **error);

/* "line N (\"text\")", N counted from 1, the text shortened when long.
 * (transfer full) */
char *ptags_line_label(size_t index, const char *line);
