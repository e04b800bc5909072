// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-authority.c: the change-kind -> polkit action table (deny by default)
 * and the details every polkit rule sees. */
#include <string.h>

#include "authority.h"
#include "errors.h"

/* A plan of @lines against a set parsed from @current (kernel read format). */
static ptags_plan *plan_of(const char *current, const char *const *lines, size_t n)
{
        ptags_set *set = NULL;
        ptags_plan *plan = NULL;

        g_assert_cmpint(ptags_set_parse(current, strlen(current), &set, NULL), ==, PTAGS_OK);
        g_assert_cmpint(ptags_plan_build(set, lines, NULL, n, &plan, NULL), ==, PTAGS_OK);
        ptags_set_free(set);
        return plan;
}

static const ptags_change *change_for(const ptags_plan *plan, const char *tag,
                                      ptags_change_kind kind)
{
        for (size_t i = 0; i < ptags_plan_change_count(plan); i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                if (strcmp(c->tag, tag) == 0 && c->kind == kind)
                        return c;
        }
        g_error("no change of kind %d for %s", kind, tag);
        return NULL;
}

static void test_action_table(void)
{
        static const char *const lines[] = {
                "+app:new", "+@app:newkept", "+@app:old",      "-app:gone",  "-@app:kept",
                "!app:v=1", "!app:w",        "+ptags:app:add", "-ptags:sub",
        };
        ptags_plan *plan = plan_of("app:gone\n@app:kept\napp:old\napp:v\napp:w=x\nptags:sub\n",
                                   lines, G_N_ELEMENTS(lines));
        const struct {
                const char *tag;
                ptags_change_kind kind;
                const char *action;
        } expect[] = {
                {"app:new", PTAGS_CHANGE_ADD, PTAGS_ACTION_TAG_ADD},
                {"app:newkept", PTAGS_CHANGE_ADD_KEPT, PTAGS_ACTION_TAG_ADD},
                {"app:old", PTAGS_CHANGE_SET_KEEP, PTAGS_ACTION_TAG_ADD},
                {"app:gone", PTAGS_CHANGE_REMOVE, PTAGS_ACTION_TAG_REMOVE},
                {"app:kept", PTAGS_CHANGE_CLEAR_KEEP, PTAGS_ACTION_TAG_REMOVE},
                {"app:v", PTAGS_CHANGE_SET_VALUE, PTAGS_ACTION_TAG_SET_VALUE},
                {"app:w", PTAGS_CHANGE_CLEAR_VALUE, PTAGS_ACTION_TAG_SET_VALUE},
                {"ptags:app:add", PTAGS_CHANGE_ADD, PTAGS_ACTION_RIGHTS_CHANGE},
                {"ptags:sub", PTAGS_CHANGE_REMOVE, PTAGS_ACTION_RIGHTS_CHANGE},
        };

        g_assert_cmpuint(ptags_plan_change_count(plan), ==, G_N_ELEMENTS(expect));
        for (size_t i = 0; i < G_N_ELEMENTS(expect); i++)
                g_assert_cmpstr(ptags_authority_action_for_change(
                                        change_for(plan, expect[i].tag, expect[i].kind)),
                                ==, expect[i].action);

        /* A kind the table does not know is denied, even for a rights tag. */
        ptags_change unknown = *change_for(plan, "app:new", PTAGS_CHANGE_ADD);
        unknown.kind = (ptags_change_kind)99;
        g_assert_null(ptags_authority_action_for_change(&unknown));
        unknown.tag = "ptags:add";
        unknown.tag_len = strlen(unknown.tag);
        g_assert_null(ptags_authority_action_for_change(&unknown));
        ptags_plan_free(plan);
}

static void assert_detail(PolkitDetails *d, const char *key, const char *value)
{
        g_assert_cmpstr(polkit_details_lookup(d, key), ==, value);
}

static void test_details(void)
{
        static const char *const lines[] = {"+@app:cam:front", "!app:v=a b=c"};
        ptags_plan *plan = plan_of("app:v=old\n", lines, G_N_ELEMENTS(lines));
        PtagsProcessInfo info = {.uids = {1000},
                                 .user = "alice",
                                 .exe = "/usr/bin/cam",
                                 .comm = "cam",
                                 .unit = "user@1000.service",
                                 .user_unit = "cam.service"};
        PtagsCheckFacts facts = {
                .change = change_for(plan, "app:cam:front", PTAGS_CHANGE_ADD_KEPT),
                .pid = 4242,
                .target = &info,
                .self = FALSE,
                .caller_holds_right = TRUE,
        };

        g_autoptr(PolkitDetails) d = ptags_authority_details(&facts);
        assert_detail(d, "tag", "app:cam:front");
        assert_detail(d, "prefix", "app");
        assert_detail(d, "value", "");
        assert_detail(d, "keep", "true");
        assert_detail(d, "pid", "4242");
        assert_detail(d, "target-uid", "1000");
        assert_detail(d, "target-user", "alice");
        assert_detail(d, "target-exe", "/usr/bin/cam");
        assert_detail(d, "target-comm", "cam");
        assert_detail(d, "target-unit", "user@1000.service");
        assert_detail(d, "target-user-unit", "cam.service");
        assert_detail(d, "self", "false");
        assert_detail(d, "caller-holds-right", "true");

        /* Unknown facts are omitted, never invented. */
        PtagsProcessInfo bare = {.uids = {0}, .comm = "kthread"};
        facts.target = &bare;
        facts.self = TRUE;
        facts.caller_holds_right = FALSE;
        facts.change = change_for(plan, "app:v", PTAGS_CHANGE_SET_VALUE);
        g_autoptr(PolkitDetails) d2 = ptags_authority_details(&facts);
        assert_detail(d2, "tag", "app:v");
        assert_detail(d2, "prefix", "app");
        assert_detail(d2, "value", "a b=c");
        assert_detail(d2, "keep", "false");
        assert_detail(d2, "target-uid", "0");
        assert_detail(d2, "target-comm", "kthread");
        g_assert_null(polkit_details_lookup(d2, "target-user"));
        g_assert_null(polkit_details_lookup(d2, "target-exe"));
        g_assert_null(polkit_details_lookup(d2, "target-unit"));
        g_assert_null(polkit_details_lookup(d2, "target-user-unit"));
        assert_detail(d2, "self", "true");
        assert_detail(d2, "caller-holds-right", "false");
        ptags_plan_free(plan);
}

static void test_prefix_without_colon(void)
{
        static const char *const lines[] = {"+camera"};
        ptags_plan *plan = plan_of("", lines, 1);
        PtagsProcessInfo info = {.uids = {1}, .comm = "x"};
        PtagsCheckFacts facts = {
                .change = ptags_plan_change_at(plan, 0), .pid = 1, .target = &info};
        g_autoptr(PolkitDetails) d = ptags_authority_details(&facts);

        assert_detail(d, "prefix", "camera");
        ptags_plan_free(plan);
}

static void on_checked(GObject *source, GAsyncResult *res, gpointer user_data)
{
        GError **out = user_data;

        g_assert_false(ptags_authority_check_all_finish(res, out));
}

static void test_unknown_action_denied_without_polkit(void)
{
        /* A check without action is refused before polkit is ever asked. */
        PtagsAuthority *a = ptags_authority_new(1, 32);
        g_autoptr(GPtrArray) checks =
                g_ptr_array_new_with_free_func((GDestroyNotify)ptags_check_free);
        g_ptr_array_add(checks, ptags_check_new(NULL, polkit_details_new(), "app:x"));
        GError *error = NULL;

        ptags_authority_check_all_async(a, ":1.1", 1000, checks, FALSE, NULL, on_checked, &error);
        while (error == NULL)
                g_main_context_iteration(NULL, TRUE);
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED);
        g_assert_nonnull(strstr(error->message, "app:x"));
        g_error_free(error);
        ptags_authority_free(a);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/authority/action-table", test_action_table);
        g_test_add_func("/authority/details", test_details);
        g_test_add_func("/authority/prefix-without-colon", test_prefix_without_colon);
        g_test_add_func("/authority/unknown-action-denied",
                        test_unknown_action_denied_without_polkit);
        return g_test_run();
}
