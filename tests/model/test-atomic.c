// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-atomic.c: atomic batches (the D-Bus Apply): plans, their recorded
 * changes and normalized/undo lines, all-or-nothing application, and the
 * two batch modes side by side on the same input. */
#include <errno.h>
#include <string.h>

#include "model-test-util.h"

/* The plan's changes as "line:normalized|undo0|undo1" strings. */
static char *describe_changes(const ptags_plan *p)
{
        GString *out = g_string_new(NULL);
        for (size_t i = 0; i < ptags_plan_change_count(p); i++) {
                const ptags_change *c = ptags_plan_change_at(p, i);
                char buf[PTAGS_MAX_LINE_LEN];
                g_assert_cmpuint(ptags_change_format(c, false, buf, sizeof(buf)), ==, strlen(buf));
                g_string_append_printf(out, "%s%zu:%s", i ? " " : "", c->line, buf);
                for (size_t k = 0; k < ptags_change_undo_count(c); k++) {
                        ptags_change_format_undo(c, k, buf, sizeof(buf));
                        g_string_append_printf(out, "|%s", buf);
                }
        }
        g_assert_null(ptags_plan_change_at(p, ptags_plan_change_count(p)));
        return g_string_free(out, FALSE);
}

typedef struct {
        const char *before;
        const char *lines[6];
        const char *changes;
        const char *after;
} plan_row;

static void test_plan_changes(void)
{
        static const plan_row rows[] = {
                {"", {NULL}, "", ""},
                {"", {"+a", NULL}, "0:+a|-a", "a\n"},
                {"", {"+@a", NULL}, "0:+@a|-a", "@a\n"},
                {"a=v\n", {"+@a", NULL}, "0:+@a|-@a", "@a=v\n"},
                {"@a=v\n", {"-a", NULL}, "0:-a|+@a|!a=v", ""},
                {"a\n", {"-a", NULL}, "0:-a|+a", ""},
                {"@a\n", {"-@a", NULL}, "0:-@a|+@a", "a\n"},
                {"a=old\n", {"!a=new", NULL}, "0:!a=new|!a=old", "a=new\n"},
                {"a\n", {"!a=v=w", NULL}, "0:!a=v=w|!a", "a=v=w\n"},
                {"a=old\n", {"!a=", NULL}, "0:!a|!a=old", "a\n"},
                /* no-ops record nothing */
                {"@a=v\n", {"+a", "+@a", "!a=v", "-b", "-@b", NULL}, "", "@a=v\n"},
                {"a\n", {"#x", "", "?a", "?", "-@a", NULL}, "", "a\n"},
                /* add then remove in one batch: two changes */
                {"", {"+a", "-a", NULL}, "0:+a|-a 1:-a|+a", ""},
                /* patterns expand to one change per matching tag */
                {"app:a\n@app:b=1\nc\n",
                 {"-app:*", NULL},
                 "0:-app:a|+app:a 0:-app:b|+@app:b|!app:b=1",
                 "c\n"},
                {"a\nb\n@c\n", {"+@", NULL}, "0:+@a|-@a 0:+@b|-@b", "@a\n@b\n@c\n"},
                {"@a\nb\n@c\n", {"-@", NULL}, "0:-@a|+@a 0:-@c|+@c", "a\nb\nc\n"},
                /* queries see the evolving set */
                {"",
                 {"+a", "?a", "!a=1", "+@a", "?@", "?@a"},
                 "0:+a|-a 2:!a=1|!a 3:+@a|-@a",
                 "@a=1\n"},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                const plan_row *row = &rows[i];
                size_t n = 0;
                while (n < G_N_ELEMENTS(row->lines) && row->lines[n])
                        n++;
                ptags_set *current = test_set_from_text(row->before);
                ptags_plan *p = NULL;
                size_t failed = 77;
                g_test_message("row %zu", i);
                g_assert_cmpint(ptags_plan_build(current, row->lines, NULL, n, &p, &failed), ==,
                                PTAGS_OK);
                g_assert_cmpuint(failed, ==, 77);
                g_autofree char *changes = describe_changes(p);
                g_assert_cmpstr(changes, ==, row->changes);
                test_assert_set(ptags_plan_result(p), row->after);
                test_assert_set(current, row->before); /* the plan works on a copy */

                /* The atomic call gives the same result. */
                g_assert_cmpint(ptags_apply_atomic(current, row->lines, NULL, n, NULL, &failed), ==,
                                PTAGS_OK);
                test_assert_set(current, row->after);
                ptags_plan_free(p);
                ptags_set_free(current);
        }
}

static void test_change_fields(void)
{
        ptags_set *s = test_set_from_text("@a=old\n");
        const char *lines[] = {"!a=new", "-a"};
        ptags_plan *p;
        g_assert_cmpint(ptags_plan_build(s, lines, NULL, 2, &p, NULL), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(p), ==, 2);
        const ptags_change *c = ptags_plan_change_at(p, 0);
        g_assert_cmpint(c->kind, ==, PTAGS_CHANGE_SET_VALUE);
        g_assert_cmpint(c->action, ==, PTAGS_ACTION_SET);
        g_assert_cmpuint(c->line, ==, 0);
        g_assert_cmpstr(c->tag, ==, "a");
        g_assert_cmpstr(c->value, ==, "new");
        g_assert_cmpstr(c->old_value, ==, "old");
        g_assert_true(c->old_keep);
        c = ptags_plan_change_at(p, 1);
        g_assert_cmpint(c->kind, ==, PTAGS_CHANGE_REMOVE);
        g_assert_cmpint(c->action, ==, PTAGS_ACTION_SUB);
        g_assert_cmpuint(c->line, ==, 1);
        g_assert_cmpstr(c->value, ==, "");
        g_assert_cmpstr(c->old_value, ==, "new");
        g_assert_true(c->old_keep);
        ptags_plan_free(p);

        /* Each kind needs the right ptags(7) assigns to it (add, sub or set). */
        const char *more[] = {"+b", "+@c", "+@b", "-@b", "!b=1", "!b"};
        g_assert_cmpint(ptags_plan_build(s, more, NULL, 6, &p, NULL), ==, PTAGS_OK);
        static const struct {
                ptags_change_kind kind;
                ptags_action action;
        } expect[] = {
                {PTAGS_CHANGE_ADD, PTAGS_ACTION_ADD},
                {PTAGS_CHANGE_ADD_KEPT, PTAGS_ACTION_ADD},
                {PTAGS_CHANGE_SET_KEEP, PTAGS_ACTION_ADD},
                {PTAGS_CHANGE_CLEAR_KEEP, PTAGS_ACTION_SUB},
                {PTAGS_CHANGE_SET_VALUE, PTAGS_ACTION_SET},
                {PTAGS_CHANGE_CLEAR_VALUE, PTAGS_ACTION_SET},
        };
        g_assert_cmpuint(ptags_plan_change_count(p), ==, G_N_ELEMENTS(expect));
        for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
                g_assert_cmpint(ptags_plan_change_at(p, i)->kind, ==, expect[i].kind);
                g_assert_cmpint(ptags_plan_change_at(p, i)->action, ==, expect[i].action);
                g_assert_cmpuint(ptags_plan_change_at(p, i)->line, ==, i);
        }
        ptags_plan_free(p);
        ptags_set_free(s);
}

typedef struct {
        const char *before;
        const char *lines[4];
        ptags_result result;
        size_t failed_line;
} fail_row;

static void test_all_or_nothing(void)
{
        static const fail_row rows[] = {
                {"a\n", {"+b", "+c:", "+d", NULL}, PTAGS_E_INVALID_TAG, 1},
                {"a\n", {"+b", "!z=1", NULL}, PTAGS_E_NO_SUCH_TAG, 1},
                {"a\n", {"-a", "?a", "+b", NULL}, PTAGS_E_NO_SUCH_TAG, 1},
                {"a\n", {"?@a", "+b", NULL}, PTAGS_E_NO_SUCH_TAG, 0},
                {"a\n", {"+b", "-b", "+", NULL}, PTAGS_E_INVALID_COMMAND, 2},
                {"a\n", {"-a", "+x:*", NULL}, PTAGS_E_INVALID_PATTERN, 1},
                {"a\n", {"+b", "!a=\x01", NULL}, PTAGS_E_INVALID_VALUE, 1},
                /* the kernel's order: a missing tag before a bad value */
                {"a\n", {"-a", "!a=\x01", NULL}, PTAGS_E_NO_SUCH_TAG, 1},
                {"a\n", {"-a", "+b\n", NULL}, PTAGS_E_INVALID_COMMAND, 1},
                {"a\n", {"-a", "bad", NULL}, PTAGS_E_INVALID_COMMAND, 1},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                const fail_row *row = &rows[i];
                size_t n = 0;
                while (n < G_N_ELEMENTS(row->lines) && row->lines[n])
                        n++;
                ptags_set *s = test_set_from_text(row->before);
                ptags_plan *sentinel = (ptags_plan *)&n, *p = sentinel;
                size_t failed = 99;
                g_test_message("row %zu", i);
                g_assert_cmpint(ptags_plan_build(s, row->lines, NULL, n, &p, &failed), ==,
                                row->result);
                g_assert_cmpuint(failed, ==, row->failed_line);
                g_assert_true(p == sentinel);
                failed = 99;
                g_assert_cmpint(ptags_apply_atomic(s, row->lines, NULL, n, NULL, &failed), ==,
                                row->result);
                g_assert_cmpuint(failed, ==, row->failed_line);
                test_assert_set(s, row->before);
                ptags_set_free(s);
        }
}

static void test_explicit_lengths(void)
{
        ptags_set *s = ptags_set_new();
        const char *lines[] = {"+abc", "+a\0b"};
        const size_t lens[] = {2, 4};
        size_t failed = 9;
        g_assert_cmpint(ptags_apply_atomic(s, lines, lens, 1, NULL, &failed), ==, PTAGS_OK);
        test_assert_set(s, "a\n");
        g_assert_cmpint(ptags_apply_atomic(s, lines, lens, 2, NULL, &failed), ==,
                        PTAGS_E_INVALID_TAG);
        g_assert_cmpuint(failed, ==, 1);
        test_assert_set(s, "a\n");
        ptags_set_free(s);
}

static void test_tag_limit(void)
{
        ptags_set *s = test_set_with_n_tags(PTAGS_MAX_TAGS - 1);
        const char *lines[] = {"+y1", "+y2", "-t0000", "+y3"};
        size_t failed = 0;
        g_assert_cmpint(ptags_apply_atomic(s, lines, NULL, 4, NULL, &failed), ==,
                        PTAGS_E_TOO_MANY_TAGS);
        g_assert_cmpuint(failed, ==, 1);
        g_assert_cmpuint(ptags_set_count(s), ==, 3999);
        /* Removing first makes room, as in the kernel. */
        const char *ordered[] = {"+y1", "-t0000", "+y2"};
        g_assert_cmpint(ptags_apply_atomic(s, ordered, NULL, 3, NULL, &failed), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_set_count(s), ==, 4000);
        ptags_set_free(s);
}

/* A plan is bounded whatever the target holds: global keep flips over a full
 * set stop at PTAGS_PLAN_MAX_CHANGES, and value changes copying long values
 * stop at PTAGS_PLAN_MAX_BYTES, at the line that crossed the bound. Keep
 * flips copy no values: flips over tags with long values cost their names. */
static void test_plan_bounds(void)
{
        ptags_set *full = test_set_with_n_tags(PTAGS_MAX_TAGS);
        const char *flips[] = {"+@", "-@", "+@", "-@", "+@"};
        ptags_plan *plan = NULL;
        size_t failed = 0;
        g_assert_cmpint(ptags_plan_build(full, flips, NULL, 4, &plan, &failed), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(plan), ==, PTAGS_PLAN_MAX_CHANGES);
        ptags_plan_free(plan);
        plan = NULL;
        g_assert_cmpint(ptags_plan_build(full, flips, NULL, 5, &plan, &failed), ==,
                        PTAGS_E_BATCH_TOO_LARGE);
        g_assert_null(plan);
        g_assert_cmpuint(failed, ==, 4);
        g_assert_cmpint(ptags_apply_atomic(full, flips, NULL, 5, NULL, &failed), ==,
                        PTAGS_E_BATCH_TOO_LARGE);
        ptags_set_free(full);

        /* 400 tags with the longest value: each flip line copies ~13 MB. */
        ptags_set *heavy = ptags_set_new();
        char *line = g_malloc(PTAGS_MAX_VALUE_LEN + 16);
        for (unsigned i = 0; i < 400; i++) {
                int n = g_snprintf(line, 16, "!v%03u=", i);
                memset(line + n, 'x', PTAGS_MAX_VALUE_LEN);
                char add[8];
                g_snprintf(add, sizeof(add), "+v%03u", i);
                const char *both[] = {add, line};
                size_t lens[] = {strlen(add), (size_t)n + PTAGS_MAX_VALUE_LEN};
                g_assert_cmpint(ptags_apply_atomic(heavy, both, lens, 2, NULL, NULL), ==, PTAGS_OK);
        }
        const char *many_flips[40];
        for (size_t i = 0; i < G_N_ELEMENTS(many_flips); i++)
                many_flips[i] = i % 2 ? "-@" : "+@";
        /* 16000 changes: with each value copied (13 MB a line) the 16th line
         * crossed 192 MiB. */
        g_assert_cmpint(
                ptags_plan_build(heavy, many_flips, NULL, G_N_ELEMENTS(many_flips), &plan, &failed),
                ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(plan), ==, 16000);
        for (size_t i = 0; i < ptags_plan_change_count(plan); i++)
                g_assert_cmpuint(ptags_plan_change_at(plan, i)->old_value_len, ==, 0);
        ptags_plan_free(plan);
        plan = NULL;

        /* Each value change copies the new value and the one it replaces:
         * 2 * 32700 bytes a line, so line 3079 crosses 192 MiB. */
        const size_t n_sets = 3100;
        char *values[2];
        size_t set_lens[3100];
        const char *sets[3100];
        for (int k = 0; k < 2; k++) {
                values[k] = g_malloc(PTAGS_MAX_VALUE_LEN + 16);
                int n = g_snprintf(values[k], 16, "!v000=");
                memset(values[k] + n, k ? 'y' : 'z', PTAGS_MAX_VALUE_LEN);
                set_lens[k] = (size_t)n + PTAGS_MAX_VALUE_LEN;
        }
        for (size_t i = 0; i < n_sets; i++) {
                sets[i] = values[i % 2];
                set_lens[i] = set_lens[i % 2];
        }
        g_assert_cmpint(ptags_plan_build(heavy, sets, set_lens, n_sets, &plan, &failed), ==,
                        PTAGS_E_BATCH_TOO_LARGE);
        g_assert_null(plan);
        g_assert_cmpuint(failed, ==, (size_t)PTAGS_PLAN_MAX_BYTES / (4 + 2 * PTAGS_MAX_VALUE_LEN));
        g_assert_cmpint(ptags_result_errno(PTAGS_E_BATCH_TOO_LARGE), ==, E2BIG);
        g_assert_cmpstr(ptags_result_name(PTAGS_E_BATCH_TOO_LARGE), ==, "InvalidCommand");
        g_free(values[0]);
        g_free(values[1]);
        g_free(line);
        ptags_set_free(heavy);
}

static void test_rights_checked_per_change(void)
{
        ptags_set *rights;
        ptags_writer w =
                test_writer("ptags:app:add\nptags:app:sub\nptags:others\n", false, &rights);
        ptags_set *s = test_set_from_text("app:a\napp:b\nother\n");
        /* Kernel mode would skip "other"; atomic mode refuses the batch and
         * names the line whose expansion reached it. */
        const char *lines[] = {"+app:c", "-", "+app:d"};
        size_t failed = 0, refused = 0;
        ptags_plan *p;
        g_assert_cmpint(ptags_plan_build(s, lines, NULL, 3, &p, NULL), ==, PTAGS_OK);
        g_assert_cmpint(ptags_plan_check_rights(p, &w, &refused), ==, PTAGS_E_NOT_PERMITTED);
        g_assert_cmpstr(ptags_plan_change_at(p, refused)->tag, ==, "other");
        g_assert_cmpint(ptags_plan_check_rights(p, NULL, NULL), ==, PTAGS_OK);
        ptags_plan_free(p);
        g_assert_cmpint(ptags_apply_atomic(s, lines, NULL, 3, &w, &failed), ==,
                        PTAGS_E_NOT_PERMITTED);
        g_assert_cmpuint(failed, ==, 1);
        test_assert_set(s, "app:a\napp:b\nother\n");

        const char *allowed[] = {"+app:c", "-app:*", "+@app:d", "-other", "+other"};
        /* "-other" then "+other" are two real changes, each needs a right. */
        g_assert_cmpint(ptags_apply_atomic(s, allowed, NULL, 3, &w, &failed), ==, PTAGS_OK);
        test_assert_set(s, "@app:d\nother\n");
        g_assert_cmpint(ptags_apply_atomic(s, allowed, NULL, 5, &w, &failed), ==,
                        PTAGS_E_NOT_PERMITTED);
        g_assert_cmpuint(failed, ==, 3);
        test_assert_set(s, "@app:d\nother\n");
        ptags_set_free(s);
        ptags_set_free(rights);
}

/* The same input through both modes: kernel mode keeps what ran before the
 * failure, atomic mode keeps nothing and names the line. */
static void test_modes_side_by_side(void)
{
        static const struct {
                const char *before;
                const char *batch;
                ptags_result result;
                size_t kernel_consumed;
                const char *kernel_after;
                size_t atomic_line;
        } rows[] = {
                {"a\n", "+b\n-a\n!c=1\n+d\n", PTAGS_E_NO_SUCH_TAG, 6, "b\n", 2},
                {"a\n", "+b\n?@\n", PTAGS_E_NO_SUCH_TAG, 3, "a\nb\n", 1},
                {"a\n", "-a\n+b:\n", PTAGS_E_INVALID_TAG, 3, "", 1},
                {"a\n", "!a=1\n+@a\n-@a\n+b\n", PTAGS_OK, 16, "a=1\nb\n", 0},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                ptags_set *kernel = test_set_from_text(rows[i].before);
                ptags_set *atomic = test_set_from_text(rows[i].before);
                size_t consumed = 0, failed = 0;
                g_test_message("row %zu", i);
                g_assert_cmpint(ptags_apply_kernel(kernel, rows[i].batch, strlen(rows[i].batch),
                                                   NULL, &consumed),
                                ==, rows[i].result);
                g_assert_cmpuint(consumed, ==, rows[i].kernel_consumed);
                test_assert_set(kernel, rows[i].kernel_after);

                g_auto(GStrv) lines = g_strsplit(rows[i].batch, "\n", -1);
                size_t n = g_strv_length(lines) - 1; /* the text after the last '\n' */
                g_assert_cmpint(ptags_apply_atomic(atomic, (const char *const *)lines, NULL, n,
                                                   NULL, &failed),
                                ==, rows[i].result);
                if (rows[i].result == PTAGS_OK) {
                        g_assert_true(ptags_set_equal(kernel, atomic));
                } else {
                        g_assert_cmpuint(failed, ==, rows[i].atomic_line);
                        test_assert_set(atomic, rows[i].before);
                }
                ptags_set_free(kernel);
                ptags_set_free(atomic);
        }
}

static void test_format_buffer(void)
{
        ptags_set *s = test_set_from_text("a\n");
        const char *lines[] = {"!a=value"};
        ptags_plan *p;
        g_assert_cmpint(ptags_plan_build(s, lines, NULL, 1, &p, NULL), ==, PTAGS_OK);
        const ptags_change *c = ptags_plan_change_at(p, 0);
        char buf[16];
        memset(buf, 'X', sizeof(buf));
        g_assert_cmpuint(ptags_change_format(c, false, NULL, 0), ==, 8);
        g_assert_cmpuint(ptags_change_format(c, false, buf, 5), ==, 8);
        g_assert_cmpstr(buf, ==, "!a=v");
        g_assert_cmpint(buf[5], ==, 'X');
        g_assert_cmpuint(ptags_change_format(c, false, buf, 9), ==, 8);
        g_assert_cmpstr(buf, ==, "!a=value");
        g_assert_cmpuint(ptags_change_format(c, true, buf, 1), ==, 2);
        g_assert_cmpstr(buf, ==, "");
        g_assert_cmpuint(ptags_change_format(c, true, buf, sizeof(buf)), ==, 2);
        g_assert_cmpstr(buf, ==, "!a");
        g_assert_cmpuint(ptags_change_undo_count(c), ==, 1);
        g_assert_cmpuint(ptags_change_format_undo(c, 1, buf, sizeof(buf)), ==, 0);
        g_assert_cmpstr(buf, ==, "");
        ptags_plan_free(p);
        ptags_set_free(s);

        /* The longest line fits PTAGS_MAX_LINE_LEN. */
        g_autofree char *tag = test_repeat('t', PTAGS_MAX_TAG_LEN);
        g_autofree char *value = test_repeat('v', PTAGS_MAX_VALUE_LEN);
        g_autofree char *set_line = g_strdup_printf("!%s=%s", tag, value);
        g_autofree char *add_line = g_strdup_printf("+@%s", tag);
        const char *big[] = {add_line, set_line, add_line + 1};
        s = ptags_set_new();
        g_assert_cmpint(ptags_plan_build(s, big, NULL, 2, &p, NULL), ==, PTAGS_OK);
        g_autofree char *line = g_malloc(PTAGS_MAX_LINE_LEN);
        g_assert_cmpuint(
                ptags_change_format(ptags_plan_change_at(p, 1), false, line, PTAGS_MAX_LINE_LEN),
                ==, strlen(set_line));
        g_assert_cmpstr(line, ==, set_line);
        ptags_plan_free(p);
        ptags_set_free(s);
}

/* A caller's own bound on the changes stops the plan there. */
static void test_plan_bounded(void)
{
        ptags_set *current = test_set_from_text("app:a\napp:b\napp:c\n");
        const char *lines[] = {"-app:*"};
        ptags_plan *p = NULL;
        size_t failed = 9;

        g_assert_cmpint(ptags_plan_build_bounded(current, lines, NULL, 1, 2, &p, &failed), ==,
                        PTAGS_E_BATCH_TOO_LARGE);
        g_assert_null(p);
        g_assert_cmpuint(failed, ==, 0);
        g_assert_cmpint(ptags_plan_build_bounded(current, lines, NULL, 1, 3, &p, NULL), ==,
                        PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(p), ==, 3);
        ptags_plan_free(p);
        ptags_set_free(current);
}

/* A plan cut down to some of its changes: built again against the set,
 * each change keeping its input line; a change that no longer applies
 * without the ones cut away fails the whole. */
/* Pattern lines cost the tags their pattern can match, not the whole set:
 * 4096 lines of a prefix nobody holds plan at once over a full set. Lines
 * that look at matches without changing them are bounded by
 * PTAGS_PLAN_MAX_LOOKS (64 sweeps of a full set), at the crossing line. */
static void test_plan_looks(void)
{
        ptags_set *full = test_set_with_n_tags(PTAGS_MAX_TAGS);
        const char *misses[4096], *sweeps[65];
        ptags_plan *plan = NULL;
        size_t failed = 0;

        for (size_t i = 0; i < G_N_ELEMENTS(misses); i++)
                misses[i] = i % 4 == 0   ? "-zzz:*"
                            : i % 4 == 1 ? "+@zzz:*"
                            : i % 4 == 2 ? "-@zzz:*"
                                         : "?t0001";
        g_assert_cmpint(ptags_plan_build(full, misses, NULL, G_N_ELEMENTS(misses), &plan, &failed),
                        ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(plan), ==, 0);
        ptags_plan_free(plan);
        plan = NULL;

        /* The first line keeps all 4000 tags; the others find them kept. */
        for (size_t i = 0; i < G_N_ELEMENTS(sweeps); i++)
                sweeps[i] = "+@";
        g_assert_cmpint(ptags_plan_build(full, sweeps, NULL, 64, &plan, &failed), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(plan), ==, PTAGS_MAX_TAGS);
        ptags_plan_free(plan);
        plan = NULL;
        g_assert_cmpint(ptags_plan_build(full, sweeps, NULL, 65, &plan, &failed), ==,
                        PTAGS_E_BATCH_TOO_BROAD);
        g_assert_null(plan);
        g_assert_cmpuint(failed, ==, 64);
        g_assert_cmpint(ptags_result_errno(PTAGS_E_BATCH_TOO_BROAD), ==, E2BIG);
        g_assert_cmpstr(ptags_result_name(PTAGS_E_BATCH_TOO_BROAD), ==, "InvalidCommand");
        /* The kernel's own write has no such bound. */
        ptags_set *kernel = ptags_set_copy(full);
        GString *batch = g_string_new(NULL);
        for (size_t i = 0; i < 65; i++)
                g_string_append(batch, "+@\n");
        g_assert_cmpint(ptags_apply_kernel(kernel, batch->str, batch->len, NULL, NULL), ==,
                        PTAGS_OK);
        g_string_free(batch, TRUE);
        ptags_set_free(kernel);
        ptags_set_free(full);
}

/* Every pattern finds, removes and flips exactly the tags a plain test of
 * each tag matches: the prefix's neighbours in byte order included. */
static void test_pattern_ranges(void)
{
        static const char *const names =
                "a\nap\nap:z\napp\napp:x\napp:y:z\napp:\xc3\xa9\napp;\napq:a\nb:c\nz:z\n";
        static const char *const patterns[] = {"",    "app:*", "ap:*",  "a:*",   "app:y:*",
                                               "app", "app:x", "zz:*",  "0:*",   "z:*",
                                               "b:c", "apq:*", "app:;", "app:*x"};
        for (size_t k = 0; k < G_N_ELEMENTS(patterns); k++) {
                const char *pat = patterns[k];
                size_t len = strlen(pat);
                if (ptags_pattern_validate(pat, len, true) != PTAGS_OK)
                        continue;
                ptags_set *s = test_set_from_text(names);
                size_t expected = 0;
                for (size_t i = 0; i < ptags_set_count(s); i++) {
                        const ptags_entry *e = ptags_set_at(s, i);
                        expected += ptags_pattern_match(pat, len, e->name, e->name_len);
                }
                g_assert_cmpint(ptags_set_matches(s, pat, len, false), ==, expected > 0);
                g_autofree char *sub = g_strconcat("-", pat, NULL);
                g_autofree char *keep = g_strconcat("+@", pat, NULL);
                const char *lines[] = {keep, sub};
                ptags_plan *plan = NULL;
                /* "+@TAG" adds a missing exact tag: one change more. */
                gboolean adds = len > 0 && !ptags_pattern_is_global(pat, len) && expected == 0;
                g_assert_cmpint(ptags_plan_build(s, lines, NULL, 2, &plan, NULL), ==, PTAGS_OK);
                g_assert_cmpuint(ptags_plan_change_count(plan), ==, 2 * expected + 2 * adds);
                const ptags_set *after = ptags_plan_result(plan);
                g_assert_cmpuint(ptags_set_count(after), ==, ptags_set_count(s) - expected);
                for (size_t i = 0; i < ptags_set_count(after); i++) {
                        const ptags_entry *e = ptags_set_at(after, i);
                        g_assert_false(ptags_pattern_match(pat, len, e->name, e->name_len));
                        g_assert_false(e->keep);
                }
                ptags_plan_free(plan);
                ptags_set_free(s);

                /* An empty set has no entries to range over at all. */
                ptags_set *empty = ptags_set_new();
                g_assert_false(ptags_set_matches(empty, pat, len, false));
                g_assert_cmpint(ptags_plan_build(empty, lines, NULL, 2, &plan, NULL), ==, PTAGS_OK);
                g_assert_cmpuint(ptags_plan_change_count(plan), ==,
                                 len > 0 && !ptags_pattern_is_global(pat, len) ? 2 : 0);
                ptags_plan_free(plan);
                g_autofree char *batch = g_strconcat(sub, "\n", NULL);
                g_assert_cmpint(ptags_apply_kernel(empty, batch, strlen(batch), NULL, NULL), ==,
                                PTAGS_OK);
                ptags_set_free(empty);
        }
}

static void test_plan_restrict(void)
{
        ptags_set *current = test_set_from_text("app:a\n@app:b=1\n@app:c\nx\n");
        const char *lines[] = {"+y", "-app:*"};
        ptags_plan *p = NULL, *q = NULL;

        g_assert_cmpint(ptags_plan_build(current, lines, NULL, 2, &p, NULL), ==, PTAGS_OK);
        g_autofree char *all = describe_changes(p);
        g_assert_cmpstr(all, ==,
                        "0:+y|-y 1:-app:a|+app:a 1:-app:b|+@app:b|!app:b=1 1:-app:c|+@app:c");
        bool keep[] = {false, true, false, true};
        g_assert_cmpint(ptags_plan_restrict(p, current, keep, &q), ==, PTAGS_OK);
        g_autofree char *some = describe_changes(q);
        g_assert_cmpstr(some, ==, "1:-app:a|+app:a 1:-app:c|+@app:c");
        g_autofree char *after = test_set_to_text(ptags_plan_result(q));
        g_assert_cmpstr(after, ==, "@app:b=1\nx\n");
        ptags_plan_free(q);
        q = NULL;

        /* Nothing kept: an empty plan of the same set. */
        bool none[] = {false, false, false, false};
        g_assert_cmpint(ptags_plan_restrict(p, current, none, &q), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_plan_change_count(q), ==, 0);
        g_assert_true(ptags_set_equal(ptags_plan_result(q), current));
        ptags_plan_free(q);
        ptags_plan_free(p);

        /* A value set on a tag whose adding was cut away: the error, and no
         * plan. */
        const char *dependent[] = {"+new", "!new=v"};
        g_assert_cmpint(ptags_plan_build(current, dependent, NULL, 2, &p, NULL), ==, PTAGS_OK);
        bool second[] = {false, true};
        q = (ptags_plan *)&keep; /* untouched on failure */
        g_assert_cmpint(ptags_plan_restrict(p, current, second, &q), ==, PTAGS_E_NO_SUCH_TAG);
        g_assert_true(q == (ptags_plan *)&keep);
        ptags_plan_free(p);
        ptags_set_free(current);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/atomic/plan-changes", test_plan_changes);
        g_test_add_func("/atomic/change-fields", test_change_fields);
        g_test_add_func("/atomic/all-or-nothing", test_all_or_nothing);
        g_test_add_func("/atomic/explicit-lengths", test_explicit_lengths);
        g_test_add_func("/atomic/tag-limit", test_tag_limit);
        g_test_add_func("/atomic/plan-bounds", test_plan_bounds);
        g_test_add_func("/atomic/plan-looks", test_plan_looks);
        g_test_add_func("/atomic/pattern-ranges", test_pattern_ranges);
        g_test_add_func("/atomic/plan-restrict", test_plan_restrict);
        g_test_add_func("/atomic/plan-bounded", test_plan_bounded);
        g_test_add_func("/atomic/rights-checked-per-change", test_rights_checked_per_change);
        g_test_add_func("/atomic/modes-side-by-side", test_modes_side_by_side);
        g_test_add_func("/atomic/format-buffer", test_format_buffer);
        return g_test_run();
}
