// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-exec.c: execve keeps only kept tags, with their values and flags;
 * fork keeps everything (a copy). */
#include "model-test-util.h"

static void test_exec_filter(void)
{
        static const struct {
                const char *before;
                const char *after;
        } rows[] = {
                {"", ""},
                {"a\nb=1\n", ""},
                {"@a\n@b=1\n", "@a\n@b=1\n"},
                {"@a=x\nb=2\n@c\nd\n@ptags:add\nptags:sub\n", "@a=x\n@c\n@ptags:add\n"},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                ptags_set *s = test_set_from_text(rows[i].before);
                ptags_set *fork_copy = ptags_set_copy(s);
                ptags_set_exec_filter(s);
                test_assert_set(s, rows[i].after);
                /* A second exec changes nothing more. */
                ptags_set_exec_filter(s);
                test_assert_set(s, rows[i].after);
                test_assert_set(fork_copy, rows[i].before);
                ptags_set_free(fork_copy);
                ptags_set_free(s);
        }
}

static void test_exec_filter_large(void)
{
        /* Keep every third of 4000 tags. */
        ptags_set *s = test_set_with_n_tags(PTAGS_MAX_TAGS);
        GString *keep = g_string_new(NULL);
        for (size_t i = 0; i < PTAGS_MAX_TAGS; i += 3)
                g_string_append_printf(keep, "+@t%04zu\n", i);
        size_t expected = (PTAGS_MAX_TAGS + 2) / 3;
        for (size_t off = 0; off < keep->len;) {
                size_t consumed = 0;
                g_assert_cmpint(
                        ptags_apply_kernel(s, keep->str + off, keep->len - off, NULL, &consumed),
                        ==, PTAGS_OK);
                off += consumed;
        }
        ptags_set_exec_filter(s);
        g_assert_cmpuint(ptags_set_count(s), ==, expected);
        for (size_t i = 0; i < ptags_set_count(s); i++)
                g_assert_true(ptags_set_at(s, i)->keep);
        g_string_free(keep, TRUE);
        ptags_set_free(s);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/exec/filter", test_exec_filter);
        g_test_add_func("/exec/filter-large", test_exec_filter_large);
        return g_test_run();
}
