// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-echo-gdbus.c: a reference service for the call benchmark. It answers
 * GetTags, AddTag, RemoveTag and FindTagged with replies and a TagsChanged
 * signal shaped like ptagsd's, built from canned data: no kernel, no checks,
 * no logging; a change of the polkit row's tag asks polkitd first, as ptagsd
 * does for a caller other than root. It serves the bus the way ptagsd does
 * (GetTags in GDBus's worker thread, the rest on the main loop), so its
 * ratios to its own Ping are what GDBus alone costs for those calls.
 *
 *   bench-echo-gdbus ADDRESS NAME    (prints "ready" once NAME is owned) */
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>

#include "bench-echo.h"

/* The replies, built once: per call, only GDBus's own work remains. */
static GVariant *tags10_reply, *tags11, *found100_reply, *found1000_reply;

static GVariant *canned_tags(guint n, const char *prefix)
{
        GVariantBuilder b;
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(sbs)"));
        for (guint i = 0; i < n; i++) {
                char tag[64];
                snprintf(tag, sizeof(tag), "%s%u", prefix, i);
                g_variant_builder_add(&b, "(sbs)", tag, FALSE, "");
        }
        return g_variant_ref_sink(g_variant_builder_end(&b));
}

/* (a(ua(sbs))): @n processes, each with its one matching tag. */
static GVariant *canned_found(guint n, const char *tag)
{
        GVariantBuilder b;
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(ua(sbs))"));
        for (guint i = 0; i < n; i++) {
                GVariantBuilder one;
                g_variant_builder_init(&one, G_VARIANT_TYPE("a(sbs)"));
                g_variant_builder_add(&one, "(sbs)", tag, FALSE, "");
                g_variant_builder_add(&b, "(u@a(sbs))", (guint32)(ECHO_FIRST_PID + i),
                                      g_variant_builder_end(&one));
        }
        return g_variant_ref_sink(g_variant_new("(@a(ua(sbs)))", g_variant_builder_end(&b)));
}

/* GetTags in the worker thread, as ptagsd's bus-thread reads. */
static GDBusMessage *filter(GDBusConnection *connection, GDBusMessage *msg, gboolean incoming,
                            gpointer data)
{
        if (!incoming || g_dbus_message_get_message_type(msg) != G_DBUS_MESSAGE_TYPE_METHOD_CALL ||
            g_strcmp0(g_dbus_message_get_member(msg), "GetTags") != 0 ||
            g_strcmp0(g_dbus_message_get_interface(msg), ECHO_INTERFACE) != 0)
                return msg;
        GDBusMessage *reply = g_dbus_message_new_method_reply(msg);
        g_dbus_message_set_body(reply, tags10_reply);
        g_dbus_connection_send_message(connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL,
                                       NULL);
        g_object_unref(reply);
        g_object_unref(msg);
        return NULL;
}

static void change_done(GDBusMethodInvocation *inv)
{
        guint32 pid = 0;
        g_variant_get_child(g_dbus_method_invocation_get_parameters(inv), 0, "u", &pid);
        const char *lines[] = {ECHO_SIGNAL_LINE, NULL};
        g_dbus_connection_emit_signal(g_dbus_method_invocation_get_connection(inv), NULL, ECHO_PATH,
                                      ECHO_INTERFACE, "TagsChanged",
                                      g_variant_new("(u^as@a(sbs))", pid, lines, tags11), NULL);
        g_dbus_method_invocation_return_value(inv, NULL);
}

static void polkit_answered(GObject *source, GAsyncResult *res, gpointer data)
{
        GDBusMethodInvocation *inv = data;
        GError *error = NULL;
        GVariant *result = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);
        gboolean allowed = FALSE;
        if (result != NULL)
                g_variant_get(result, "((bb@a{ss}))", &allowed, NULL, NULL);
        if (result != NULL && allowed)
                change_done(inv);
        else
                g_dbus_method_invocation_return_dbus_error(
                        inv, "org.freedesktop.DBus.Error.AccessDenied",
                        error ? error->message : "polkitd said no");
        g_clear_pointer(&result, g_variant_unref);
        g_clear_error(&error);
}

/* Asynchronously, on the main loop, as ptagsd asks. */
static void ask_polkit(GDBusConnection *connection, const char *sender, GDBusMethodInvocation *inv)
{
        GVariantBuilder subject, details;
        g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&subject, "{sv}", "name", g_variant_new_string(sender));
        g_variant_builder_init(&details, G_VARIANT_TYPE("a{ss}"));
        for (guint i = 0; i < ECHO_POLKIT_N; i++)
                g_variant_builder_add(&details, "{ss}", echo_polkit_details[i][0],
                                      echo_polkit_details[i][1]);
        g_dbus_connection_call(connection, "org.freedesktop.PolicyKit1",
                               "/org/freedesktop/PolicyKit1/Authority",
                               "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                               g_variant_new("((sa{sv})sa{ss}us)", "system-bus-name", &subject,
                                             ECHO_POLKIT_ACTION, &details, 0u, ""),
                               G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, -1, NULL,
                               polkit_answered, inv);
}

static void method_call(GDBusConnection *connection, const char *sender, const char *path,
                        const char *interface, const char *method, GVariant *params,
                        GDBusMethodInvocation *inv, gpointer data)
{
        if (strcmp(method, "FindTagged") == 0) {
                const char *pattern = NULL;
                g_variant_get(params, "(&s)", &pattern);
                g_dbus_method_invocation_return_value(inv, strcmp(pattern, ECHO_PATTERN_1000) == 0
                                                                   ? found1000_reply
                                                                   : found100_reply);
                return;
        }
        /* AddTag, RemoveTag: a signal like ptagsd's, then the reply; the
         * polkit row's tag asks polkitd first. */
        const char *tag = NULL;
        g_variant_get_child(params, 1, "&s", &tag);
        if (strcmp(tag, ECHO_POLKIT_TAG) == 0)
                ask_polkit(connection, sender, inv);
        else
                change_done(inv);
}

static const GDBusInterfaceVTable vtable = {method_call, NULL, NULL, {0}};

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: bench-echo-gdbus ADDRESS NAME\n");
                return 2;
        }
        g_autoptr(GVariant) tags10 = canned_tags(10, ECHO_TAG_PREFIX);
        tags10_reply = g_variant_ref_sink(g_variant_new("(@a(sbs))", tags10));
        tags11 = canned_tags(11, ECHO_TAG_PREFIX);
        found100_reply = canned_found(100, ECHO_PATTERN_100);
        found1000_reply = canned_found(1000, ECHO_PATTERN_1000);

        g_autoptr(GError) error = NULL;
        g_autoptr(GDBusConnection) bus = g_dbus_connection_new_for_address_sync(
                argv[1],
                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                NULL, NULL, &error);
        g_autoptr(GDBusNodeInfo) node = bus ? g_dbus_node_info_new_for_xml(ECHO_XML, &error) : NULL;
        if (node == NULL || g_dbus_connection_register_object(bus, ECHO_PATH, node->interfaces[0],
                                                              &vtable, NULL, NULL, &error) == 0) {
                fprintf(stderr, "bench-echo-gdbus: %s\n", error->message);
                return 1;
        }
        g_dbus_connection_add_filter(bus, filter, NULL, NULL);
        g_autoptr(GVariant) r = g_dbus_connection_call_sync(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "RequestName", g_variant_new("(su)", argv[2], 4u /* DO_NOT_QUEUE */),
                G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        guint32 result = 0;
        if (r != NULL)
                g_variant_get(r, "(u)", &result);
        if (result != 1) {
                fprintf(stderr, "bench-echo-gdbus: cannot own %s: %s\n", argv[2],
                        error ? error->message : "not the primary owner");
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        g_main_loop_run(g_main_loop_new(NULL, FALSE));
        return 0;
}
