// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-set.c: tag sets: byte-wise order, lookups, equality, and the kernel
 * read format (parse and print) with every way the parser refuses input. */
#include <stdlib.h>
#include <string.h>

#include "model-test-util.h"

static void test_empty(void)
{
        ptags_set *s = ptags_set_new();
        size_t len = 99;
        char *text = ptags_set_format(s, &len);
        g_assert_nonnull(text);
        g_assert_cmpstr(text, ==, "");
        g_assert_cmpuint(len, ==, 0);
        free(text);
        g_assert_cmpuint(ptags_set_count(s), ==, 0);
        g_assert_null(ptags_set_find(s, "a", 1));
        g_assert_false(ptags_set_matches(s, "", 0, false));
        ptags_set *parsed = NULL;
        g_assert_cmpint(ptags_set_parse("", 0, &parsed, NULL), ==, PTAGS_OK);
        g_assert_true(ptags_set_equal(s, parsed));
        ptags_set_free(parsed);
        ptags_set_free(s);
        ptags_set_free(NULL);
}

static void test_parse_and_print(void)
{
        /* Byte-wise order: ':' (0x3A) sorts before letters, "a" before "a:b",
         * and non-ASCII bytes after everything ASCII; keep is not a key. */
        const char *text = "@A\na\na:b=1\n@ab=x=y\nb=@v\nz\n\xC3\xA9t\xC3\xA9=\xE2\x82\xAC\n";
        ptags_set *s = test_set_from_text(text);
        g_assert_cmpuint(ptags_set_count(s), ==, 7);
        test_assert_set(s, text);

        const ptags_entry *e = ptags_set_find(s, "ab", 2);
        g_assert_nonnull(e);
        g_assert_true(e->keep);
        g_assert_cmpstr(e->name, ==, "ab");
        g_assert_cmpstr(e->value, ==, "x=y");
        g_assert_cmpuint(e->value_len, ==, 3);
        e = ptags_set_find(s, "a", 1);
        g_assert_nonnull(e);
        g_assert_false(e->keep);
        g_assert_cmpstr(e->value, ==, "");
        g_assert_cmpuint(e->value_len, ==, 0);
        g_assert_null(ptags_set_find(s, "a:", 2));
        g_assert_null(ptags_set_find(s, "b=@v", 4));
        g_assert_nonnull(ptags_set_find(s, "\xC3\xA9t\xC3\xA9", 5));
        g_assert_cmpstr(ptags_set_at(s, 0)->name, ==, "A");
        g_assert_cmpstr(ptags_set_at(s, 6)->name, ==, "\xC3\xA9t\xC3\xA9");
        g_assert_null(ptags_set_at(s, 7));
        ptags_set_free(s);
}

static void test_find_every_position(void)
{
        ptags_set *s = test_set_with_n_tags(1000);
        for (size_t i = 0; i < 1000; i++) {
                char name[8];
                g_snprintf(name, sizeof(name), "t%04zu", i);
                const ptags_entry *e = ptags_set_find(s, name, 5);
                g_assert_nonnull(e);
                g_assert_true(e == ptags_set_at(s, i));
                /* Neighbours that sort between entries are absent. */
                name[5] = ':';
                name[6] = 'x';
                g_assert_null(ptags_set_find(s, name, 7));
        }
        g_assert_null(ptags_set_find(s, "t", 1));
        g_assert_null(ptags_set_find(s, "u", 1));
        g_assert_null(ptags_set_find(s, "", 0));
        ptags_set_free(s);
}

typedef struct {
        const char *text;
        ptags_result result;
        size_t offset;
} parse_case;

static void test_parse_errors(void)
{
        static const parse_case cases[] = {
                {"b\na\n", PTAGS_E_INVALID_TAG, 2},     /* unsorted */
                {"a\na\n", PTAGS_E_INVALID_TAG, 2},     /* duplicate */
                {"a\n@a\n", PTAGS_E_INVALID_TAG, 2},    /* duplicate, keep differs */
                {"a=1\na=2\n", PTAGS_E_INVALID_TAG, 4}, /* duplicate, value differs */
                {"a\nb", PTAGS_E_INVALID_COMMAND, 2},   /* missing final newline */
                {"a", PTAGS_E_INVALID_COMMAND, 0},
                {"\n", PTAGS_E_INVALID_TAG, 0}, /* empty line */
                {"a\n\nb\n", PTAGS_E_INVALID_TAG, 2},
                {"@\n", PTAGS_E_INVALID_TAG, 0},
                {"@@a\n", PTAGS_E_INVALID_TAG, 0},
                {"a:\n", PTAGS_E_INVALID_TAG, 0},
                {"a*\n", PTAGS_E_INVALID_TAG, 0},
                {"=v\n", PTAGS_E_INVALID_TAG, 0},
                {"ptags:x\n", PTAGS_E_INVALID_TAG, 0},
                {"a=\n", PTAGS_E_INVALID_VALUE, 0}, /* the kernel never prints it */
                {"a=\x01\n", PTAGS_E_INVALID_VALUE, 0},
                {"a=\x7F\n", PTAGS_E_INVALID_VALUE, 0},
                {"a=\xC0\x80\n", PTAGS_E_INVALID_VALUE, 0},
                {"a\xC0\x80\n", PTAGS_E_INVALID_TAG, 0},
                {"a\r\n", PTAGS_E_INVALID_TAG, 0},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                char sentinel_storage;
                ptags_set *sentinel = (ptags_set *)&sentinel_storage;
                ptags_set *out = sentinel;
                size_t off = 999;
                g_test_message("case %zu", i);
                g_assert_cmpint(ptags_set_parse(cases[i].text, strlen(cases[i].text), &out, &off),
                                ==, cases[i].result);
                g_assert_cmpuint(off, ==, cases[i].offset);
                g_assert_true(out == sentinel); /* untouched */
        }
        /* An embedded NUL is a forbidden tag byte, never an end of input. */
        ptags_set *out = NULL;
        g_assert_cmpint(ptags_set_parse("a\0b\n", 4, &out, NULL), ==, PTAGS_E_INVALID_TAG);
        g_assert_null(out);
}

static void test_parse_limits(void)
{
        GString *text = g_string_new(NULL);
        for (size_t i = 0; i < PTAGS_MAX_TAGS; i++)
                g_string_append_printf(text, "t%04zu\n", i);
        ptags_set *s = NULL;
        g_assert_cmpint(ptags_set_parse(text->str, text->len, &s, NULL), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_set_count(s), ==, 4000);
        ptags_set_free(s);
        size_t at = text->len;
        g_string_append(text, "u\n"); /* the 4001st line */
        size_t off = 0;
        s = NULL;
        g_assert_cmpint(ptags_set_parse(text->str, text->len, &s, &off), ==, PTAGS_E_TOO_MANY_TAGS);
        g_assert_cmpuint(off, ==, at);
        g_assert_null(s);
        g_string_free(text, TRUE);

        /* The longest tag with the longest value. */
        g_autofree char *tag = test_repeat('t', 4000);
        g_autofree char *value = test_repeat('v', 32700);
        g_autofree char *line = g_strdup_printf("@%s=%s\n", tag, value);
        s = test_set_from_text(line);
        g_assert_cmpuint(ptags_set_at(s, 0)->name_len, ==, 4000);
        g_assert_cmpuint(ptags_set_at(s, 0)->value_len, ==, 32700);
        test_assert_set(s, line);
        ptags_set_free(s);
        g_autofree char *long_tag = g_strdup_printf("%sx\n", tag);
        g_assert_cmpint(ptags_set_parse(long_tag, strlen(long_tag), &s, NULL), ==,
                        PTAGS_E_INVALID_TAG);
        g_autofree char *long_value = g_strdup_printf("a=%sx\n", value);
        g_assert_cmpint(ptags_set_parse(long_value, strlen(long_value), &s, NULL), ==,
                        PTAGS_E_INVALID_VALUE);
}

static void test_copy_and_equal(void)
{
        ptags_set *a = test_set_from_text("@a=1\nb\n");
        ptags_set *b = ptags_set_copy(a);
        g_assert_true(ptags_set_equal(a, b));
        g_assert_true(ptags_set_find(a, "a", 1) != ptags_set_find(b, "a", 1)); /* deep */
        static const char *const different[] = {"a=1\nb\n",  "@a=2\nb\n",    "@a\nb\n", "@a=1\n",
                                                "@a=1\nc\n", "@a=1\nb\nc\n", ""};
        for (size_t i = 0; i < G_N_ELEMENTS(different); i++) {
                ptags_set *c = test_set_from_text(different[i]);
                g_assert_false(ptags_set_equal(a, c));
                g_assert_false(ptags_set_equal(c, a));
                ptags_set_free(c);
        }
        ptags_set_free(a);
        test_assert_set(b, "@a=1\nb\n");
        ptags_set_free(b);
}

static void test_matches(void)
{
        ptags_set *s = test_set_from_text("@app:a\napp:b\nother\n");
        g_assert_true(ptags_set_matches(s, "", 0, false));
        g_assert_true(ptags_set_matches(s, "", 0, true));
        g_assert_true(ptags_set_matches(s, "app:*", 5, true));
        g_assert_true(ptags_set_matches(s, "app:b", 5, false));
        g_assert_false(ptags_set_matches(s, "app:b", 5, true));
        g_assert_false(ptags_set_matches(s, "other:*", 7, false));
        g_assert_false(ptags_set_matches(s, "app", 3, false));
        ptags_set_free(s);
        s = test_set_from_text("a\n");
        g_assert_false(ptags_set_matches(s, "", 0, true));
        ptags_set_free(s);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/set/empty", test_empty);
        g_test_add_func("/set/parse-and-print", test_parse_and_print);
        g_test_add_func("/set/find-every-position", test_find_every_position);
        g_test_add_func("/set/parse-errors", test_parse_errors);
        g_test_add_func("/set/parse-limits", test_parse_limits);
        g_test_add_func("/set/copy-and-equal", test_copy_and_equal);
        g_test_add_func("/set/matches", test_matches);
        return g_test_run();
}
