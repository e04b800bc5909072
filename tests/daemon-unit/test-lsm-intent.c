// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-lsm-intent.c: the ptags-lsm crash journal: what it records reads back
 * whole, and the restore lines turn any state back into the recorded one. */
#include "lsm-intent.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static ptags_set *set_of(const char *text)
{
        ptags_set *s = NULL;
        g_assert_cmpint(ptags_set_parse(text, strlen(text), &s, NULL), ==, PTAGS_OK);
        return s;
}

/* Applies @lines to @s as the kernel would, line by line. */
static void apply_lines(ptags_set *s, GPtrArray *lines)
{
        for (guint i = 0; i < lines->len; i++) {
                ptags_writer w = {NULL, true, false};
                g_autofree char *line = g_strconcat(lines->pdata[i], "\n", NULL);
                size_t done = 0;
                ptags_result r = ptags_apply_kernel(s, line, strlen(line), &w, &done);
                g_assert_cmpint(r, ==, PTAGS_OK);
        }
}

static void test_restore_lines(void)
{
        static const char *const states[] = {
                "", "a\n", "@a=1\nb\n", "a=2\n@c\nd=x y\n", "@a\n@b=v\n@c=w\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(states); i++) {
                for (size_t j = 0; j < G_N_ELEMENTS(states); j++) {
                        ptags_set *now = set_of(states[i]), *want = set_of(states[j]);
                        g_autoptr(GPtrArray) lines = ptags_restore_lines(now, want);
                        apply_lines(now, lines);
                        g_assert_true(ptags_set_equal(now, want));
                        ptags_set_free(now);
                        ptags_set_free(want);
                }
        }
}

/* A process that may have executed a program since the note gets back
 * only what an exec keeps: the tags before, filtered as the kernel filters
 * them at exec, unless a tag exec drops is still there from before. */
static void test_restore_target(void)
{
        static const struct {
                const char *now, *before, *want;
        } cases[] = {
                /* The change removed app:cam (exec would have too): not
                 * given back; the kept tag is, and what the change added
                 * without the keep flag goes. */
                {"", "app:cam\n@k=v\n", "@k=v\n"},
                {"new\n", "app:cam\n@k\n", "@k\n"},
                {"@k\n@new\n", "app:cam=1\n@k\n", "@k\n"},
                /* other, dropped by any exec, is still there: no exec, all back. */
                {"other\n", "app:cam\nother\n", "app:cam\nother\n"},
                {"@k\nother=changed\n", "app:cam\n@k\nother=x\n", "app:cam\n@k\nother=x\n"},
                /* Kept tags alone tell nothing: filtered. */
                {"@k\n", "app:cam\n@k\n", "@k\n"},
                /* Nothing to give back. */
                {"", "", ""},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                ptags_set *now = set_of(cases[i].now), *before = set_of(cases[i].before);
                ptags_set *want = set_of(cases[i].want);
                ptags_set *got = ptags_restore_target(now, before);
                g_autofree char *text = ptags_set_format(got, NULL);
                if (!ptags_set_equal(got, want))
                        g_error("case %zu: got \"%s\", want \"%s\"", i, text, cases[i].want);
                ptags_set_free(got);
                ptags_set_free(want);
                ptags_set_free(before);
                ptags_set_free(now);
        }
}

static void test_intent_round_trip(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-intent-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "sub", "lsm-intent", NULL);
        ptags_set *before = set_of("@a=1\nb\n"), *read = NULL;
        pid_t pid = 0;
        guint64 start = 0;

        g_assert_cmpint(ptags_intent_read(path, &pid, &start, &read), ==, -ENOENT);
        g_assert_cmpint(ptags_intent_write(path, 1234, 987654321, before), ==, 0);
        g_assert_cmpint(ptags_intent_read(path, &pid, &start, &read), ==, 0);
        g_assert_cmpint(pid, ==, 1234);
        g_assert_cmpuint(start, ==, 987654321);
        g_assert_true(ptags_set_equal(read, before));
        g_assert_true(g_file_set_contents(path, "garbage", -1, NULL));
        ptags_set_free(read);
        read = NULL;
        g_assert_cmpint(ptags_intent_read(path, &pid, &start, &read), ==, -EBADMSG);
        ptags_set_free(before);
        g_unlink(path);
        g_autofree char *sub = g_path_get_dirname(path);
        g_rmdir(sub);
        g_rmdir(dir);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/lsm-intent/restore-lines", test_restore_lines);
        g_test_add_func("/lsm-intent/restore-target", test_restore_target);
        g_test_add_func("/lsm-intent/round-trip", test_intent_round_trip);
        return g_test_run();
}
