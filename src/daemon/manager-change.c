// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager-change.c: the change methods (AddTag ... ApplyFd) and the one
 * pipeline every change goes through.
 *
 * The life of a change, in the order the code runs it:
 *
 *  1. Check the arguments (handle_*, args.c): synchronously, before any I/O,
 *     so bad input gets the same named error whatever the process state.
 *  2. Learn the caller (call_lookup_peer): uid, process and pid
 *     namespace, cached per unique name until it leaves the bus. A caller
 *     in a pid namespace other than ptagsd's may name only itself (0) or
 *     a pidfd.
 *  3. Pin the target (call_pin_pid, target.c): a pidfd, so a pid freed and
 *     reused later can never be the one changed; pid 0 is the caller's own
 *     process, and only when the bus's identity proves it (peer-cache.c).
 *     An Fd method's target is pinned by its descriptor before step 2.
 *  4. Plan in the caller uid's turn (change_start, change_read_and_plan):
 *     read the target's tags, resolve the lines against them (the model
 *     library), drop what changes nothing, check the budgets (checked
 *     again in step 6; the change counts against its uid's sum once
 *     applied, step 7). A plan that changes nothing is answered at once.
 *  5. Authorize (change_authorize, authority.c): one polkit check per
 *     change, with the details rules see; root is not asked. The call is
 *     cancelled if its caller leaves the bus.
 *  6. Re-check (change_commit): the budgets once more (this may walk every
 *     process, so it comes first), then the target still runs, still holds
 *     what the plan was made from, and is still the program polkit was told
 *     about, and the caller still holds the rights polkit was told of. If
 *     not, plan and authorize once more, holding the target's
 *     re-authorization lock (call.c) so other callers do not overtake it.
 *     Root skips all but the budgets: its plan was made in the same
 *     dispatch.
 *  7. Apply (change_apply, backend-*.c): written to the kernel through the
 *     pinned pidfd, whole or not at all.
 *  8. Log: a journal entry and audit records (log.c), for refusals too,
 *     queued before the reply for log-writer.c's thread; a change is
 *     refused at step 7 while too many records wait to be written.
 *  9. Signal TagsChanged with the tags the kernel now holds.
 * 10. Reply.
 *
 * Steps 6 to 10 run within one main-loop dispatch and the backend applies
 * synchronously, so no two changes interleave on one target.
 *
 * Root's changes need no polkit, so nothing in their life waits: when the
 * caller is known and no earlier call of its connection is still on its way
 * to or in flight on the main loop, the whole life runs in GDBus's worker
 * thread as the message arrives, holding the main loop's lock
 * (bus-thread.c), which saves the two thread hops through the main loop.
 * It is the same code; a step that would wait refuses such a call
 * (call_may_wait), and bus-thread.c only admits calls that never reach one. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "authority.h"
#include "errors.h"
#include "log.h"
#include "log-writer.h"
#include "args.h"
#include "bus-thread.h"
#include "call.h"
#include "manager-budgets.h"
#include "page-writer.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void change_authorize(Call *call);

static void log_context(Call *call, PtagsLogContext *ctx)
{
        ctx->pid = call->target.pid;
        ctx->caller_pid = call->caller ? call->caller->target.pid : 0;
        ctx->caller_uid = call->caller ? call->caller->uid : (uid_t)-1;
        ctx->method = call->method;
}

/* Log @call's refusal with @error (transfer full) and fail it. */
static void change_refuse(Call *call, GError *error)
{
        PtagsLogContext ctx;

        log_context(call, &ctx);
        ptags_log_refused(&ctx, call->plan, error);
        call_fail(call, error);
}

/* "argument tag (\"x\")" or "line 3 (\"+x\")": what an error is about. */
static char *change_label(Call *call, size_t line)
{
        if (call->arg_name != NULL) {
                g_autofree char *text = ptags_shorten(call->arg);
                return g_strdup_printf("argument %s (\"%s\")", call->arg_name, text);
        }
        return ptags_line_label(line, call->lines[line]);
}

/* Resolve the lines against the current tags into call->plan, unchecked;
 * when @bounded, no further than a caller other than root may go. */
static gboolean change_plan_only(Call *call, gboolean bounded, GError **error)
{
        size_t failed = 0;
        ptags_plan *plan = NULL;
        /* A plan polkit would be asked about change by change is refused
         * past MaxPolkitChanges: it is not copied further than that (a
         * pattern over a process holding megabytes of tags). */
        gboolean asks = bounded && call->caller != NULL && call->caller->uid != 0;
        guint most = call->svc->limits.polkit_changes;
        ptags_result r = ptags_plan_build_bounded(
                call->current, (const char *const *)call->lines, NULL, g_strv_length(call->lines),
                asks ? (size_t)most + 1 : PTAGS_PLAN_MAX_CHANGES, &plan, &failed);

        /* The bound's own refusal, when no other bound of the plan (its
         * bytes) can come first. */
        gboolean ours = (guint64)most + 1 < PTAGS_PLAN_MAX_CHANGES &&
                        ((guint64)most + 1) * (PTAGS_MAX_TAG_LEN + 2 * PTAGS_MAX_VALUE_LEN) <=
                                PTAGS_PLAN_MAX_BYTES;
        if (r == PTAGS_E_BATCH_TOO_LARGE && asks && ours) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "more than %u changes on process %d need polkit, over the "
                            "MaxPolkitChanges limit of %u for one call; split the batch",
                            most, (int)call->target.pid, most);
                return FALSE;
        }
        if (r != PTAGS_OK) {
                g_autofree char *label = change_label(call, failed);
                g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r), "%s: %s (process %d)",
                            label, ptags_result_message(r), (int)call->target.pid);
                return FALSE;
        }
        ptags_plan_free(call->plan);
        call->plan = plan;
        return TRUE;
}

/* What call->plan may not be, whoever allows it. */
static gboolean change_plan_check(Call *call, GError **error)
{
        /* Budgets are checked before polkit is asked; a user's sum (a scan)
         * is taken again at commit, and only then for root. */
        if (!change_check_budgets(call, BUDGETS_BEFORE_POLKIT, error))
                return FALSE;

        /* What the backend cannot write is refused before anyone is asked. */
        size_t max = call->svc->backend->ops->max_line;
        if (max == 0)
                return TRUE;
        const ptags_plan *plan = call->plan;
        g_autoptr(GPtrArray) lines = ptags_plan_lines(plan);
        for (guint i = 0; i < lines->len; i++) {
                if (strlen(lines->pdata[i]) <= max)
                        continue;
                g_autofree char *label = change_label(call, ptags_plan_change_at(plan, i)->line);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                            "%s: the change is longer than the %zu bytes the %s backend can "
                            "write in one line",
                            label, max, call->svc->backend->ops->name);
                return FALSE;
        }
        return TRUE;
}

/* Resolve the lines against the current tags into call->plan. */
static gboolean change_plan(Call *call, GError **error)
{
        return change_plan_only(call, TRUE, error) && change_plan_check(call, error);
}

/* FALSE, with the call refused (and logged), when the target exited
 * meanwhile. */
static gboolean target_still_runs(Call *call)
{
        if (ptags_target_alive(&call->target))
                return TRUE;
        change_refuse(call,
                      g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                  "process %d exited during authorization", (int)call->target.pid));
        return FALSE;
}

/* The error of a failed write. The plan held when ptagsd read the tags, so
 * a line the kernel refuses means another writer (one with CAP_MAC_ADMIN,
 * writing the kernel's file directly) or the target's exec changed them
 * since: ENOENT, a tag whose value is set is gone; ECANCELED, the list
 * filled up. A partial write says so: it is no refusal, whatever the log
 * calls it. */
static GError *apply_error(Call *call, int r, const PtagsApplyFailure *failure)
{
        pid_t pid = call->target.pid;

        if (failure->lost_rights)
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                   "cannot change the tags of process %d: another writer took "
                                   "ptagsd's own rights tags away, so the kernel refused its "
                                   "write%s (ptagsd's log says whether it could give them back)",
                                   (int)pid,
                                   failure->partial ? ": the process holds part of this change"
                                                    : "; nothing changed");
        if (failure->partial && failure->refused < 0)
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                   "cannot change the tags of process %d: %s, after part of the "
                                   "change was written: the process holds part of this change",
                                   (int)pid, g_strerror(-r));
        if (failure->refused < 0 || (gsize)failure->refused >= ptags_plan_change_count(call->plan))
                return ptags_errno_error(r, "cannot change the tags of", pid);
        const ptags_change *c = ptags_plan_change_at(call->plan, (gsize)failure->refused);
        g_autofree char *label = change_label(call, c->line);
        PtagsError code = ptags_error_from_errno(-r);
        const char *why = g_strerror(-r);
        if (r == -ENOENT) {
                code = PTAGS_ERROR_NO_SUCH_TAG;
                why = "its tag is gone";
        } else if (r == -EINVAL && !failure->partial) {
                /* The model took the line: the kernel's grammar is
                 * narrower (the 2016 code refuses bytes past 0x7f where
                 * char is signed, as on x86-64). No other writer did it. */
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                                   "cannot change the tags of process %d: the kernel refused %s "
                                   "as invalid, though ptags(7) allows it (a kernel that takes "
                                   "no bytes past 0x7f?); nothing changed",
                                   (int)pid, label);
        }
        if (failure->partial)
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                   "cannot change the tags of process %d: the kernel refused %s "
                                   "(%s: another writer, or an exec, changed the tags after "
                                   "ptagsd read them), and the lines before it could not all be "
                                   "taken back (the tags changed again, or a tag held without "
                                   "the keep flag would have had to be given back, which ptagsd "
                                   "never does: the process may run a new program): the process "
                                   "holds part of this change",
                                   (int)pid, label, why);
        return g_error_new(PTAGS_ERROR, code,
                           "cannot change the tags of process %d: the kernel refused %s (%s: "
                           "another writer, or an exec, changed the tags after ptagsd read "
                           "them); nothing changed",
                           (int)pid, label, why);
}

/* The process holds part of the change (its undo failed, or left out a
 * tag without the keep flag an exec may have dropped): logged
 * always, and announced with the tags read back, since its tags changed. */
static void change_partial(Call *call, GError *error)
{
        PtagsLogContext ctx;

        log_context(call, &ctx);
        ptags_log_partial(&ctx, call->plan, error);
        if (ptags_target_alive(&call->target) && call_read_current(call, NULL)) {
                ptags_byte_cache_applied(call->svc->byte_cache, call->target.pid,
                                         ptags_set_bytes(call->current));
                /* Within the bound of every message: another writer may
                 * have grown the tags meanwhile (it made the write fail),
                 * and a list too large to send is not announced. */
                const char *lines[] = {"# part of this change failed: the tags as read back", NULL};
                if (ptags_set_wire_bound(call->current) + strlen(lines[0]) +
                            PTAGS_WIRE_HEADER_OVERHEAD <=
                    PTAGS_MAX_MESSAGE_BYTES)
                        g_dbus_connection_emit_signal(
                                call->svc->connection, NULL, PTAGS_OBJECT_PATH, PTAGS_INTERFACE,
                                "TagsChanged",
                                g_variant_new("(u^as@a(sbs))", (guint32)call->target.pid, lines,
                                              ptags_set_to_variant(call->current)),
                                NULL);
        }
        call_fail(call, error);
}

/* Apply, log, signal and reply: steps 7 to 10 of a change whose plan still
 * holds. This runs within one main-loop dispatch (or holding the main loop's
 * lock in the bus thread) and the backend applies
 * synchronously, so no two daemon calls can interleave on one target: a
 * later call's re-read sees this one's result and re-plans, while polkit
 * checks of every call run concurrently. */
static void change_apply(Call *call)
{
        PtagsLogContext ctx;
        pid_t pid = call->target.pid;
        GError *error = NULL;

        if (!ptags_log_audit_ready(&error) || !ptags_log_writer_has_room(&error)) {
                change_refuse(call, error);
                return;
        }
        PtagsApplyFailure failure;
        int r = ptags_backend_apply(call->svc->backend, call->target.pidfd, pid, call->plan,
                                    call->exec_mark, &failure);
        if (r < 0 && failure.partial) {
                change_partial(call, apply_error(call, r, &failure));
                return;
        }
        if (r < 0) {
                change_refuse(call, apply_error(call, r, &failure));
                return;
        }
        log_context(call, &ctx);
        guint64 bytes = ptags_set_bytes(ptags_plan_result(call->plan));
        if (call->expects_bytes)
                ptags_byte_cache_expect(call->svc->byte_cache, pid, call->expect_uid, bytes);
        ptags_byte_cache_applied(call->svc->byte_cache, pid, bytes);
        ptags_log_changed(&ctx, call->plan);
        if (!ptags_target_alive(&call->target)) {
                call_fail(call,
                          g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                      "process %d exited while its tags were changed", (int)pid));
                return;
        }
        /* Signal the tags the kernel now holds; fall back to the plan's result
         * (also when a writer around ptagsd grew them past what was sized). */
        GVariant *tags = call_read_current(call, NULL) &&
                                         ptags_set_wire_bound(call->current) <=
                                                 ptags_set_wire_bound(ptags_plan_result(call->plan))
                                 ? ptags_set_to_variant(call->current)
                                 : ptags_set_to_variant(ptags_plan_result(call->plan));
        g_auto(GStrv) lines = change_signal_lines(call);
        /* Straight to the bus: the skeleton would first emit a GObject
         * signal nobody in ptagsd listens to. */
        g_dbus_connection_emit_signal(
                call->svc->connection, NULL, PTAGS_OBJECT_PATH, PTAGS_INTERFACE, "TagsChanged",
                g_variant_new("(u^as@a(sbs))", (guint32)pid, lines, tags), NULL);
        call_return(call, NULL);
}

/* What the caller's own process grants it, as polkit is told: whether it is
 * the target (*@self) and, per change of the plan, whether its tags grant
 * the change under the kernel's rights model (one bool per change,
 * transfer full). */
static bool *caller_rights(Call *call, gboolean *self)
{
        /* Only a caller whose process is proven to be the connection's can
         * be "self" or hold rights through its tags or capabilities. */
        const PtagsPeer *caller = call->caller;
        gboolean known = caller->process_known;
        ptags_set *caller_tags = NULL;
        if (known && ptags_backend_read(call->svc->backend, caller->target.pidfd,
                                        caller->target.pid, &caller_tags) < 0)
                caller_tags = NULL; /* unknown tags grant no rights */
        *self = known && caller->target.pid == call->target.pid;
        /* The kernel's rule 1: a writer with CAP_MAC_ADMIN is unrestricted;
         * one it held already when it was proven to be the connection's. */
        gboolean unrestricted = known && (caller->proven.caps >> CAP_MAC_ADMIN & 1) &&
                                ptags_target_has_capability(&caller->target, CAP_MAC_ADMIN);
        /* Checked after reading, so nothing read came from the process
         * after it gained a privilege (a setuid exec) or exited. */
        if (known && !ptags_peer_process_unchanged(caller)) {
                g_clear_pointer(&caller_tags, ptags_set_free);
                *self = unrestricted = FALSE;
        }
        ptags_writer writer = {caller_tags, unrestricted, *self};
        /* Each change is judged as the kernel would judge the same lines in
         * order: a caller changing itself gains or loses rights with the
         * changes before it (unknown tags, NULL, grant nothing). */
        bool *holds_right = g_new0(bool, ptags_plan_change_count(call->plan) + 1);
        ptags_plan_rights(call->plan, &writer, holds_right);
        ptags_set_free(caller_tags);
        return holds_right;
}

/* Whether the caller's process still grants all polkit was told it grants.
 * The kernel judges a writer's rights when it writes: rights the caller
 * lost while polkit decided (a launcher took its ptags: tags away) must not
 * carry a change polkit allowed because of them. */
static gboolean caller_rights_still_hold(Call *call)
{
        size_t n = ptags_plan_change_count(call->plan);
        gboolean granted = call->checked_self;
        for (size_t i = 0; i < n && !granted; i++)
                granted = call->checked_rights[i];
        if (!granted)
                return TRUE; /* polkit was told of nothing to lose */

        gboolean self;
        g_autofree bool *now = caller_rights(call, &self);
        if (self != call->checked_self)
                return FALSE;
        for (size_t i = 0; i < n; i++)
                if (now[i] != call->checked_rights[i])
                        return FALSE;
        return TRUE;
}

/* Whether every change of @plan takes something away: a tag, or its keep
 * flag. */
static gboolean takes_away_only(const ptags_plan *plan)
{
        for (size_t i = 0; i < ptags_plan_change_count(plan); i++) {
                ptags_change_kind kind = ptags_plan_change_at(plan, i)->kind;
                if (kind != PTAGS_CHANGE_REMOVE && kind != PTAGS_CHANGE_CLEAR_KEEP)
                        return FALSE;
        }
        return TRUE;
}

/* Whether @allowed has change @c (the same kind on the same tag). */
/* Changes in the order of their kind, then their tag's bytes. */
static int change_cmp(const void *a, const void *b)
{
        const ptags_change *x = *(const ptags_change *const *)a;
        const ptags_change *y = *(const ptags_change *const *)b;

        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        if (x->tag_len != y->tag_len)
                return x->tag_len < y->tag_len ? -1 : 1;
        return memcmp(x->tag, y->tag, x->tag_len);
}

/* Plan a removal-only call again, keeping only the changes polkit allowed:
 * a pattern may now match tags the target gained meanwhile, which nobody
 * was asked about. Leaving them is what the call would have done had it
 * come just before they were added, so the target cannot keep its own
 * revocation off by adding tags in a loop. FALSE, with @error set, when the
 * call cannot be planned again. */
static gboolean change_plan_within(Call *call, const ptags_plan *allowed, GError **error)
{
        /* Narrowed before its bounds are checked: the tags gained count
         * for nothing, or they could make the call too large to apply. */
        if (!change_plan_only(call, FALSE, error))
                return FALSE;
        /* Each change looked up among the allowed ones, sorted: both plans
         * may hold thousands of changes. */
        size_t n = ptags_plan_change_count(call->plan), m = ptags_plan_change_count(allowed);
        g_autofree const ptags_change **sorted = g_new(const ptags_change *, m + 1);
        for (size_t j = 0; j < m; j++)
                sorted[j] = ptags_plan_change_at(allowed, j);
        qsort(sorted, m, sizeof(*sorted), change_cmp);
        g_autofree bool *keep = g_new(bool, n + 1);
        gboolean all = TRUE;
        for (size_t i = 0; i < n; i++) {
                const ptags_change *c = ptags_plan_change_at(call->plan, i);
                keep[i] = bsearch(&c, sorted, m, sizeof(*sorted), change_cmp) != NULL;
                all = all && keep[i];
        }
        if (all)
                return change_plan_check(call, error);
        ptags_plan *within = NULL;
        ptags_result r = ptags_plan_restrict(call->plan, call->current, keep, &within);
        if (r != PTAGS_OK) {
                g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r),
                            "cannot plan the change of process %d again: %s", (int)call->target.pid,
                            ptags_result_message(r));
                return FALSE;
        }
        g_debug("%s: process %d gained tags the call's pattern matches during authorization; "
                "they stay",
                call->method, (int)call->target.pid);
        ptags_plan_free(call->plan);
        call->plan = within;
        return change_plan_check(call, error);
}

/* The budgets again, just before the apply: other processes of the
 * target's user may have grown meanwhile. */
static gboolean change_budgets_at_commit(Call *call)
{
        GError *error = NULL;

        if (change_check_budgets(call, BUDGETS_AT_COMMIT, &error))
                return TRUE;
        change_refuse(call, error);
        return FALSE;
}

/* Step 6, once polkit said yes: the re-check, then the apply in the same
 * dispatch. */
static void change_commit(Call *call)
{
        GError *error = NULL;
        pid_t pid = call->target.pid;

        if (target_lock_wait(call, change_commit, &error)) {
                if (error != NULL)
                        change_refuse(call, error);
                return;
        }
        if (!target_still_runs(call))
                return;
        /* The budgets may walk every process, so they come before the
         * re-check, which must be the last look at the target before its
         * tags are written. Their verdict is on the plan polkit allowed:
         * it counts only if that plan still holds. */
        g_autoptr(GError) over_budget = NULL;
        change_check_budgets(call, BUDGETS_AT_COMMIT, &over_budget);
        /* Someone may have changed the target while polkit was asked: what
         * was authorized must still be what will be applied, to the program
         * polkit was told about. An exec (or a new uid, exe or cgroup) is
         * asked about again, with the new details, rather than refused
         * outright: the new program may well be allowed the change. */
        ptags_set *before = g_steal_pointer(&call->current);
        guint64 planned_mark = call->exec_mark;
        gboolean same = call_read_base(call, &error) && ptags_set_equal(before, call->current);
        ptags_set_free(before);
        /* An exec of the same program, by the same uids, in the same unit,
         * holding the same tags is another program all the same (where
         * the backend can tell: bpf's exec mark). */
        same = same && call->exec_mark == planned_mark;
        if (error == NULL && same && call->checked_info_valid)
                same = ptags_process_info_same(&call->target, &call->checked_info, &error);
        if (error != NULL) {
                change_refuse(call, error);
                return;
        }
        same = same && caller_rights_still_hold(call);
        gboolean planned = FALSE;
        if (!same && takes_away_only(call->plan) && caller_rights_still_hold(call)) {
                /* A plan that only takes away still holds, whatever else the
                 * target did meanwhile (its name, unit, program or tags), as
                 * far as polkit allowed it: it can grant nothing, and a
                 * target that could void it by changing would keep its own
                 * revocation off for good. */
                ptags_plan *allowed = g_steal_pointer(&call->plan);
                planned = same = change_plan_within(call, allowed, &error);
                /* A refusal is logged with the changes polkit was asked
                 * about when no new plan was made. */
                if (call->plan == NULL)
                        call->plan = g_steal_pointer(&allowed);
                ptags_plan_free(allowed);
                if (error != NULL) {
                        change_refuse(call, error);
                        return;
                }
                if (same && ptags_plan_change_count(call->plan) == 0) {
                        call_return(call, NULL);
                        return;
                }
        }
        if (same && over_budget != NULL) {
                change_refuse(call, g_steal_pointer(&over_budget));
                return;
        }
        if (same) {
                change_apply(call);
                return;
        }
        if (call->rebuilt) {
                change_refuse(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                                "process %d kept changing (its tags or its "
                                                "program), or its caller's rights did, during "
                                                "authorization; try again",
                                                (int)pid));
                return;
        }
        call->rebuilt = TRUE;
        g_debug("%s: process %d or its caller's rights changed during authorization; re-planning",
                call->method, (int)pid);
        if (!planned && !change_plan(call, &error)) {
                change_refuse(call, error);
                return;
        }
        if (ptags_plan_change_count(call->plan) == 0) {
                call_return(call, NULL);
                return;
        }
        /* While this call re-authorizes, other authorized calls on the
         * target wait, so the second check is not overtaken as well. */
        target_lock_take(call);
        change_authorize(call);
}

static void authorized(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Call *call = user_data;
        GError *error = NULL;

        if (!ptags_authority_check_all_finish(res, &error)) {
                change_refuse(call, error);
                return;
        }
        change_commit(call);
}

static void change_authorize(Call *call)
{
        GError *error = NULL;

        /* polkit always authorizes root: skip the round trip. The plan was
         * made in this very dispatch, so there is nothing to re-check. */
        if (call->caller->uid == 0) {
                if (target_still_runs(call) && change_budgets_at_commit(call))
                        change_apply(call);
                return;
        }
        if (!call_may_wait(call))
                return;

        /* What polkit is told about the target is kept, so the commit can
         * tell whether the target became another program meanwhile. */
        PtagsProcessInfo *info = &call->checked_info;
        ptags_process_info_clear(info);
        if (!ptags_process_info_read(&call->target, info, &error)) {
                call_fail(call, error);
                return;
        }
        call->checked_info_valid = TRUE;
        g_free(call->checked_rights);
        call->checked_rights = caller_rights(call, &call->checked_self);

        g_autoptr(GPtrArray) checks =
                g_ptr_array_new_with_free_func((GDestroyNotify)ptags_check_free);
        for (size_t i = 0; i < ptags_plan_change_count(call->plan); i++) {
                const ptags_change *c = ptags_plan_change_at(call->plan, i);
                PtagsCheckFacts facts = {
                        .change = c,
                        .pid = call->target.pid,
                        .target = info,
                        .self = call->checked_self,
                        .caller_holds_right = call->checked_rights[i],
                };
                g_ptr_array_add(checks, ptags_check_new_for_change(&facts));
        }

        /* A caller that leaves the bus cancels its pending checks. */
        call_cancel_if_caller_leaves(call);
        gboolean interactive = (g_dbus_message_get_flags(call->message) &
                                G_DBUS_MESSAGE_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION) != 0;
        ptags_authority_check_all_async(call->svc->authority, call->sender,
                                        call->caller->budget_uid, checks, interactive,
                                        call->cancellable, authorized, call);
}

/* Runs in the caller's turn (see change_start). */
static void change_read_and_plan(Call *call)
{
        GError *error = NULL;

        if (!call_read_base(call, &error) || !change_plan(call, &error)) {
                call_fail(call, error);
                return;
        }
        /* Waiting for polkit costs ptagsd nothing: free the turn. */
        call_end_turn(call);
        if (ptags_plan_change_count(call->plan) == 0) {
                g_debug("%s: nothing to change on process %d", call->method, (int)call->target.pid);
                call_return(call, NULL);
                return;
        }
        change_authorize(call);
}

/* Whether @lines only ask (queries and comments): they change nothing. */
static gboolean only_queries(char **lines)
{
        for (; *lines != NULL; lines++)
                if ((*lines)[0] != '?' && (*lines)[0] != '#' && (*lines)[0] != '\0')
                        return FALSE;
        return TRUE;
}

/* Runs once the caller is known and the target pinned. Reading and planning
 * parse whole tag lists, so they wait for the caller uid's turn like reads:
 * a flood of changes (even ones that change nothing) delays nobody else.
 * A call in the bus thread (root's) runs at once and in full, holding the
 * main loop's lock: the bus thread runs one change at a time, so it takes
 * no turn, and its uid's queue bound does not apply to it.
 * ptagsd itself is no target of changes: on ptags-lsm its tags are the
 * rights it writes every other process's tags with. */
static void change_start(Call *call)
{
        /* Queries (ptagsctl check on a pidfd) change nothing: they are
         * answered about ptagsd as about any process. */
        if (call->target.pid == getpid() && !only_queries(call->lines)) {
                call_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                                            "process %d is ptagsd itself, whose tags ptagsd does "
                                            "not change",
                                            (int)call->target.pid));
                return;
        }
        if (call->in_bus_thread)
                change_read_and_plan(call);
        else
                call_take_turn(call, call->caller->budget_uid, change_read_and_plan);
}

/* AddTag, RemoveTag, SetValue and SetKeep: one line made of @line_prefix,
 * the argument @arg named @arg_name, and "=@value" for SetValue. */
static gboolean single_line_check(guint32 pid, const char *arg_name, const char *arg,
                                  const char *value, GError **error)
{
        return ptags_check_pid(pid, error) && ptags_check_change_arg(arg_name, arg, value, error);
}

static void single_line_set(Call *call, const char *arg_name, const char *arg,
                            const char *line_prefix, const char *value)
{
        call->arg_name = arg_name;
        call->arg = g_strdup(arg);
        call->value = g_strdup(value);
        call->lines = g_new0(char *, 2);
        call->lines[0] = value != NULL ? g_strconcat(line_prefix, arg, "=", value, NULL)
                                       : g_strconcat(line_prefix, arg, NULL);
}

static gboolean single_line_args(Call *call, guint32 pid, const char *arg_name, const char *arg,
                                 const char *line_prefix, const char *value, GError **error)
{
        if (!single_line_check(pid, arg_name, arg, value, error))
                return FALSE;
        single_line_set(call, arg_name, arg, line_prefix, value);
        return TRUE;
}

/* Step 1 in the bus thread, for every change method but ApplyFd: check
 * @params (of the signature the method declares) into @call and the
 * target's pid, as the handlers below do with GDBus's unpacked arguments. */
static gboolean change_args(Call *call, GVariant *params, guint32 *pid, GError **error)
{
        const char *method = call->method, *arg, *value;
        gboolean keep;

        if (strcmp(method, "AddTag") == 0) {
                g_variant_get(params, "(u&sb)", pid, &arg, &keep);
                return single_line_args(call, *pid, "tag", arg, keep ? "+@" : "+", NULL, error);
        }
        if (strcmp(method, "RemoveTag") == 0) {
                g_variant_get(params, "(u&s)", pid, &arg);
                return single_line_args(call, *pid, "pattern", arg, "-", NULL, error);
        }
        if (strcmp(method, "SetValue") == 0) {
                g_variant_get(params, "(u&s&s)", pid, &arg, &value);
                return single_line_args(call, *pid, "tag", arg, "!", value, error);
        }
        if (strcmp(method, "SetKeep") == 0) {
                g_variant_get(params, "(u&sb)", pid, &arg, &keep);
                return single_line_args(call, *pid, "pattern", arg, keep ? "+@" : "-@", NULL,
                                        error);
        }
        g_assert(strcmp(method, "Apply") == 0);
        g_autofree const char **lines = NULL;
        g_variant_get(params, "(u^a&s)", pid, &lines);
        if (!ptags_check_pid(*pid, error) || !ptags_lines_validate(lines, error))
                return FALSE;
        call->lines = g_strdupv((char **)lines);
        return TRUE;
}

void ptags_manager_change_in_bus_thread(PtagsService *svc, GDBusMessage *message, PtagsPeer *caller)
{
        Call *call = call_new_in_bus_thread(svc, message);
        GError *error = NULL;
        guint32 pid = 0;

        call->caller = caller;

        if (!change_args(call, g_dbus_message_get_body(message), &pid, &error)) {
                call_fail(call, error);
                return;
        }
        call_pin_pid(call, pid, change_start);
}

/* Refuse a call whose arguments failed their checks: FALSE and the
 * invocation answered when @error is set. */
static gboolean args_ok(GDBusMethodInvocation *inv, GError *error)
{
        if (error == NULL)
                return TRUE;
        ptags_bus_thread_call_done(g_dbus_method_invocation_get_message(inv));
        g_dbus_method_invocation_return_gerror(inv, error);
        g_error_free(error);
        return FALSE;
}

/* AddTag, RemoveTag, SetValue and SetKeep: one line made of @line_prefix,
 * the argument @arg named @arg_name, and "=@value" for SetValue. */
static void single_line_change(PtagsService *svc, GDBusMethodInvocation *inv, guint32 pid,
                               const char *arg_name, const char *arg, const char *line_prefix,
                               const char *value)
{
        GError *error = NULL;

        if (!args_ok(inv, single_line_check(pid, arg_name, arg, value, &error) ? NULL : error))
                return;
        Call *call = call_new(svc, inv);
        if (call == NULL)
                return;
        single_line_set(call, arg_name, arg, line_prefix, value);
        call_pin_pid(call, pid, change_start);
}

static gboolean handle_add_tag(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                               const char *tag, gboolean keep, PtagsService *svc)
{
        single_line_change(svc, inv, pid, "tag", tag, keep ? "+@" : "+", NULL);
        return TRUE;
}

static gboolean handle_remove_tag(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                                  const char *pattern, PtagsService *svc)
{
        single_line_change(svc, inv, pid, "pattern", pattern, "-", NULL);
        return TRUE;
}

static gboolean handle_set_value(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                                 const char *tag, const char *value, PtagsService *svc)
{
        single_line_change(svc, inv, pid, "tag", tag, "!", value);
        return TRUE;
}

static gboolean handle_set_keep(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                                const char *pattern, gboolean keep, PtagsService *svc)
{
        single_line_change(svc, inv, pid, "pattern", pattern, keep ? "+@" : "-@", NULL);
        return TRUE;
}

static gboolean handle_apply(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                             const char *const *lines, PtagsService *svc)
{
        GError *error = NULL;

        if (!args_ok(inv, ptags_check_pid(pid, &error) && ptags_lines_validate(lines, &error)
                                  ? NULL
                                  : error))
                return TRUE;
        Call *call = call_new(svc, inv);
        if (call == NULL)
                return TRUE;
        call->lines = g_strdupv((char **)lines);
        call_pin_pid(call, pid, change_start);
        return TRUE;
}

static gboolean handle_apply_fd(PtagsManager *object, GDBusMethodInvocation *inv, GUnixFDList *fds,
                                GVariant *pidfd, const char *const *lines, PtagsService *svc)
{
        GError *error = NULL;

        if (!args_ok(inv, ptags_lines_validate(lines, &error) ? NULL : error))
                return TRUE;
        Call *call = call_new(svc, inv);
        if (call == NULL)
                return TRUE;
        call->lines = g_strdupv((char **)lines);
        if (!call_adopt_fd(call, fds, pidfd, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        call_lookup_peer(call, call->sender, change_start);
        return TRUE;
}

void ptags_manager_connect_changes(PtagsService *svc)
{
        g_signal_connect(svc->skeleton, "handle-add-tag", G_CALLBACK(handle_add_tag), svc);
        g_signal_connect(svc->skeleton, "handle-remove-tag", G_CALLBACK(handle_remove_tag), svc);
        g_signal_connect(svc->skeleton, "handle-set-value", G_CALLBACK(handle_set_value), svc);
        g_signal_connect(svc->skeleton, "handle-set-keep", G_CALLBACK(handle_set_keep), svc);
        g_signal_connect(svc->skeleton, "handle-apply", G_CALLBACK(handle_apply), svc);
        g_signal_connect(svc->skeleton, "handle-apply-fd", G_CALLBACK(handle_apply_fd), svc);
}
