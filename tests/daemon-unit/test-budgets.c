// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-budgets.c: the budget table (ranges, defaults, option names) and the
 * byte accounting the budgets and the message bound rely on. */
#include <string.h>

#include "budgets.h"
#include "args.h"

static const PtagsLimitInfo *info_named(const char *option)
{
        gsize n;
        const PtagsLimitInfo *infos = ptags_limit_infos(&n);

        for (gsize i = 0; i < n; i++)
                if (g_str_equal(infos[i].option, option))
                        return &infos[i];
        g_assert_not_reached();
}

static void test_defaults_and_ranges(void)
{
        PtagsLimits l;
        gsize n;
        const PtagsLimitInfo *infos = ptags_limit_infos(&n);

        ptags_limits_init(&l);
        g_assert_cmpuint(l.process_bytes, ==, 256 * 1024);
        g_assert_cmpuint(l.user_bytes, ==, 4 * 1024 * 1024);
        g_assert_cmpuint(l.root_bytes, ==, 32 * 1024 * 1024);
        g_assert_cmpuint(l.polkit_changes, ==, 1024);
        g_assert_cmpuint(l.expensive_calls, ==, 32);
        for (gsize i = 0; i < n; i++) {
                g_autoptr(GError) error = NULL;
                g_assert_cmpuint(ptags_limit_get(&l, &infos[i]), ==, infos[i].fallback);
                g_assert_true(infos[i].min <= infos[i].fallback &&
                              infos[i].fallback <= infos[i].max);
                g_assert_true(ptags_limit_set(&l, &infos[i], infos[i].max, NULL));
                g_assert_false(ptags_limit_set(&l, &infos[i], (gint64)infos[i].max + 1, &error));
                g_assert_nonnull(strstr(error->message, infos[i].option));
                g_clear_error(&error);
                g_assert_false(ptags_limit_set(&l, &infos[i], (gint64)infos[i].min - 1, &error));
                g_assert_cmpuint(ptags_limit_get(&l, &infos[i]), ==, infos[i].max);
        }
        /* One process's full budget always fits one reply. */
        g_assert_cmpuint(info_named("max-process-bytes")->max, <=, PTAGS_MAX_MESSAGE_BYTES / 2);
}

/* The wire bound really bounds what GDBus sends for a GetTags reply, also
 * for many short tags, where the framing outweighs the header allowance. */
static void check_wire_bound(const char *text, guint64 bytes)
{
        ptags_set *set = NULL;
        size_t off;

        g_assert_cmpint(ptags_set_parse(text, strlen(text), &set, &off), ==, PTAGS_OK);
        g_assert_cmpuint(ptags_set_bytes(set), ==, bytes);
        GDBusMessage *msg = g_dbus_message_new_method_call(":1.1", "/org/ptags/Manager",
                                                           "org.ptags.Manager", "GetTags");
        g_dbus_message_set_serial(msg, 1);
        GDBusMessage *reply = g_dbus_message_new_method_reply(msg);
        g_dbus_message_set_destination(reply, ":1.12345");
        g_dbus_message_set_body(reply, g_variant_new("(@a(sbs))", ptags_set_to_variant(set)));
        gsize size = 0;
        g_autofree guchar *blob = g_dbus_message_to_blob(reply, &size, 0, NULL);
        g_assert_nonnull(blob);
        g_test_message("%zu bytes on the wire, bound %" G_GUINT64_FORMAT, size,
                       ptags_set_wire_bound(set) + PTAGS_WIRE_HEADER_OVERHEAD);
        g_assert_cmpuint(size, <=, ptags_set_wire_bound(set) + PTAGS_WIRE_HEADER_OVERHEAD);
        g_object_unref(reply);
        g_object_unref(msg);
        ptags_set_free(set);
}

static void test_wire_bound(void)
{
        check_wire_bound("@a\nb=1\nccc=xyzzy\nd:e:f= v\n", 1 + 1 + 1 + 3 + 5 + 5 + 2);
        g_autoptr(GString) many = g_string_new(NULL);
        guint64 bytes = 0;
        /* Names of 4-7 bytes, no values: the worst padding for (sbs). */
        for (guint i = 0; i < 2000; i++) {
                g_string_append_printf(many, "%s%04u\n", i % 2 ? "@" : "", i);
                bytes += 4;
        }
        check_wire_bound(many->str, bytes);
        g_assert_cmpuint(ptags_set_bytes(NULL), ==, 0);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/budgets/defaults-and-ranges", test_defaults_and_ranges);
        g_test_add_func("/budgets/wire-bound", test_wire_bound);
        return g_test_run();
}
