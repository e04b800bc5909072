// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-errors.c: the org.ptags.Error table: every code has its API name on
 * the wire both ways, and model results and errnos map as documented. */
#include <errno.h>

#include "errors.h"

static void test_names_round_trip(void)
{
        for (int code = 0; code < PTAGS_ERROR_N_CODES; code++) {
                const char *name = ptags_error_dbus_name((PtagsError)code);
                g_assert_nonnull(name);
                g_autoptr(GError) error = g_error_new(PTAGS_ERROR, code, "x");
                g_autofree char *encoded = g_dbus_error_encode_gerror(error);
                g_assert_cmpstr(encoded, ==, name);
                g_autoptr(GError) decoded = g_dbus_error_new_for_dbus_error(name, "y");
                g_assert_error(decoded, PTAGS_ERROR, code);
        }
        g_assert_null(ptags_error_dbus_name(PTAGS_ERROR_N_CODES));
}

static void test_api_names(void)
{
        /* The interface's list, in its order: names are API and must never drift. */
        static const char *const api[] = {
                "InvalidTag",        "InvalidValue",     "InvalidPattern",     "InvalidCommand",
                "NoSuchProcess",     "NoSuchTag",        "TooManyTags",        "NotAuthorized",
                "NotSupported",      "SelfTarget",       "NotDescendant",      "TargetBusy",
                "AlreadyRegistered", "ContainerIdInUse", "InvalidContainerId", "NoSuchContainer",
                "LimitExceeded",     "Failed",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(api); i++) {
                g_autofree char *full = g_strconcat("org.ptags.Error.", api[i], NULL);
                g_assert_cmpstr(ptags_error_dbus_name((PtagsError)i), ==, full);
        }
        g_assert_cmpstr(ptags_error_dbus_name(PTAGS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED), ==,
                        "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired");
}

static void test_from_result(void)
{
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_INVALID_TAG), ==, PTAGS_ERROR_INVALID_TAG);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_INVALID_VALUE), ==,
                        PTAGS_ERROR_INVALID_VALUE);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_INVALID_PATTERN), ==,
                        PTAGS_ERROR_INVALID_PATTERN);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_INVALID_COMMAND), ==,
                        PTAGS_ERROR_INVALID_COMMAND);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_NOT_PERMITTED), ==,
                        PTAGS_ERROR_NOT_AUTHORIZED);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_NO_SUCH_TAG), ==, PTAGS_ERROR_NO_SUCH_TAG);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_TOO_MANY_TAGS), ==,
                        PTAGS_ERROR_TOO_MANY_TAGS);
        g_assert_cmpint(ptags_error_from_result(PTAGS_E_NOMEM), ==, PTAGS_ERROR_FAILED);
        /* The model's own suffixes agree with the daemon's table. */
        for (int r = PTAGS_E_INVALID_TAG; r <= PTAGS_E_BATCH_TOO_LARGE; r++) {
                g_autofree char *full =
                        g_strconcat("org.ptags.Error.", ptags_result_name((ptags_result)r), NULL);
                g_assert_cmpstr(ptags_error_dbus_name(ptags_error_from_result((ptags_result)r)), ==,
                                full);
        }
}

static void test_from_errno(void)
{
        g_assert_cmpint(ptags_error_from_errno(EACCES), ==, PTAGS_ERROR_NOT_SUPPORTED);
        g_assert_cmpint(ptags_error_from_errno(EPERM), ==, PTAGS_ERROR_NOT_AUTHORIZED);
        g_assert_cmpint(ptags_error_from_errno(ESRCH), ==, PTAGS_ERROR_NO_SUCH_PROCESS);
        g_assert_cmpint(ptags_error_from_errno(ECANCELED), ==, PTAGS_ERROR_TOO_MANY_TAGS);
        g_assert_cmpint(ptags_error_from_errno(EINVAL), ==, PTAGS_ERROR_INVALID_COMMAND);
        g_assert_cmpint(ptags_error_from_errno(EBUSY), ==, PTAGS_ERROR_TARGET_BUSY);
        g_assert_cmpint(ptags_error_from_errno(EXDEV), ==, PTAGS_ERROR_NOT_DESCENDANT);
        g_assert_cmpint(ptags_error_from_errno(EEXIST), ==, PTAGS_ERROR_ALREADY_REGISTERED);
        g_assert_cmpint(ptags_error_from_errno(ENOTUNIQ), ==, PTAGS_ERROR_CONTAINER_ID_IN_USE);
        g_assert_cmpint(ptags_error_from_errno(EIO), ==, PTAGS_ERROR_FAILED);
        g_assert_cmpint(ptags_error_from_errno(0), ==, PTAGS_ERROR_FAILED);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/errors/names-round-trip", test_names_round_trip);
        g_test_add_func("/errors/api-names", test_api_names);
        g_test_add_func("/errors/from-result", test_from_result);
        g_test_add_func("/errors/from-errno", test_from_errno);
        return g_test_run();
}
