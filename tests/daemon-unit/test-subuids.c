// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* Whose budgets a uid draws on: the ranges of /etc/subuid. */
#include "subuids.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static gboolean lookup(const char *name, uid_t *uid)
{
        if (strcmp(name, "alice") == 0) {
                *uid = 1000;
                return TRUE;
        }
        if (strcmp(name, "bob") == 0) {
                *uid = 1001;
                return TRUE;
        }
        return FALSE;
}

static PtagsSubuidTable *parse(const char *text, guint *skipped)
{
        PtagsSubuidTable *t = ptags_subuid_table_parse(text, lookup);
        if (skipped != NULL)
                *skipped = ptags_subuid_table_skipped(t);
        return t;
}

static void test_owners(void)
{
        guint skipped;
        PtagsSubuidTable *t = parse("alice:100000:65536\n"
                                    "1001:165536:65536\n"
                                    "root:300000:10\n"
                                    "0:1000000:200000\n",
                                    &skipped);

        g_assert_cmpuint(skipped, ==, 1); /* "root": not a name the lookup knows */
        g_assert_cmpuint(ptags_subuid_table_ranges(t), ==, 3);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100000), ==, 1000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 165535), ==, 1000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 165536), ==, 1001);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 231071), ==, 1001);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 231072), ==, 231072);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 99999), ==, 99999);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1000), ==, 1000);
        /* Root's range: a budget per block of 65536 (a container's), never
         * root's. */
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1000000), ==, 1000000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1065535), ==, 1000000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1065536), ==, 1065536);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1199999), ==, 1196608);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1200000), ==, 1200000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(NULL, 100000), ==, 100000);
        ptags_subuid_table_free(t);
}

/* No range may hold uid 0: its uids would draw on root's budgets, which
 * leave root out of every per-uid bound. */
static void test_uid_0_is_never_charged_elsewhere(void)
{
        guint skipped;
        PtagsSubuidTable *t = parse("alice:0:100\n0:0:100000\n", &skipped);

        g_assert_cmpuint(skipped, ==, 2);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 0), ==, 0);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 1), ==, 1);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 65537), ==, 65537);
        ptags_subuid_table_free(t);
}

/* A range of root's cut short by an earlier one keeps its blocks where
 * they were. */
static void test_root_blocks_follow_the_line(void)
{
        PtagsSubuidTable *t = parse("alice:100000:70000\n0:100000:200000\n", NULL);

        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 169999), ==, 1000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 170000), ==, 165536);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 231072), ==, 231072);
        ptags_subuid_table_free(t);
}

static void test_bad_lines_are_left_out(void)
{
        guint skipped;
        PtagsSubuidTable *t = parse("# comment\n"
                                    "\n"
                                    "alice:100000\n"         /* too few fields */
                                    "alice:100000:10:1\n"    /* too many */
                                    "alice:-1:10\n"          /* a sign */
                                    "alice: 100000:10\n"     /* a space */
                                    "alice:0100000:10\n"     /* a leading zero */
                                    "alice:100000:0\n"       /* empty */
                                    "alice:4294967290:6\n"   /* reaches (uid_t)-1 */
                                    "alice:4294967296:1\n"   /* past 32 bits */
                                    "carol:200000:10\n"      /* unknown owner */
                                    ":200000:10\n"           /* no owner */
                                    "4294967295:200000:10\n" /* (uid_t)-1 owns nothing */
                                    "bob:4294967285:10\n",   /* the last uids but -1 */
                                    &skipped);

        g_assert_cmpuint(skipped, ==, 11);
        /* carol, and "4294967295" (no uid, so taken for a name) */
        g_assert_cmpuint(ptags_subuid_table_unknown_owners(t), ==, 2);
        g_assert_cmpuint(ptags_subuid_table_ranges(t), ==, 1);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 4294967294u), ==, 1001);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 200005), ==, 200005);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100005), ==, 100005);
        ptags_subuid_table_free(t);
}

static void test_overlaps_go_to_the_first_range(void)
{
        PtagsSubuidTable *t = parse("bob:100050:100\n"
                                    "alice:100000:100\n"
                                    "bob:100010:10\n"   /* inside alice's: nothing left */
                                    "1002:100000:500\n" /* alice's line came first */
                                    "1003:100600:10\n",
                                    NULL);

        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100000), ==, 1000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100015), ==, 1000);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100099), ==, 1000);
        /* bob's first range starts after 1002's, which holds it whole. */
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100100), ==, 1002);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100149), ==, 1002);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100499), ==, 1002);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100500), ==, 100500);
        g_assert_cmpuint(ptags_subuid_table_budget_uid(t, 100605), ==, 1003);
        ptags_subuid_table_free(t);
}

static void spin(void)
{
        if (!g_main_context_iteration(NULL, FALSE))
                g_usleep(1000);
}

/* The service's table follows the file: read at start, again on change. */
static void test_service_table_follows_the_file(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-subuid-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "subuid", NULL);
        g_autofree char *next = g_build_filename(dir, "subuid.new", NULL);

        g_assert_true(g_file_set_contents(path, "1000:100000:65536\n", -1, NULL));
        ptags_subuids_start(path);
        g_assert_cmpuint(ptags_budget_uid(100001), ==, 1000);
        /* As shadow's tools write it: a new file renamed over the old. */
        g_assert_true(g_file_set_contents(next, "1001:100000:65536\n", -1, NULL));
        g_assert_cmpint(g_rename(next, path), ==, 0);
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (ptags_budget_uid(100001) != 1001 && g_get_monotonic_time() < deadline)
                spin();
        g_assert_cmpuint(ptags_budget_uid(100001), ==, 1001);
        /* Gone: every uid alone. */
        g_assert_cmpint(g_unlink(path), ==, 0);
        deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (ptags_budget_uid(100001) != 100001 && g_get_monotonic_time() < deadline)
                spin();
        g_assert_cmpuint(ptags_budget_uid(100001), ==, 100001);
        ptags_subuids_stop();
        g_assert_cmpuint(ptags_budget_uid(100001), ==, 100001);
        g_rmdir(dir);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/subuids/owners", test_owners);
        g_test_add_func("/subuids/uid-0-is-never-charged-elsewhere",
                        test_uid_0_is_never_charged_elsewhere);
        g_test_add_func("/subuids/root-blocks-follow-the-line", test_root_blocks_follow_the_line);
        g_test_add_func("/subuids/bad-lines-are-left-out", test_bad_lines_are_left_out);
        g_test_add_func("/subuids/overlaps-go-to-the-first-range",
                        test_overlaps_go_to_the_first_range);
        g_test_add_func("/subuids/service-table-follows-the-file",
                        test_service_table_follows_the_file);
        return g_test_run();
}
