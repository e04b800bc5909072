// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-interface.c: the interface XML (through the generated glue) carries
 * exactly the documented methods, signals and properties with their signatures,
 * so the public contract cannot drift unnoticed. */
#include <string.h>

#include "ptags-manager-generated.h"

static char *signature_of(GDBusArgInfo **args)
{
        GString *sig = g_string_new(NULL);

        for (size_t i = 0; args != NULL && args[i] != NULL; i++)
                g_string_append(sig, args[i]->signature);
        return g_string_free(sig, FALSE);
}

static void test_methods(void)
{
        static const struct {
                const char *name, *in, *out;
        } api[] = {
                {"GetTags", "u", "a(sbs)"},
                {"GetTagsFd", "h", "a(sbs)"},
                {"HasTag", "us", "b"},
                {"GetPeerTags", "s", "a(sbs)"},
                {"PeerHasTag", "ss", "b"},
                {"FindTagged", "s", "a(ua(sbs))"},
                {"AddTag", "usb", ""},
                {"RemoveTag", "us", ""},
                {"SetValue", "uss", ""},
                {"SetKeep", "usb", ""},
                {"Apply", "uas", ""},
                {"ApplyFd", "has", ""},
                {"RegisterContainer", "uta{sv}", ""},
                {"RegisterContainerFd", "hta{sv}", ""},
                {"GetContainerId", "u", "t"},
                {"GetContainer", "t", "a{sv}"},
                {"ListContainers", "", "a(ta{sv})"},
        };
        GDBusInterfaceInfo *info = ptags_manager_interface_info();
        size_t n = 0;

        g_assert_cmpstr(info->name, ==, "org.ptags.Manager");
        for (; info->methods[n] != NULL; n++)
                ;
        g_assert_cmpuint(n, ==, G_N_ELEMENTS(api));
        for (size_t i = 0; i < G_N_ELEMENTS(api); i++) {
                GDBusMethodInfo *m = g_dbus_interface_info_lookup_method(info, api[i].name);
                g_assert_nonnull(m);
                g_autofree char *in = signature_of(m->in_args);
                g_autofree char *out = signature_of(m->out_args);
                g_assert_cmpstr(in, ==, api[i].in);
                g_assert_cmpstr(out, ==, api[i].out);
        }
}

static void test_signal_and_properties(void)
{
        GDBusInterfaceInfo *info = ptags_manager_interface_info();
        static const struct {
                const char *name, *sig;
        } signals[] =
                {
                        {"TagsChanged", "uasa(sbs)"},
                        {"ContainerRegistered", "tua{sv}"},
                        {"ContainerRemoved", "t"},
                },
          props[] = {
                  {"Version", "s"},
                  {"Backend", "s"},
                  {"Features", "as"},
                  {"MaxTags", "u"},
                  {"MaxTagLength", "u"},
                  {"MaxValueLength", "u"},
                  {"MaxContainersPerUid", "u"},
                  /* The budgets and the message bound. */
                  {"MaxMessageBytes", "u"},
                  {"MaxProcessBytes", "u"},
                  {"MaxUserBytes", "u"},
                  {"MaxRootBytes", "u"},
                  {"MaxPolkitChanges", "u"},
                  {"MaxPolkitCalls", "u"},
                  {"MaxUnreadReplyBytes", "u"},
                  {"MaxUserUnreadReplyBytes", "u"},
                  {"MaxExpensiveCalls", "u"},
                  {"MaxConnectionCalls", "u"},
                  {"MaxRefusalRecords", "u"},
          };

        for (size_t i = 0; i < G_N_ELEMENTS(signals); i++) {
                GDBusSignalInfo *s = g_dbus_interface_info_lookup_signal(info, signals[i].name);
                g_assert_nonnull(s);
                g_autofree char *sig = signature_of(s->args);
                g_assert_cmpstr(sig, ==, signals[i].sig);
        }
        g_assert_null(info->signals[G_N_ELEMENTS(signals)]);
        for (size_t i = 0; i < G_N_ELEMENTS(props); i++) {
                GDBusPropertyInfo *p = g_dbus_interface_info_lookup_property(info, props[i].name);
                g_assert_nonnull(p);
                g_assert_cmpstr(p->signature, ==, props[i].sig);
                g_assert_cmpint(p->flags, ==, G_DBUS_PROPERTY_INFO_FLAGS_READABLE);
        }
        g_assert_null(info->properties[G_N_ELEMENTS(props)]);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/interface/methods", test_methods);
        g_test_add_func("/interface/signal-and-properties", test_signal_and_properties);
        return g_test_run();
}
