// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* set.c: a process's tag list as a sorted array (binary-search lookups,
 * O(n) global edits), and its kernel read format (parse and print). */
#include <stdlib.h>
#include <string.h>

#include "model-private.h"

struct ptags_set {
        ptags_entry *items; /* sorted byte-wise by name, unique */
        size_t count;       /* slots in use, the gap included */
        size_t cap;
        /* While ptags_set_remove_if runs, items[gap_at .. gap_at+gap_len)
         * are slots already dropped or moved down; every read skips them,
         * so a self-writer's rights seen mid-sweep are the set as it is at
         * that moment. Both are 0 otherwise. */
        size_t gap_at;
        size_t gap_len;
};

/* The @i-th live entry and the number of live entries, across the gap. */
static ptags_entry *slot(const ptags_set *s, size_t i)
{
        return &s->items[i < s->gap_at ? i : i + s->gap_len];
}

static size_t live_count(const ptags_set *s)
{
        return s->count - s->gap_len;
}

/* Entries without a value point here, so "no value" never allocates. */
static char empty_value[1] = "";

static char *dup_bytes(const char *s, size_t len)
{
        char *p = malloc(len + 1);
        if (p == NULL)
                return NULL;
        if (len > 0)
                memcpy(p, s, len);
        p[len] = '\0';
        return p;
}

static void entry_clear(ptags_entry *e)
{
        free((char *)e->name);
        if (e->value != empty_value)
                free((char *)e->value);
}

/* Byte-wise order: memcmp on the common part, then the shorter first. */
static int name_cmp(const char *a, size_t a_len, const char *b, size_t b_len)
{
        size_t n = a_len < b_len ? a_len : b_len;
        int c = n > 0 ? memcmp(a, b, n) : 0;
        if (c != 0)
                return c;
        return (a_len > b_len) - (a_len < b_len);
}

ptags_set *ptags_set_new(void)
{
        return calloc(1, sizeof(ptags_set));
}

void ptags_set_free(ptags_set *s)
{
        if (s == NULL)
                return;
        for (size_t i = 0; i < s->count; i++)
                entry_clear(&s->items[i]);
        free(s->items);
        free(s);
}

static bool reserve(ptags_set *s, size_t want)
{
        if (want <= s->cap)
                return true;
        size_t cap = s->cap ? s->cap : 8;
        while (cap < want)
                cap *= 2; /* want <= PTAGS_MAX_TAGS: no overflow */
        ptags_entry *items = realloc(s->items, cap * sizeof(*items));
        if (items == NULL)
                return false;
        s->items = items;
        s->cap = cap;
        return true;
}

/* Append an entry copied from (name, value, keep); the caller keeps order. */
static bool append_copy(ptags_set *s, const char *name, size_t name_len, const char *value,
                        size_t value_len, bool keep)
{
        if (!reserve(s, s->count + 1))
                return false;
        ptags_entry *e = &s->items[s->count];
        e->name = dup_bytes(name, name_len);
        if (e->name == NULL)
                return false;
        e->name_len = name_len;
        if (value_len > 0) {
                e->value = dup_bytes(value, value_len);
                if (e->value == NULL) {
                        free((char *)e->name);
                        return false;
                }
        } else {
                e->value = empty_value;
        }
        e->value_len = value_len;
        e->keep = keep;
        s->count++;
        return true;
}

ptags_set *ptags_set_copy(const ptags_set *s)
{
        ptags_set *c = ptags_set_new();
        if (c == NULL || !reserve(c, live_count(s))) {
                ptags_set_free(c);
                return NULL;
        }
        for (size_t i = 0; i < live_count(s); i++) {
                const ptags_entry *e = slot(s, i);
                if (!append_copy(c, e->name, e->name_len, e->value, e->value_len, e->keep)) {
                        ptags_set_free(c);
                        return NULL;
                }
        }
        return c;
}

size_t ptags_set_count(const ptags_set *s)
{
        return live_count(s);
}

const ptags_entry *ptags_set_at(const ptags_set *s, size_t i)
{
        return i < live_count(s) ? slot(s, i) : NULL;
}

bool ptags_set_lookup(const ptags_set *s, const char *name, size_t len, size_t *index)
{
        size_t lo = 0, hi = live_count(s);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const ptags_entry *e = slot(s, mid);
                int c = name_cmp(e->name, e->name_len, name, len);
                if (c == 0) {
                        *index = mid;
                        return true;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *index = lo;
        return false;
}

const ptags_entry *ptags_set_find(const ptags_set *s, const char *name, size_t len)
{
        size_t i;
        return ptags_set_lookup(s, name, len, &i) ? slot(s, i) : NULL;
}

/* name_cmp of @name against the concatenation a|b|c. */
static int pieces_cmp(const char *name, size_t len, const char *const piece[3],
                      const size_t piece_len[3])
{
        size_t off = 0;
        for (int k = 0; k < 3; k++) {
                size_t rest = len - off;
                size_t n = rest < piece_len[k] ? rest : piece_len[k];
                int c = n > 0 ? memcmp(name + off, piece[k], n) : 0;
                if (c != 0)
                        return c;
                if (n < piece_len[k])
                        return -1; /* name ended inside this piece */
                off += n;
        }
        return off < len ? 1 : 0;
}

bool ptags_set_has_pieces(const ptags_set *s, const char *a, size_t a_len, const char *b,
                          size_t b_len, const char *c, size_t c_len)
{
        const char *piece[3] = {a, b, c};
        const size_t piece_len[3] = {a_len, b_len, c_len};
        size_t lo = 0, hi = live_count(s);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const ptags_entry *e = slot(s, mid);
                int r = pieces_cmp(e->name, e->name_len, piece, piece_len);
                if (r == 0)
                        return true;
                if (r < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

/* The first live entry whose name is not below the concatenation of the
 * pieces (the count when there is none). */
static size_t first_not_below(const ptags_set *s, const char *const piece[3],
                              const size_t piece_len[3])
{
        size_t lo = 0, hi = live_count(s);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const ptags_entry *m = slot(s, mid);
                if (pieces_cmp(m->name, m->name_len, piece, piece_len) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

bool ptags_set_has_prefix_pieces(const ptags_set *s, const char *a, size_t a_len, const char *b,
                                 size_t b_len)
{
        const char *piece[3] = {a, b, ""};
        const size_t piece_len[3] = {a_len, b_len, 0};
        /* The first name not below a|b starts with it if any name does. */
        size_t lo = first_not_below(s, piece, piece_len);
        if (lo == live_count(s))
                return false;
        const ptags_entry *e = slot(s, lo);
        return e->name_len >= a_len + b_len && memcmp(e->name, a, a_len) == 0 &&
               (b_len == 0 || memcmp(e->name + a_len, b, b_len) == 0);
}

bool ptags_set_equal(const ptags_set *a, const ptags_set *b)
{
        if (live_count(a) != live_count(b))
                return false;
        for (size_t i = 0; i < live_count(a); i++) {
                const ptags_entry *x = slot(a, i), *y = slot(b, i);
                if (x->keep != y->keep || x->name_len != y->name_len ||
                    x->value_len != y->value_len || memcmp(x->name, y->name, x->name_len) != 0 ||
                    memcmp(x->value, y->value, x->value_len) != 0)
                        return false;
        }
        return true;
}

/* Whether live entry @i's name starts with the @len bytes at @prefix. */
static bool has_prefix_at(const ptags_set *s, size_t i, const char *prefix, size_t len)
{
        const ptags_entry *e = slot(s, i);
        return e->name_len >= len && memcmp(e->name, prefix, len) == 0;
}

void ptags_set_pattern_range(const ptags_set *s, const char *pat, size_t len, size_t *first,
                             size_t *end)
{
        size_t n = live_count(s);
        if (len == 0) {
                *first = 0;
                *end = n;
                return;
        }
        if (!ptags_pattern_is_global(pat, len)) {
                bool found = ptags_set_lookup(s, pat, len, first);
                *end = *first + found;
                return;
        }
        /* "PREFIX:*": the names starting with "PREFIX:" follow each other
         * in byte-wise order, from the first name not below "PREFIX:". */
        size_t prefix_len = len - 1;
        const char *piece[3] = {pat, "", ""};
        const size_t piece_len[3] = {prefix_len, 0, 0};
        size_t lo = first_not_below(s, piece, piece_len), hi = n;
        *first = lo;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (has_prefix_at(s, mid, pat, prefix_len))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *end = lo;
}

bool ptags_set_matches(const ptags_set *s, const char *pat, size_t len, bool kept_only)
{
        size_t first, end;
        ptags_set_pattern_range(s, pat, len, &first, &end);
        for (size_t i = first; i < end; i++) {
                const ptags_entry *e = slot(s, i);
                if ((!kept_only || e->keep) && ptags_pattern_match(pat, len, e->name, e->name_len))
                        return true;
        }
        return false;
}

ptags_result ptags_set_insert_at(ptags_set *s, size_t index, const char *name, size_t len,
                                 bool keep)
{
        if (!reserve(s, s->count + 1))
                return PTAGS_E_NOMEM;
        char *copy = dup_bytes(name, len);
        if (copy == NULL)
                return PTAGS_E_NOMEM;
        memmove(&s->items[index + 1], &s->items[index], (s->count - index) * sizeof(ptags_entry));
        s->items[index] = (ptags_entry){
                .name = copy, .name_len = len, .value = empty_value, .value_len = 0, .keep = keep};
        s->count++;
        return PTAGS_OK;
}

ptags_result ptags_set_set_value_at(ptags_set *s, size_t index, const char *value, size_t len)
{
        ptags_entry *e = &s->items[index];
        char *copy = empty_value;
        if (len > 0) {
                copy = dup_bytes(value, len);
                if (copy == NULL)
                        return PTAGS_E_NOMEM;
        }
        if (e->value != empty_value)
                free((char *)e->value);
        e->value = copy;
        e->value_len = len;
        return PTAGS_OK;
}

void ptags_set_set_keep_at(ptags_set *s, size_t index, bool keep)
{
        s->items[index].keep = keep;
}

void ptags_set_remove_at(ptags_set *s, size_t index)
{
        entry_clear(&s->items[index]);
        memmove(&s->items[index], &s->items[index + 1],
                (s->count - index - 1) * sizeof(ptags_entry));
        s->count--;
}

ptags_result ptags_set_remove_if(ptags_set *s, ptags_set_drop_fn drop, void *ctx)
{
        return ptags_set_remove_if_range(s, 0, s->count, drop, ctx);
}

ptags_result ptags_set_remove_if_range(ptags_set *s, size_t first, size_t end,
                                       ptags_set_drop_fn drop, void *ctx)
{
        ptags_result r = PTAGS_OK;
        size_t out = first;
        for (size_t i = first; i < end; i++) {
                bool gone = false;
                /* Live entries: [0, out) kept so far, [i, count) still to
                 * decide; @drop may read the set (a self-writer's rights). */
                s->gap_at = out;
                s->gap_len = i - out;
                if (r == PTAGS_OK)
                        r = drop(&s->items[i], ctx, &gone);
                if (r == PTAGS_OK && gone)
                        entry_clear(&s->items[i]);
                else
                        s->items[out++] = s->items[i];
        }
        /* The entries after the range close the gap (items is NULL while
         * the set is empty, and memmove takes no NULL). */
        if (out < end && end < s->count)
                memmove(&s->items[out], &s->items[end], (s->count - end) * sizeof(ptags_entry));
        s->count -= end - out;
        s->gap_at = 0;
        s->gap_len = 0;
        return r;
}

void ptags_set_swap(ptags_set *a, ptags_set *b)
{
        ptags_set t = *a;
        *a = *b;
        *b = t;
}

void ptags_set_exec_filter(ptags_set *s)
{
        size_t out = 0;
        for (size_t i = 0; i < s->count; i++) {
                if (s->items[i].keep)
                        s->items[out++] = s->items[i];
                else
                        entry_clear(&s->items[i]);
        }
        s->count = out;
}

/* One line of the read format, without its '\n'. The kernel never prints
 * "TAG=" (an empty value is printed without '='), so that spelling is
 * refused: every accepted input is exactly what ptags_set_format prints. */
static ptags_result parse_line(const char *line, size_t len, const char **name, size_t *name_len,
                               const char **value, size_t *value_len, bool *keep)
{
        *keep = len > 0 && line[0] == '@';
        if (*keep) {
                line++;
                len--;
        }
        const char *eq = memchr(line, '=', len);
        *name = line;
        *name_len = eq ? (size_t)(eq - line) : len;
        *value = eq ? eq + 1 : "";
        *value_len = eq ? len - *name_len - 1 : 0;
        ptags_result r = ptags_tag_validate(*name, *name_len);
        if (r != PTAGS_OK)
                return r;
        if (eq && *value_len == 0)
                return PTAGS_E_INVALID_VALUE;
        return ptags_value_validate(*value, *value_len);
}

ptags_result ptags_set_parse(const char *buf, size_t len, ptags_set **out, size_t *err_offset)
{
        ptags_set *s = ptags_set_new();
        ptags_result r = s ? PTAGS_OK : PTAGS_E_NOMEM;
        size_t off = 0;

        while (r == PTAGS_OK && off < len) {
                const char *line = buf + off;
                const char *nl = memchr(line, '\n', len - off);
                const char *name, *value;
                size_t name_len, value_len;
                bool keep;

                if (nl == NULL) {
                        r = PTAGS_E_INVALID_COMMAND;
                        break;
                }
                r = parse_line(line, (size_t)(nl - line), &name, &name_len, &value, &value_len,
                               &keep);
                if (r != PTAGS_OK)
                        break;
                if (s->count > 0) {
                        const ptags_entry *last = &s->items[s->count - 1];
                        if (name_cmp(last->name, last->name_len, name, name_len) >= 0) {
                                r = PTAGS_E_INVALID_TAG; /* duplicate or out of order */
                                break;
                        }
                }
                if (s->count >= PTAGS_MAX_TAGS) {
                        r = PTAGS_E_TOO_MANY_TAGS;
                        break;
                }
                if (!append_copy(s, name, name_len, value, value_len, keep)) {
                        r = PTAGS_E_NOMEM;
                        break;
                }
                off = (size_t)(nl - buf) + 1;
        }
        if (r != PTAGS_OK) {
                ptags_set_free(s);
                if (err_offset)
                        *err_offset = off;
                return r;
        }
        *out = s;
        return PTAGS_OK;
}

char *ptags_set_format(const ptags_set *s, size_t *len)
{
        /* At most 4000 * (1 + 4000 + 1 + 32700 + 1) bytes: fits any size_t. */
        size_t total = 0;
        for (size_t i = 0; i < s->count; i++) {
                const ptags_entry *e = &s->items[i];
                total += e->keep + e->name_len + (e->value_len ? 1 + e->value_len : 0) + 1;
        }
        char *buf = malloc(total + 1);
        if (buf == NULL)
                return NULL;
        char *p = buf;
        for (size_t i = 0; i < s->count; i++) {
                const ptags_entry *e = &s->items[i];
                if (e->keep)
                        *p++ = '@';
                memcpy(p, e->name, e->name_len);
                p += e->name_len;
                if (e->value_len) {
                        *p++ = '=';
                        memcpy(p, e->value, e->value_len);
                        p += e->value_len;
                }
                *p++ = '\n';
        }
        *p = '\0';
        if (len)
                *len = total;
        return buf;
}
