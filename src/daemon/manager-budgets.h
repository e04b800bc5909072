// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager-budgets.h: the budgets (budgets.h) applied to a change in flight,
 * and the shape of its TagsChanged signal within the message bound. */
#pragma once

#include "call.h"

/* LimitExceeded unless the budgets (budgets.h) allow @call's plan, whose
 * target now holds call->current; @scan_user also sums the bytes of every
 * process of the target's uid (a scan of all tagged processes). */
gboolean change_check_budgets(Call *call, gboolean scan_user, GError **error);
/* The lines of @call's TagsChanged: the plan's, or one comment line saying
 * how many were left out when they would not fit. (transfer full) */
char **change_signal_lines(Call *call);
