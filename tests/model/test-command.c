// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-command.c: one command line at a time: parsing (every command form
 * and every error), then its effect on a set for every row of ptags(7)'s
 * write table, the 4000-tag limit and its order before permissions. */
#include <string.h>

#include "model-test-util.h"

typedef struct {
        const char *line;
        ptags_result result;
        ptags_cmd_kind kind;
        const char *arg;
        bool global;
        const char *value;
} parse_row;

static void test_parse_table(void)
{
        static const parse_row rows[] = {
                {"", PTAGS_OK, PTAGS_CMD_NOP, "", false, ""},
                {"#", PTAGS_OK, PTAGS_CMD_NOP, "", false, ""},
                {"# any \x01 *= junk", PTAGS_OK, PTAGS_CMD_NOP, "", false, ""},
                {"+a", PTAGS_OK, PTAGS_CMD_ADD, "a", false, ""},
                {"+:x::a", PTAGS_OK, PTAGS_CMD_ADD, ":x::a", false, ""},
                {"++a", PTAGS_OK, PTAGS_CMD_ADD, "+a", false, ""},
                {"+@a", PTAGS_OK, PTAGS_CMD_ADD_KEEP, "a", false, ""},
                {"+@a:*", PTAGS_OK, PTAGS_CMD_ADD_KEEP, "a:*", true, ""},
                {"+@", PTAGS_OK, PTAGS_CMD_ADD_KEEP, "", true, ""},
                {"-a", PTAGS_OK, PTAGS_CMD_SUB, "a", false, ""},
                {"-a:*", PTAGS_OK, PTAGS_CMD_SUB, "a:*", true, ""},
                {"-", PTAGS_OK, PTAGS_CMD_SUB, "", true, ""},
                {"--a", PTAGS_OK, PTAGS_CMD_SUB, "-a", false, ""},
                {"-@a", PTAGS_OK, PTAGS_CMD_SUB_KEEP, "a", false, ""},
                {"-@a:*", PTAGS_OK, PTAGS_CMD_SUB_KEEP, "a:*", true, ""},
                {"-@", PTAGS_OK, PTAGS_CMD_SUB_KEEP, "", true, ""},
                {"!a=v", PTAGS_OK, PTAGS_CMD_SET, "a", false, "v"},
                {"!a=v=w", PTAGS_OK, PTAGS_CMD_SET, "a", false, "v=w"},
                {"!a==", PTAGS_OK, PTAGS_CMD_SET, "a", false, "="},
                {"!a=", PTAGS_OK, PTAGS_CMD_SET, "a", false, ""},
                {"!a", PTAGS_OK, PTAGS_CMD_SET, "a", false, ""},
                {"!a=*@", PTAGS_OK, PTAGS_CMD_SET, "a", false, "*@"},
                {"?a", PTAGS_OK, PTAGS_CMD_QUERY, "a", false, ""},
                {"?a:*", PTAGS_OK, PTAGS_CMD_QUERY, "a:*", true, ""},
                {"?", PTAGS_OK, PTAGS_CMD_QUERY, "", true, ""},
                {"?@a", PTAGS_OK, PTAGS_CMD_QUERY_KEEP, "a", false, ""},
                {"?@a:*", PTAGS_OK, PTAGS_CMD_QUERY_KEEP, "a:*", true, ""},
                {"?@", PTAGS_OK, PTAGS_CMD_QUERY_KEEP, "", true, ""},
                {"+ptags:app:add", PTAGS_OK, PTAGS_CMD_ADD, "ptags:app:add", false, ""},
                {"-ptags:*", PTAGS_OK, PTAGS_CMD_SUB, "ptags:*", true, ""},

                {"+", PTAGS_E_INVALID_COMMAND},
                {"!", PTAGS_E_INVALID_COMMAND},
                {"!=v", PTAGS_E_INVALID_COMMAND},
                {"a", PTAGS_E_INVALID_COMMAND},
                {"@a", PTAGS_E_INVALID_COMMAND},
                {" +a", PTAGS_E_INVALID_COMMAND},
                {"*", PTAGS_E_INVALID_COMMAND},
                {"=a", PTAGS_E_INVALID_COMMAND},
                {"+a:*", PTAGS_E_INVALID_PATTERN},
                {"+*", PTAGS_E_INVALID_PATTERN},
                {"!a:*=v", PTAGS_E_INVALID_PATTERN},
                {"!a:*", PTAGS_E_INVALID_PATTERN},
                {"-a*", PTAGS_E_INVALID_PATTERN},
                {"-*", PTAGS_E_INVALID_PATTERN},
                {"?a:*:*", PTAGS_E_INVALID_PATTERN},
                {"-@*", PTAGS_E_INVALID_PATTERN},
                {"+@@a:*", PTAGS_E_INVALID_PATTERN},
                {"+a:", PTAGS_E_INVALID_TAG},
                {"+@@a", PTAGS_E_INVALID_TAG},
                {"!@a=v", PTAGS_E_INVALID_TAG},
                {"+a\x01", PTAGS_E_INVALID_TAG},
                {"-a\x7F", PTAGS_E_INVALID_TAG},
                {"?ptags:x", PTAGS_E_INVALID_TAG},
                {"+a\xC0\x80", PTAGS_E_INVALID_TAG},
                {"!a=\x01", PTAGS_E_INVALID_VALUE},
                {"!a=\xED\xA0\x80", PTAGS_E_INVALID_VALUE},
                {"+a\n", PTAGS_E_INVALID_COMMAND},
                {"#a\nb", PTAGS_E_INVALID_COMMAND},
                {"#\xff", PTAGS_E_INVALID_COMMAND}, /* a comment is UTF-8 checked */
                {"#\xED\xA0\x80", PTAGS_E_INVALID_COMMAND},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                const parse_row *row = &rows[i];
                ptags_cmd cmd = {.kind = (ptags_cmd_kind)99};
                test_note("line", row->line);
                g_assert_cmpint(ptags_cmd_parse(row->line, strlen(row->line), &cmd), ==,
                                row->result);
                if (row->result != PTAGS_OK) {
                        g_assert_cmpint(cmd.kind, ==, 99); /* untouched */
                        continue;
                }
                g_assert_cmpint(cmd.kind, ==, row->kind);
                if (row->kind == PTAGS_CMD_NOP)
                        continue;
                g_assert_cmpmem(cmd.arg, cmd.arg_len, row->arg, strlen(row->arg));
                g_assert_cmpint(cmd.global, ==, row->global);
                g_assert_cmpmem(cmd.value, cmd.value_len, row->value, strlen(row->value));
        }
}

static void test_parse_boundaries(void)
{
        ptags_cmd cmd;
        g_autofree char *tag = test_repeat('t', 4001);
        g_autofree char *value = test_repeat('v', 32701);
        g_autofree char *add4000 = g_strdup_printf("+%.4000s", tag);
        g_autofree char *add4001 = g_strdup_printf("+%s", tag);
        g_assert_cmpint(ptags_cmd_parse(add4000, strlen(add4000), &cmd), ==, PTAGS_OK);
        g_assert_cmpuint(cmd.arg_len, ==, 4000);
        g_assert_cmpint(ptags_cmd_parse(add4001, strlen(add4001), &cmd), ==, PTAGS_E_INVALID_TAG);
        g_autofree char *set32700 = g_strdup_printf("!a=%.32700s", value);
        g_autofree char *set32701 = g_strdup_printf("!a=%s", value);
        g_assert_cmpint(ptags_cmd_parse(set32700, strlen(set32700), &cmd), ==, PTAGS_OK);
        g_assert_cmpuint(cmd.value_len, ==, 32700);
        g_assert_cmpint(ptags_cmd_parse(set32701, strlen(set32701), &cmd), ==,
                        PTAGS_E_INVALID_VALUE);
        /* Each forbidden tag byte, as the kernel would see it in a line. */
        for (unsigned b = 0; b < 0x20; b++) {
                char line[] = {'+', 'a', (char)b, 'b'};
                g_assert_cmpint(ptags_cmd_parse(line, 4, &cmd), ==,
                                b == '\n' ? PTAGS_E_INVALID_COMMAND : PTAGS_E_INVALID_TAG);
        }
}

typedef struct {
        const char *before;
        const char *line;
        ptags_result result;
        const char *after; /* NULL: same as before */
} apply_row;

/* Every row of ptags(7)'s command-line table, run by an unrestricted writer. */
static const apply_row table_rows[] = {
        /* +TAG */
        {"", "+a", PTAGS_OK, "a\n"},
        {"b\n", "+a", PTAGS_OK, "a\nb\n"},
        {"@a=v\n", "+a", PTAGS_OK, NULL},
        {"a=v\n", "+a", PTAGS_OK, NULL},
        /* +@TAG */
        {"", "+@a", PTAGS_OK, "@a\n"},
        {"a=v\n", "+@a", PTAGS_OK, "@a=v\n"},
        {"@a=v\n", "+@a", PTAGS_OK, NULL},
        /* +@PATTERN, +@: existing matches only */
        {"app:a\napp:b=1\nother\n", "+@app:*", PTAGS_OK, "@app:a\n@app:b=1\nother\n"},
        {"", "+@app:*", PTAGS_OK, ""},
        {"app\n", "+@app:*", PTAGS_OK, NULL},
        {"a\nb=1\n", "+@", PTAGS_OK, "@a\n@b=1\n"},
        {"", "+@", PTAGS_OK, ""},
        /* +PREFIX:*, bare + */
        {"app:a\n", "+app:*", PTAGS_E_INVALID_PATTERN, NULL},
        {"a\n", "+", PTAGS_E_INVALID_COMMAND, NULL},
        /* -TAG */
        {"@a=v\nb\n", "-a", PTAGS_OK, "b\n"},
        {"b\n", "-a", PTAGS_OK, NULL},
        /* -@TAG */
        {"@a=v\n", "-@a", PTAGS_OK, "a=v\n"},
        {"a=v\n", "-@a", PTAGS_OK, NULL},
        {"", "-@a", PTAGS_OK, ""},
        /* -PATTERN, -, -@PATTERN, -@ */
        {"app\n@app:a\napp:b=1\nother\n", "-app:*", PTAGS_OK, "app\nother\n"},
        {"@a\nb=1\n", "-", PTAGS_OK, ""},
        {"", "-", PTAGS_OK, ""},
        {"@app:a=1\n@other\n", "-@app:*", PTAGS_OK, "app:a=1\n@other\n"},
        {"@a\n@b=1\nc\n", "-@", PTAGS_OK, "a\nb=1\nc\n"},
        /* !TAG=VALUE, !TAG=, !TAG */
        {"@a\n", "!a=v=w", PTAGS_OK, "@a=v=w\n"},
        {"a=old\n", "!a=new", PTAGS_OK, "a=new\n"},
        {"b\n", "!a=v", PTAGS_E_NO_SUCH_TAG, NULL},
        {"b\n", "!a", PTAGS_E_NO_SUCH_TAG, NULL},
        {"@a=v\n", "!a=", PTAGS_OK, "@a\n"},
        {"@a=v\n", "!a", PTAGS_OK, "@a\n"},
        {"a\n", "!a", PTAGS_OK, NULL},
        /* ?PATTERN, ?@PATTERN */
        {"app:a\n", "?app:*", PTAGS_OK, NULL},
        {"app:a\n", "?app:a", PTAGS_OK, NULL},
        {"app\n", "?app:*", PTAGS_E_NO_SUCH_TAG, NULL},
        {"app:a\n", "?@app:*", PTAGS_E_NO_SUCH_TAG, NULL},
        {"@app:a\n", "?@app:*", PTAGS_OK, NULL},
        {"a\n", "?", PTAGS_OK, NULL},
        {"", "?", PTAGS_E_NO_SUCH_TAG, NULL},
        {"a\n", "?@", PTAGS_E_NO_SUCH_TAG, NULL},
        {"@a\n", "?@", PTAGS_OK, NULL},
        /* #..., empty line */
        {"a\n", "# -a", PTAGS_OK, NULL},
        {"a\n", "", PTAGS_OK, NULL},
        /* grammar failures change nothing */
        {"a\n", "+b:", PTAGS_E_INVALID_TAG, NULL},
        {"a\n", "!a=\x01", PTAGS_E_INVALID_VALUE, NULL},
        {"a\n", "x", PTAGS_E_INVALID_COMMAND, NULL},
};

static void run_rows(const apply_row *rows, size_t n, const ptags_writer *w)
{
        for (size_t i = 0; i < n; i++) {
                const apply_row *row = &rows[i];
                ptags_set *s = test_set_from_text(row->before);
                ptags_cmd cmd;
                test_note("line", row->line);
                test_note("on", row->before);
                ptags_result r = ptags_cmd_parse(row->line, strlen(row->line), &cmd);
                if (r == PTAGS_OK)
                        r = ptags_cmd_apply(s, &cmd, w);
                g_assert_cmpint(r, ==, row->result);
                test_assert_set(s, row->after ? row->after : row->before);
                ptags_set_free(s);
        }
}

static void test_apply_table(void)
{
        run_rows(table_rows, G_N_ELEMENTS(table_rows), NULL);
        ptags_writer root = {.unrestricted = true};
        run_rows(table_rows, G_N_ELEMENTS(table_rows), &root);
}

/* A writer with no rights at all: every no-op still succeeds, every real
 * change and every '!' is refused, and global forms skip silently. */
static const apply_row no_rights_rows[] = {
        {"a=v\n", "+a", PTAGS_OK, NULL},
        {"@a\n", "+@a", PTAGS_OK, NULL},
        {"b\n", "-a", PTAGS_OK, NULL},
        {"a\n", "-@a", PTAGS_OK, NULL},
        {"", "-@a", PTAGS_OK, NULL},
        {"a\n", "?a", PTAGS_OK, NULL},
        {"", "+a", PTAGS_E_NOT_PERMITTED, NULL},
        {"", "+@a", PTAGS_E_NOT_PERMITTED, NULL},
        {"a\n", "+@a", PTAGS_E_NOT_PERMITTED, NULL},
        {"a\n", "-a", PTAGS_E_NOT_PERMITTED, NULL},
        {"@a\n", "-@a", PTAGS_E_NOT_PERMITTED, NULL},
        {"a\n", "!a=v", PTAGS_E_NOT_PERMITTED, NULL},
        {"a=v\n", "!a", PTAGS_E_NOT_PERMITTED, NULL},
        /* '!' is never free: the same value, or clearing no value, needs
         * the right; and the right comes before existence, the value last */
        {"a=v\n", "!a=v", PTAGS_E_NOT_PERMITTED, NULL},
        {"a\n", "!a", PTAGS_E_NOT_PERMITTED, NULL},
        {"a\n", "!a=", PTAGS_E_NOT_PERMITTED, NULL},
        {"b\n", "!a=v", PTAGS_E_NOT_PERMITTED, NULL},
        {"a\nb\n", "-", PTAGS_OK, NULL},
        {"a\napp:x\n", "-app:*", PTAGS_OK, NULL},
        {"a\n", "+@", PTAGS_OK, NULL},
        {"@a\n", "-@", PTAGS_OK, NULL},
};

static void test_no_ops_are_free(void)
{
        ptags_set *none = ptags_set_new();
        /* A self writer's rights are the target's own tags (none here). */
        ptags_writer self = {.tags = NULL, .self = true};
        ptags_writer other = {.tags = none, .self = false};
        ptags_writer null_tags = {.tags = NULL, .self = false};
        run_rows(no_rights_rows, G_N_ELEMENTS(no_rights_rows), &self);
        run_rows(no_rights_rows, G_N_ELEMENTS(no_rights_rows), &other);
        run_rows(no_rights_rows, G_N_ELEMENTS(no_rights_rows), &null_tags);
        ptags_set_free(none);
}

/* Global forms act on the tags the writer may change and skip the rest;
 * the exact form of a tag the writer may not change fails. */
static void test_global_forms_skip(void)
{
        ptags_set *rights;
        /* ptags:others lets it change another process's ordinary tags. */
        ptags_writer w =
                test_writer("ptags:app:add\nptags:app:sub\nptags:others\n", false, &rights);
        static const apply_row rows[] = {
                {"@app:a\napp:b\n@other\nx\n", "-", PTAGS_OK, "@other\nx\n"},
                {"@app:a\napp:b\n@other\nx\n", "-@", PTAGS_OK, "app:a\napp:b\n@other\nx\n"},
                {"app:a\napp:b=1\nother\n", "+@", PTAGS_OK, "@app:a\n@app:b=1\nother\n"},
                {"app\napp:a\n", "-app:*", PTAGS_OK, "app\n"},
                {"@other\n", "-@other", PTAGS_E_NOT_PERMITTED, NULL},
                {"other\n", "+@other", PTAGS_E_NOT_PERMITTED, NULL},
                {"other\n", "-other", PTAGS_E_NOT_PERMITTED, NULL},
                {"app=v\n", "!app", PTAGS_E_NOT_PERMITTED, NULL},
                {"", "+app:new", PTAGS_OK, "app:new\n"},
        };
        run_rows(rows, G_N_ELEMENTS(rows), &w);
        ptags_set_free(rights);
}

static void test_tag_limit(void)
{
        ptags_set *s = test_set_with_n_tags(PTAGS_MAX_TAGS - 1);
        ptags_cmd cmd;
        /* The 4000th tag fits, the 4001st does not. */
        g_assert_cmpint(ptags_cmd_parse("+x4000", 6, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_set_count(s), ==, 4000);
        g_assert_cmpint(ptags_cmd_parse("+x4001", 6, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_E_TOO_MANY_TAGS);
        g_assert_cmpint(ptags_cmd_parse("+@x4001", 7, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_E_TOO_MANY_TAGS);
        g_assert_null(ptags_set_find(s, "x4001", 5));
        g_assert_cmpuint(ptags_set_count(s), ==, 4000);
        /* Changing a tag that exists is no new tag. */
        g_assert_cmpint(ptags_cmd_parse("+x4000", 6, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_parse("+@x4000", 7, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_OK);
        g_assert_true(ptags_set_find(s, "x4000", 5)->keep);
        g_assert_cmpint(ptags_cmd_parse("!x4000=v", 8, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_OK);

        /* ECANCELED is decided before EPERM: a writer without any right
         * still gets TOO_MANY_TAGS for the 4001st tag... */
        ptags_set *none = ptags_set_new();
        ptags_writer w = {.tags = none, .self = false};
        g_assert_cmpint(ptags_cmd_parse("+x4001", 6, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, &w), ==, PTAGS_E_TOO_MANY_TAGS);
        /* ...and NOT_PERMITTED once there is room. */
        g_assert_cmpint(ptags_cmd_parse("-t0000", 6, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_parse("+x4001", 6, &cmd), ==, PTAGS_OK);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, &w), ==, PTAGS_E_NOT_PERMITTED);
        g_assert_cmpint(ptags_cmd_apply(s, &cmd, NULL), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_set_count(s), ==, 4000);
        ptags_set_free(none);
        ptags_set_free(s);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/command/parse/table", test_parse_table);
        g_test_add_func("/command/parse/boundaries", test_parse_boundaries);
        g_test_add_func("/command/apply/table", test_apply_table);
        g_test_add_func("/command/apply/no-ops-are-free", test_no_ops_are_free);
        g_test_add_func("/command/apply/global-forms-skip", test_global_forms_skip);
        g_test_add_func("/command/apply/tag-limit", test_tag_limit);
        return g_test_run();
}
