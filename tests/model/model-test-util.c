// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* model-test-util.c: helpers the model's GTest programs share (see the
 * header); linked into every model test executable. */
#include <stdlib.h>
#include <string.h>

#include "model-test-util.h"

ptags_set *test_set_from_text(const char *text)
{
        ptags_set *s = NULL;
        size_t off = 0;
        ptags_result r = ptags_set_parse(text, strlen(text), &s, &off);
        if (r != PTAGS_OK)
                g_error("bad test set at offset %zu: %s", off, ptags_result_message(r));
        return s;
}

char *test_set_to_text(const ptags_set *s)
{
        size_t len = 0;
        char *buf = ptags_set_format(s, &len);
        g_assert_nonnull(buf);
        g_assert_cmpuint(strlen(buf), ==, len);
        char *copy = g_strdup(buf);
        free(buf);
        return copy;
}

char *test_repeat(char c, size_t n)
{
        char *s = g_malloc(n + 1);
        memset(s, c, n);
        s[n] = '\0';
        return s;
}

ptags_set *test_set_with_n_tags(size_t n)
{
        GString *text = g_string_new(NULL);
        for (size_t i = 0; i < n; i++)
                g_string_append_printf(text, "t%04zu\n", i);
        ptags_set *s = test_set_from_text(text->str);
        g_string_free(text, TRUE);
        g_assert_cmpuint(ptags_set_count(s), ==, n);
        return s;
}

ptags_writer test_writer(const char *text, bool self, ptags_set **owned)
{
        *owned = test_set_from_text(text);
        return (ptags_writer){.tags = *owned, .unrestricted = false, .self = self};
}

void test_note(const char *label, const char *bytes)
{
        g_autofree char *escaped = g_strescape(bytes, NULL);
        g_test_message("%s \"%s\"", label, escaped);
}
