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

/* Every boundary of the noncharacters, in UTF-8. */
static void test_noncharacter_boundaries(void)
{
        static const struct {
                const char *utf8;
                gunichar nonchar; /* 0: an ordinary character */
        } rows[] = {
                {"\xEF\xB7\x8F", 0},            /* U+FDCF */
                {"\xEF\xB7\x90", 0xFDD0},       /* U+FDD0, the first */
                {"\xEF\xB7\xAF", 0xFDEF},       /* U+FDEF, the last of the block */
                {"\xEF\xB7\xB0", 0},            /* U+FDF0 */
                {"\xEF\xBF\xBD", 0},            /* U+FFFD */
                {"\xEF\xBF\xBE", 0xFFFE},       /* U+FFFE */
                {"\xEF\xBF\xBF", 0xFFFF},       /* U+FFFF */
                {"\xF0\x90\x80\x80", 0},        /* U+10000 */
                {"\xF0\x9F\xBF\xBD", 0},        /* U+1FFFD */
                {"\xF0\x9F\xBF\xBE", 0x1FFFE},  /* U+1FFFE */
                {"\xF0\x9F\xBF\xBF", 0x1FFFF},  /* U+1FFFF */
                {"\xF0\xAF\xBF\xBE", 0x2FFFE},  /* U+2FFFE */
                {"\xF3\xBF\xBF\xBF", 0xFFFFF},  /* U+FFFFF */
                {"\xF4\x8F\xBF\xBD", 0},        /* U+10FFFD */
                {"\xF4\x8F\xBF\xBE", 0x10FFFE}, /* U+10FFFE */
                {"\xF4\x8F\xBF\xBF", 0x10FFFF}, /* U+10FFFF, the last code point */
                {"\xEF\xBE\xBF", 0},            /* U+FFBF */
                {"\xEF\xB8\x8F", 0},            /* U+FE0F */
                {"\xF0\x9F\x98\x80", 0},        /* an emoji */
        };

        for (gsize i = 0; i < G_N_ELEMENTS(rows); i++) {
                g_autofree char *text = g_strconcat("app:", rows[i].utf8, "x", NULL);
                g_test_message("row %" G_GSIZE_FORMAT, i);
                g_assert_cmpuint(ptags_noncharacter_in(text, strlen(text)), ==, rows[i].nonchar);
                /* Cut before its last byte, it is no character at all. */
                g_assert_cmpuint(ptags_noncharacter_in(rows[i].utf8, strlen(rows[i].utf8) - 1), ==,
                                 0);
                g_autofree char *sendable = ptags_sendable_text(text, strlen(text));
                if (rows[i].nonchar == 0)
                        g_assert_null(sendable);
                else
                        g_assert_cmpstr(sendable, ==, "app:\x1ax");
        }
        g_assert_cmpuint(ptags_noncharacter_in("", 0), ==, 0);
        g_autofree char *two = ptags_sendable_text("\xEF\xB7\x90-\xF4\x8F\xBF\xBF", 8);
        g_assert_cmpstr(two, ==, "\x1a-\x1a");
}

/* Refused at the door with the error the same text otherwise bad gets. */
static void test_noncharacters_refused(void)
{
        static const struct {
                const char *line;
                int code;
        } lines[] = {
                {"+u:\xEF\xB7\x90", PTAGS_ERROR_INVALID_TAG},
                {"+@u:\xEF\xBF\xBE", PTAGS_ERROR_INVALID_TAG},
                {"!u:\xEF\xB7\xAF=v", PTAGS_ERROR_INVALID_TAG},
                {"!app:a=v\xF4\x8F\xBF\xBF", PTAGS_ERROR_INVALID_VALUE},
                {"-u\xF0\x9F\xBF\xBE:*", PTAGS_ERROR_INVALID_PATTERN},
                {"-@u\xEF\xBF\xBF", PTAGS_ERROR_INVALID_TAG},
                {"?u:\xEF\xB7\x90", PTAGS_ERROR_INVALID_TAG},
                {"?@u\xEF\xB7\x90:*", PTAGS_ERROR_INVALID_PATTERN},
                {"# \xEF\xBF\xBE", PTAGS_ERROR_INVALID_COMMAND},
        };

        for (gsize i = 0; i < G_N_ELEMENTS(lines); i++) {
                const char *batch[] = {"+ok", lines[i].line, NULL};
                g_autoptr(GError) error = NULL;
                g_test_message("line %s", lines[i].line);
                g_assert_false(ptags_lines_validate(batch, &error));
                g_assert_error(error, PTAGS_ERROR, lines[i].code);
                g_assert_true(g_str_has_prefix(error->message, "line 2 (\""));
                g_assert_nonnull(strstr(error->message, "noncharacter"));
        }
        /* Its neighbours are taken. */
        const char *fine[] = {"+u:\xEF\xB7\x8F", "+u:\xEF\xB7\xB0",
                              "!u:\xEF\xBF\xBD=\xF4\x8F\xBF\xBD", "# \xEF\xBF\xBD", NULL};
        g_assert_true(ptags_lines_validate(fine, NULL));

        g_autoptr(GError) error = NULL;
        g_assert_false(ptags_check_change_arg("tag", "u:\xEF\xB7\x90", NULL, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_TAG);
        g_assert_cmpstr(error->message, ==,
                        "argument tag (\"u:\\u{FDD0}\"): U+FDD0 is a Unicode noncharacter, which "
                        "ptagsd takes in no tag, value, pattern or line (D-Bus clients built on "
                        "sd-bus could not receive it)");
        g_clear_error(&error);
        g_assert_false(ptags_check_change_arg("tag", "u:a", "\xEF\xBF\xBF", &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_VALUE);
        g_clear_error(&error);
        g_assert_false(ptags_check_change_arg("pattern", "u\xEF\xBF\xBF:*", NULL, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_PATTERN);
        g_clear_error(&error);
        g_assert_false(ptags_check_change_arg("pattern", "u\xEF\xBF\xBF", NULL, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_TAG);
        g_clear_error(&error);

        gboolean kept = FALSE;
        char *body = NULL;
        g_assert_false(ptags_query_pattern_parse("@u\xEF\xB7\x90:*", &kept, &body, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_PATTERN);
        g_assert_null(body);
        g_clear_error(&error);
        g_assert_false(ptags_query_pattern_parse("u\xEF\xB7\x90", &kept, &body, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_TAG);
        g_assert_null(body);
}

/* A list another kernel writer gave a noncharacter is sent with U+001A in
 * its place, which no tag or value holds. */
static void test_set_to_variant_substitutes(void)
{
        const char text[] = "app:\xEF\xB7\x90=v\xF0\x9F\xBF\xBF\nb\n";
        ptags_set *set = NULL;

        g_assert_cmpint(ptags_set_parse(text, strlen(text), &set, NULL), ==, PTAGS_OK);
        g_autoptr(GVariant) v = g_variant_ref_sink(ptags_set_to_variant(set));
        g_autofree char *printed = g_variant_print(v, FALSE);
        g_assert_cmpstr(printed, ==, "[('app:\\u001a', false, 'v\\u001a'), ('b', false, '')]");
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
        g_test_add_func("/manager-args/noncharacter-boundaries", test_noncharacter_boundaries);
        g_test_add_func("/manager-args/noncharacters-refused", test_noncharacters_refused);
        g_test_add_func("/manager-args/set-to-variant-substitutes",
                        test_set_to_variant_substitutes);
        return g_test_run();
}
