// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* model-test-util.h: helpers the model's GTest programs share: build sets
 * from their kernel text, compare sets by their printed form, make writers. */
#pragma once

#include <glib.h>

#include "ptags-model.h"

/* A set parsed from the kernel read format; fails the test on bad text. */
ptags_set *test_set_from_text(const char *text);
/* The set in the kernel read format. (transfer full: g_free) */
char *test_set_to_text(const ptags_set *s);
/* Fail the test unless @s prints exactly as @expected. */
#define test_assert_set(s, expected)                                                               \
        do {                                                                                       \
                g_autofree char *printed_ = test_set_to_text(s);                                   \
                g_assert_cmpstr(printed_, ==, (expected));                                         \
        } while (0)
/* A string of @n copies of @c. (transfer full: g_free) */
char *test_repeat(char c, size_t n);
/* A set holding "t0000".."tNNNN" (@n tags, no values, no keep). */
ptags_set *test_set_with_n_tags(size_t n);
/* A restricted writer whose rights are the tags in @text (a read-format
 * set); *owned receives the set to free. */
ptags_writer test_writer(const char *text, bool self, ptags_set **owned);
/* g_test_message of @label and @bytes with non-printable bytes escaped
 * (TAP output must stay valid UTF-8). */
void test_note(const char *label, const char *bytes);
