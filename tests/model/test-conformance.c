// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-conformance.c: the cases where the model once differed from the
 * original 2016 ptags LSM (issue 10), with the original's results as the
 * expected values, in kernel mode and, where it applies, in atomic mode. */
#include <string.h>

#include "model-test-util.h"

/* One kernel write on @before by @w; NULL @w is unrestricted. When @self,
 * the writer is the target: its rights are the target's own tags. */
typedef struct {
        const char *before;
        const char *batch;
        bool self;
        const char *rights; /* another writer's tags (self == false) */
        ptags_result result;
        size_t consumed;
        const char *after; /* NULL: unchanged */
} kernel_row;

static void run_kernel_rows(const kernel_row *rows, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const kernel_row *row = &rows[i];
                ptags_set *s = test_set_from_text(row->before);
                ptags_set *other = NULL;
                ptags_writer w = {.tags = s, .self = true};
                if (!row->self)
                        w = test_writer(row->rights, false, &other);
                size_t consumed = 12345;
                g_test_message("row %zu", i);
                test_note("on", row->before);
                test_note("batch", row->batch);
                g_assert_cmpint(
                        ptags_apply_kernel(s, row->batch, strlen(row->batch), &w, &consumed), ==,
                        row->result);
                g_assert_cmpuint(consumed, ==, row->consumed);
                test_assert_set(s, row->after ? row->after : row->before);
                ptags_set_free(other);
                ptags_set_free(s);
        }
}

/* The same batch in atomic mode by a self writer: all or nothing. */
static void assert_atomic_self(const char *before, const char *const *lines, size_t n,
                               ptags_result result, size_t failed_line, const char *after)
{
        ptags_set *s = test_set_from_text(before);
        ptags_writer w = {.tags = s, .self = true};
        size_t failed = 99;
        g_assert_cmpint(ptags_apply_atomic(s, lines, NULL, n, &w, &failed), ==, result);
        if (result != PTAGS_OK)
                g_assert_cmpuint(failed, ==, failed_line);
        test_assert_set(s, result == PTAGS_OK ? after : before);
        ptags_set_free(s);
}

/* 1. A self-writer's rights are live: each line, and each match of a
 * wildcard line, sees what the lines and matches before it did. */
static void test_live_rights_kernel(void)
{
        static const kernel_row rows[] = {
                /* granting itself ptags:add lets the next line add x */
                {"ptags:ptags:add\n", "+ptags:add\n+x\n", true, NULL, PTAGS_OK, 14,
                 "ptags:add\nptags:ptags:add\nx\n"},
                /* giving up ptags:add stops the next line */
                {"ptags:add\nptags:ptags:sub\n", "-ptags:add\n+x\n", true, NULL,
                 PTAGS_E_NOT_PERMITTED, 11, "ptags:ptags:sub\n"},
                /* one wildcard line: removing ptags:ptags:sub (in byte order
                 * before ptags:sub) makes ptags:sub a skipped match, while z,
                 * after it, still goes by ptags:sub */
                {"a\nptags:ptags:sub\nptags:sub\nz\n", "-\n", true, NULL, PTAGS_OK, 2,
                 "ptags:sub\n"},
                {"ptags:ptags:sub\nptags:sub\nx\n", "-ptags:*\n-x\n", true, NULL, PTAGS_OK, 12,
                 "ptags:sub\n"},
                /* a right gained on one line covers the matches of the next */
                {"a\nb\nptags:ptags:add\n", "+ptags:sub\n-\n", true, NULL, PTAGS_OK, 13,
                 "ptags:ptags:add\nptags:sub\n"},
                /* another process's rights do not change with its target's */
                {"", "+ptags:add\n+x\n", false,
                 "ptags:others\nptags:ptags:add\nptags:ptags:others\n", PTAGS_E_NOT_PERMITTED, 11,
                 "ptags:add\n"},
        };
        run_kernel_rows(rows, G_N_ELEMENTS(rows));
}

static void test_live_rights_atomic(void)
{
        const char *grant[] = {"+ptags:add", "+x"};
        assert_atomic_self("ptags:ptags:add\n", grant, 2, PTAGS_OK, 0,
                           "ptags:add\nptags:ptags:add\nx\n");
        const char *give_up[] = {"-ptags:add", "+x"};
        assert_atomic_self("ptags:add\nptags:ptags:sub\n", give_up, 2, PTAGS_E_NOT_PERMITTED, 1,
                           NULL);
        /* Atomic mode never skips: the match the kernel would skip refuses
         * the whole batch. */
        const char *all[] = {"-"};
        assert_atomic_self("a\nptags:ptags:sub\nptags:sub\nz\n", all, 1, PTAGS_E_NOT_PERMITTED, 0,
                           NULL);
        const char *rights_then_x[] = {"-ptags:ptags:*", "-x"};
        assert_atomic_self("ptags:ptags:sub\nptags:sub\nx\n", rights_then_x, 2, PTAGS_OK, 0,
                           "ptags:sub\n");
}

/* The daemon's "caller-holds-right": per change of a plan, whether the
 * caller's own tags grant it at that point of the batch. */
static void assert_granted(const char *before, const char *const *lines, size_t n,
                           const ptags_writer *w, const bool *expect, size_t n_expect)
{
        ptags_set *s = test_set_from_text(before);
        ptags_plan *p = NULL;
        g_assert_cmpint(ptags_plan_build(s, lines, NULL, n, &p, NULL), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(p), ==, n_expect);
        bool granted[8];
        g_assert_cmpuint(n_expect, <=, G_N_ELEMENTS(granted));
        ptags_writer self = {.tags = s, .self = true};
        g_assert_cmpint(ptags_plan_rights(p, w ? w : &self, granted), ==, PTAGS_OK);
        for (size_t i = 0; i < n_expect; i++) {
                g_test_message("change %zu (%s)", i, ptags_plan_change_at(p, i)->tag);
                g_assert_cmpint(granted[i], ==, expect[i]);
        }
        ptags_plan_free(p);
        ptags_set_free(s);
}

static void test_live_rights_per_change(void)
{
        const char *grant[] = {"+ptags:add", "+x"};
        assert_granted("ptags:ptags:add\n", grant, 2, NULL, (const bool[]){true, true}, 2);
        const char *give_up[] = {"-ptags:add", "+x"};
        assert_granted("ptags:add\nptags:ptags:sub\n", give_up, 2, NULL,
                       (const bool[]){true, false}, 2);
        /* "-" expands in byte order: a, ptags:ptags:sub, ptags:sub, z. In an
         * atomic batch ptags:sub goes too (on someone else's authority), so
         * z no longer has it. */
        const char *all[] = {"-"};
        assert_granted("a\nptags:ptags:sub\nptags:sub\nz\n", all, 1, NULL,
                       (const bool[]){true, true, false, false}, 4);
        /* Granted or not, each change counts for the next: the batch is all
         * or nothing, so if it runs, the kernel would have seen them all. */
        const char *unearned[] = {"+ptags:add", "+x", "-ptags:add", "+y"};
        assert_granted("", unearned, 4, NULL, (const bool[]){false, true, false, false}, 4);
        /* Another process's rights do not move with its target's tags. */
        ptags_set *rights;
        ptags_writer other =
                test_writer("ptags:others\nptags:ptags:add\nptags:ptags:others\n", false, &rights);
        assert_granted("", grant, 2, &other, (const bool[]){true, false}, 2);
        ptags_set_free(rights);
        /* Unknown tags (NULL) grant nothing, even along the batch. */
        ptags_writer unknown = {.tags = NULL, .self = true};
        assert_granted("ptags:ptags:add\n", grant, 2, &unknown, (const bool[]){false, false}, 2);
        ptags_writer root = {.unrestricted = true, .self = true};
        assert_granted("", grant, 2, &root, (const bool[]){true, true}, 2);
}

/* 2-4. '!' checks tag syntax, then the set right, then existence, then the
 * value; and it is never a free no-op. */
static void test_set_order_kernel(void)
{
        static const kernel_row rows[] = {
                /* 2. the right before existence */
                {"x=1\n", "!y=1\n", true, NULL, PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"x=1\n", "!y=1\n", false, "ptags:set\n", PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"x=1\n", "!y=1\n", false, "ptags:others\nptags:set\n", PTAGS_E_NO_SUCH_TAG, 0,
                 NULL},
                /* 3. never free: the same value, or clearing no value */
                {"x=1\n", "!x=1\n", true, NULL, PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"x\n", "!x\n", true, NULL, PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"x\n", "!x=\n", true, NULL, PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"x=1\n", "!x=1\n", false, "ptags:others\n", PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"ptags:set\nx=1\n", "!x=1\n", true, NULL, PTAGS_OK, 5, NULL},
                /* 4. the value last */
                {"x=1\n", "!x=\x01\n", true, NULL, PTAGS_E_NOT_PERMITTED, 0, NULL},
                {"ptags:set\nx=1\n", "!y=\x01\n", true, NULL, PTAGS_E_NO_SUCH_TAG, 0, NULL},
                {"ptags:set\nx=1\n", "!x=\x01\n", true, NULL, PTAGS_E_INVALID_VALUE, 0, NULL},
                /* tag syntax first of all */
                {"x=1\n", "!x:=\x01\n", true, NULL, PTAGS_E_INVALID_TAG, 0, NULL},
                {"x=1\n", "!x*=\x01\n", true, NULL, PTAGS_E_INVALID_PATTERN, 0, NULL},
                {"x=1\n", "!=\x01\n", true, NULL, PTAGS_E_INVALID_COMMAND, 0, NULL},
        };
        run_kernel_rows(rows, G_N_ELEMENTS(rows));

        /* A privileged writer: existence before the value. */
        ptags_set *s = test_set_from_text("x=1\n");
        size_t consumed = 1;
        g_assert_cmpint(ptags_apply_kernel(s, "!missing=\x01\n", 11, NULL, &consumed), ==,
                        PTAGS_E_NO_SUCH_TAG);
        g_assert_cmpuint(consumed, ==, 0);
        ptags_writer root = {.unrestricted = true};
        g_assert_cmpint(ptags_apply_kernel(s, "!missing=\x01\n", 11, &root, &consumed), ==,
                        PTAGS_E_NO_SUCH_TAG);
        g_assert_cmpint(ptags_apply_kernel(s, "!x=\x01\n", 5, &root, &consumed), ==,
                        PTAGS_E_INVALID_VALUE);
        test_assert_set(s, "x=1\n");
        ptags_set_free(s);
}

/* The order holds for one line on its own too, where no page cuts a
 * value longer than the limit. */
static void test_set_order_long_value(void)
{
        g_autofree char *value = test_repeat('v', PTAGS_MAX_VALUE_LEN + 1);
        g_autofree char *missing = g_strconcat("!missing=", value, NULL);
        g_autofree char *present = g_strconcat("!x=", value, NULL);
        ptags_set *s = test_set_from_text("x=1\n");
        ptags_writer self = {.self = true};
        ptags_cmd cmd;
        /* The strict parse (lines checked before anything runs) refuses the
         * value at once; the kernel's parse leaves it to the end. */
        g_assert_cmpint(ptags_cmd_parse(present, strlen(present), &cmd), ==, PTAGS_E_INVALID_VALUE);
        g_assert_cmpint(ptags_cmd_parse_kernel(missing, strlen(missing), &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_E_NO_SUCH_TAG);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, &self), ==, PTAGS_E_NOT_PERMITTED);
        g_assert_cmpint(ptags_cmd_parse_kernel(present, strlen(present), &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, &self), ==, PTAGS_E_NOT_PERMITTED);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_E_INVALID_VALUE);
        test_assert_set(s, "x=1\n");
        ptags_set_free(s);
}

/* In atomic mode the plan is built before anyone is asked, so it checks
 * existence and then the value, as an unrestricted kernel writer would. */
static void test_set_order_atomic(void)
{
        ptags_set *s = test_set_from_text("x=1\n");
        const char *missing[] = {"+y", "!missing=\x01"};
        size_t failed = 99;
        g_assert_cmpint(ptags_apply_atomic(s, missing, NULL, 2, NULL, &failed), ==,
                        PTAGS_E_NO_SUCH_TAG);
        g_assert_cmpuint(failed, ==, 1);
        const char *bad_value[] = {"+y", "!x=\x01"};
        g_assert_cmpint(ptags_apply_atomic(s, bad_value, NULL, 2, NULL, &failed), ==,
                        PTAGS_E_INVALID_VALUE);
        g_assert_cmpuint(failed, ==, 1);
        test_assert_set(s, "x=1\n");
        ptags_set_free(s);
}

/* 5. Comment lines are UTF-8 checked like every line. */
static void test_comment_utf8(void)
{
        static const kernel_row rows[] = {
                {"", "#\xff\n", true, NULL, PTAGS_E_INVALID_COMMAND, 0, NULL},
                {"ptags:add\n", "+a\n#\xC0\x80\n+b\n", true, NULL, PTAGS_E_INVALID_COMMAND, 3,
                 "a\nptags:add\n"},
                {"", "#\xC3\xA9t\xC3\xA9\n#\n", true, NULL, PTAGS_OK, 9, NULL},
        };
        run_kernel_rows(rows, G_N_ELEMENTS(rows));
        const char *bad[] = {"# fine", "#\xff"};
        size_t failed = 99;
        ptags_set *s = ptags_set_new();
        g_assert_cmpint(ptags_apply_atomic(s, bad, NULL, 2, NULL, &failed), ==,
                        PTAGS_E_INVALID_COMMAND);
        g_assert_cmpuint(failed, ==, 1);
        ptags_set_free(s);
}

/* 6. A wildcard pattern's 4000-byte limit is on its PREFIX, without ":*". */
static void test_pattern_prefix_limit(void)
{
        g_autofree char *p3999 = test_repeat('p', 3999);
        g_autofree char *p4000 = test_repeat('p', 4000);
        g_autofree char *p4001 = test_repeat('p', 4001);
        g_autofree char *pat = g_strconcat(p3999, ":*", NULL);      /* 4001 bytes */
        g_autofree char *pat_max = g_strconcat(p4000, ":*", NULL);  /* 4002 bytes */
        g_autofree char *pat_over = g_strconcat(p4001, ":*", NULL); /* 4003 bytes */
        g_assert_cmpint(ptags_pattern_validate(pat, strlen(pat), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(pat_max, strlen(pat_max), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(pat_over, strlen(pat_over), false), ==,
                        PTAGS_E_INVALID_PATTERN);

        const char *before = "@a\np\n";
        static const struct {
                const char *op;
                ptags_result result;
        } ops[] = {
                {"?", PTAGS_E_NO_SUCH_TAG},
                {"?@", PTAGS_E_NO_SUCH_TAG},
                {"-", PTAGS_OK},
                {"+@", PTAGS_OK},
                {"-@", PTAGS_OK},
                {"+", PTAGS_E_INVALID_PATTERN},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
                for (int k = 0; k < 3; k++) {
                        const char *p = k == 0 ? pat : k == 1 ? pat_max : pat_over;
                        ptags_result expect = k == 2 ? PTAGS_E_INVALID_PATTERN : ops[i].result;
                        g_autofree char *line = g_strconcat(ops[i].op, p, NULL);
                        g_autofree char *batch = g_strconcat(line, "\n", NULL);
                        ptags_set *s = test_set_from_text(before);
                        size_t consumed = 99, failed = 99;
                        g_test_message("%s + %zu-byte pattern", ops[i].op, strlen(p));
                        g_assert_cmpint(
                                ptags_apply_kernel(s, batch, strlen(batch), NULL, &consumed), ==,
                                expect);
                        g_assert_cmpuint(consumed, ==, expect == PTAGS_OK ? strlen(batch) : 0);
                        const char *lines[] = {line};
                        g_assert_cmpint(ptags_apply_atomic(s, lines, NULL, 1, NULL, &failed), ==,
                                        expect);
                        test_assert_set(s, before);
                        ptags_set_free(s);
                }
        }
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/conformance/live-rights/kernel", test_live_rights_kernel);
        g_test_add_func("/conformance/live-rights/atomic", test_live_rights_atomic);
        g_test_add_func("/conformance/live-rights/per-change", test_live_rights_per_change);
        g_test_add_func("/conformance/set-order/kernel", test_set_order_kernel);
        g_test_add_func("/conformance/set-order/long-value", test_set_order_long_value);
        g_test_add_func("/conformance/set-order/atomic", test_set_order_atomic);
        g_test_add_func("/conformance/comment-utf8", test_comment_utf8);
        g_test_add_func("/conformance/pattern-prefix-limit", test_pattern_prefix_limit);
        return g_test_run();
}
