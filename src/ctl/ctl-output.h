// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-output.h: how ptagsctl prints: aligned tables for people, JSON (one
 * documented shape per command, see man/ptagsctl.1) for programs. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "ctl-bus.h"

/* A table of text cells, printed with every column padded to its widest
 * cell (in terminal columns, so non-ASCII tags line up). */
typedef struct CtlTable CtlTable;

CtlTable *ctl_table_new(size_t n_columns, const char *const *headers);
/* Appends one row of n_columns strings (copied). Returns -ENOMEM. */
int ctl_table_add_row(CtlTable *table, const char *const *cells);
size_t ctl_table_rows(const CtlTable *table);
void ctl_table_print(const CtlTable *table, FILE *out, bool legend);
void ctl_table_free(CtlTable *table);

/* Text that others chose (tags, values, container names) as tables and
 * plain output show it, whether or not @out is a terminal: a backslash, a
 * space and every character that does not print as itself is written as
 * \u{XXXX} (see OUTPUT in man/ptagsctl.1). */
void ctl_print_escaped(FILE *out, const char *s);
/* The same but for spaces, which stay: for ptagsd's own comment lines in
 * TagsChanged ("# ..."), whose spaces separate words, no one's choice. */
void ctl_print_comment(FILE *out, const char *s);
/* The same as a new string; NULL when out of memory. */
char *ctl_escape(const char *s);
/* Whether @s is valid UTF-8, as every D-Bus string must be. */
bool ctl_utf8_valid(const char *s);
/* The first Unicode noncharacter (U+FDD0..U+FDEF, U+nFFFE, U+nFFFF) in
 * valid UTF-8 @s, or 0: sd-bus sends no string holding one, and ptagsd
 * takes none. */
long ctl_noncharacter(const char *s);

/* JSON writers; strings are escaped as RFC 8259 asks, and the characters
 * ctl_print_escaped() escapes as \uXXXX too. */
void ctl_json_string(FILE *out, const char *s);
/* [{"name": ..., "keep": ..., "value": ...}, ...] */
void ctl_json_tag_list(FILE *out, const CtlTagList *list);
/* The people's form of a tag list: a TAG KEEP VALUE table (with PID first
 * when @pid is not NULL), names and values escaped. Returns -ENOMEM. */
int ctl_table_add_tags(CtlTable *table, const char *pid, const CtlTagList *list);

/* "    Label: value" lines, labels right-aligned as hostnamectl does. */
void ctl_print_fields(FILE *out, size_t n, const char *const *labels, const char *const *values);
