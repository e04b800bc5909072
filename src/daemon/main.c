// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* main.c: ptagsd's entry point: options, backend choice, the system bus name
 * org.ptags.Manager, readiness notification and clean shutdown. */
#define G_LOG_DOMAIN "ptagsd"

#include "config.h"

#include <errno.h>
#include <glib-unix.h>
#include <linux/capability.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "authority.h"
#include "backend-select.h"
#include "backend.h"
#include "budgets.h"
#include "bus-joins.h"
#include "log-writer.h"
#include "log.h"
#include "manager.h"
#include "names.h"
#include "registry.h"
#include "subuids.h"

#define DEFAULT_POLKIT_TIMEOUT 25

typedef struct {
        GMainLoop *loop;
        PtagsBackend *backend;
        PtagsAuthority *authority;
        PtagsService *service;
        gboolean name_owned;
        int exit_code;
} Daemon;

/* Made after the backend, and after the capabilities it does not need are
 * dropped: GDBus starts a thread, and credentials are per thread. A second
 * ptagsd beside a running one stops at the backend's lock (the runtime
 * directory's on ptags-lsm, the pins' on bpf) before it changes anything,
 * or else at the bus name. */
static GDBusConnection *connect_system_bus(void)
{
        g_autoptr(GError) error = NULL;
        GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SYSTEM, NULL, &error);

        if (bus == NULL)
                g_printerr("ptagsd: cannot connect to the system bus: %s\n", error->message);
        return bus;
}

/* ptagsd holds a pidfd for every process it pins (calls waiting for
 * polkit, cached callers and peers, watched containers) and every
 * descriptor callers pass: the usual soft limit of 1024 open files would
 * let a few users' calls take them all, so the hard limit is used. */
static void raise_file_limit(void)
{
        struct rlimit files;

        if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
                files.rlim_cur = files.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &files) != 0)
                        g_warning("cannot raise the limit of open files: %s", g_strerror(errno));
        }
}

/* What ptagsd needs itself, whatever the backend: sending audit records
 * (CAP_AUDIT_WRITE), and reading /proc/PID/exe and the /proc/PID/ns links of other
 * users' processes (CAP_SYS_PTRACE, read access only: the unit's system call
 * filter keeps ptrace(2) and process_vm_writev(2) out). */
#define PTAGSD_CAPABILITIES (1ull << CAP_AUDIT_WRITE | 1ull << CAP_SYS_PTRACE)

static gboolean has_capability(const struct __user_cap_data_struct *data, int cap)
{
        return data[cap / 32].effective >> (cap % 32) & 1;
}

/* Keep only @keep (1 << CAP_*) in every set of this thread, which is every
 * thread ptagsd will have: no other runs yet. Under the unit that is a part
 * of what it gives; started some other way (by hand, or by a bus without
 * systemd activation) ptagsd holds all of root's, and also takes the rest
 * out of its bounding set, so no program it might run could get them back.
 * A failure (an older unit's system call filter refusing capset) is logged;
 * ptagsd still serves. */
static void keep_only_capabilities(guint64 keep)
{
        struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

        if (syscall(SYS_capget, &header, data) != 0) {
                g_warning("cannot read ptagsd's capabilities: %s", g_strerror(errno));
                return;
        }
        if (has_capability(data, CAP_SETPCAP))
                for (int cap = 0; prctl(PR_CAPBSET_READ, cap) >= 0; cap++)
                        if (!(keep >> cap & 1) && prctl(PR_CAPBSET_DROP, cap) != 0)
                                g_warning("cannot drop capability %d from the bounding set: %s",
                                          cap, g_strerror(errno));
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
                g_warning("cannot clear the ambient capabilities: %s", g_strerror(errno));
        for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
                guint32 mask = (guint32)(keep >> (32 * i));
                data[i].permitted &= mask;
                data[i].effective = data[i].permitted;
                data[i].inheritable = 0;
        }
        if (syscall(SYS_capset, &header, data) != 0)
                g_warning("cannot drop the capabilities ptagsd does not need: %s",
                          g_strerror(errno));
}

static void name_acquired(GDBusConnection *connection, const char *name, gpointer user_data)
{
        Daemon *d = user_data;

        d->name_owned = TRUE;
        ptags_manager_serving(d->service);
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

/* --max-...=N: one budget of budgets.h, checked against its range. */
static gboolean parse_limit(const char *option, const char *value, gpointer data, GError **error)
{
        PtagsLimits *limits = data;
        gsize n;
        const PtagsLimitInfo *infos = ptags_limit_infos(&n);
        gint64 number;

        for (gsize i = 0; i < n; i++) {
                if (!g_str_has_prefix(option, "--") || strcmp(option + 2, infos[i].option) != 0)
                        continue;
                if (!g_ascii_string_to_signed(value, 10, G_MININT64, G_MAXINT64, &number, NULL)) {
                        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                                    "%s=%s: not a number", option, value);
                        return FALSE;
                }
                return ptags_limit_set(limits, &infos[i], number, error);
        }
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION, "%s: no such budget",
                    option);
        return FALSE;
}

/* The budget options, one per entry of budgets.h's table, each described
 * with its default and range. (transfer full) */
static GOptionGroup *limit_options(PtagsLimits *limits)
{
        gsize n;
        const PtagsLimitInfo *infos = ptags_limit_infos(&n);
        GOptionGroup *group = g_option_group_new("limits", "Budgets (see the D-Bus properties):",
                                                 "Show the budget options", limits, NULL);
        g_autofree GOptionEntry *entries = g_new0(GOptionEntry, n + 1);
        /* The group keeps pointers to the texts: they last as long as ptagsd. */
        static GPtrArray *texts;

        if (texts == NULL)
                texts = g_ptr_array_new_with_free_func(g_free);
        for (gsize i = 0; i < n; i++) {
                char *text = g_strdup_printf("%s (default %u, from %u to %u)", infos[i].help,
                                             infos[i].fallback, infos[i].min, infos[i].max);
                g_ptr_array_add(texts, text);
                entries[i].long_name = infos[i].option;
                entries[i].arg = G_OPTION_ARG_CALLBACK;
                entries[i].arg_data = (gpointer)parse_limit;
                entries[i].description = text;
                entries[i].arg_description = "N";
        }
        g_option_group_add_entries(group, entries);
        return group;
}

/* After a burst of calls, give the memory it freed back to the system:
 * glibc keeps freed memory inside its heap, so ptagsd would otherwise stay
 * the size of its busiest moment. Any incoming message arms one trim
 * TRIM_DELAY_SEC later: none while idle, one per delay while busy. */
#define TRIM_DELAY_SEC 2
static gint trim_armed; /* atomic */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* A build with ASan or TSan allocates through the sanitizer (glibc's heap
 * then holds almost nothing), so its counters are the ones that tell. */
size_t __sanitizer_get_current_allocated_bytes(void);
size_t __sanitizer_get_free_bytes(void);

static void heap_usage(size_t *in_use, size_t *free_bytes)
{
        *in_use = __sanitizer_get_current_allocated_bytes();
        *free_bytes = __sanitizer_get_free_bytes();
}
#else
static void heap_usage(size_t *in_use, size_t *free_bytes)
{
        struct mallinfo2 heap = mallinfo2();

        *in_use = heap.uordblks + heap.hblkhd;
        *free_bytes = heap.fordblks;
}
#endif

/* The log line the tests that look for leaks read. */
static gboolean trim_now(gpointer unused)
{
        size_t in_use, free_bytes;

        g_atomic_int_set(&trim_armed, FALSE); /* messages from now on arm the next */
        malloc_trim(0);
        heap_usage(&in_use, &free_bytes);
        g_debug("heap trimmed: %zu bytes in use, %zu free", in_use, free_bytes);
        return G_SOURCE_REMOVE;
}

/* Runs in GDBus's worker thread for every message. */
static GDBusMessage *arm_trim(GDBusConnection *bus, GDBusMessage *message, gboolean incoming,
                              gpointer context)
{
        if (incoming && g_atomic_int_compare_and_exchange(&trim_armed, FALSE, TRUE)) {
                GSource *timer = g_timeout_source_new_seconds(TRIM_DELAY_SEC);
                g_source_set_callback(timer, trim_now, NULL, NULL);
                g_source_attach(timer, context);
                g_source_unref(timer);
        }
        return message;
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
        /* One malloc arena for every thread, set before GDBus starts its
         * own: a burst of calls otherwise leaves several MiB of freed
         * memory behind in the bus thread's arena, which glibc keeps. */
        mallopt(M_ARENA_MAX, 1);
        g_autofree char *backend_name = NULL;
        g_autofree char *proc_root = NULL;
        g_autofree char *subuid_file = NULL; /* GOption would not free a default */
        gint polkit_timeout = DEFAULT_POLKIT_TIMEOUT;
        gint max_containers = PTAGS_CONTAINERS_PER_UID_DEFAULT;
        gboolean verbose = FALSE;
        gboolean version = FALSE;
        gboolean remove_state = FALSE;
        const GOptionEntry entries[] = {
                {"backend", 0, 0, G_OPTION_ARG_STRING, &backend_name,
                 "Where tags live: auto (default), ptags-lsm or bpf", "NAME"},
                {"proc-root", 0, 0, G_OPTION_ARG_FILENAME, &proc_root,
                 "Read and write DIR/PID/attr/ptags instead of /proc (tests)", "DIR"},
                {"polkit-timeout", 0, 0, G_OPTION_ARG_INT, &polkit_timeout,
                 "Deny a change when polkit takes longer (default 25)", "SECONDS"},
                {"max-containers-per-uid", 0, 0, G_OPTION_ARG_INT, &max_containers,
                 "Live audit containers one registrant uid may hold (default 1024)", "N"},
                {"subuid-file", 0, 0, G_OPTION_ARG_FILENAME, &subuid_file,
                 "Charge each uid of a range of subordinate uids in FILE to the range's "
                 "owner's per-uid budgets (default /etc/subuid; \"\": every uid alone)",
                 "FILE"},
                {"verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log every call and decision",
                 NULL},
                {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL},
                {"remove-state", 0, 0, G_OPTION_ARG_NONE, &remove_state,
                 "Detach the bpf programs, remove their pins and runtime state, and exit "
                 "(uninstalling; ptagsd must be stopped)",
                 NULL},
                {NULL},
        };
        g_autoptr(GOptionContext) context = g_option_context_new("- the ptags D-Bus service");
        g_autoptr(GError) error = NULL;
        PtagsLimits limits;

        ptags_limits_init(&limits);
        ptags_log_install_writer(); /* before anything is logged */
        g_option_context_add_main_entries(context, entries, NULL);
        g_option_context_add_group(context, limit_options(&limits));
        if (!g_option_context_parse(context, &argc, &argv, &error)) {
                g_printerr("ptagsd: %s\n", error->message);
                return 2;
        }
        if (version) {
                printf("ptagsd %s\n", PACKAGE_VERSION);
                return 0;
        }
        if (remove_state) {
#ifdef HAVE_BPF_BACKEND
                /* Refused while a ptagsd on bpf runs (its pins' lock);
                 * the registry's removal below, while one on ptags-lsm
                 * does (the runtime directory's). */
                if (!ptags_backend_bpf_remove_state(&error)) {
                        g_printerr("ptagsd: %s\n", error->message);
                        return 1;
                }
                /* Every container ID went with the bpf state: a registry
                 * kept would make the next ptagsd announce the end of
                 * containers that ended long before. */
                g_autofree char *registry = ptags_registry_default_path();
                if (!ptags_registry_remove_file(registry, &error)) {
                        g_printerr("ptagsd: %s\n", error->message);
                        return 1;
                }
#endif
                /* The ptags-lsm backend keeps nothing outside the kernel. */
                return 0;
        }
        if (!ptags_backend_name_check(backend_name, &error)) {
                g_printerr("ptagsd: %s\n", error->message);
                return 2;
        }
        if (polkit_timeout <= 0) {
                g_printerr("ptagsd: --polkit-timeout must be a positive number of seconds\n");
                return 2;
        }
        if (max_containers <= 0) {
                g_printerr("ptagsd: --max-containers-per-uid must be a positive number\n");
                return 2;
        }
        ptags_containers_set_max_per_uid((guint)max_containers);
        /* GLib's default writer shows debug messages when this is set (the
         * variable works on every GLib the build accepts). */
        if (verbose)
                g_setenv("G_MESSAGES_DEBUG", "all", TRUE);

        Daemon d = {0};
        /* No thread starts before the capabilities are dropped: each
         * thread keeps its own (see keep_only_capabilities). */
        ptags_log_writer_hold(TRUE);
        raise_file_limit();
        d.backend = ptags_backend_select(backend_name, proc_root, &error);
        if (d.backend == NULL) {
                g_printerr("ptagsd: %s\n", error->message);
                return 1;
        }
        guint64 keep = PTAGSD_CAPABILITIES | d.backend->ops->capabilities;
        if (ptags_backend_contids_available(d.backend))
                keep |= d.backend->ops->contid_capabilities;
        keep_only_capabilities(keep);
        ptags_log_writer_hold(FALSE);
        printf("ptagsd %s: backend %s%s%s\n", PACKAGE_VERSION, d.backend->ops->name,
               proc_root ? ", proc root " : "", proc_root ? proc_root : "");
        fflush(stdout);
        g_autoptr(GDBusConnection) bus = connect_system_bus();
        if (bus == NULL) {
                ptags_backend_free(d.backend);
                return 1;
        }

        /* Before anyone can call: the joins seen date the callers' connections. */
        if (!ptags_bus_joins_watch(bus, &error)) {
                g_printerr("ptagsd: %s\n", error->message);
                ptags_backend_free(d.backend);
                return 1;
        }
        guint trim = g_dbus_connection_add_filter(bus, arm_trim, g_main_context_default(), NULL);
        d.authority = ptags_authority_new((guint)polkit_timeout, limits.polkit_calls);
        ptags_log_set_refusal_budget(limits.refusal_records);
        /* Before anyone can call, after the capabilities are dropped (its
         * file watch starts a thread). */
        ptags_subuids_start(subuid_file != NULL ? subuid_file : "/etc/subuid");
        /* Exported before the name is owned, so the first call finds it. */
        d.service = ptags_service_new(bus, d.backend, d.authority, &limits, &error);
        if (d.service == NULL) {
                g_printerr("ptagsd: cannot export %s: %s\n", PTAGS_OBJECT_PATH, error->message);
                ptags_subuids_stop();
                ptags_authority_free(d.authority);
                ptags_backend_free(d.backend);
                g_dbus_connection_remove_filter(bus, trim);
                ptags_bus_joins_unwatch();
                return 1;
        }
        d.loop = g_main_loop_new(NULL, FALSE);
        g_unix_signal_add(SIGTERM, quit_on_signal, &d);
        g_unix_signal_add(SIGINT, quit_on_signal, &d);
        guint owner = g_bus_own_name_on_connection(bus, PTAGS_BUS_NAME,
                                                   G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE,
                                                   name_acquired, name_lost, &d, NULL);
        g_main_loop_run(d.loop);

        g_bus_unown_name(owner);
        g_dbus_connection_remove_filter(bus, trim);
        ptags_service_free(d.service);
        ptags_bus_joins_unwatch();
        ptags_subuids_stop();
        ptags_authority_free(d.authority);
        ptags_backend_free(d.backend);
        g_main_loop_unref(d.loop);
        /* The records still waiting are written at exit (log-writer.c). */
        return d.exit_code;
}
