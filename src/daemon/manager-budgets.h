// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager-budgets.h: the budgets (budgets.h) applied to a change in flight,
 * and the shape of its TagsChanged signal within the message bound. */
#pragma once

#include "call.h"

/* When a change's budgets are checked. */
typedef enum {
        /* Before polkit is asked: the uid's sum is taken for callers other
         * than root (who is never asked), and nothing is remembered, as
         * polkit may still refuse. */
        BUDGETS_BEFORE_POLKIT,
        /* Authorized, just before it is applied: the uid's sum is taken
         * whoever calls, and the target counts for its new bytes at once. */
        BUDGETS_AT_COMMIT,
} BudgetsStage;

/* LimitExceeded unless the budgets (budgets.h) allow @call's plan, whose
 * target now holds call->current; growth is also checked against the sum of
 * every process of the target's uid (a walk of /proc when due). */
gboolean change_check_budgets(Call *call, BudgetsStage stage, GError **error);
/* The lines of @call's TagsChanged: the plan's, or one comment line saying
 * how many were left out when they would not fit. (transfer full) */
char **change_signal_lines(Call *call);
