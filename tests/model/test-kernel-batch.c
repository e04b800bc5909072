// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-kernel-batch.c: the kernel's write(2) of several lines: not atomic,
 * stops at the first failing line, short byte counts, the one-page cut,
 * the final newline, and a self-writer's rights read live line by line. */
#include <errno.h>
#include <string.h>

#include "model-test-util.h"

typedef struct {
        const char *before;
        const char *batch;
        ptags_result result;
        size_t consumed;
        const char *after;
} batch_row;

static void run_batch_rows(const batch_row *rows, size_t n, const ptags_writer *w)
{
        for (size_t i = 0; i < n; i++) {
                const batch_row *row = &rows[i];
                ptags_set *s = test_set_from_text(row->before);
                size_t consumed = 12345;
                test_note("batch", row->batch);
                g_assert_cmpint(ptags_apply_kernel(s, row->batch, strlen(row->batch), w, &consumed),
                                ==, row->result);
                g_assert_cmpuint(consumed, ==, row->consumed);
                test_assert_set(s, row->after);
                ptags_set_free(s);
        }
}

static void test_stops_at_first_failure(void)
{
        static const batch_row rows[] = {
                {"", "", PTAGS_OK, 0, ""},
                {"", "+a\n+b\n", PTAGS_OK, 6, "a\nb\n"},
                {"", "\n#c\n+a\n", PTAGS_OK, 7, "a\n"},
                /* earlier lines stay applied; consumed = the failing line's offset */
                {"", "+a\n!b=v\n+c\n", PTAGS_E_NO_SUCH_TAG, 3, "a\n"},
                {"", "+a\n+b:\n+c\n", PTAGS_E_INVALID_TAG, 3, "a\n"},
                {"", "+a\n+b\n?c\n+d\n", PTAGS_E_NO_SUCH_TAG, 6, "a\nb\n"},
                {"x\n", "-x\nbad\n", PTAGS_E_INVALID_COMMAND, 3, ""},
                {"", "+a\n+x:*\n", PTAGS_E_INVALID_PATTERN, 3, "a\n"},
                {"", "+a\n!a=\x01\n", PTAGS_E_INVALID_VALUE, 3, "a\n"},
                /* the first line fails: nothing consumed (the kernel's -errno) */
                {"a\n", "!b=v\n+c\n", PTAGS_E_NO_SUCH_TAG, 0, "a\n"},
                {"a\n", "+\n", PTAGS_E_INVALID_COMMAND, 0, "a\n"},
                /* missing final newline: the unterminated line fails */
                {"", "+a", PTAGS_E_INVALID_COMMAND, 0, ""},
                {"", "+a\n+b", PTAGS_E_INVALID_COMMAND, 3, "a\n"},
                {"", "+a\n\n#x", PTAGS_E_INVALID_COMMAND, 4, "a\n"},
                /* a '?' precondition passes on what earlier lines did */
                {"", "+a\n?a\n+b\n", PTAGS_OK, 9, "a\nb\n"},
                {"a\n", "-a\n?a\n+b\n", PTAGS_E_NO_SUCH_TAG, 3, ""},
        };
        run_batch_rows(rows, G_N_ELEMENTS(rows), NULL);
}

static void test_errno_of_first_failure(void)
{
        ptags_set *s = test_set_from_text("a\n");
        size_t consumed = 1;
        ptags_result r = ptags_apply_kernel(s, "!b=1\n", 5, NULL, &consumed);
        /* What write(2) would return: -errno when nothing was consumed. */
        g_assert_cmpuint(consumed, ==, 0);
        g_assert_cmpint(-ptags_result_errno(r), ==, -ENOENT);
        r = ptags_apply_kernel(s, "+a\n+\n", 5, NULL, &consumed);
        g_assert_cmpuint(consumed, ==, 3); /* a short count, not an error */
        g_assert_cmpint(ptags_result_errno(r), ==, EINVAL);
        ptags_set_free(s);
}

static void test_one_page_cut(void)
{
        /* 1024 lines of 4 bytes fill the page exactly: all run, the rest of
         * the buffer is never looked at (even a bad line after it). */
        GString *buf = g_string_new(NULL);
        for (unsigned i = 0; i < 1024; i++)
                g_string_append_printf(buf, "+%02x\n", i & 0xFF);
        g_assert_cmpuint(buf->len, ==, PTAGS_WRITE_MAX);
        g_string_append(buf, "bad line\n");
        ptags_set *s = ptags_set_new();
        size_t consumed = 0;
        g_assert_cmpint(ptags_apply_kernel(s, buf->str, buf->len, NULL, &consumed), ==, PTAGS_OK);
        g_assert_cmpuint(consumed, ==, 4096);
        g_assert_cmpuint(ptags_set_count(s), ==, 256);
        ptags_set_free(s);

        /* A line that crosses the page boundary loses its newline: the lines
         * before it stay applied and the count stops at its offset. */
        g_string_truncate(buf, 0);
        for (unsigned i = 0; i < 1023; i++)
                g_string_append_printf(buf, "+%03x\n", i); /* 5 bytes each: 5115 */
        size_t lines_in_page = PTAGS_WRITE_MAX / 5;        /* 819 whole lines */
        s = ptags_set_new();
        g_assert_cmpint(ptags_apply_kernel(s, buf->str, buf->len, NULL, &consumed), ==,
                        PTAGS_E_INVALID_COMMAND);
        g_assert_cmpuint(consumed, ==, lines_in_page * 5);
        g_assert_cmpuint(ptags_set_count(s), ==, lines_in_page);
        ptags_set_free(s);
        g_string_free(buf, TRUE);
}

static void test_rights_live(void)
{
        /* The writer removes its own right to remove, then tries to remove
         * x: the second line already lacks the right. */
        ptags_set *s = test_set_from_text("ptags:ptags:sub\nptags:sub\nx\n");
        ptags_writer w = {.tags = s, .self = true};
        size_t consumed = 0;
        const char *batch = "-ptags:sub\n-x\n";
        g_assert_cmpint(ptags_apply_kernel(s, batch, strlen(batch), &w, &consumed), ==,
                        PTAGS_E_NOT_PERMITTED);
        g_assert_cmpuint(consumed, ==, 11);
        test_assert_set(s, "ptags:ptags:sub\nx\n");
        ptags_set_free(s);

        /* Granting itself ptags:add lets the next line add y. */
        s = test_set_from_text("ptags:ptags:add\n");
        w.tags = s;
        batch = "+ptags:add\n+y\n";
        g_assert_cmpint(ptags_apply_kernel(s, batch, strlen(batch), &w, &consumed), ==, PTAGS_OK);
        g_assert_cmpuint(consumed, ==, 14);
        test_assert_set(s, "ptags:add\nptags:ptags:add\ny\n");
        ptags_set_free(s);
}

static void test_rights_in_batches(void)
{
        ptags_set *rights;
        ptags_writer w = test_writer("ptags:app:add\nptags:app:sub\n", false, &rights);
        static const batch_row other_rows[] = {
                /* another target needs ptags:others too */
                {"", "+app:a\n", PTAGS_E_NOT_PERMITTED, 0, ""},
                /* global forms skip silently, no-ops are free */
                {"@app:a\nb\n", "-@\n-\n+b\n-c\n", PTAGS_OK, 11, "@app:a\nb\n"},
        };
        run_batch_rows(other_rows, G_N_ELEMENTS(other_rows), &w);
        /* A self writer's rights are the target's own tags. */
        ptags_writer self = {.self = true};
        static const batch_row self_rows[] = {
                {"ptags:app:add\nptags:app:sub\n", "+app:a\n+@app:b\n-app:a\n+other\n+app:c\n",
                 PTAGS_E_NOT_PERMITTED, 22, "@app:b\nptags:app:add\nptags:app:sub\n"},
                {"@app:a\nb\nptags:app:add\nptags:app:sub\n", "-@\n-\n", PTAGS_OK, 5,
                 "b\nptags:app:add\nptags:app:sub\n"},
        };
        run_batch_rows(self_rows, G_N_ELEMENTS(self_rows), &self);
        ptags_set_free(rights);
}

static void test_tag_limit_in_batch(void)
{
        ptags_set *s = test_set_with_n_tags(PTAGS_MAX_TAGS - 1);
        size_t consumed = 0;
        const char *batch = "+y1\n+y2\n+y3\n";
        g_assert_cmpint(ptags_apply_kernel(s, batch, strlen(batch), NULL, &consumed), ==,
                        PTAGS_E_TOO_MANY_TAGS);
        g_assert_cmpuint(consumed, ==, 4);
        g_assert_cmpuint(ptags_set_count(s), ==, 4000);
        g_assert_nonnull(ptags_set_find(s, "y1", 2));
        g_assert_null(ptags_set_find(s, "y2", 2));
        ptags_set_free(s);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/kernel-batch/stops-at-first-failure", test_stops_at_first_failure);
        g_test_add_func("/kernel-batch/errno-of-first-failure", test_errno_of_first_failure);
        g_test_add_func("/kernel-batch/one-page-cut", test_one_page_cut);
        g_test_add_func("/kernel-batch/rights-live", test_rights_live);
        g_test_add_func("/kernel-batch/rights-in-batches", test_rights_in_batches);
        g_test_add_func("/kernel-batch/tag-limit", test_tag_limit_in_batch);
        return g_test_run();
}
