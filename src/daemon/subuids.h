// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* subuids.h: whose budgets a uid draws on.
 *
 * A user given a range of subordinate uids (/etc/subuid, "OWNER:FIRST:COUNT",
 * which useradd fills with 65536 uids per user on Debian) runs processes as
 * any of them in a user namespace, and they reach the system bus as those
 * uids. Were each bounded alone, one user would hold 65536 shares of every
 * per-uid budget: waiting places at polkit, turns at expensive reads,
 * unread replies, refusal records, containers and tag bytes. So a uid of a
 * range draws on the budgets of the range's owner. Root hands its ranges
 * out to containers, 65536 uids each: each block of 65536 uids of a range
 * root owns draws on a budget of its own, its first uid's, never on root's
 * (which the per-uid bounds leave out). Only budgets are shared: every
 * decision about who may do what, and every record, still names the uid
 * itself. */
#pragma once

#include <glib.h>
#include <sys/types.h>

typedef struct _PtagsSubuidTable PtagsSubuidTable;

/* Resolves an owner's login name to its uid; FALSE when it has none. */
typedef gboolean (*PtagsUserLookup)(const char *name, uid_t *uid);

/* The ranges of @text, in /etc/subuid's format. Owners are uids or names
 * (@lookup). A line that does not parse, or names an unknown owner, an
 * empty range, one holding uid 0 or one past the last uid, is left out
 * (ptags_subuid_table_skipped). A uid in two ranges belongs to the one that
 * starts first. (transfer full: ptags_subuid_table_free) */
PtagsSubuidTable *ptags_subuid_table_parse(const char *text, PtagsUserLookup lookup);
void ptags_subuid_table_free(PtagsSubuidTable *t);
/* The uid whose budgets @uid draws on in @t (@uid itself outside every
 * range, and for 0). @t may be NULL. */
uid_t ptags_subuid_table_budget_uid(const PtagsSubuidTable *t, uid_t uid);
guint ptags_subuid_table_ranges(const PtagsSubuidTable *t);
/* The lines left out. */
guint ptags_subuid_table_skipped(const PtagsSubuidTable *t);
/* Lines left out for an owner @lookup did not know (the service asks the
 * user database again later: it may not be up yet). */
guint ptags_subuid_table_unknown_owners(const PtagsSubuidTable *t);

/* The service's table: read from @path now (an empty one when @path is
 * NULL, "" or missing), and again, in a thread, once a lookup finds the
 * file changed (lookups look at most once a second). Main thread. */
void ptags_subuids_start(const char *path);
void ptags_subuids_stop(void);
/* ptags_subuid_table_budget_uid() in the service's table. Any thread. */
uid_t ptags_budget_uid(uid_t uid);
