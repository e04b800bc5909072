// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* plan.c: atomic batches (the D-Bus Apply): resolve every line against a
 * working copy into a list of effective changes, authorize, then commit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model-private.h"

struct ptags_plan {
        ptags_change *changes;
        size_t count;
        size_t cap;
        ptags_set *result;
        size_t line;        /* the line being resolved, stamped on its changes */
        size_t max_changes; /* PTAGS_PLAN_MAX_CHANGES, or a caller's lower bound */
        size_t bytes;       /* copied tag and value bytes, bounded by PTAGS_PLAN_MAX_BYTES */
};

static void change_clear(ptags_change *c)
{
        free((char *)c->tag);
        free((char *)c->value);
        free((char *)c->old_value);
}

void ptags_plan_free(ptags_plan *p)
{
        if (p == NULL)
                return;
        for (size_t i = 0; i < p->count; i++)
                change_clear(&p->changes[i]);
        free(p->changes);
        ptags_set_free(p->result);
        free(p);
}

static char *dup_bytes(const char *s, size_t len)
{
        char *d = malloc(len + 1);
        if (d == NULL)
                return NULL;
        if (len > 0)
                memcpy(d, s, len);
        d[len] = '\0';
        return d;
}

/* Whether undoing @c needs the value it replaces: only a removal or a new
 * value does. A keep flip keeps the value, so a plan copies none for it: a
 * line of two bytes ("+@") flips every tag, and flips back and forth over
 * long values would otherwise copy hundreds of MB from a few KB of input. */
static bool undo_needs_old_value(ptags_change_kind kind)
{
        return kind == PTAGS_CHANGE_REMOVE || kind == PTAGS_CHANGE_SET_VALUE ||
               kind == PTAGS_CHANGE_CLEAR_VALUE;
}

/* The sink of ptags_cmd_run: keep an owned copy of each change. */
static ptags_result record_change(const ptags_change *c, void *ctx)
{
        ptags_plan *p = ctx;
        size_t old_len = undo_needs_old_value(c->kind) ? c->old_value_len : 0;
        /* Each length is bounded by the grammar, so the sum cannot overflow. */
        size_t bytes = c->tag_len + c->value_len + old_len;
        if (p->count >= p->max_changes || bytes > PTAGS_PLAN_MAX_BYTES - p->bytes)
                return PTAGS_E_BATCH_TOO_LARGE;
        if (p->count == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 16;
                if (cap > SIZE_MAX / sizeof(ptags_change))
                        return PTAGS_E_NOMEM;
                ptags_change *changes = realloc(p->changes, cap * sizeof(*changes));
                if (changes == NULL)
                        return PTAGS_E_NOMEM;
                p->changes = changes;
                p->cap = cap;
        }
        ptags_change copy = *c;
        copy.line = p->line;
        copy.tag = dup_bytes(c->tag, c->tag_len);
        copy.value = dup_bytes(c->value, c->value_len);
        copy.old_value = dup_bytes(c->old_value, old_len);
        copy.old_value_len = old_len;
        if (copy.tag == NULL || copy.value == NULL || copy.old_value == NULL) {
                change_clear(&copy);
                return PTAGS_E_NOMEM;
        }
        p->changes[p->count++] = copy;
        p->bytes += bytes;
        return PTAGS_OK;
}

ptags_result ptags_plan_build(const ptags_set *current, const char *const *lines,
                              const size_t *lens, size_t n, ptags_plan **out, size_t *failed_line)
{
        return ptags_plan_build_bounded(current, lines, lens, n, PTAGS_PLAN_MAX_CHANGES, out,
                                        failed_line);
}

/* The tags line @cmd looks at in @s beyond its binary searches: those its
 * pattern can match, for the lines that visit each (a '?' without '@'
 * stops at the first). */
static size_t line_looks(const ptags_set *s, const ptags_cmd *cmd)
{
        size_t first, end;

        switch (cmd->kind) {
        case PTAGS_CMD_SUB:
        case PTAGS_CMD_SUB_KEEP:
        case PTAGS_CMD_QUERY_KEEP:
                break;
        case PTAGS_CMD_ADD_KEEP:
                if (cmd->global)
                        break;
                return 0;
        default:
                return 0;
        }
        ptags_set_pattern_range(s, cmd->arg, cmd->arg_len, &first, &end);
        return end - first;
}

ptags_result ptags_plan_build_bounded(const ptags_set *current, const char *const *lines,
                                      const size_t *lens, size_t n, size_t max_changes,
                                      ptags_plan **out, size_t *failed_line)
{
        ptags_plan *p = calloc(1, sizeof(*p));
        ptags_result r = PTAGS_E_NOMEM;

        if (p != NULL) {
                p->max_changes =
                        max_changes < PTAGS_PLAN_MAX_CHANGES ? max_changes : PTAGS_PLAN_MAX_CHANGES;
                p->result = ptags_set_copy(current);
        }
        if (p == NULL || p->result == NULL) {
                ptags_plan_free(p);
                if (failed_line)
                        *failed_line = 0;
                return PTAGS_E_NOMEM;
        }
        r = PTAGS_OK;
        size_t looks = 0;
        for (size_t i = 0; i < n && r == PTAGS_OK; i++) {
                size_t len = lens ? lens[i] : strlen(lines[i]);
                ptags_cmd cmd;
                p->line = i;
                /* The kernel's order within a line: a bad '!' value fails
                 * after a missing tag, as for an unrestricted kernel writer. */
                r = ptags_cmd_parse_kernel(lines[i], len, &cmd);
                if (r == PTAGS_OK) {
                        looks += line_looks(p->result, &cmd);
                        if (looks > PTAGS_PLAN_MAX_LOOKS)
                                r = PTAGS_E_BATCH_TOO_BROAD;
                }
                if (r == PTAGS_OK)
                        r = ptags_cmd_run(p->result, &cmd, NULL, record_change, p);
        }
        if (r != PTAGS_OK) {
                if (failed_line)
                        *failed_line = p->line;
                ptags_plan_free(p);
                return r;
        }
        *out = p;
        return PTAGS_OK;
}

ptags_result ptags_plan_restrict(const ptags_plan *p, const ptags_set *current, const bool *keep,
                                 ptags_plan **out)
{
        char **lines = calloc(p->count + 1, sizeof(*lines));
        size_t n = 0;
        ptags_result r = lines == NULL ? PTAGS_E_NOMEM : PTAGS_OK;
        ptags_plan *q = NULL;

        for (size_t i = 0; i < p->count && r == PTAGS_OK; i++) {
                if (!keep[i])
                        continue;
                size_t len = ptags_change_format(&p->changes[i], false, NULL, 0);
                lines[n] = malloc(len + 1);
                if (lines[n] == NULL)
                        r = PTAGS_E_NOMEM;
                else
                        ptags_change_format(&p->changes[i], false, lines[n++], len + 1);
        }
        if (r == PTAGS_OK)
                r = ptags_plan_build(current, (const char *const *)lines, NULL, n, &q, NULL);
        /* Each line must give back its own change, and only it. */
        if (r == PTAGS_OK && q->count != n)
                r = PTAGS_E_INVALID_COMMAND;
        for (size_t i = 0, j = 0; r == PTAGS_OK && i < p->count; i++) {
                if (!keep[i])
                        continue;
                const ptags_change *c = &p->changes[i];
                ptags_change *d = &q->changes[j++];
                if (d->kind != c->kind || d->tag_len != c->tag_len ||
                    memcmp(d->tag, c->tag, c->tag_len) != 0)
                        r = PTAGS_E_INVALID_COMMAND;
                d->line = c->line;
        }
        for (size_t i = 0; i < n; i++)
                free(lines[i]);
        free(lines);
        if (r != PTAGS_OK) {
                ptags_plan_free(q);
                return r;
        }
        *out = q;
        return PTAGS_OK;
}

size_t ptags_plan_change_count(const ptags_plan *p)
{
        return p->count;
}

const ptags_change *ptags_plan_change_at(const ptags_plan *p, size_t i)
{
        return i < p->count ? &p->changes[i] : NULL;
}

const ptags_set *ptags_plan_result(const ptags_plan *p)
{
        return p->result;
}

/* Keep @own (a self-writer's live tags) in step with change @c: only
 * adding or removing a "ptags:" tag changes what a writer may do. */
static ptags_result track_change(ptags_set *own, const ptags_change *c)
{
        size_t at;
        bool present = ptags_set_lookup(own, c->tag, c->tag_len, &at);

        if (c->kind == PTAGS_CHANGE_REMOVE && present)
                ptags_set_remove_at(own, at);
        else if ((c->kind == PTAGS_CHANGE_ADD || c->kind == PTAGS_CHANGE_ADD_KEPT) && !present)
                return ptags_set_insert_at(own, at, c->tag, c->tag_len, false);
        return PTAGS_OK;
}

/* Decide each change in order against the writer's rights as the kernel
 * would hold them at that change: for a self writer, the changes before it
 * have happened (the batch applies whole or not at all). Into @granted
 * (one per change) when given, else stop at the first refused change. */
static ptags_result walk_rights(const ptags_plan *p, const ptags_writer *w, bool *granted,
                                size_t *refused)
{
        bool live = w != NULL && w->self && !w->unrestricted && w->tags != NULL;
        ptags_writer own_writer;
        ptags_set *own = NULL; /* copied at the first change of a rights tag */
        ptags_result r = PTAGS_OK;

        for (size_t i = 0; i < p->count && r == PTAGS_OK; i++) {
                const ptags_change *c = &p->changes[i];
                bool ok = ptags_rights_allow(own ? &own_writer : w, c->action, c->tag, c->tag_len);
                if (granted != NULL) {
                        granted[i] = ok;
                } else if (!ok) {
                        if (refused)
                                *refused = i;
                        r = PTAGS_E_NOT_PERMITTED;
                        break;
                }
                if (!live || !ptags_tag_is_rights(c->tag, c->tag_len))
                        continue;
                if (own == NULL) {
                        own = ptags_set_copy(w->tags);
                        if (own == NULL) {
                                r = PTAGS_E_NOMEM;
                                break;
                        }
                        own_writer = *w;
                        own_writer.tags = own;
                }
                r = track_change(own, c);
        }
        ptags_set_free(own);
        return r;
}

ptags_result ptags_plan_check_rights(const ptags_plan *p, const ptags_writer *w, size_t *refused)
{
        return walk_rights(p, w, NULL, refused);
}

ptags_result ptags_plan_rights(const ptags_plan *p, const ptags_writer *w, bool *granted)
{
        ptags_result r = walk_rights(p, w, granted, NULL);
        if (r != PTAGS_OK)
                memset(granted, 0, p->count * sizeof(*granted));
        return r;
}

/* snprintf-like assembly of "<op><tag>[=<value>]". */
static size_t format_line(const char *op, const ptags_change *c, const char *value,
                          size_t value_len, bool with_value, char *buf, size_t size)
{
        size_t op_len = strlen(op);
        size_t need = op_len + c->tag_len + (with_value ? 1 + value_len : 0);
        if (size == 0)
                return need;
        char tmp_eq = '=';
        const struct {
                const char *s;
                size_t len;
        } part[] = {{op, op_len},
                    {c->tag, c->tag_len},
                    {&tmp_eq, with_value ? 1 : 0},
                    {value, with_value ? value_len : 0}};
        size_t off = 0;
        for (size_t k = 0; k < sizeof(part) / sizeof(part[0]); k++) {
                size_t room = size - 1 - off;
                size_t n = part[k].len < room ? part[k].len : room;
                if (n > 0)
                        memcpy(buf + off, part[k].s, n);
                off += n;
        }
        buf[off] = '\0';
        return need;
}

size_t ptags_change_undo_count(const ptags_change *c)
{
        if (c->kind == PTAGS_CHANGE_REMOVE && c->old_value_len > 0)
                return 2;
        return 1;
}

size_t ptags_change_format(const ptags_change *c, bool inverse, char *buf, size_t size)
{
        if (inverse)
                return ptags_change_format_undo(c, 0, buf, size);
        switch (c->kind) {
        case PTAGS_CHANGE_ADD:
                return format_line("+", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_ADD_KEPT:
        case PTAGS_CHANGE_SET_KEEP:
                return format_line("+@", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_REMOVE:
                return format_line("-", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_CLEAR_KEEP:
                return format_line("-@", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_SET_VALUE:
                return format_line("!", c, c->value, c->value_len, true, buf, size);
        case PTAGS_CHANGE_CLEAR_VALUE:
                return format_line("!", c, "", 0, false, buf, size);
        }
        return format_line("#", c, "", 0, false, buf, size);
}

size_t ptags_change_format_undo(const ptags_change *c, size_t index, char *buf, size_t size)
{
        if (index >= ptags_change_undo_count(c)) {
                if (size > 0)
                        buf[0] = '\0';
                return 0;
        }
        switch (c->kind) {
        case PTAGS_CHANGE_ADD:
        case PTAGS_CHANGE_ADD_KEPT:
                return format_line("-", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_SET_KEEP:
                return format_line("-@", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_REMOVE:
                /* "+@" brings back tag and keep flag in one line; then the value. */
                if (index == 0)
                        return format_line(c->old_keep ? "+@" : "+", c, "", 0, false, buf, size);
                return format_line("!", c, c->old_value, c->old_value_len, true, buf, size);
        case PTAGS_CHANGE_CLEAR_KEEP:
                return format_line("+@", c, "", 0, false, buf, size);
        case PTAGS_CHANGE_SET_VALUE:
        case PTAGS_CHANGE_CLEAR_VALUE:
                return format_line("!", c, c->old_value, c->old_value_len, c->old_value_len > 0,
                                   buf, size);
        }
        return format_line("#", c, "", 0, false, buf, size);
}

ptags_result ptags_apply_atomic(ptags_set *target, const char *const *lines, const size_t *lens,
                                size_t n, const ptags_writer *w, size_t *failed_line)
{
        ptags_plan *p;
        size_t refused = 0;
        ptags_writer self;
        ptags_result r = ptags_plan_build(target, lines, lens, n, &p, failed_line);

        if (r != PTAGS_OK)
                return r;
        /* A writer changing itself starts with the target's tags. */
        if (w != NULL && w->self && !w->unrestricted) {
                self = *w;
                self.tags = target;
                w = &self;
        }
        r = ptags_plan_check_rights(p, w, &refused);
        if (r != PTAGS_OK) {
                if (failed_line)
                        *failed_line = r == PTAGS_E_NOT_PERMITTED ? p->changes[refused].line : 0;
                ptags_plan_free(p);
                return r;
        }
        ptags_set_swap(target, p->result);
        ptags_plan_free(p);
        return PTAGS_OK;
}
