/* main.c: ptagsd's entry point: options, backend choice, the system bus name
 * org.ptags.Manager, readiness notification and clean shutdown. */
#define G_LOG_DOMAIN "ptagsd"

#include "config.h"

#include <glib-unix.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

#include "authority.h"
#include "backend-select.h"
#include "log.h"
#include "manager.h"

#define BUS_NAME               "org.ptags.Manager"
#define DEFAULT_POLKIT_TIMEOUT 25

typedef struct {
        GMainLoop *loop;
        PtagsBackend *backend;
        PtagsAuthority *authority;
        PtagsService *service;
        gboolean name_owned;
        int exit_code;
} Daemon;

/* Fail before touching the kernel when the bus is unreachable or another
 * ptagsd already serves: a second instance must not disturb the first (the
 * bpf backend, for one, refuses to share its pinned state). */
static GDBusConnection *connect_system_bus(void)
{
        g_autoptr(GError) error = NULL;
        g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SYSTEM, NULL, &error);

        if (bus == NULL) {
                g_printerr("ptagsd: cannot connect to the system bus: %s\n", error->message);
                return NULL;
        }
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "NameHasOwner", g_variant_new("(s)", BUS_NAME), G_VARIANT_TYPE("(b)"),
                G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        gboolean owned = FALSE;
        if (reply != NULL)
                g_variant_get(reply, "(b)", &owned);
        if (owned) {
                g_printerr("ptagsd: cannot own the name %s on the system bus: another ptagsd "
                           "already serves it\n",
                           BUS_NAME);
                return NULL;
        }
        return g_steal_pointer(&bus);
}

static void name_acquired(GDBusConnection *connection, const char *name, gpointer user_data)
{
        Daemon *d = user_data;

        d->name_owned = TRUE;
        g_message("serving %s with the %s backend", name, d->backend->ops->name);
        sd_notifyf(0, "READY=1\nSTATUS=Serving %s (backend %s)", name, d->backend->ops->name);
}

static void name_lost(GDBusConnection *connection, const char *name, gpointer user_data)
{
        Daemon *d = user_data;

        if (d->name_owned)
                g_printerr("ptagsd: lost the name %s (the bus connection closed?)\n", name);
        else
                g_printerr("ptagsd: cannot own the name %s on the system bus (another ptagsd "
                           "running, or the bus policy does not allow it)\n",
                           name);
        d->exit_code = 1;
        g_main_loop_quit(d->loop);
}

static gboolean quit_on_signal(gpointer user_data)
{
        Daemon *d = user_data;

        sd_notify(0, "STOPPING=1");
        g_main_loop_quit(d->loop);
        return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
        g_autofree char *backend_name = NULL;
        g_autofree char *proc_root = NULL;
        gint polkit_timeout = DEFAULT_POLKIT_TIMEOUT;
        gboolean verbose = FALSE;
        gboolean version = FALSE;
        const GOptionEntry entries[] = {
                {"backend", 0, 0, G_OPTION_ARG_STRING, &backend_name,
                 "Where tags live: auto (default), ptags-lsm or bpf", "NAME"},
                {"proc-root", 0, 0, G_OPTION_ARG_FILENAME, &proc_root,
                 "Read and write DIR/PID/attr/ptags instead of /proc (tests)", "DIR"},
                {"polkit-timeout", 0, 0, G_OPTION_ARG_INT, &polkit_timeout,
                 "Deny a change when polkit takes longer (default 25)", "SECONDS"},
                {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log every call and decision",
                 NULL},
                {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL},
                {NULL},
        };
        g_autoptr(GOptionContext) context = g_option_context_new("- the ptags D-Bus service");
        g_autoptr(GError) error = NULL;

        ptags_log_install_writer(); /* before anything is logged */
        g_option_context_add_main_entries(context, entries, NULL);
        if (!g_option_context_parse(context, &argc, &argv, &error)) {
                g_printerr("ptagsd: %s\n", error->message);
                return 2;
        }
        if (version) {
                printf("ptagsd %s\n", PACKAGE_VERSION);
                return 0;
        }
        if (polkit_timeout <= 0) {
                g_printerr("ptagsd: --polkit-timeout must be a positive number of seconds\n");
                return 2;
        }
        if (verbose)
                g_log_set_debug_enabled(TRUE);

        Daemon d = {0};
        g_autoptr(GDBusConnection) bus = connect_system_bus();
        if (bus == NULL)
                return 1;
        d.backend = ptags_backend_select(backend_name, proc_root, &error);
        if (d.backend == NULL) {
                g_printerr("ptagsd: %s\n", error->message);
                return 1;
        }
        printf("ptagsd %s: backend %s%s%s\n", PACKAGE_VERSION, d.backend->ops->name,
               proc_root ? ", proc root " : "", proc_root ? proc_root : "");
        fflush(stdout);

        d.authority = ptags_authority_new((guint)polkit_timeout);
        /* Exported before the name is owned, so the first call finds it. */
        d.service = ptags_service_new(bus, d.backend, d.authority, &error);
        if (d.service == NULL) {
                g_printerr("ptagsd: cannot export /org/ptags/Manager: %s\n", error->message);
                ptags_authority_free(d.authority);
                ptags_backend_free(d.backend);
                return 1;
        }
        d.loop = g_main_loop_new(NULL, FALSE);
        g_unix_signal_add(SIGTERM, quit_on_signal, &d);
        g_unix_signal_add(SIGINT, quit_on_signal, &d);
        guint owner =
                g_bus_own_name_on_connection(bus, BUS_NAME, G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE,
                                             name_acquired, name_lost, &d, NULL);
        g_main_loop_run(d.loop);

        g_bus_unown_name(owner);
        ptags_service_free(d.service);
        ptags_authority_free(d.authority);
        ptags_backend_free(d.backend);
        g_main_loop_unref(d.loop);
        return d.exit_code;
}
