// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* lineage.h: a process's parent chain, children, threads and start time as
 * the real /proc shows them (read by pid: callers re-check their pidfd). */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* The parent of @pid, 0 when it is gone. */
pid_t ptags_lineage_parent(pid_t pid);
/* True when @ancestor is on @pid's parent chain (not @pid itself). */
gboolean ptags_lineage_is_descendant(pid_t pid, pid_t ancestor);
/* The number of threads of process @pid, 0 when it is gone or its status
 * cannot be read. */
guint ptags_lineage_threads(pid_t pid);
/* True when any thread of @pid has a child. */
gboolean ptags_lineage_has_children(pid_t pid);
/* One descendant: its pid and the parent it was listed under. */
typedef struct {
        pid_t pid;
        pid_t parent;
} PtagsLineageChild;
/* @pid's descendants, nearest first, at most @max of them (*@complete FALSE
 * when there were more or the kernel does not list children).
 * (transfer full: an array of PtagsLineageChild) */
GArray *ptags_lineage_descendants(pid_t pid, guint max, gboolean *complete);
/* The start time (clock ticks since boot) of @pid, 0 when unknown; with the
 * pid it tells a process from a later one that reuses the pid. */
guint64 ptags_lineage_start_time(pid_t pid);
