// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* lsm-intent.h: the ptags-lsm backend's crash journal. A change longer than
 * one kernel page is several writes; the target's tags before it are noted
 * first, so a ptagsd killed between the pages restores them at its next start. */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "ptags-model.h"

/* $RUNTIME_DIRECTORY/NAME (the first directory systemd lists), else
 * /run/ptags/NAME. (transfer full) */
char *ptags_runtime_path(const char *name);

/* Record that process @pid (started at @start_time) held @before when a
 * multi-page change began. 0 or -errno. */
int ptags_intent_write(const char *path, pid_t pid, guint64 start_time, const ptags_set *before);
/* Read a recorded intent: 0 and the fields (*before: transfer full), -ENOENT
 * when there is none, -EBADMSG when it does not parse. */
int ptags_intent_read(const char *path, pid_t *pid, guint64 *start_time, ptags_set **before);

/* The tags to put back on a process that held @before when a change was
 * cut off, and holds @now: @before, unless the process may have executed a
 * program since, which the kernel would have stripped of every tag without
 * the keep flag; then @before as an exec leaves it, so nothing exec took
 * away is given back. Only a tag exec drops, held before and still held,
 * shows there was no exec. (transfer full) */
ptags_set *ptags_restore_target(const ptags_set *now, const ptags_set *before);

/* The command lines (without '\n') that turn @now into @want, one tag each:
 * removals, then additions, keep flags and values. (transfer full) */
GPtrArray *ptags_restore_lines(const ptags_set *now, const ptags_set *want);
