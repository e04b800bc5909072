// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* page-writer.c: applies a plan through a kernel file whose writes are cut to
 * a page and stop at the first failing line, undoing partial progress. */
#define G_LOG_DOMAIN "ptagsd-writer"

#include "page-writer.h"

#include <errno.h>
#include <string.h>

static char *format_change(const ptags_change *c, gboolean inverse)
{
        size_t need = ptags_change_format(c, inverse, NULL, 0);
        char *line = g_malloc(need + 1);

        ptags_change_format(c, inverse, line, need + 1);
        return line;
}

GPtrArray *ptags_plan_lines(const ptags_plan *plan)
{
        GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);

        for (size_t i = 0; i < ptags_plan_change_count(plan); i++)
                g_ptr_array_add(lines, format_change(ptags_plan_change_at(plan, i), FALSE));
        return lines;
}

GPtrArray *ptags_change_undo_lines(const ptags_change *c)
{
        GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);

        /* A removed tag with a value needs two lines (re-add, then the value);
         * the model knows how many. */
        for (size_t i = 0; i < ptags_change_undo_count(c); i++) {
                size_t need = ptags_change_format_undo(c, i, NULL, 0);
                char *line = g_malloc(need + 1);
                ptags_change_format_undo(c, i, line, need + 1);
                g_ptr_array_add(lines, line);
        }
        return lines;
}

GPtrArray *ptags_pack_lines(const char *const *lines, size_t n, size_t page)
{
        g_autoptr(GPtrArray) pages = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
        g_autoptr(GByteArray) cur = g_byte_array_new();

        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(lines[i]);
                if (len + 1 > page)
                        return NULL;
                if (cur->len + len + 1 > page) {
                        g_ptr_array_add(pages, g_byte_array_free_to_bytes(g_steal_pointer(&cur)));
                        cur = g_byte_array_new();
                }
                g_byte_array_append(cur, (const guint8 *)lines[i], (guint)len);
                g_byte_array_append(cur, (const guint8 *)"\n", 1);
        }
        if (cur->len > 0)
                g_ptr_array_add(pages, g_byte_array_free_to_bytes(g_steal_pointer(&cur)));
        return g_steal_pointer(&pages);
}

/* Write @units in pages, each unit a line or a query and the line it
 * guards (so they share a write); *written gets how many units the kernel
 * applied, and *@by_kernel whether a failure is a write's own -errno. */
static int write_lines(GPtrArray *units, size_t page, PtagsPageWriteFunc write_fn, void *user_data,
                       size_t *written, gboolean *by_kernel)
{
        g_autoptr(GPtrArray) pages =
                ptags_pack_lines((const char *const *)units->pdata, units->len, page);
        guint u = 0;

        *written = 0;
        *by_kernel = FALSE;
        if (pages == NULL)
                return -EOPNOTSUPP;
        for (guint p = 0; p < pages->len; p++) {
                size_t len = 0;
                const char *buf = g_bytes_get_data(pages->pdata[p], &len);
                size_t off = 0, unit_end = strlen(units->pdata[u]) + 1;
                /* A short count means the line after it failed; writing the
                 * rest again makes that line fail first, which yields its
                 * errno. A count ending inside a unit means its query held
                 * and its line failed: the line is written alone again. */
                while (off < len) {
                        ssize_t r = write_fn(buf + off, len - off, user_data);
                        if (r < 0) {
                                *by_kernel = TRUE;
                                return (int)r;
                        }
                        if (r == 0 || (size_t)r > len - off)
                                return -EIO;
                        off += (size_t)r;
                        if (buf[off - 1] != '\n')
                                return -EIO; /* not on a line boundary: cannot tell what ran */
                        while (unit_end <= off) {
                                (*written)++;
                                if (++u == units->len || unit_end == len)
                                        break;
                                unit_end += strlen(units->pdata[u]) + 1;
                        }
                }
        }
        return 0;
}

/* Whether "?TAG\n+@TAG\n" for @c's tag fits a page. */
static gboolean guard_fits(const ptags_change *c, size_t page)
{
        return 2 * c->tag_len + 5 <= page;
}

/* "?TAG\n+@TAG": a keep flag set on @c's tag only if the tag is still
 * there, query and line in one write; NULL for a tag too long to share a
 * page with its query. */
static char *guarded_keep(const ptags_change *c, size_t page)
{
        if (!guard_fits(c, page))
                return NULL;
        return g_strdup_printf("?%s\n+@%s", c->tag, c->tag);
}

/* The units of the forward write of @plan: a line per change, and a keep
 * flag set on a tag the plan found held without it comes behind a query
 * for the tag in the same write. If the target executed a program since
 * ptagsd read its tags, the exec dropped the tag, and "+@T" would create it
 * for the new program, whose undo would then give it the old value: the
 * query fails instead (ENOENT, as "!T=V" on a tag gone). A tag too long to
 * share a page with its query goes without. (transfer full) */
static GPtrArray *forward_units(const ptags_plan *plan, size_t page)
{
        GPtrArray *units = ptags_plan_lines(plan);

        for (guint i = 0; i < units->len; i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                char *guarded = c->kind == PTAGS_CHANGE_SET_KEEP ? guarded_keep(c, page) : NULL;
                if (guarded != NULL) {
                        g_free(units->pdata[i]);
                        units->pdata[i] = guarded;
                }
        }
        return units;
}

/* Whether the tag of @c was held without the keep flag before the plan,
 * which its first change in the plan tells (@first maps each tag to it): an
 * exec since ptagsd read the tags has dropped such a tag. */
static gboolean held_unkept(GHashTable *first, const ptags_change *c)
{
        const ptags_change *f = g_hash_table_lookup(first, c->tag);

        return f->kind != PTAGS_CHANGE_ADD && f->kind != PTAGS_CHANGE_ADD_KEPT && !f->old_keep;
}

/* One step of an undo: a line, or a query and the line it guards (joined
 * by '\n', so they share a write), and the tag it is about. */
typedef struct {
        char *text;
        const char *tag;
} UndoUnit;

static void undo_unit_free(gpointer data)
{
        UndoUnit *u = data;

        g_free(u->text);
        g_free(u);
}

static void add_unit(GPtrArray *units, const char *tag, char *text)
{
        UndoUnit *u = g_new(UndoUnit, 1);

        u->text = text;
        u->tag = tag;
        g_ptr_array_add(units, u);
}

/* The steps that take back the first @applied changes of @plan, newest
 * first. The target may have executed a program since ptagsd read its tags,
 * and nothing in the kernel's file tells: so the undo never gives back a
 * tag that was held without the keep flag, as the exec dropped it and the
 * new program would get it. Such a removal stays, with the older changes
 * to that tag (*@all is cleared: the process holds part of the change).
 * A keep flag is given back only to a tag still there, a query in the same
 * write (not at all for a tag too long to share a page with its query):
 * else it would create the tag again, without its value. The rest is taken
 * back as it was. */
static GPtrArray *undo_units(const ptags_plan *plan, size_t applied, size_t page, gboolean *all)
{
        g_autoptr(GHashTable) first = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GHashTable) left = g_hash_table_new(g_str_hash, g_str_equal);
        GPtrArray *units = g_ptr_array_new_with_free_func(undo_unit_free);

        for (size_t i = 0; i < applied; i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                if (!g_hash_table_contains(first, c->tag))
                        g_hash_table_insert(first, (gpointer)c->tag, (gpointer)c);
        }
        for (size_t i = applied; i-- > 0;) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                if (g_hash_table_contains(left, c->tag))
                        continue;
                if (held_unkept(first, c) && c->kind == PTAGS_CHANGE_REMOVE) {
                        *all = FALSE;
                        g_hash_table_add(left, (gpointer)c->tag);
                        continue;
                }
                if (c->kind == PTAGS_CHANGE_CLEAR_KEEP) {
                        char *guarded = guarded_keep(c, page);
                        if (guarded != NULL) {
                                add_unit(units, c->tag, guarded);
                        } else {
                                *all = FALSE;
                                g_hash_table_add(left, (gpointer)c->tag);
                        }
                        continue;
                }
                g_autoptr(GPtrArray) inv = ptags_change_undo_lines(c);
                for (guint j = 0; j < inv->len; j++)
                        add_unit(units, c->tag, g_strdup(inv->pdata[j]));
        }
        return units;
}

/* Write the undo @units in pages. A step the kernel refuses (its line or
 * its query finds the tags changed by another writer or an exec) is left
 * out with the older steps of its tag, and the writing goes on with the
 * next one; *@all is then cleared. An error about the file or the process
 * ends it. Returns how many steps were written. */
static size_t write_undo(GPtrArray *units, size_t page, PtagsPageWriteFunc write_fn,
                         void *user_data, gboolean *all)
{
        g_autoptr(GHashTable) failed = g_hash_table_new(g_str_hash, g_str_equal);
        size_t written = 0;
        guint i = 0;

        while (i < units->len) {
                g_autoptr(GString) buf = g_string_new(NULL);
                g_autoptr(GArray) in_page = g_array_new(FALSE, FALSE, sizeof(guint));
                guint next = i;
                for (; next < units->len; next++) {
                        const UndoUnit *u = units->pdata[next];
                        if (g_hash_table_contains(failed, u->tag))
                                continue;
                        if (buf->len + strlen(u->text) + 1 > page)
                                break;
                        g_string_append(buf, u->text);
                        g_string_append_c(buf, '\n');
                        g_array_append_val(in_page, next);
                }
                if (in_page->len == 0 && next < units->len) {
                        /* Longer than a page, it cannot be written: left out
                         * like a step the kernel refuses. */
                        g_hash_table_add(failed, (gpointer)((UndoUnit *)units->pdata[next])->tag);
                        *all = FALSE;
                        i = next + 1;
                        continue;
                }
                if (in_page->len == 0)
                        break;
                ssize_t r = write_fn(buf->str, buf->len, user_data);
                if (r == (ssize_t)buf->len) {
                        written += in_page->len;
                        i = next;
                        continue;
                }
                if ((r < 0 && !ptags_errno_is_verdict((int)-r)) || r == 0 ||
                    r > (ssize_t)buf->len || (r > 0 && buf->str[r - 1] != '\n')) {
                        *all = FALSE;
                        return written;
                }
                /* The step holding the refused line: the ones before it ran. */
                size_t done = r < 0 ? 0 : (size_t)r, off = 0;
                guint k = 0;
                for (; k < in_page->len; k++) {
                        const UndoUnit *u = units->pdata[g_array_index(in_page, guint, k)];
                        if (off + strlen(u->text) + 1 > done)
                                break;
                        off += strlen(u->text) + 1;
                }
                written += k;
                const UndoUnit *bad = units->pdata[g_array_index(in_page, guint, k)];
                g_hash_table_add(failed, (gpointer)bad->tag);
                *all = FALSE;
                i = g_array_index(in_page, guint, k) + 1;
        }
        return written;
}

gboolean ptags_errno_is_verdict(int e)
{
        return e == EINVAL || e == EPERM || e == ENOENT || e == ECANCELED;
}

size_t ptags_plan_write_bytes(const ptags_plan *plan, size_t page)
{
        size_t total = 0;

        /* As forward_units() writes them, without formatting a line. */
        for (size_t i = 0; i < ptags_plan_change_count(plan); i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                total += ptags_change_format(c, FALSE, NULL, 0) + 1;
                if (c->kind == PTAGS_CHANGE_SET_KEEP && guard_fits(c, page))
                        total += c->tag_len + 2; /* its query, "?TAG\n" */
        }
        return total;
}

int ptags_plan_write(const ptags_plan *plan, size_t page, PtagsPageWriteFunc write_fn,
                     void *user_data, gssize *refused, gboolean *undo_failed)
{
        g_autoptr(GPtrArray) forward = forward_units(plan, page);
        size_t applied = 0;
        gboolean by_kernel = FALSE;

        if (undo_failed != NULL)
                *undo_failed = FALSE;
        int r = write_lines(forward, page, write_fn, user_data, &applied, &by_kernel);
        /* Lines run in order and stop at the first failing one, so the
         * failure is the verdict on the change after those applied. */
        if (refused != NULL)
                *refused = r < 0 && by_kernel ? (gssize)applied : -1;
        if (r == 0 || applied == 0)
                return r;

        /* Forward units map one to one onto changes. */
        gboolean all = TRUE;
        g_autoptr(GPtrArray) undo = undo_units(plan, applied, page, &all);
        size_t undone = write_undo(undo, page, write_fn, user_data, &all);
        if (!all) {
                /* Not a bug of ptagsd's: another writer or an exec changed
                 * the tags meanwhile. The caller says what the process holds. */
                g_debug("undo of a partly applied change: %zu of %u steps written; the process "
                        "holds part of the change",
                        undone, undo->len);
                if (undo_failed != NULL)
                        *undo_failed = TRUE;
        }
        return r;
}
