// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-manager-args.c: argument checks done before any work (Apply's size
 * limits, newlines, bad lines named by number) and the a(sbs) conversion. */
#include <string.h>

#include "errors.h"
#include "args.h"

static void test_line_label(void)
{
        g_autofree char *label = ptags_line_label(2, "+app:x*");
        g_assert_cmpstr(label, ==, "line 3 (\"+app:x*\")");
        g_autofree char *long_line = g_strnfill(500, 'a');
        g_autofree char *cut = ptags_line_label(0, long_line);
        g_assert_cmpuint(strlen(cut), <, 100);
        g_assert_true(g_str_has_suffix(cut, "...\")"));
        g_autofree char *escaped = ptags_line_label(1, "+a\n+b\t");
        g_assert_cmpstr(escaped, ==, "line 2 (\"+a\\n+b\\x09\")");
        g_autofree char *utf8 = ptags_line_label(0, "+caf\xc3\xa9");
        g_assert_cmpstr(utf8, ==, "line 1 (\"+caf\xc3\xa9\")");
        /* A C1 control (CSI) and a bidi override do not reach a terminal. */
        g_autofree char *unprinted = ptags_line_label(0, "+a\xc2\x9b"
                                                         "2J\xe2\x80\xae"
                                                         "b");
        g_assert_cmpstr(unprinted, ==, "line 1 (\"+a\\u{009B}2J\\u{202E}b\")");
        /* Nor can a line end its quotes and pass for the message: a
         * quotation mark and a backslash are escaped. */
        g_autofree char *quoted = ptags_line_label(0, "+a\"): nothing changed\\");
        g_assert_cmpstr(quoted, ==, "line 1 (\"+a\\\"): nothing changed\\\\\")");
}

static void test_bad_line_named(void)
{
        const char *lines[] = {"+app:a", "# comment", "+app:x*", "+app:b", NULL};
        g_autoptr(GError) error = NULL;

        g_assert_false(ptags_lines_validate(lines, &error));
        g_assert_true(error->domain == PTAGS_ERROR);
        g_assert_true(error->code == PTAGS_ERROR_INVALID_TAG ||
                      error->code == PTAGS_ERROR_INVALID_PATTERN);
        g_assert_true(g_str_has_prefix(error->message, "line 3 (\"+app:x*\"): "));
}

static void test_newline_refused(void)
{
        const char *lines[] = {"+app:a", "+app:b\n+app:c", NULL};
        g_autoptr(GError) error = NULL;

        g_assert_false(ptags_lines_validate(lines, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND);
        g_assert_true(g_str_has_prefix(error->message, "line 2 "));
}

static void test_limits(void)
{
        g_autoptr(GPtrArray) many = g_ptr_array_new();
        g_autoptr(GError) error = NULL;

        for (guint i = 0; i < PTAGS_APPLY_MAX_LINES; i++)
                g_ptr_array_add(many, (gpointer) "# ok");
        g_ptr_array_add(many, NULL);
        g_assert_true(ptags_lines_validate((const char *const *)many->pdata, &error));
        g_assert_no_error(error);
        many->pdata[many->len - 1] = (gpointer) "# one too many";
        g_ptr_array_add(many, NULL);
        g_assert_false(ptags_lines_check_limits((const char *const *)many->pdata, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND);
        g_clear_error(&error);

        g_autofree char *huge = g_strnfill(PTAGS_APPLY_MAX_BYTES, 'x');
        huge[0] = '#';
        const char *big[] = {huge, NULL};
        g_assert_false(ptags_lines_check_limits(big, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND);
        g_assert_nonnull(strstr(error->message, "bytes"));
}

static void test_set_to_variant(void)
{
        const char text[] = "@app:a=v\nb\n";
        ptags_set *set = NULL;

        g_assert_cmpint(ptags_set_parse(text, strlen(text), &set, NULL), ==, PTAGS_OK);
        g_autoptr(GVariant) v = g_variant_ref_sink(ptags_set_to_variant(set));
        g_autofree char *printed = g_variant_print(v, FALSE);
        g_assert_cmpstr(printed, ==, "[('app:a', true, 'v'), ('b', false, '')]");
        g_autoptr(GVariant) empty = g_variant_ref_sink(ptags_set_to_variant(NULL));
        g_assert_cmpstr(g_variant_get_type_string(empty), ==, "a(sbs)");
        g_assert_cmpuint(g_variant_n_children(empty), ==, 0);
        ptags_set_free(set);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/manager-args/line-label", test_line_label);
        g_test_add_func("/manager-args/bad-line-named", test_bad_line_named);
        g_test_add_func("/manager-args/newline-refused", test_newline_refused);
        g_test_add_func("/manager-args/limits", test_limits);
        g_test_add_func("/manager-args/set-to-variant", test_set_to_variant);
        return g_test_run();
}
