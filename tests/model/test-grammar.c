// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-grammar.c: UTF-8, tag, value and pattern grammar at every boundary
 * of ptags(7) "TAGS, VALUES AND PATTERNS", and the result mapping table. */
#include <errno.h>
#include <string.h>

#include "model-test-util.h"

#define BYTES(s) (s), (sizeof(s) - 1)

static void test_utf8_valid_forms(void)
{
        g_assert_true(ptags_utf8_valid(BYTES("")));
        g_assert_true(ptags_utf8_valid(BYTES("plain ascii")));
        g_assert_true(ptags_utf8_valid(BYTES("caf\xC3\xA9")));      /* U+00E9 */
        g_assert_true(ptags_utf8_valid(BYTES("\xC2\x80")));         /* U+0080, lowest 2-byte */
        g_assert_true(ptags_utf8_valid(BYTES("\xDF\xBF")));         /* U+07FF */
        g_assert_true(ptags_utf8_valid(BYTES("\xE0\xA0\x80")));     /* U+0800, lowest 3-byte */
        g_assert_true(ptags_utf8_valid(BYTES("\xED\x9F\xBF")));     /* U+D7FF, below surrogates */
        g_assert_true(ptags_utf8_valid(BYTES("\xEE\x80\x80")));     /* U+E000, above surrogates */
        g_assert_true(ptags_utf8_valid(BYTES("\xEF\xBF\xBF")));     /* U+FFFF */
        g_assert_true(ptags_utf8_valid(BYTES("\xF0\x90\x80\x80"))); /* U+10000 */
        g_assert_true(ptags_utf8_valid(BYTES("\xF0\x9F\x98\x80"))); /* emoji */
        g_assert_true(ptags_utf8_valid(BYTES("\xF4\x8F\xBF\xBF"))); /* U+10FFFF, the last */
        g_assert_true(ptags_utf8_valid("a\0b", 3));                 /* NUL is valid UTF-8 */
}

static void test_utf8_invalid_forms(void)
{
        static const struct {
                const char *bytes;
                size_t len;
                const char *why;
        } bad[] = {
                {BYTES("\xC0\x80"), "overlong NUL"},
                {BYTES("\xC1\xBF"), "overlong 2-byte"},
                {BYTES("\xE0\x80\x80"), "overlong 3-byte"},
                {BYTES("\xE0\x9F\xBF"), "overlong 3-byte, top"},
                {BYTES("\xF0\x80\x80\x80"), "overlong 4-byte"},
                {BYTES("\xF0\x8F\xBF\xBF"), "overlong 4-byte, top"},
                {BYTES("\xED\xA0\x80"), "surrogate U+D800"},
                {BYTES("\xED\xBF\xBF"), "surrogate U+DFFF"},
                {BYTES("\xF4\x90\x80\x80"), "U+110000"},
                {BYTES("\xF5\x80\x80\x80"), "lead byte F5"},
                {BYTES("\xFF"), "byte FF"},
                {BYTES("\xFE"), "byte FE"},
                {BYTES("\x80"), "lone continuation"},
                {BYTES("a\xBF"), "lone continuation after ascii"},
                {BYTES("\xC3"), "truncated 2-byte"},
                {BYTES("\xE2\x82"), "truncated 3-byte"},
                {BYTES("\xF0\x9F\x98"), "truncated 4-byte"},
                {BYTES("x\xC3"), "truncated at the end"},
                {BYTES("\xC3\x28"), "bad continuation"},
                {BYTES("\xE2\x28\xA1"), "bad second byte of 3"},
                {BYTES("\xE2\x82\x28"), "bad third byte of 3"},
                {BYTES("\xF0\x9F\x98\x28"), "bad fourth byte of 4"},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_test_message("%s", bad[i].why);
                g_assert_false(ptags_utf8_valid(bad[i].bytes, bad[i].len));
        }
        /* Truncation is judged by len, not by what lies past it. */
        g_assert_false(ptags_utf8_valid("\xC3\xA9", 1));
        g_assert_false(ptags_utf8_valid("\xF0\x9F\x98\x80", 3));
}

static void test_tag_length(void)
{
        g_autofree char *max = test_repeat('a', PTAGS_MAX_TAG_LEN + 1);
        g_assert_cmpint(ptags_tag_validate(max, 4000), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(max, 4001), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(max, 1), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate("", 0), ==, PTAGS_E_INVALID_TAG);
}

static void test_tag_forbidden_bytes(void)
{
        for (unsigned b = 0; b < 0x20; b++) {
                char mid[] = {'a', (char)b, 'b'};
                char first[] = {(char)b, 'b'};
                char last[] = {'a', (char)b};
                g_test_message("byte 0x%02X", b);
                g_assert_cmpint(ptags_tag_validate(mid, 3), ==, PTAGS_E_INVALID_TAG);
                g_assert_cmpint(ptags_tag_validate(first, 2), ==, PTAGS_E_INVALID_TAG);
                g_assert_cmpint(ptags_tag_validate(last, 2), ==, PTAGS_E_INVALID_TAG);
        }
        g_assert_cmpint(ptags_tag_validate(BYTES("a\x7F"
                                                 "b")),
                        ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("a=b")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("=")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("a*b")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:*")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("*")), ==, PTAGS_E_INVALID_TAG);
        /* The neighbours of the forbidden bytes are fine. */
        g_assert_cmpint(ptags_tag_validate(BYTES("a b")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("a~b")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("a+b-c!d?e#f")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("+a")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("#a")), ==, PTAGS_OK);
}

static void test_tag_shape(void)
{
        g_assert_cmpint(ptags_tag_validate(BYTES("@a")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("@")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("a@b")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("a@")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("a:")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES(":")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("a::")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES(":x::a")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES(":a")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:camera")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:caf\xC3\xA9")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:\xC0\x80")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:\xED\xA0\x80")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:\xF4\x90\x80\x80")), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_tag_validate(BYTES("app:\xE2\x82")), ==, PTAGS_E_INVALID_TAG);
}

static void test_tag_rights_fields(void)
{
        static const char *const good[] = {
                "ptags:add",
                "ptags:sub",
                "ptags:set",
                "ptags:others",
                "ptags:app:camera:add",
                "ptags:app:others",
                "ptags:ptags:add",
                "ptags::add",
                "ptags",
                "ptagsx:foo",
                "xptags:foo",
                "PTAGS:foo",
                "ptags:add:x:set",
        };
        static const char *const bad[] = {
                "ptags:x",    "ptags:adds", "ptags:app:add:x", "ptags:Add",
                "ptags:app:", "ptags:",     "ptags:add ",      "ptags:app:other",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
                test_note("good", good[i]);
                g_assert_cmpint(ptags_tag_validate(good[i], strlen(good[i])), ==, PTAGS_OK);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                test_note("bad", bad[i]);
                g_assert_cmpint(ptags_tag_validate(bad[i], strlen(bad[i])), ==,
                                PTAGS_E_INVALID_TAG);
        }
        g_assert_true(ptags_tag_is_rights(BYTES("ptags:add")));
        g_assert_true(ptags_tag_is_rights(BYTES("ptags:app:others")));
        g_assert_false(ptags_tag_is_rights(BYTES("ptags")));
        g_assert_false(ptags_tag_is_rights(BYTES("ptagsx:add")));
        g_assert_false(ptags_tag_is_rights(BYTES("app:ptags:add")));
}

static void test_value(void)
{
        g_autofree char *max = test_repeat('v', PTAGS_MAX_VALUE_LEN + 1);
        g_assert_cmpint(ptags_value_validate(max, 32700), ==, PTAGS_OK);
        g_assert_cmpint(ptags_value_validate(max, 32701), ==, PTAGS_E_INVALID_VALUE);
        g_assert_cmpint(ptags_value_validate("", 0), ==, PTAGS_OK);
        g_assert_cmpint(ptags_value_validate(BYTES("a=b==")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_value_validate(BYTES("*@:")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_value_validate(BYTES("@lead")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_value_validate(BYTES("with space")), ==, PTAGS_OK);
        g_assert_cmpint(ptags_value_validate(BYTES("\xE2\x82\xAC")), ==, PTAGS_OK);
        for (unsigned b = 0; b < 0x20; b++) {
                char v[] = {'x', (char)b};
                g_assert_cmpint(ptags_value_validate(v, 2), ==, PTAGS_E_INVALID_VALUE);
        }
        g_assert_cmpint(ptags_value_validate(BYTES("\x7F")), ==, PTAGS_E_INVALID_VALUE);
        g_assert_cmpint(ptags_value_validate(BYTES("\xC0\x80")), ==, PTAGS_E_INVALID_VALUE);
        g_assert_cmpint(ptags_value_validate(BYTES("\xED\xA0\x80")), ==, PTAGS_E_INVALID_VALUE);
        g_assert_cmpint(ptags_value_validate(BYTES("\xF4\x90\x80\x80")), ==, PTAGS_E_INVALID_VALUE);
        g_assert_cmpint(ptags_value_validate(BYTES("\xF0\x9F\x98")), ==, PTAGS_E_INVALID_VALUE);
}

static void test_pattern_validate(void)
{
        g_assert_cmpint(ptags_pattern_validate(BYTES("app:camera"), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(BYTES("app:*"), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(BYTES("app:x:*"), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(BYTES(":*"), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(BYTES("ptags:*"), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate(BYTES("ptags:app:*"), false), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate("", 0, true), ==, PTAGS_OK);
        g_assert_cmpint(ptags_pattern_validate("", 0, false), ==, PTAGS_E_INVALID_PATTERN);
        static const char *const bad[] = {"*",    "app*",  "app:*x",  "a:*:*",      "*:a",   "a:**",
                                          "@a:*", "a=b:*", "a\x01:*", "\xC0\x80:*", "a:*\n", "**"};
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                test_note("bad pattern", bad[i]);
                g_assert_cmpint(ptags_pattern_validate(bad[i], strlen(bad[i]), true), ==,
                                PTAGS_E_INVALID_PATTERN);
        }
        /* Without '*' a pattern is a tag and fails as one. */
        g_assert_cmpint(ptags_pattern_validate(BYTES("a:"), true), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_pattern_validate(BYTES("@a"), true), ==, PTAGS_E_INVALID_TAG);
        g_assert_cmpint(ptags_pattern_validate(BYTES("ptags:x"), true), ==, PTAGS_E_INVALID_TAG);
        /* The 4000-byte limit is on PREFIX, not counting ":*" (the
         * kernel's rule): a 4002-byte pattern is valid, a 4003-byte one not. */
        g_autofree char *p = test_repeat('p', PTAGS_MAX_TAG_LEN + 3);
        p[4000] = ':';
        p[4001] = '*';
        g_assert_cmpint(ptags_pattern_validate(p, 4002, false), ==, PTAGS_OK);
        p[4000] = 'p';
        p[4001] = ':';
        p[4002] = '*';
        g_assert_cmpint(ptags_pattern_validate(p, 4003, false), ==, PTAGS_E_INVALID_PATTERN);
}

static void test_pattern_match(void)
{
        g_assert_true(ptags_pattern_is_global("", 0));
        g_assert_true(ptags_pattern_is_global(BYTES("app:*")));
        g_assert_false(ptags_pattern_is_global(BYTES("app")));
        g_assert_false(ptags_pattern_is_global(BYTES("app:x")));

        g_assert_true(ptags_pattern_match(BYTES("app:*"), BYTES("app:x")));
        g_assert_true(ptags_pattern_match(BYTES("app:*"), BYTES("app:x:y")));
        g_assert_true(ptags_pattern_match(BYTES("app:*"), BYTES("app::y")));
        g_assert_false(ptags_pattern_match(BYTES("app:*"), BYTES("app")));
        g_assert_false(ptags_pattern_match(BYTES("app:*"), BYTES("apple:x")));
        g_assert_false(ptags_pattern_match(BYTES("app:*"), BYTES("ap")));
        g_assert_false(ptags_pattern_match(BYTES("app:*"), BYTES("App:x")));
        g_assert_false(ptags_pattern_match(BYTES("app:*"), BYTES("x:app:y")));
        g_assert_true(ptags_pattern_match(BYTES(":*"), BYTES(":x::a")));
        g_assert_false(ptags_pattern_match(BYTES(":*"), BYTES("x:a")));
        g_assert_true(ptags_pattern_match("", 0, BYTES("anything")));
        g_assert_true(ptags_pattern_match(BYTES("app"), BYTES("app")));
        g_assert_false(ptags_pattern_match(BYTES("app"), BYTES("app:x")));
        g_assert_false(ptags_pattern_match(BYTES("app"), BYTES("ap")));
        g_assert_false(ptags_pattern_match(BYTES("app"), BYTES("apq")));
}

static void test_result_table(void)
{
        static const struct {
                ptags_result r;
                int err;
                const char *name;
        } rows[] = {
                {PTAGS_OK, 0, NULL},
                {PTAGS_E_INVALID_TAG, EINVAL, "InvalidTag"},
                {PTAGS_E_INVALID_VALUE, EINVAL, "InvalidValue"},
                {PTAGS_E_INVALID_PATTERN, EINVAL, "InvalidPattern"},
                {PTAGS_E_INVALID_COMMAND, EINVAL, "InvalidCommand"},
                {PTAGS_E_NOT_PERMITTED, EPERM, "NotAuthorized"},
                {PTAGS_E_NO_SUCH_TAG, ENOENT, "NoSuchTag"},
                {PTAGS_E_TOO_MANY_TAGS, ECANCELED, "TooManyTags"},
                {PTAGS_E_NOMEM, ENOMEM, "Failed"},
                {PTAGS_E_BATCH_TOO_LARGE, E2BIG, "InvalidCommand"},
                {PTAGS_E_BATCH_TOO_BROAD, E2BIG, "InvalidCommand"},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                g_assert_cmpint(ptags_result_errno(rows[i].r), ==, rows[i].err);
                g_assert_cmpstr(ptags_result_name(rows[i].r), ==, rows[i].name);
                g_assert_nonnull(ptags_result_message(rows[i].r));
                g_assert_cmpuint(strlen(ptags_result_message(rows[i].r)), >, 0);
        }
        g_assert_cmpstr(ptags_action_name(PTAGS_ACTION_ADD), ==, "add");
        g_assert_cmpstr(ptags_action_name(PTAGS_ACTION_SUB), ==, "sub");
        g_assert_cmpstr(ptags_action_name(PTAGS_ACTION_SET), ==, "set");
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/grammar/utf8/valid", test_utf8_valid_forms);
        g_test_add_func("/grammar/utf8/invalid", test_utf8_invalid_forms);
        g_test_add_func("/grammar/tag/length", test_tag_length);
        g_test_add_func("/grammar/tag/forbidden-bytes", test_tag_forbidden_bytes);
        g_test_add_func("/grammar/tag/shape", test_tag_shape);
        g_test_add_func("/grammar/tag/rights-fields", test_tag_rights_fields);
        g_test_add_func("/grammar/value", test_value);
        g_test_add_func("/grammar/pattern/validate", test_pattern_validate);
        g_test_add_func("/grammar/pattern/match", test_pattern_match);
        g_test_add_func("/grammar/result-table", test_result_table);
        return g_test_run();
}
