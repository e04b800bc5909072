// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* args.h: argument checks run synchronously by each handler before any I/O
 * (so a bad argument is refused the same way whatever the process state),
 * and the text that names an argument or line in an error. */
#pragma once

#include <gio/gio.h>

#include "ptags-model.h"

/* Limits of one Apply batch, checked before any work (documented in the
 * interface XML). */
#define PTAGS_APPLY_MAX_LINES 4096u
#define PTAGS_APPLY_MAX_BYTES (1024u * 1024u)

/* The first Unicode noncharacter (U+FDD0..U+FDEF, or U+nFFFE or U+nFFFF
 * in any plane n) in UTF-8 @text of @len bytes, or 0 when it holds none.
 * The kernel takes them, but sd-bus (systemd 252 and later alike) refuses
 * any message whose strings hold one, so ptagsd neither accepts nor sends
 * them. */
gunichar ptags_noncharacter_in(const char *text, gsize len);

/* @text (@len bytes) as ptagsd sends it: NULL when it holds no
 * noncharacter, else a copy with each one written as U+001A (SUBSTITUTE),
 * a character no tag, value or command line may hold, so the copy cannot
 * be taken for any real tag or value. (transfer full) */
char *ptags_sendable_text(const char *text, gsize len);

/* The (sbs) form of one tag, its texts sendable (see above). (transfer
 * floating) */
GVariant *ptags_entry_to_variant(const ptags_entry *e);

/* The a(sbs) form of a tag list, its texts sendable. (transfer floating) */
GVariant *ptags_set_to_variant(const ptags_set *set);

/* UTF-8 @text (@len bytes) as a message shows it, so that it cannot pass
 * for the words around it: characters that do not print (controls, bidi
 * and other format characters, line breaks), quotation marks and
 * backslashes written as \u{XXXX}, and cut with "…" after @max_chars
 * characters. (transfer full) */
char *ptags_shown_text(const char *text, gsize len, guint max_chars);

/* @text cut to a readable length, control bytes escaped. (transfer full) */
char *ptags_shorten(const char *text);

/* "line N (\"text\")", N counted from 1, the text shortened when long.
 * (transfer full) */
char *ptags_line_label(size_t index, const char *line);

/* Check only the size limits of Apply's @lines. */
gboolean ptags_lines_check_limits(const char *const *lines, GError **error);

/* Check the size limits and the shape of Apply's @lines (no '\n', every line
 * parses), naming the first bad line. */
gboolean ptags_lines_validate(const char *const *lines, GError **error);

/* A query pattern "[@]TAG", "[@]PREFIX:*" or "": *@kept_only and *@body
 * (without the '@', transfer full) when valid. */
gboolean ptags_query_pattern_parse(const char *pattern, gboolean *kept_only, char **body,
                                   GError **error);

/* A well-formed bus name (unique or well-known). */
gboolean ptags_check_bus_name(const char *bus_name, GError **error);

/* A pid argument that can name a process (0 names the caller). */
gboolean ptags_check_pid(guint32 pid, GError **error);

/* The argument of AddTag/SetValue ("tag", with @value for SetValue) or of
 * RemoveTag/SetKeep ("pattern", no leading '@'). */
gboolean ptags_check_change_arg(const char *arg_name, const char *arg, const char *value,
                                GError **error);
