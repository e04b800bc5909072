/* test-log.c: audit record bodies (tags encoded by libaudit so a tag cannot
 * forge fields; container records in the contid proposal's shape) and
 * logging without journal or audit never failing. */
#include <string.h>

#include "errors.h"
#include "log.h"

static void test_audit_message(void)
{
        PtagsLogContext ctx = {.pid = 42, .caller_pid = 1234, .caller_uid = 1000};
        g_autofree char *plain = ptags_audit_message("ptags-add", &ctx, "app:camera");
        g_assert_cmpstr(plain, ==,
                        "op=ptags-add pid=42 caller_pid=1234 caller_uid=1000 tag=\"app:camera\"");

        /* A space could fake a field ("x res=success"): libaudit hex-encodes it. */
        ctx.pid = 7;
        g_autofree char *forged = ptags_audit_message("ptags-add", &ctx, "x res=success");
        g_assert_true(g_str_has_prefix(forged, "op=ptags-add pid=7 caller_pid=1234 "));
        g_assert_null(strstr(forged, "res=success"));
        g_assert_cmpstr(strstr(forged, "tag="), ==, "tag=78207265733D73756363657373");

        ctx.pid = 9;
        g_autofree char *none = ptags_audit_message("ptags-change", &ctx, NULL);
        g_assert_cmpstr(none, ==, "op=ptags-change pid=9 caller_pid=1234 caller_uid=1000");
}

static void test_container_message(void)
{
        PtagsLogContext ctx = {.pid = 42, .caller_pid = 1234, .caller_uid = 1000};
        g_autofree char *first = ptags_audit_container_message("set", &ctx, 5, PTAGS_CONTID_UNSET);
        g_assert_cmpstr(first, ==,
                        "op=set opid=42 contid=5 old-contid=-1 caller_pid=1234 caller_uid=1000");
        g_autofree char *nested = ptags_audit_container_message("set", &ctx, 6, 5);
        g_assert_cmpstr(nested, ==,
                        "op=set opid=42 contid=6 old-contid=5 caller_pid=1234 caller_uid=1000");
        g_autofree char *drop =
                ptags_audit_container_message("drop", NULL, 18446744073709551614u, 0);
        g_assert_cmpstr(drop, ==, "op=drop contid=18446744073709551614");
}

static void test_logging_without_sinks(void)
{
        /* Tests have neither journal nor audit: logging must simply return. */
        const char *const lines[] = {"+app:a", "!app:a=v"};
        ptags_set *set = ptags_set_new();
        ptags_plan *plan = NULL;
        g_assert_cmpint(ptags_plan_build(set, lines, NULL, 2, &plan, NULL), ==, PTAGS_OK);
        PtagsLogContext ctx = {.pid = 1, .caller_pid = 2, .caller_uid = 1000, .method = "Apply"};

        ptags_log_changed(&ctx, plan);
        g_autoptr(GError) denied = g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED, "no");
        g_autoptr(GError) failed = g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED, "failed");
        ptags_log_refused(&ctx, plan, denied);
        ptags_log_refused(&ctx, NULL, failed);
        ptags_log_container_set(&ctx, 5, PTAGS_CONTID_UNSET, NULL);
        ptags_log_container_set(&ctx, 5, PTAGS_CONTID_UNSET, denied);
        ptags_log_container_drop(5, 2, 1000);
        ptags_plan_free(plan);
        ptags_set_free(set);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/log/audit-message", test_audit_message);
        g_test_add_func("/log/container-message", test_container_message);
        g_test_add_func("/log/without-sinks", test_logging_without_sinks);
        return g_test_run();
}
