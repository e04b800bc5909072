// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager-budgets.c: the budgets every change must fit (budgets.h) and the
 * size of its TagsChanged signal, checked before polkit and again at commit. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "errors.h"
#include "args.h"
#include "budgets.h"
#include "call.h"
#include "manager-budgets.h"
#include "page-writer.h"
#include "subuids.h"

/* What one signal's lines take on the wire, at most: the command bytes, the
 * value and '=', and 8 bytes of length, NUL and padding per string. */
static guint64 plan_lines_wire_bound(const ptags_plan *plan)
{
        guint64 total = 8;

        for (size_t i = 0; i < ptags_plan_change_count(plan); i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                total += c->tag_len + c->value_len + 3 + 8;
        }
        return total;
}

gboolean change_check_budgets(Call *call, BudgetsStage stage, GError **error)
{
        const PtagsLimits *l = &call->svc->limits;
        const ptags_set *result = ptags_plan_result(call->plan);
        guint64 before = ptags_set_bytes(call->current);
        guint64 after = ptags_set_bytes(result);
        size_t changes = ptags_plan_change_count(call->plan);
        int pid = (int)call->target.pid;

        if (stage == BUDGETS_AT_COMMIT)
                call->expects_bytes = FALSE;
        /* A plan that changes nothing (queries, re-adds) grows nothing and
         * is answered without a signal: a query about a process holding
         * more than a message carries is answered, as HasTag is. */
        if (changes == 0)
                return TRUE;

        /* Root is never asked about (polkit always allows uid 0). */
        if (call->caller != NULL && call->caller->uid != 0 && changes > l->polkit_changes) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "%zu changes on process %d need polkit, over the MaxPolkitChanges "
                            "limit of %u for one call; split the batch",
                            changes, pid, l->polkit_changes);
                return FALSE;
        }
        /* Budgets bound growth: a change that shrinks a process (or keeps
         * its size) is always allowed, so state over a budget can be repaired. */
        if (after > before && after > l->process_bytes) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "process %d would hold %" G_GUINT64_FORMAT " bytes of tags and "
                            "values, over the MaxProcessBytes limit of %u",
                            pid, after, l->process_bytes);
                return FALSE;
        }
        guint64 tags_size = ptags_set_wire_bound(result) + PTAGS_WIRE_HEADER_OVERHEAD;
        if (tags_size > PTAGS_MAX_MESSAGE_BYTES) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "process %d would keep %" G_GUINT64_FORMAT " bytes of tags, more "
                            "than its TagsChanged signal may carry (the MaxMessageBytes limit "
                            "of %u); remove more tags at once",
                            pid, tags_size, PTAGS_MAX_MESSAGE_BYTES);
                return FALSE;
        }
        /* The new list always fits; the lines are then summarized if need be. */
        call->summarize_lines =
                tags_size + plan_lines_wire_bound(call->plan) > PTAGS_MAX_MESSAGE_BYTES;

        gboolean scan_user =
                stage == BUDGETS_AT_COMMIT || (call->caller != NULL && call->caller->uid != 0);
        /* On a backend that keeps each list once (bpf), a change that gives
         * a process a list of its own grows ptagsd whatever the process's
         * size: processes forked from one share its list until changed,
         * and changing each of many would grow ptagsd's memory and /run
         * without end. So for callers other than root it counts as growth.
         * Root's changes keep the rule that one leaving the process no
         * larger is allowed over a budget: revoking must always work. */
        gboolean by_root = call->caller == NULL || call->caller->uid == 0;
        if (!scan_user ||
            (after <= before &&
             (after == 0 || by_root || !ptags_backend_adds_list(call->svc->backend, result))))
                return TRUE;
        uid_t uid = ptags_pid_uid(call->target.pid);
        if (uid == (uid_t)-1)
                return TRUE; /* exited: the write fails with NoSuchProcess */
        const char *property;
        guint limit = ptags_limits_for_uid(l, uid, &property);
        guint64 others = 0;
        /* Remembered sums first; a refusal is only ever made on fresh ones. */
        for (int fresh = 0; fresh < 2; fresh++) {
                int r = ptags_user_bytes(call->svc->backend, call->svc->byte_cache, uid,
                                         call->target.pid, fresh, &others);
                if (r < 0) {
                        g_set_error(error, PTAGS_ERROR, ptags_error_from_errno(-r),
                                    "cannot sum the tags of uid %u: %s", (unsigned)uid,
                                    g_strerror(-r));
                        return FALSE;
                }
                if (others + after <= limit)
                        break;
        }
        if (others + after > limit) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "the processes of uid %u (its subordinate uids included) would "
                            "hold %" G_GUINT64_FORMAT " bytes of tags and values, over the %s "
                            "limit of %u",
                            (unsigned)ptags_budget_uid(uid), others + after, property, limit);
                return FALSE;
        }
        /* The target will hold @after (it is in others' sums) once this
         * plan is applied: change_apply tells the byte cache then. Not
         * before: a change refused, re-planned or failing would otherwise
         * count until the next fresh walk, against a uid its caller need
         * not even own. */
        if (stage == BUDGETS_AT_COMMIT) {
                call->expects_bytes = TRUE;
                call->expect_uid = uid;
        }
        return TRUE;
}

char **change_signal_lines(Call *call)
{
        g_autoptr(GPtrArray) lines = NULL;

        if (call->summarize_lines) {
                lines = g_ptr_array_new_with_free_func(g_free);
                g_ptr_array_add(lines,
                                g_strdup_printf("# %zu changes not listed: over MaxMessageBytes",
                                                ptags_plan_change_count(call->plan)));
        } else {
                lines = ptags_plan_lines(call->plan);
                /* A pattern line ptagsd took may have matched a tag that
                 * holds a noncharacter: its line is sent as the tag is. */
                for (guint i = 0; i < lines->len; i++) {
                        char *line = g_ptr_array_index(lines, i);
                        char *sendable = ptags_sendable_text(line, strlen(line));
                        if (sendable != NULL) {
                                g_free(line);
                                lines->pdata[i] = sendable;
                        }
                }
        }
        g_ptr_array_add(lines, NULL);
        g_ptr_array_set_free_func(lines, NULL);
        return (char **)g_ptr_array_free(g_steal_pointer(&lines), FALSE);
}
