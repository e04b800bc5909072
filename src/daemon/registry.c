// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* registry.c: live audit containers, kept in a key file under the runtime
 * directory and watched through pidfds of their known processes. */
#define G_LOG_DOMAIN "ptagsd-registry"

#include "registry.h"
#include "lsm-intent.h"

#include "args.h"
#include "errors.h"
#include "lineage.h"
#include "subuids.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* How removal is found without polling every process: each container holds
 * pidfds of up to PTAGS_REGISTRY_MAX_PINNED of its processes (the ones
 * registered, later the ones a scan found), each a main-loop fd source that
 * fires once, when that process exits. Only when a container's last pinned
 * process has exited does the registry ask the backend for every process
 * carrying an ID (one pass over /proc, or one run of the bpf task iterator)
 * and pin the carriers it finds; none found means the container is gone.
 * Cost: one fd and one source per pinned process; a scan per container only
 * when all its pinned processes have exited. */

/* A failed scan is tried again this often. */
#define RETRY_SCAN_S 30

static const char *const ns_types[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};

typedef struct {
        PtagsContainer *container;
        PtagsTarget target;
        guint source;
} Member;

struct _PtagsRegistry {
        PtagsBackend *backend;
        char *path;
        GHashTable *containers; /* guint64* contid -> PtagsContainer */
        PtagsContainerGoneFunc gone;
        void *user_data;
        /* Containers waiting for the next check (a set), which serves them
         * all with one scan, and when the last scan ran and what it cost. */
        GHashTable *due;
        guint check_source;
        gint64 last_scan_us; /* monotonic; 0: none yet */
        gint64 last_cost_us;
};

static void member_free(gpointer data)
{
        Member *m = data;

        if (m->source != 0)
                g_source_remove(m->source);
        ptags_target_clear(&m->target);
        g_free(m);
}

static void container_free(gpointer data)
{
        PtagsContainer *c = data;

        if (c->retry_source != 0)
                g_source_remove(c->retry_source);
        g_hash_table_remove(c->registry->due, c);
        g_clear_pointer(&c->gone, g_hash_table_unref);
        g_ptr_array_unref(c->members);
        if (c->namespaces != NULL)
                g_array_unref(c->namespaces);
        g_free(c->name);
        g_free(c);
}

static PtagsContainer *container_new(PtagsRegistry *r, guint64 contid)
{
        PtagsContainer *c = g_new0(PtagsContainer, 1);

        c->contid = contid;
        c->parent = PTAGS_CONTID_UNSET;
        c->registry = r;
        c->members = g_ptr_array_new_with_free_func(member_free);
        c->namespaces = g_array_new(FALSE, TRUE, sizeof(PtagsNamespace));
        return c;
}

char *ptags_registry_default_path(void)
{
        return ptags_runtime_path("containers");
}

/* What a registry that cannot be read is renamed to at load. */
#define DAMAGED_SUFFIX ".damaged"

/* A save writes NAME.XXXXXX beside the file, then renames it over. */
static gboolean is_save_copy(const char *entry, const char *name)
{
        size_t n = strlen(name);

        return strncmp(entry, name, n) == 0 && entry[n] == '.' && strlen(entry + n + 1) == 6;
}

gboolean ptags_registry_remove_file(const char *path, GError **error)
{
        g_autofree char *dir_path = g_path_get_dirname(path);
        g_autofree char *name = g_path_get_basename(path);
        int saved = 0;

        /* A ptagsd on ptags-lsm holds the runtime directory's lock while it
         * runs (on bpf, the pins' lock stopped the caller already). */
        int lock = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
                close(lock);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "%s is in use by a running ptagsd: stop it first", dir_path);
                return FALSE;
        }
        if (unlink(path) < 0 && errno != ENOENT)
                saved = errno;
        g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
        for (const char *e; dir != NULL && (e = g_dir_read_name(dir)) != NULL;) {
                g_autofree char *copy = g_build_filename(dir_path, e, NULL);
                gboolean damaged =
                        g_str_has_prefix(e, name) && g_str_equal(e + strlen(name), DAMAGED_SUFFIX);
                if ((is_save_copy(e, name) || damaged) && unlink(copy) < 0 && errno != ENOENT &&
                    saved == 0)
                        saved = errno;
        }
        if (lock >= 0)
                close(lock);
        if (saved != 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED, "cannot remove %s: %s", path,
                            g_strerror(saved));
                return FALSE;
        }
        return TRUE;
}

PtagsRegistry *ptags_registry_new(PtagsBackend *backend, const char *path,
                                  PtagsContainerGoneFunc gone, void *user_data)
{
        PtagsRegistry *r = g_new0(PtagsRegistry, 1);

        /* One pidfd per watched process: ptagsd raised its soft limit of
         * open files to the hard one at start (main.c). */
        r->backend = backend;
        r->path = g_strdup(path);
        r->containers = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, container_free);
        r->due = g_hash_table_new(NULL, NULL);
        r->gone = gone;
        r->user_data = user_data;
        return r;
}

void ptags_registry_free(PtagsRegistry *r)
{
        if (r == NULL)
                return;
        if (r->check_source != 0)
                g_source_remove(r->check_source);
        g_hash_table_unref(r->containers);
        g_hash_table_unref(r->due);
        g_free(r->path);
        g_free(r);
}

PtagsContainer *ptags_registry_lookup(PtagsRegistry *r, guint64 contid)
{
        return g_hash_table_lookup(r->containers, &contid);
}

guint ptags_registry_count_for_budget(PtagsRegistry *r, uid_t budget_uid)
{
        GHashTableIter it;
        gpointer value;
        guint n = 0;

        g_hash_table_iter_init(&it, r->containers);
        while (g_hash_table_iter_next(&it, NULL, &value)) {
                uid_t owner = ((PtagsContainer *)value)->owner_uid;
                n += owner != PTAGS_REGISTRY_OWNER_UNKNOWN && ptags_budget_uid(owner) == budget_uid;
        }
        return n;
}

static gint by_contid(gconstpointer a, gconstpointer b)
{
        guint64 x = (*(PtagsContainer *const *)a)->contid,
                y = (*(PtagsContainer *const *)b)->contid;

        return x < y ? -1 : x > y;
}

GPtrArray *ptags_registry_list(PtagsRegistry *r)
{
        GPtrArray *all = g_ptr_array_new();
        GHashTableIter it;
        gpointer value;

        g_hash_table_iter_init(&it, r->containers);
        while (g_hash_table_iter_next(&it, NULL, &value))
                g_ptr_array_add(all, value);
        g_ptr_array_sort(all, by_contid);
        return all;
}

/* ------------------------------------------------------------ saving */

static char *hex(const guint8 *bytes, gsize n)
{
        GString *s = g_string_new(NULL);

        for (gsize i = 0; i < n; i++)
                g_string_append_printf(s, "%02x", bytes[i]);
        return g_string_free(s, FALSE);
}

/* Written whole to a temporary file and renamed, so a SIGKILL leaves the
 * old or the new registry, never half of one. */
static gboolean registry_save(PtagsRegistry *r, GError **error)
{
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GPtrArray) all = ptags_registry_list(r);

        for (guint i = 0; i < all->len; i++) {
                PtagsContainer *c = all->pdata[i];
                g_autofree char *group = g_strdup_printf("%" G_GUINT64_FORMAT, c->contid);
                g_key_file_set_uint64(kf, group, "parent", c->parent);
                if (c->has_uuid) {
                        g_autofree char *text = hex(c->uuid, sizeof(c->uuid));
                        g_key_file_set_string(kf, group, "uuid", text);
                }
                if (c->name != NULL)
                        g_key_file_set_string(kf, group, "name", c->name);
                g_key_file_set_int64(kf, group, "leader", c->leader);
                g_key_file_set_uint64(kf, group, "owner-uid", c->owner_uid);
                g_key_file_set_int64(kf, group, "owner-pid", c->owner_pid);
                g_key_file_set_uint64(kf, group, "owner-start", c->owner_start);
                g_key_file_set_int64(kf, group, "registered", c->registered_us);
                g_autoptr(GStrvBuilder) ns = g_strv_builder_new();
                for (guint k = 0; k < c->namespaces->len; k++) {
                        PtagsNamespace *n = &g_array_index(c->namespaces, PtagsNamespace, k);
                        g_autofree char *item =
                                g_strdup_printf("%s:%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT,
                                                n->type, n->device, n->inode);
                        g_strv_builder_add(ns, item);
                }
                g_auto(GStrv) list = g_strv_builder_end(ns);
                g_key_file_set_string_list(kf, group, "namespaces", (const char *const *)list,
                                           g_strv_length(list));
        }
        g_autofree char *dir = g_path_get_dirname(r->path);
        if (g_mkdir_with_parents(dir, 0700) < 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "cannot create %s for the container registry: %s", dir,
                            g_strerror(errno));
                return FALSE;
        }
        gsize len = 0;
        g_autofree char *text = g_key_file_to_data(kf, &len, NULL);
        g_autoptr(GError) local = NULL;
        if (!g_file_set_contents_full(r->path, text, (gssize)len,
                                      G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                      0600, &local)) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "cannot save the container registry: %s", local->message);
                return FALSE;
        }
        return TRUE;
}

/* ------------------------------------------------------------ removal */

static void container_check_soon(PtagsContainer *c);

/* A process of a container may fork and exit as fast as it likes, and a
 * check walks every process: checks are this far apart at least, and ten
 * times as far as the last one took, however many containers wait for
 * one. One check serves every container waiting, so neither many
 * containers nor their processes can keep the main loop scanning.
 * Meanwhile a container stays, as its ID may still be carried. */
#define SCAN_SPACING_MS   100
#define SCAN_COST_SPACING 10

static gboolean container_retry(gpointer data);
static gboolean run_checks(gpointer data);

static void container_check_soon(PtagsContainer *c)
{
        PtagsRegistry *r = c->registry;

        g_hash_table_add(r->due, c);
        if (r->check_source != 0)
                return;
        gint64 spacing = MAX(SCAN_SPACING_MS * 1000, SCAN_COST_SPACING * r->last_cost_us);
        gint64 wait_us = r->last_scan_us + spacing - g_get_monotonic_time();
        r->check_source = r->last_scan_us == 0 || wait_us <= 0
                                  ? g_timeout_add(0, run_checks, r)
                                  : g_timeout_add((guint)(wait_us / 1000) + 1, run_checks, r);
}

static gboolean member_exited(gint fd, GIOCondition condition, gpointer user_data)
{
        Member *m = user_data;
        PtagsContainer *c = m->container;

        g_debug("process %d of container %" G_GUINT64_FORMAT " exited", (int)m->target.pid,
                c->contid);
        m->source = 0; /* removed by returning G_SOURCE_REMOVE */
        g_ptr_array_remove_fast(c->members, m);
        if (c->members->len == 0)
                container_check_soon(c);
        return G_SOURCE_REMOVE;
}

static gboolean container_has_member(PtagsContainer *c, pid_t pid)
{
        for (guint i = 0; i < c->members->len; i++)
                if (((Member *)c->members->pdata[i])->target.pid == pid)
                        return TRUE;
        return FALSE;
}

static gboolean watch_member(PtagsContainer *c, const PtagsTarget *t)
{
        if (c->members->len >= PTAGS_REGISTRY_MAX_PINNED || container_has_member(c, t->pid))
                return TRUE;
        Member *m = g_new0(Member, 1);
        m->container = c;
        if (!ptags_target_copy(&m->target, t, NULL)) {
                g_warning("cannot watch process %d of container %" G_GUINT64_FORMAT ": %s",
                          (int)t->pid, c->contid, g_strerror(errno));
                g_free(m);
                return FALSE;
        }
        /* A pidfd polls readable once its process has exited. */
        m->source = g_unix_fd_add(m->target.pidfd, G_IO_IN, member_exited, m);
        g_ptr_array_add(c->members, m);
        return TRUE;
}

gboolean ptags_registry_watch(PtagsContainer *c, const PtagsTarget *t)
{
        if (watch_member(c, t))
                return TRUE;
        /* Nothing would ever notice the end of a container none of whose
         * processes is watched: look for them later, as after a scan that
         * could not pin them. */
        if (c->members->len == 0 && c->retry_source == 0)
                c->retry_source = g_timeout_add_seconds(RETRY_SCAN_S, container_retry, c);
        return FALSE;
}

/* What pinning a process that a scan listed as a carrier found. */
typedef enum {
        PIN_CARRIER, /* it runs and carries the ID: pinned */
        PIN_GONE,    /* it exited since the scan (its pid may be taken again) */
        PIN_UNSURE,  /* it may carry the ID, but cannot be pinned or read */
} PinResult;

/* Pins @pid, which a scan found carrying @contid, into @t (cleared unless
 * PIN_CARRIER). A zombie's record outlives its exit: it counts as gone.
 * Pinning fails for another reason than the exit when out of file
 * descriptors. */
static PinResult pin_carrier(PtagsRegistry *r, pid_t pid, guint64 contid, PtagsTarget *t)
{
        g_autoptr(GError) error = NULL;
        guint64 now = PTAGS_CONTID_UNSET;

        if (!ptags_target_pin_pid(t, pid, &error))
                return g_error_matches(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS)
                               ? PIN_GONE
                               : PIN_UNSURE;
        int e = ptags_target_alive(t)
                        ? r->backend->ops->read_contid(r->backend, t->pidfd, pid, &now)
                        : -ESRCH;
        if (e == 0 && now == contid)
                return PIN_CARRIER;
        ptags_target_clear(t);
        /* Another ID (or none) means another process took the pid. */
        return e < 0 && e != -ESRCH ? PIN_UNSURE : PIN_GONE;
}

/* A carrier that cannot be watched (out of file descriptors) may still
 * carry the ID: PIN_UNSURE, and the container must not be declared gone. */
static PinResult pin_found(PtagsContainer *c, pid_t pid)
{
        PtagsTarget t = {0, -1};
        PinResult p = pin_carrier(c->registry, pid, c->contid, &t);

        if (p != PIN_CARRIER)
                return p;
        gboolean ok = watch_member(c, &t);
        ptags_target_clear(&t);
        return ok ? PIN_CARRIER : PIN_UNSURE;
}

typedef struct {
        GHashTable *by_contid; /* guint64* -> GArray of pid_t */
} Scan;

static void scan_one(pid_t pid, guint64 contid, void *user_data)
{
        Scan *s = user_data;
        GArray *pids = g_hash_table_lookup(s->by_contid, &contid);

        if (pids == NULL) {
                pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
                g_hash_table_insert(s->by_contid, g_memdup2(&contid, sizeof(contid)), pids);
        }
        /* All of them: the first few may be exiting already. */
        g_array_append_val(pids, pid);
}

/* contid -> pids carrying it, or NULL when the backend cannot say. */
static GHashTable *scan_backend(PtagsRegistry *r)
{
        Scan s = {g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                        (GDestroyNotify)g_array_unref)};
        gint64 start = g_get_monotonic_time();
        int e = r->backend->ops->list_contids(r->backend, scan_one, &s);

        r->last_scan_us = start;
        r->last_cost_us = g_get_monotonic_time() - start;

        if (e < 0) {
                g_warning("cannot list the processes carrying container IDs: %s", g_strerror(-e));
                g_hash_table_unref(s.by_contid);
                return NULL;
        }
        guint64 unknown = PTAGS_CONTID_UNSET;
        GArray *unread = g_hash_table_lookup(s.by_contid, &unknown);
        /* The one cost of removal detection worth watching. */
        g_debug("container scan: %" G_GINT64_FORMAT " us, %u IDs in use, %u processes unread",
                g_get_monotonic_time() - start, g_hash_table_size(s.by_contid) - (unread != NULL),
                unread != NULL ? unread->len : 0);
        return s.by_contid;
}

static void container_drop(PtagsContainer *c)
{
        PtagsRegistry *r = c->registry;
        g_autoptr(GError) error = NULL;
        guint64 contid = c->contid;

        if (r->gone != NULL)
                r->gone(c, r->user_data);
        g_hash_table_remove(r->containers, &contid);
        if (!registry_save(r, &error))
                g_warning("%s", error->message);
}

/* A scan is a snapshot: a carrier may fork and exit between the scan and
 * its pinning, leaving the ID to a child the scan did not list. So a
 * carrier found gone calls for another check, this many in a row at most
 * before the slow retry. */
#define MAX_RESCANS 3

/* The end of a run of checks of @c. */
static void container_settled(PtagsContainer *c)
{
        c->rescans = 0;
        g_clear_pointer(&c->gone, g_hash_table_unref);
}

/* Pin the carriers @found holds for @c; forget @c when a scan lists none
 * but the ones already found gone (zombies, until reaped). @found is NULL
 * when the backend could not list. */
static void container_settle(PtagsContainer *c, GHashTable *found)
{
        GArray *pids = found != NULL ? g_hash_table_lookup(found, &c->contid) : NULL;
        guint64 unknown = PTAGS_CONTID_UNSET;
        /* When the backend cannot list, or could not read some process's
         * ID, keep the container and ask again later: a wrong removal is
         * worse than a late one. */
        gboolean sure = found != NULL && !g_hash_table_contains(found, &unknown);
        gboolean newly_gone = FALSE;

        if (c->gone == NULL)
                c->gone = g_hash_table_new(NULL, NULL);
        for (guint i = 0;
             pids != NULL && i < pids->len && c->members->len < PTAGS_REGISTRY_MAX_PINNED; i++) {
                pid_t pid = g_array_index(pids, pid_t, i);
                PinResult p = pin_found(c, pid);
                sure &= p != PIN_UNSURE;
                if (p == PIN_GONE && g_hash_table_add(c->gone, GINT_TO_POINTER(pid)))
                        newly_gone = TRUE;
        }
        if (c->members->len > 0) {
                container_settled(c);
                return;
        }
        if (sure && !newly_gone) {
                container_drop(c);
                return;
        }
        if (sure && c->rescans < MAX_RESCANS) {
                c->rescans++;
                g_debug("a carrier of container %" G_GUINT64_FORMAT " exited: checking again",
                        c->contid);
                container_check_soon(c);
                return;
        }
        container_settled(c);
        if (c->retry_source == 0)
                c->retry_source = g_timeout_add_seconds(RETRY_SCAN_S, container_retry, c);
}

static gboolean container_retry(gpointer data)
{
        PtagsContainer *c = data; /* alive: freeing it removes this source */

        c->retry_source = 0;
        container_check_soon(c);
        return G_SOURCE_REMOVE;
}

/* One scan for every container due. */
static gboolean run_checks(gpointer data)
{
        PtagsRegistry *r = data;
        g_autoptr(GArray) contids = g_array_new(FALSE, FALSE, sizeof(guint64));
        GHashTableIter it;
        gpointer key;

        r->check_source = 0;
        g_hash_table_iter_init(&it, r->due);
        while (g_hash_table_iter_next(&it, &key, NULL))
                g_array_append_val(contids, ((PtagsContainer *)key)->contid);
        g_hash_table_remove_all(r->due);
        g_autoptr(GHashTable) found = scan_backend(r);
        /* By ID: settling one container may drop it, never another. */
        for (guint i = 0; i < contids->len; i++) {
                PtagsContainer *c = ptags_registry_lookup(r, g_array_index(contids, guint64, i));
                if (c == NULL)
                        continue;
                if (c->retry_source != 0) {
                        g_source_remove(c->retry_source); /* this check stands for it */
                        c->retry_source = 0;
                }
                container_settle(c, found);
        }
        return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------ loading */

static gboolean parse_hex(const char *text, guint8 *out, gsize n)
{
        if (text == NULL || strlen(text) != 2 * n)
                return FALSE;
        for (gsize i = 0; i < n; i++) {
                int hi = g_ascii_xdigit_value(text[2 * i]),
                    lo = g_ascii_xdigit_value(text[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return FALSE;
                out[i] = (guint8)(hi << 4 | lo);
        }
        return TRUE;
}

static guint64 key_or(GKeyFile *kf, const char *group, const char *key, guint64 missing)
{
        g_autoptr(GError) error = NULL;
        guint64 v = g_key_file_get_uint64(kf, group, key, &error);

        return error == NULL ? v : missing;
}

static PtagsContainer *container_from_group(PtagsRegistry *r, GKeyFile *kf, const char *group)
{
        char *end = NULL;
        guint64 contid = g_ascii_strtoull(group, &end, 10);

        if (end == group || *end != '\0' || contid == PTAGS_CONTID_UNSET)
                return NULL;
        PtagsContainer *c = container_new(r, contid);
        /* A key missing (an edited file) is no container 0 and no uid 0. */
        c->parent = key_or(kf, group, "parent", PTAGS_CONTID_UNSET);
        g_autofree char *uuid = g_key_file_get_string(kf, group, "uuid", NULL);
        c->has_uuid = parse_hex(uuid, c->uuid, sizeof(c->uuid));
        c->name = g_key_file_get_string(kf, group, "name", NULL);
        c->leader = (pid_t)g_key_file_get_int64(kf, group, "leader", NULL);
        c->owner_uid = (uid_t)key_or(kf, group, "owner-uid", PTAGS_REGISTRY_OWNER_UNKNOWN);
        c->owner_pid = (pid_t)g_key_file_get_int64(kf, group, "owner-pid", NULL);
        c->owner_start = g_key_file_get_uint64(kf, group, "owner-start", NULL);
        c->registered_us = g_key_file_get_int64(kf, group, "registered", NULL);
        g_auto(GStrv) ns = g_key_file_get_string_list(kf, group, "namespaces", NULL, NULL);
        for (size_t i = 0; ns != NULL && ns[i] != NULL; i++) {
                PtagsNamespace n = {0};
                unsigned long long dev, ino;
                char type[16];
                if (sscanf(ns[i], "%15[a-z_]:%llu:%llu", type, &dev, &ino) != 3)
                        continue;
                g_strlcpy(n.type, type, sizeof(n.type));
                n.device = dev;
                n.inode = ino;
                g_array_append_val(c->namespaces, n);
        }
        return c;
}

/* The first of @pids that still runs carrying @contid, or may; 0 when
 * none. */
static pid_t first_carrier(PtagsRegistry *r, guint64 contid, GArray *pids)
{
        for (guint i = 0; i < pids->len; i++) {
                PtagsTarget t = {0, -1};
                pid_t pid = g_array_index(pids, pid_t, i);
                if (pin_carrier(r, pid, contid, &t) != PIN_GONE) {
                        ptags_target_clear(&t);
                        return pid;
                }
        }
        return 0;
}

/* An entry for each ID processes carry that the registry does not name
 * (it was removed, or could not be read): the ID stays in use, by a
 * registrant nobody knows, so nobody may register it anew until its last
 * process exits. Returns how many. */
static guint adopt_unnamed(PtagsRegistry *r, GHashTable *found)
{
        GHashTableIter it;
        gpointer key, value;
        guint n = 0;

        g_hash_table_iter_init(&it, found);
        while (g_hash_table_iter_next(&it, &key, &value)) {
                guint64 contid = *(guint64 *)key;
                pid_t leader;
                /* UNSET lists the processes whose ID could not be read. */
                if (contid == PTAGS_CONTID_UNSET || g_hash_table_contains(r->containers, &contid) ||
                    (leader = first_carrier(r, contid, value)) == 0)
                        continue;
                PtagsContainer *c = container_new(r, contid);
                c->leader = leader;
                c->owner_uid = PTAGS_REGISTRY_OWNER_UNKNOWN;
                g_hash_table_replace(r->containers, &c->contid, c);
                g_warning("audit container %" G_GUINT64_FORMAT " is carried by process %d but "
                          "missing from the registry: kept in use, registrant unknown",
                          contid, (int)c->leader);
                n++;
        }
        return n;
}

void ptags_registry_load(PtagsRegistry *r)
{
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GError) error = NULL;

        if (g_key_file_load_from_file(kf, r->path, G_KEY_FILE_NONE, &error)) {
                g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
                for (size_t i = 0; groups[i] != NULL; i++) {
                        PtagsContainer *c = container_from_group(r, kf, groups[i]);
                        if (c == NULL) {
                                g_warning("%s: ignoring bad group [%s]", r->path, groups[i]);
                                continue;
                        }
                        g_hash_table_replace(r->containers, &c->contid, c);
                }
        } else if (!g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
                /* Kept aside for the administrator: the next save would
                 * write over it. */
                g_autofree char *aside = g_strconcat(r->path, DAMAGED_SUFFIX, NULL);
                gboolean kept =
                        g_key_file_error_quark() == error->domain && rename(r->path, aside) == 0;
                g_warning("cannot read the container registry %s: %s%s%s", r->path, error->message,
                          kept ? "; kept as " : "", kept ? aside : "");
        }
        /* One scan finds the processes of every container at once, and the
         * IDs in use that the registry lost. */
        g_autoptr(GHashTable) found = scan_backend(r);
        guint adopted = found != NULL ? adopt_unnamed(r, found) : 0;
        g_autoptr(GPtrArray) all = ptags_registry_list(r);
        for (guint i = 0; i < all->len; i++)
                container_settle(all->pdata[i], found);
        g_clear_error(&error);
        if (adopted > 0 && !registry_save(r, &error))
                g_warning("%s", error->message);
        if (g_hash_table_size(r->containers) > 0)
                g_message("container registry: %u live containers",
                          g_hash_table_size(r->containers));
}

PtagsContainer *ptags_registry_add(PtagsRegistry *r, guint64 contid, guint64 parent,
                                   const PtagsTarget *leader, uid_t owner_uid,
                                   const PtagsTarget *owner, const guint8 *uuid, const char *name,
                                   GArray *namespaces, GError **error)
{
        PtagsContainer *c = container_new(r, contid);

        c->parent = parent;
        if (uuid != NULL) {
                c->has_uuid = TRUE;
                memcpy(c->uuid, uuid, sizeof(c->uuid));
        }
        c->name = g_strdup(name);
        c->leader = leader->pid;
        c->owner_uid = owner_uid;
        c->owner_pid = owner->pid;
        c->owner_start = ptags_lineage_start_time(owner->pid);
        c->registered_us = g_get_real_time();
        if (namespaces != NULL) {
                g_array_unref(c->namespaces);
                c->namespaces = g_array_ref(namespaces);
        }
        g_hash_table_replace(r->containers, &c->contid, c);
        if (!registry_save(r, error)) {
                g_hash_table_remove(r->containers, &contid);
                return NULL;
        }
        ptags_registry_watch(c, leader);
        return c;
}

/* ------------------------------------------------------------ facts */

GVariant *ptags_container_to_variant(const PtagsContainer *c)
{
        GVariantBuilder b, ns;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "contid", g_variant_new_uint64(c->contid));
        g_variant_builder_add(&b, "{sv}", "parent", g_variant_new_uint64(c->parent));
        if (c->has_uuid)
                g_variant_builder_add(&b, "{sv}", "uuid",
                                      g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, c->uuid,
                                                                sizeof(c->uuid), 1));
        if (c->name != NULL) {
                /* A name saved before ptagsd refused noncharacters is sent
                 * as tags are: each one as U+001A. */
                g_autofree char *sendable = ptags_sendable_text(c->name, strlen(c->name));
                g_variant_builder_add(&b, "{sv}", "name",
                                      g_variant_new_string(sendable != NULL ? sendable : c->name));
        }
        g_variant_builder_add(&b, "{sv}", "leader", g_variant_new_uint32((guint32)c->leader));
        g_variant_builder_add(&b, "{sv}", "owner", g_variant_new_uint32((guint32)c->owner_uid));
        g_variant_builder_add(&b, "{sv}", "owner-pid", g_variant_new_uint32((guint32)c->owner_pid));
        g_variant_builder_init(&ns, G_VARIANT_TYPE("a(stt)"));
        for (guint i = 0; i < c->namespaces->len; i++) {
                const PtagsNamespace *n = &g_array_index(c->namespaces, PtagsNamespace, i);
                g_variant_builder_add(&ns, "(stt)", n->type, n->device, n->inode);
        }
        g_variant_builder_add(&b, "{sv}", "namespaces", g_variant_builder_end(&ns));
        g_variant_builder_add(&b, "{sv}", "registered",
                              g_variant_new_uint64((guint64)c->registered_us));
        return g_variant_builder_end(&b);
}

GArray *ptags_namespaces_read(const PtagsTarget *t, GError **error)
{
        GArray *out = g_array_new(FALSE, TRUE, sizeof(PtagsNamespace));

        for (size_t i = 0; i < G_N_ELEMENTS(ns_types); i++) {
                g_autofree char *path = g_strdup_printf("/proc/%d/ns/%s", (int)t->pid, ns_types[i]);
                struct stat st;
                if (stat(path, &st) < 0)
                        continue; /* a namespace type this kernel lacks */
                PtagsNamespace n = {0};
                g_strlcpy(n.type, ns_types[i], sizeof(n.type));
                n.device = (guint64)st.st_dev;
                n.inode = (guint64)st.st_ino;
                g_array_append_val(out, n);
        }
        /* Read by pid: they are the target's only while it lives. */
        if (!ptags_target_alive(t)) {
                g_array_unref(out);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                            "process %d exited during registration", (int)t->pid);
                return NULL;
        }
        return out;
}

void ptags_registry_forget(PtagsRegistry *r, guint64 contid)
{
        g_autoptr(GError) error = NULL;
        PtagsContainer *c = g_hash_table_lookup(r->containers, &contid);

        if (c == NULL)
                return;
        /* A write that failed part way may have given the ID to a process
         * all the same (the leader, or a child it forked meanwhile). Then
         * the container stays, so that its ID is never registered twice,
         * and goes as any other once no process carries it. So it does
         * when the backend cannot say. */
        g_autoptr(GHashTable) found = scan_backend(r);
        guint64 unknown = PTAGS_CONTID_UNSET;
        if (found == NULL || g_hash_table_contains(found, &contid) ||
            g_hash_table_contains(found, &unknown)) {
                g_warning("audit container %" G_GUINT64_FORMAT " stays registered: its "
                          "registration failed, but processes may carry its ID",
                          contid);
                container_settle(c, found);
                return;
        }
        g_hash_table_remove(r->containers, &contid);
        if (!registry_save(r, &error))
                g_warning("%s", error->message);
}
