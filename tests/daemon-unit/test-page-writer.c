// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-page-writer.c: plans become page-sized kernel writes that end on line
 * boundaries, and a failure midway is undone so the change is all-or-nothing.
 * The "kernel" here is the model's own non-atomic write semantics. */
#include <errno.h>
#include <string.h>

#include "page-writer.h"

typedef struct {
        ptags_set *set;
        size_t page;
        guint writes;
        guint fail_from_write; /* 0 = never: writes from this one on fail with fail_errno */
        int fail_errno;
        const char *refuse_tag;  /* a line naming it fails with EPERM, as a refused right */
        guint exec_before_write; /* 0 = never: the process executes a program before it */
        size_t bytes;            /* given to write() in all */
} FakeKernel;

static ssize_t fake_write(const char *buf, size_t len, void *user_data)
{
        FakeKernel *k = user_data;

        k->writes++;
        k->bytes += len;
        if (k->writes == k->exec_before_write)
                ptags_set_exec_filter(k->set);
        g_assert_cmpuint(len, <=, k->page);
        g_assert_cmpint(buf[len - 1], ==, '\n');
        if (k->fail_from_write != 0 && k->writes >= k->fail_from_write)
                return -k->fail_errno;
        size_t cut = len;
        if (k->refuse_tag != NULL) {
                g_autofree char *text = g_strndup(buf, len);
                const char *hit = strstr(text, k->refuse_tag);
                if (hit != NULL) {
                        while (hit > text && hit[-1] != '\n')
                                hit--;
                        cut = (size_t)(hit - text);
                        if (cut == 0)
                                return -EPERM;
                }
        }
        size_t consumed = 0;
        ptags_result r = ptags_apply_kernel(k->set, buf, cut, NULL, &consumed);
        if (r != PTAGS_OK)
                return consumed == 0 ? -ptags_result_errno(r) : (ssize_t)consumed;
        return (ssize_t)cut;
}

static ptags_set *set_of(const char *text)
{
        ptags_set *set = NULL;

        g_assert_cmpint(ptags_set_parse(text, strlen(text), &set, NULL), ==, PTAGS_OK);
        return set;
}

static ptags_plan *plan_of(const ptags_set *current, GPtrArray *lines)
{
        ptags_plan *plan = NULL;

        g_assert_cmpint(ptags_plan_build(current, (const char *const *)lines->pdata, NULL,
                                         lines->len, &plan, NULL),
                        ==, PTAGS_OK);
        return plan;
}

/* A batch that spans several pages and touches existing tags in every way
 * that needs a careful undo (removed tag with value and keep flag, values,
 * keep flags). */
static GPtrArray *big_batch(void)
{
        GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);

        g_ptr_array_add(lines, g_strdup("-app:rich"));
        g_ptr_array_add(lines, g_strdup("!app:plain=new value"));
        g_ptr_array_add(lines, g_strdup("-@app:kept"));
        for (int i = 0; i < 400; i++)
                g_ptr_array_add(lines, g_strdup_printf("+bulk:tag-number-%04d", i));
        g_ptr_array_add(lines, g_strdup("+@app:last"));
        return lines;
}

static const char initial[] = "@app:kept\napp:plain=old\n@app:rich=precious=value\n";

static void test_pack_lines(void)
{
        const char *lines[] = {"aaa", "bbbb", "c", "dddddd"};
        g_autoptr(GPtrArray) pages = ptags_pack_lines(lines, 4, 10);

        g_assert_nonnull(pages);
        g_assert_cmpuint(pages->len, ==, 2);
        const char *expect[] = {"aaa\nbbbb\n", "c\ndddddd\n"};
        for (guint i = 0; i < pages->len; i++) {
                size_t len = 0;
                const char *data = g_bytes_get_data(pages->pdata[i], &len);
                g_assert_cmpmem(data, len, expect[i], strlen(expect[i]));
        }
        /* A line filling a page exactly (with its '\n') fits; one more does not. */
        const char *exact[] = {"123456789"};
        g_autoptr(GPtrArray) one = ptags_pack_lines(exact, 1, 10);
        g_assert_cmpuint(one->len, ==, 1);
        const char *too_long[] = {"1234567890"};
        g_assert_null(ptags_pack_lines(too_long, 1, 10));
        g_autoptr(GPtrArray) none = ptags_pack_lines(NULL, 0, 10);
        g_assert_cmpuint(none->len, ==, 0);
}

static void test_write_success_spans_pages(void)
{
        FakeKernel k = {.set = set_of(initial), .page = PTAGS_WRITE_MAX};
        g_autoptr(GPtrArray) lines = big_batch();
        ptags_plan *plan = plan_of(k.set, lines);
        gboolean undo_failed = TRUE;
        gssize refused = 0;

        g_assert_cmpint(ptags_plan_write(plan, k.page, fake_write, &k, &refused, &undo_failed), ==,
                        0);
        g_assert_false(undo_failed);
        g_assert_cmpint(refused, ==, -1);
        g_assert_cmpuint(k.writes, >, 1);
        g_assert_true(ptags_set_equal(k.set, ptags_plan_result(plan)));
        ptags_plan_free(plan);
        ptags_set_free(k.set);
}

/* @expect_refused: the index of the change the failing write began with. */
static void check_failure_is_undone(FakeKernel *k, int expect_errno, gssize expect_refused)
{
        g_autoptr(GPtrArray) lines = big_batch();
        ptags_set *before = set_of(initial);
        ptags_plan *plan = plan_of(k->set, lines);
        gboolean undo_failed = TRUE;
        gssize refused = -2;

        g_assert_cmpint(ptags_plan_write(plan, k->page, fake_write, k, &refused, &undo_failed), ==,
                        -expect_errno);
        g_assert_false(undo_failed);
        g_assert_cmpint(refused, ==, expect_refused);
        g_autofree char *now = ptags_set_format(k->set, NULL);
        g_assert_cmpstr(now, ==, initial);
        g_assert_true(ptags_set_equal(k->set, before));
        ptags_set_free(before);
        ptags_plan_free(plan);
}

static void test_failing_second_page_is_undone(void)
{
        /* A line on the second page is refused: the first page is undone. */
        FakeKernel k = {.set = set_of(initial),
                        .page = PTAGS_WRITE_MAX,
                        .refuse_tag = "bulk:tag-number-0300"};

        /* Three changes to existing tags come before the bulk lines. */
        check_failure_is_undone(&k, EPERM, 3 + 300);
        ptags_set_free(k.set);
}

static void test_short_count_mid_page_is_undone(void)
{
        /* Small pages: the refused line sits in the middle of a page. */
        FakeKernel k = {.set = set_of(initial), .page = 100, .refuse_tag = "bulk:tag-number-0007"};

        check_failure_is_undone(&k, EPERM, 3 + 7);
        ptags_set_free(k.set);
}

static void test_first_line_failure_changes_nothing(void)
{
        FakeKernel k = {.set = set_of(initial),
                        .page = PTAGS_WRITE_MAX,
                        .fail_from_write = 1,
                        .fail_errno = EACCES};

        check_failure_is_undone(&k, EACCES, 0);
        g_assert_cmpuint(k.writes, ==, 1); /* nothing applied, nothing to undo */
        ptags_set_free(k.set);
}

static void test_undo_failure_is_reported(void)
{
        FakeKernel k = {.set = set_of(initial),
                        .page = PTAGS_WRITE_MAX,
                        .fail_from_write = 2,
                        .fail_errno = EIO};
        g_autoptr(GPtrArray) lines = big_batch();
        ptags_plan *plan = plan_of(k.set, lines);
        gboolean undo_failed = FALSE;
        gssize refused = -1;

        g_assert_cmpint(ptags_plan_write(plan, k.page, fake_write, &k, &refused, &undo_failed), ==,
                        -EIO);
        g_assert_true(undo_failed);
        /* The first page applied: the failing write began after its lines. */
        g_assert_cmpint(refused, >, 0);
        g_assert_cmpint(refused, <, 404);
        ptags_plan_free(plan);
        ptags_set_free(k.set);
}

static void test_undo_lines_restore_removed_tag(void)
{
        ptags_set *set = set_of("@app:x=v=1\n");
        const char *line = "-app:x";
        ptags_plan *plan = NULL;

        g_assert_cmpint(ptags_plan_build(set, &line, NULL, 1, &plan, NULL), ==, PTAGS_OK);
        g_autoptr(GPtrArray) undo = ptags_change_undo_lines(ptags_plan_change_at(plan, 0));
        g_assert_cmpuint(undo->len, ==, 2);
        g_assert_cmpstr(undo->pdata[0], ==, "+@app:x");
        g_assert_cmpstr(undo->pdata[1], ==, "!app:x=v=1");
        g_autoptr(GPtrArray) forward = ptags_plan_lines(plan);
        g_assert_cmpuint(forward->len, ==, 1);
        g_assert_cmpstr(forward->pdata[0], ==, "-app:x");
        ptags_plan_free(plan);
        ptags_set_free(set);
}

/* A kernel holding @start, refusing lines naming @refuse_tag (EPERM; may
 * be NULL), whose process executes a program before write @exec_before (0:
 * never), is given @lines; the write fails with @expect_errno. Checks that
 * the undo leaves @expect, and whether it says it took everything back.
 * Returns how many writes were made. */
static guint expect_undo(const char *start, const char *refuse_tag, guint exec_before,
                         const char *const *lines, size_t n, int expect_errno, const char *expect,
                         gboolean expect_undone)
{
        FakeKernel k = {.set = set_of(start),
                        .page = PTAGS_WRITE_MAX,
                        .refuse_tag = refuse_tag,
                        .exec_before_write = exec_before};
        ptags_plan *plan = NULL;
        gboolean undo_failed = !expect_undone;

        g_assert_cmpint(ptags_plan_build(k.set, lines, NULL, n, &plan, NULL), ==, PTAGS_OK);
        g_assert_cmpint(ptags_plan_write(plan, k.page, fake_write, &k, NULL, &undo_failed), ==,
                        -expect_errno);
        g_autofree char *now = ptags_set_format(k.set, NULL);
        g_assert_cmpstr(now, ==, expect);
        g_assert_cmpint(undo_failed, ==, !expect_undone);
        ptags_plan_free(plan);
        ptags_set_free(k.set);
        return k.writes;
}

/* The process executes a program after ptagsd read its tags: the exec
 * drops app:x and app:b, so "-app:x" changes nothing and "!app:b=v" fails.
 * Giving app:x back would hand the new program a tag (and value) its exec
 * dropped: the undo leaves it out and says that part of the change stays. */
static void test_undo_gives_no_unkept_tag_back(void)
{
        const char *lines[] = {"-app:x", "!app:b=v"};

        expect_undo("app:b\napp:x=secret\n@k:kept\n", NULL, 1, lines, 2, ENOENT, "@k:kept\n",
                    FALSE);
        /* Without an exec too: the process lost app:x, and is told so. */
        expect_undo("app:b\napp:x=secret\n@k:kept\n", "app:b=", 0, lines, 2, EPERM,
                    "app:b\n@k:kept\n", FALSE);
        /* A tag held with the keep flag survives an exec: it comes back whole. */
        expect_undo("app:b\n@app:x=secret\n", "app:b=", 0, lines, 2, EPERM,
                    "app:b\n@app:x=secret\n", TRUE);
}

/* A keep flag set then cleared on a tag held without it; the next line
 * fails, and the process executes a program before the undo (write 3,
 * after "!app:b=v" is written again), which drops app:t. The undo's
 * "+@app:t" would create it again for the new program: it goes only with
 * the query "?app:t" in the same write, which fails. */
static void test_undo_gives_a_keep_flag_back_only_to_a_tag_still_held(void)
{
        const char *lines[] = {"+@app:t", "-@app:t", "!app:b=v"};

        g_assert_cmpuint(expect_undo("app:b\napp:t\n", "app:b=", 3, lines, 3, EPERM, "", FALSE), ==,
                         3);
        /* With no exec the query holds and the undo takes everything back. */
        expect_undo("app:b\napp:t\n", "app:b=", 0, lines, 3, EPERM, "app:b\napp:t\n", TRUE);
}

/* A removal of a tag held without the keep flag stays, and so do the older
 * changes to it: taking back "!app:t=w" would fail on the missing tag and
 * used to end the undo there, leaving the new @app:a behind. */
static void test_undo_leaves_a_kept_removal_whole(void)
{
        const char *lines[] = {"+@app:a", "!app:t=w", "-app:t", "!app:b=x"};

        expect_undo("app:b\napp:t=v\n", "app:b=", 0, lines, 4, EPERM, "app:b\n", FALSE);
}

/* A keep flag taken from a kept tag with a value; the next line fails, and
 * the process executes a program before the undo, which drops app:k (no
 * longer kept) and app:b. "+@app:k" would create app:k again without its
 * value and the undo would say nothing changed: its query fails instead,
 * and the next step ("-app:n") is still written. */
static void test_undo_goes_on_past_a_step_it_cannot_take(void)
{
        const char *lines[] = {"+app:n", "-@app:k", "!app:b=x"};

        expect_undo("app:b\n@app:k=v\n", "app:b=", 3, lines, 3, EPERM, "", FALSE);
}

/* The process executes a program after ptagsd read its tags, which drops
 * app:t and app:b. "+@app:t" would create app:t (kept) for the new program,
 * and the undo of "!app:t=w" would then give it the old program's value:
 * the keep flag goes behind the query "?app:t", which refuses the change
 * before anything is written. */
static void test_keep_flag_set_only_on_a_tag_still_held(void)
{
        const char *lines[] = {"+@app:t", "!app:t=w", "!app:b=x"};

        g_assert_cmpuint(expect_undo("app:b\napp:t=v\n", NULL, 1, lines, 3, ENOENT, "", TRUE), ==,
                         1);
        /* With no exec the query holds: one write applies it all. */
        g_assert_cmpuint(
                expect_undo("app:b\napp:t=v\n", NULL, 0, lines, 3, 0, "app:b=x\n@app:t=w\n", TRUE),
                ==, 1);
}

/* The query of a guarded keep flag holds and its line fails: the count ends
 * inside the unit, and the change refused is the keep flag's, with the
 * one before it taken back. */
static void test_refused_line_behind_a_query_is_named(void)
{
        FakeKernel k = {.set = set_of("app:t\n"), .page = PTAGS_WRITE_MAX, .refuse_tag = "+@app:t"};
        const char *lines[] = {"+app:n", "+@app:t"};
        ptags_plan *plan = NULL;
        gssize refused = -2;
        gboolean undo_failed = TRUE;

        g_assert_cmpint(ptags_plan_build(k.set, lines, NULL, 2, &plan, NULL), ==, PTAGS_OK);
        g_assert_cmpint(ptags_plan_write(plan, k.page, fake_write, &k, &refused, &undo_failed), ==,
                        -EPERM);
        g_assert_cmpint(refused, ==, 1);
        g_assert_false(undo_failed);
        g_autofree char *now = ptags_set_format(k.set, NULL);
        g_assert_cmpstr(now, ==, "app:t\n");
        ptags_plan_free(plan);
        ptags_set_free(k.set);
}

/* ptags_plan_write_bytes() counts what a write that succeeds writes, the
 * query of a guarded keep flag included (it decides whether a change needs
 * the crash journal of several pages). */
static void test_write_bytes_match_the_writes(void)
{
        FakeKernel k = {.set = set_of(initial), .page = PTAGS_WRITE_MAX};
        g_autoptr(GPtrArray) lines = big_batch();
        g_ptr_array_add(lines, g_strdup("+@app:plain"));
        ptags_plan *plan = plan_of(k.set, lines);

        g_assert_cmpint(ptags_plan_write(plan, k.page, fake_write, &k, NULL, NULL), ==, 0);
        g_assert_cmpuint(ptags_plan_write_bytes(plan, k.page), ==, k.bytes);
        ptags_plan_free(plan);
        ptags_set_free(k.set);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/page-writer/pack-lines", test_pack_lines);
        g_test_add_func("/page-writer/success-spans-pages", test_write_success_spans_pages);
        g_test_add_func("/page-writer/failing-second-page-undone",
                        test_failing_second_page_is_undone);
        g_test_add_func("/page-writer/short-count-mid-page-undone",
                        test_short_count_mid_page_is_undone);
        g_test_add_func("/page-writer/first-line-failure", test_first_line_failure_changes_nothing);
        g_test_add_func("/page-writer/undo-failure-reported", test_undo_failure_is_reported);
        g_test_add_func("/page-writer/undo-lines-removed-tag", test_undo_lines_restore_removed_tag);
        g_test_add_func("/page-writer/undo-gives-no-unkept-tag-back",
                        test_undo_gives_no_unkept_tag_back);
        g_test_add_func("/page-writer/undo-keep-flag-only-to-a-tag-still-held",
                        test_undo_gives_a_keep_flag_back_only_to_a_tag_still_held);
        g_test_add_func("/page-writer/undo-leaves-a-kept-removal-whole",
                        test_undo_leaves_a_kept_removal_whole);
        g_test_add_func("/page-writer/undo-goes-on-past-a-step-it-cannot-take",
                        test_undo_goes_on_past_a_step_it_cannot_take);
        g_test_add_func("/page-writer/keep-flag-set-only-on-a-tag-still-held",
                        test_keep_flag_set_only_on_a_tag_still_held);
        g_test_add_func("/page-writer/write-bytes-match-the-writes",
                        test_write_bytes_match_the_writes);
        g_test_add_func("/page-writer/refused-line-behind-a-query-is-named",
                        test_refused_line_behind_a_query_is_named);
        return g_test_run();
}
