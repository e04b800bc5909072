// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* authority.h: every authorization decision of ptagsd: the one table from
 * change kind to polkit action, the details polkit rules see, and the async
 * checks (timeout, cancellation, interactive flag). */
#pragma once

#include <gio/gio.h>
#include <polkit/polkit.h>

#include "names.h"
#include "ptags-model.h"
#include "target.h"

/* The polkit action for change @c, or NULL (deny) for a kind the table does
 * not know. Any change to a "ptags:" rights tag is org.ptags.rights.change. */
const char *ptags_authority_action_for_change(const ptags_change *c);

/* The details of one check, as documented in the policy file. */
typedef struct {
        const ptags_change *change;
        pid_t pid;
        const PtagsProcessInfo *target;
        gboolean self;               /* the caller targets itself */
        gboolean caller_holds_right; /* the kernel's rights model would allow it */
} PtagsCheckFacts;

/* (transfer full) */
PolkitDetails *ptags_authority_details(const PtagsCheckFacts *facts);

/* Adds the target's details (pid, target-*, self) to @d. Text that is not
 * UTF-8 is left out as unknown (target-comm reads ""). */
void ptags_authority_insert_target(PolkitDetails *d, pid_t pid, const PtagsProcessInfo *target,
                                   gboolean self);

/* One pending check of a batch. A change's check keeps its facts and builds
 * the details only when it is sent to polkit, so the checks of a call still
 * waiting for polkit hold no details. */
typedef struct {
        const char *action_id;  /* static */
        PolkitDetails *details; /* owned; NULL for a change's check */
        PtagsCheckFacts facts;  /* a change's check: points into its call */
        char *label;            /* owned: what errors and logs name ('tag "app:a"') */
} PtagsCheck;

typedef struct _PtagsAuthority PtagsAuthority;

/* @timeout_seconds: how long polkit may take before the check counts as
 * denied; @max_batches_per_user: how many calls of one uid other than 0 may
 * wait for their checks at once (MaxPolkitCalls). (transfer full:
 * ptags_authority_free) */
PtagsAuthority *ptags_authority_new(guint timeout_seconds, guint max_batches_per_user);
void ptags_authority_free(PtagsAuthority *a);

/* One of @uid's MaxPolkitCalls places (@uid: whose budgets the caller
 * draws on, subuids.h), for a call that waits on polkit
 * another way (for another call's check): FALSE and LimitExceeded when
 * they are all taken (never for root). Given back with give_slot. */
gboolean ptags_authority_take_slot(PtagsAuthority *a, uid_t uid, GError **error);
void ptags_authority_give_slot(PtagsAuthority *a, uid_t uid);

/* Authorize every check of @checks (array of PtagsCheck*) for the bus name
 * @sender (drawing on @uid's budgets, subuids.h), concurrently; the first denial fails the whole
 * batch and cancels the rest. @interactive: the method call allowed interactive authorization.
 * Errors: NotAuthorized (denied, polkit missing/failing/too slow), LimitExceeded
 * (@uid has MaxPolkitCalls batches waiting already),
 * org.freedesktop.DBus.Error.InteractiveAuthorizationRequired, or
 * G_IO_ERROR_CANCELLED when @cancellable fired (the caller left). */
void ptags_authority_check_all_async(PtagsAuthority *a, const char *sender, uid_t uid,
                                     GPtrArray *checks, gboolean interactive,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data);
gboolean ptags_authority_check_all_finish(GAsyncResult *result, GError **error);
/* After a failed check_all_finish(): whether polkit itself said no (not
 * authorized, or authorization needing an interaction the call did not
 * allow), as opposed to failing, being too slow, a budget or the caller
 * leaving. */
gboolean ptags_authority_denied(GAsyncResult *result);

/* PtagsCheck constructors/destructor for GPtrArray. (transfer full: @details)
 * @label names what is checked in errors and logs ("container 42"). */
PtagsCheck *ptags_check_new(const char *action_id, PolkitDetails *details, const char *label);
/* The check of one change: what @facts point to must outlive the batch's
 * decision (the call that owns the plan and target info waits for it). */
PtagsCheck *ptags_check_new_for_change(const PtagsCheckFacts *facts);
void ptags_check_free(PtagsCheck *check);
