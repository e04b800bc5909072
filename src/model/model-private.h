// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* model-private.h: helpers shared by the model's own files, not API.
 * Set mutation by index and change recording live here so plan.c and command.c share one apply. */
#pragma once

#include "ptags-model.h"

/* Where @name sits (or would sit) in @s: true and *index = its slot when
 * present, false and *index = the insertion slot otherwise. */
bool ptags_set_lookup(const ptags_set *s, const char *name, size_t len, size_t *index);
/* True when @s holds the tag spelled by the concatenation of the three
 * pieces; lets the rights check look up "ptags:" P ":" A without building
 * a string for every prefix P. */
bool ptags_set_has_pieces(const ptags_set *s, const char *a, size_t a_len, const char *b,
                          size_t b_len, const char *c, size_t c_len);
/* True when some name in @s starts with the concatenation a|b. */
bool ptags_set_has_prefix_pieces(const ptags_set *s, const char *a, size_t a_len, const char *b,
                                 size_t b_len);
/* Insert a new tag (no value) at the slot ptags_set_lookup gave. */
ptags_result ptags_set_insert_at(ptags_set *s, size_t index, const char *name, size_t len,
                                 bool keep);
/* Replace the value of entry @index (len 0 clears it). */
ptags_result ptags_set_set_value_at(ptags_set *s, size_t index, const char *value, size_t len);
void ptags_set_set_keep_at(ptags_set *s, size_t index, bool keep);
/* Remove entry @index (the set must not be inside ptags_set_remove_if). */
void ptags_set_remove_at(ptags_set *s, size_t index);
/* Remove every entry for which @drop says so, in one pass (O(n)); stops
 * dropping (but keeps the set whole) once @drop returns an error. While
 * @drop runs, the set's read functions (count, at, lookup, find, the
 * pieces searches) see it as it is at that moment: the entries dropped so
 * far are gone, the rest are there. It must not be modified from @drop. */
typedef ptags_result (*ptags_set_drop_fn)(const ptags_entry *e, void *ctx, bool *drop);
ptags_result ptags_set_remove_if(ptags_set *s, ptags_set_drop_fn drop, void *ctx);
/* The same for the entries [@first, @end) only (O(@end - @first) calls of
 * @drop, and one move of the entries after them). */
ptags_result ptags_set_remove_if_range(ptags_set *s, size_t first, size_t end,
                                       ptags_set_drop_fn drop, void *ctx);
/* The entries [*@first, *@end) that pattern @pat can match (O(log n)):
 * the whole set for "", the tag itself for a tag, and for "PREFIX:*" the
 * names starting with "PREFIX:", which are contiguous in the set's order.
 * Every match lies in it; callers still test each entry. */
void ptags_set_pattern_range(const ptags_set *s, const char *pat, size_t len, size_t *first,
                             size_t *end);
/* Exchange the contents of two sets (commit of an atomic batch). */
void ptags_set_swap(ptags_set *a, ptags_set *b);

/* Called for every effective change while a command runs; the change's
 * strings are borrowed for the duration of the call only. */
typedef ptags_result (*ptags_change_sink)(const ptags_change *c, void *ctx);

/* The one implementation of a command's effect, for both batch modes:
 * @w NULL checks no rights; @sink (may be NULL) sees each change before it
 * is made. Returns the command's result; on failure with a NULL sink the
 * set is unchanged. */
ptags_result ptags_cmd_run(ptags_set *target, const ptags_cmd *cmd, const ptags_writer *w,
                           ptags_change_sink sink, void *sink_ctx);
