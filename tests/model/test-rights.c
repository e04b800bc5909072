// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-rights.c: ptags(7)'s rights model: ptags:A, ptags:P:A for the
 * tag or a ':'-prefix of it, ptags:ptags:A for rights tags, and
 * ptags:others / ptags:P:others when the target is another process. */
#include <string.h>

#include "model-test-util.h"

static bool allow(const ptags_writer *w, ptags_action a, const char *tag)
{
        g_assert_cmpint(ptags_tag_validate(tag, strlen(tag)), ==, PTAGS_OK);
        return ptags_rights_allow(w, a, tag, strlen(tag));
}

static void test_unrestricted(void)
{
        ptags_writer root = {.tags = NULL, .unrestricted = true, .self = false};
        g_assert_true(allow(NULL, PTAGS_ACTION_SET, "ptags:add"));
        g_assert_true(allow(&root, PTAGS_ACTION_ADD, "app:x"));
        g_assert_true(allow(&root, PTAGS_ACTION_SUB, "ptags:ptags:others"));
        ptags_writer nobody = {.tags = NULL, .unrestricted = false, .self = true};
        g_assert_false(allow(&nobody, PTAGS_ACTION_ADD, "app:x"));
}

typedef struct {
        const char *rights; /* the writer's tags */
        bool self;
        ptags_action action;
        const char *tag;
        bool allowed;
} rights_row;

static const rights_row rows[] = {
        /* ptags:A covers every tag that is not a rights tag */
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "app:x", true},
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "x", true},
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "ptags", true},
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "ptagsx:y", true},
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "ptags:add", false},
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "ptags:app:sub", false},
        {"ptags:add\n", true, PTAGS_ACTION_SUB, "app:x", false},
        {"ptags:add\n", true, PTAGS_ACTION_SET, "app:x", false},
        {"ptags:sub\n", true, PTAGS_ACTION_SUB, "app:x", true},
        {"ptags:set\n", true, PTAGS_ACTION_SET, "app:x", true},
        {"ptags:set\n", true, PTAGS_ACTION_ADD, "app:x", false},
        /* ptags:P:A: T == P or T starts with P: */
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "app", true},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "app:x", true},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "app:x:y", true},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "apple", false},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "ap", false},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "xapp", false},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "x:app", false},
        {"ptags:app:add\n", true, PTAGS_ACTION_SUB, "app:x", false},
        {"ptags:app:x:add\n", true, PTAGS_ACTION_ADD, "app:x", true},
        {"ptags:app:x:add\n", true, PTAGS_ACTION_ADD, "app:x:y", true},
        {"ptags:app:x:add\n", true, PTAGS_ACTION_ADD, "app", false},
        {"ptags:app:x:add\n", true, PTAGS_ACTION_ADD, "app:y", false},
        {"ptags:app:x:add\n", true, PTAGS_ACTION_ADD, "app:xy", false},
        /* deep rights: the search must walk every field prefix */
        {"ptags:a:b:c:add\n", true, PTAGS_ACTION_ADD, "a:b:c:d", true},
        {"ptags:a:b:c:add\n", true, PTAGS_ACTION_ADD, "a:b:c", true},
        {"ptags:a:b:c:add\n", true, PTAGS_ACTION_ADD, "a:b:x", false},
        {"ptags:a:b:c:add\n", true, PTAGS_ACTION_ADD, "a:b", false},
        {"ptags:a:bc:add\n", true, PTAGS_ACTION_ADD, "a:b:c", false},
        {"ptags:a:b:sub\nptags:ab:add\n", true, PTAGS_ACTION_ADD, "a:b", false},
        {"ptags:a:add:x:add\n", true, PTAGS_ACTION_ADD, "a:add:x:y", true},
        {"ptags:a:add:x:add\n", true, PTAGS_ACTION_ADD, "a:add", false},
        {"ptags:a:add\nptags:a:b:sub\n", true, PTAGS_ACTION_ADD, "a:b:c", true},
        /* empty fields: ":x::a" has the prefixes "", ":x", ":x:" */
        {"ptags::add\n", true, PTAGS_ACTION_ADD, ":x::a", true},
        {"ptags::x:add\n", true, PTAGS_ACTION_ADD, ":x::a", true},
        {"ptags::x::add\n", true, PTAGS_ACTION_ADD, ":x::a", true},
        {"ptags::x::a:add\n", true, PTAGS_ACTION_ADD, ":x::a", true},
        {"ptags::y:add\n", true, PTAGS_ACTION_ADD, ":x::a", false},
        {"ptags::add\n", true, PTAGS_ACTION_ADD, "x", false},
        /* ptags:ptags:A covers rights tags (and, by the P rule, "ptags") */
        {"ptags:ptags:add\n", true, PTAGS_ACTION_ADD, "ptags:add", true},
        {"ptags:ptags:add\n", true, PTAGS_ACTION_ADD, "ptags:app:camera:sub", true},
        {"ptags:ptags:add\n", true, PTAGS_ACTION_ADD, "ptags", true},
        {"ptags:ptags:add\n", true, PTAGS_ACTION_ADD, "app:x", false},
        {"ptags:ptags:add\n", true, PTAGS_ACTION_SUB, "ptags:add", false},
        {"ptags:ptags:app:add\n", true, PTAGS_ACTION_ADD, "ptags:app:sub", true},
        {"ptags:ptags:app:add\n", true, PTAGS_ACTION_ADD, "ptags:add", false},
        {"ptags:ptags:sub\n", true, PTAGS_ACTION_SUB, "ptags:ptags:sub", true},
        /* another target: the action right and an others right */
        {"ptags:add\n", false, PTAGS_ACTION_ADD, "app:x", false},
        {"ptags:add\nptags:others\n", false, PTAGS_ACTION_ADD, "app:x", true},
        {"ptags:others\n", false, PTAGS_ACTION_ADD, "app:x", false},
        {"ptags:add\nptags:others\n", false, PTAGS_ACTION_ADD, "ptags:add", false},
        {"ptags:add\nptags:app:others\n", false, PTAGS_ACTION_ADD, "app:x", true},
        {"ptags:add\nptags:app:others\n", false, PTAGS_ACTION_ADD, "other", false},
        {"ptags:app:add\nptags:others\n", false, PTAGS_ACTION_ADD, "app:x", true},
        {"ptags:app:add\nptags:others\n", false, PTAGS_ACTION_ADD, "other", false},
        {"ptags:app:add\nptags:app:x:others\n", false, PTAGS_ACTION_ADD, "app:x:y", true},
        {"ptags:app:add\nptags:app:x:others\n", false, PTAGS_ACTION_ADD, "app:y", false},
        {"ptags:ptags:add\nptags:ptags:others\n", false, PTAGS_ACTION_ADD, "ptags:add", true},
        {"ptags:others\nptags:ptags:add\n", false, PTAGS_ACTION_ADD, "ptags:add", false},
        {"ptags:others\nptags:sub\n", false, PTAGS_ACTION_SUB, "x", true},
        {"ptags:others\nptags:set\n", false, PTAGS_ACTION_SET, "x", true},
        /* self needs no others right */
        {"ptags:add\n", true, PTAGS_ACTION_ADD, "y", true},
        /* nothing held, nothing allowed */
        {"", true, PTAGS_ACTION_ADD, "x", false},
        {"add\napp:add\n", true, PTAGS_ACTION_ADD, "x", false},
        {"ptags:app:add\n", true, PTAGS_ACTION_ADD, "ptags:app:add", false},
};

static void test_rights_table(void)
{
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                ptags_set *tags;
                ptags_writer w = test_writer(rows[i].rights, rows[i].self, &tags);
                g_test_message("row %zu: %s %s", i, ptags_action_name(rows[i].action), rows[i].tag);
                g_assert_cmpint(allow(&w, rows[i].action, rows[i].tag), ==, rows[i].allowed);
                /* The same writer with CAP_MAC_ADMIN passes everything. */
                w.unrestricted = true;
                g_assert_true(allow(&w, rows[i].action, rows[i].tag));
                ptags_set_free(tags);
        }
}

static void test_long_tags(void)
{
        /* A 4000-byte tag of 1999 fields: every prefix is looked up. */
        g_autofree char *tag = test_repeat(':', PTAGS_MAX_TAG_LEN);
        for (size_t i = 1; i < PTAGS_MAX_TAG_LEN; i += 2)
                tag[i] = 'a';
        g_assert_cmpint(ptags_tag_validate(tag, 4000), ==, PTAGS_OK);
        g_autofree char *right = g_strdup_printf("ptags:%.3000s:add\n", tag);
        ptags_set *tags;
        ptags_writer w = test_writer(right, true, &tags);
        g_assert_true(ptags_rights_allow(&w, PTAGS_ACTION_ADD, tag, 4000));
        g_assert_false(ptags_rights_allow(&w, PTAGS_ACTION_ADD, tag, 2999));
        g_assert_false(ptags_rights_allow(&w, PTAGS_ACTION_SUB, tag, 4000));
        ptags_set_free(tags);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/rights/unrestricted", test_unrestricted);
        g_test_add_func("/rights/table", test_rights_table);
        g_test_add_func("/rights/long-tags", test_long_tags);
        return g_test_run();
}
