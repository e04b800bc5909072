// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* page-writer.h: turning a plan into kernel writes: normalized lines packed
 * into page-sized writes, and the undo that makes a non-atomic file atomic. */
#pragma once

#include <glib.h>
#include <sys/types.h>

#include "ptags-model.h"

/* One write(2) of @len bytes (whole lines, each ending in '\n'): returns the
 * bytes the kernel consumed (a short count means the next line failed) or
 * -errno. */
typedef ssize_t (*PtagsPageWriteFunc)(const char *buf, size_t len, void *user_data);

/* Pack @lines (without '\n') into writes of at most @page bytes, each ending
 * on a line boundary. A line longer than @page - 1 cannot be written: returns
 * NULL. (transfer full: array of GBytes) */
GPtrArray *ptags_pack_lines(const char *const *lines, size_t n, size_t page);

/* The lines that undo change @c, in the order to write them (a removed tag
 * comes back with its keep flag and value). (transfer full) */
GPtrArray *ptags_change_undo_lines(const ptags_change *c);

/* The normalized forward lines of every change of @plan. (transfer full) */
GPtrArray *ptags_plan_lines(const ptags_plan *plan);

/* Whether the kernel's -@e for a line is its verdict on that line (ptags(7):
 * bad line, right, missing tag, full list), not about the file or the
 * process (ESRCH, EACCES, EIO, ...). */
gboolean ptags_errno_is_verdict(int e);

/* The bytes ptags_plan_write() writes for @plan in pages of @page bytes
 * when nothing fails (its queries included). */
size_t ptags_plan_write_bytes(const ptags_plan *plan, size_t page);

/* Write every change of @plan through @write_fn in pages of @page bytes (a
 * keep flag set on a tag held without it goes behind a query for the tag,
 * so a tag an exec dropped is not created again for the new program). On
 * a failure midway, write the inverse of what was applied (newest first),
 * but never give back a tag held without the keep flag (an exec may have
 * dropped it since the plan was made), give a keep flag back only to a tag
 * still there, and go on past a step the kernel refuses; return the
 * failure's -errno; 0 when everything applied. *@refused (may be NULL) gets the index of the
 * change whose write failed with that errno (the kernel's verdict on it, or
 * on the file), or -1 when no write failed (a line too long, or a count the
 * kernel cannot have given). *@undo_failed (may be NULL) is set when the
 * undo left any step out: the target holds part of the change. */
int ptags_plan_write(const ptags_plan *plan, size_t page, PtagsPageWriteFunc write_fn,
                     void *user_data, gssize *refused, gboolean *undo_failed);
