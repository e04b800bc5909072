// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* peer-cache.c: the caller behind each unique bus name, looked up once (one
 * GetConnectionCredentials and the identity checks) and forgotten when the
 * connection leaves the bus. */
#define G_LOG_DOMAIN "ptagsd-peer"

#include "peer-cache.h"

#include <pthread.h>

/* Each entry whose process is known pins it with a pidfd: bounded well
 * below the file limit systemd gives services (1024), oldest dropped first. */
#define PEER_CACHE_MAX 512
/* A known entry pushed out of those 512 leaves what its process was proven
 * running (its PtagsPrivilege, no pidfd) under the connection's name, with
 * a bound of its own, above the connections a bus allows at once as below:
 * when the connection is next asked about and proven afresh, a process
 * that has run another program or gained a privilege since is unknown, as
 * the entry's unchanged check would have found had it stayed. Checking it
 * only when pushed out would not do: it may run another program after. */
#define PEER_CACHE_PUSHED_OUT_MAX 4096
/* An entry whose process is unknown pins nothing. Once a connection's
 * process ran another program or gained a privilege, the connection must
 * stay unknown while it lives: dropped with the entries above, it would be
 * looked up and proven afresh, as the new program. So these have a bound of
 * their own, above the connections a bus allows at once (dbus-daemon's
 * system bus: 2048). */
#define PEER_CACHE_UNKNOWN_MAX 4096

/* The table is changed on the main loop only; the lock is for
 * ptags_peer_cache_get(), which GDBus's worker thread calls. (A pthread
 * mutex rather than GMutex, so ThreadSanitizer sees it.) */
struct _PtagsPeerCache {
        pthread_mutex_t lock;
        GDBusConnection *connection;
        GHashTable *peers;    /* unique name -> PtagsPeer (a reference) */
        GQueue order;         /* names of known peers, oldest first (owned by the table) */
        GQueue unknown_order; /* names of unknown ones, the same */
        /* Known entries pushed out: unique name -> PtagsPrivilege proven */
        GHashTable *pushed_out;
        GQueue pushed_out_order; /* its names, oldest first (owned by it) */
        guint subscription;
};

/* Drop what was kept of a known entry pushed out under @name. */
static void forget_pushed_out(PtagsPeerCache *cache, const char *name)
{
        if (!g_hash_table_contains(cache->pushed_out, name))
                return;
        GList *link = g_queue_find_custom(&cache->pushed_out_order, name, (GCompareFunc)g_strcmp0);
        g_queue_delete_link(&cache->pushed_out_order, link);
        g_hash_table_remove(cache->pushed_out, name);
}

static void forget(PtagsPeerCache *cache, const char *name)
{
        PtagsPeer *peer = g_hash_table_lookup(cache->peers, name);
        GQueue *queue = peer != NULL && peer->process_known ? &cache->order : &cache->unknown_order;
        GList *link =
                peer != NULL ? g_queue_find_custom(queue, name, (GCompareFunc)g_strcmp0) : NULL;

        if (link != NULL)
                g_queue_delete_link(queue, link);
        g_hash_table_remove(cache->peers, name);
        forget_pushed_out(cache, name);
}

/* Make room by the oldest known entry, keeping what its process was proven
 * running. */
static void push_out_oldest(PtagsPeerCache *cache)
{
        g_autofree char *name = g_strdup(g_queue_peek_head(&cache->order));
        PtagsPeer *peer = g_hash_table_lookup(cache->peers, name);
        PtagsPrivilege *proven = g_new(PtagsPrivilege, 1);

        *proven = peer->proven;
        forget(cache, name);
        while (g_queue_get_length(&cache->pushed_out_order) >= PEER_CACHE_PUSHED_OUT_MAX)
                forget_pushed_out(cache, g_queue_peek_head(&cache->pushed_out_order));
        char *key = g_strdup(name);
        g_hash_table_insert(cache->pushed_out, key, proven);
        g_queue_push_tail(&cache->pushed_out_order, key);
}

static void name_owner_changed(GDBusConnection *connection, const char *sender, const char *path,
                               const char *interface, const char *signal, GVariant *params,
                               gpointer user_data)
{
        PtagsPeerCache *cache = user_data;
        const char *name, *old_owner, *new_owner;

        g_variant_get(params, "(&s&s&s)", &name, &old_owner, &new_owner);
        if (name[0] == ':' && new_owner[0] == '\0') {
                pthread_mutex_lock(&cache->lock);
                forget(cache, name);
                pthread_mutex_unlock(&cache->lock);
        }
}

PtagsPeerCache *ptags_peer_cache_new(GDBusConnection *connection)
{
        PtagsPeerCache *cache = g_new0(PtagsPeerCache, 1);

        pthread_mutex_init(&cache->lock, NULL);

        cache->connection = g_object_ref(connection);
        cache->peers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                             (GDestroyNotify)ptags_peer_free);
        g_queue_init(&cache->order);
        g_queue_init(&cache->unknown_order);
        cache->pushed_out = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_queue_init(&cache->pushed_out_order);
        cache->subscription = g_dbus_connection_signal_subscribe(
                connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                "/org/freedesktop/DBus", NULL, G_DBUS_SIGNAL_FLAGS_NONE, name_owner_changed, cache,
                NULL);
        return cache;
}

void ptags_peer_cache_free(PtagsPeerCache *cache)
{
        if (cache == NULL)
                return;
        g_dbus_connection_signal_unsubscribe(cache->connection, cache->subscription);
        g_queue_clear(&cache->order);
        g_queue_clear(&cache->unknown_order);
        g_queue_clear(&cache->pushed_out_order);
        g_hash_table_unref(cache->pushed_out);
        g_hash_table_unref(cache->peers);
        g_object_unref(cache->connection);
        pthread_mutex_destroy(&cache->lock);
        g_free(cache);
}

guint ptags_peer_cache_size(PtagsPeerCache *cache)
{
        pthread_mutex_lock(&cache->lock);
        guint n = g_hash_table_size(cache->peers);
        pthread_mutex_unlock(&cache->lock);
        return n;
}

PtagsPeer *ptags_peer_cache_get(PtagsPeerCache *cache, const char *bus_name)
{
        pthread_mutex_lock(&cache->lock);
        PtagsPeer *peer = g_hash_table_lookup(cache->peers, bus_name);
        if (peer != NULL)
                ptags_peer_ref(peer);
        pthread_mutex_unlock(&cache->lock);
        return peer;
}

static void remember(PtagsPeerCache *cache, const char *name, PtagsPeer *peer)
{
        pthread_mutex_lock(&cache->lock);
        if (g_hash_table_contains(cache->peers, name))
                forget(cache, name);
        GQueue *queue = peer->process_known ? &cache->order : &cache->unknown_order;
        guint max = peer->process_known ? PEER_CACHE_MAX : PEER_CACHE_UNKNOWN_MAX;
        while (g_queue_get_length(queue) >= max) {
                if (peer->process_known)
                        push_out_oldest(cache);
                else
                        forget(cache, g_queue_peek_head(queue));
        }
        /* What was kept of an entry pushed out is weighed by now
         * (looked_up) and gives way to the new entry. */
        forget_pushed_out(cache, name);
        char *key = g_strdup(name);
        g_hash_table_insert(cache->peers, key, ptags_peer_ref(peer));
        g_queue_push_tail(queue, key);
        pthread_mutex_unlock(&cache->lock);
}

/* The cached @peer of @name as it stands now. The pidfd pins the proven
 * process; once it has exited, run another program or gained a privilege
 * (a setuid exec), the connection's process can never be proven again.
 * (transfer full) */
static PtagsPeer *cached_now(PtagsPeerCache *cache, const char *name, PtagsPeer *peer)
{
        if (peer->process_known && !ptags_peer_process_unchanged(peer)) {
                PtagsPeer *gone = ptags_peer_new_unknown(peer);
                remember(cache, name, gone);
                return gone;
        }
        return ptags_peer_ref(peer);
}

typedef struct {
        PtagsPeerCache *cache;
        char *name; /* the unique name, once known */
} Miss;

static void looked_up(GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        Miss *miss = g_task_get_task_data(task);
        GError *error = NULL;
        PtagsPeer *peer = ptags_peer_lookup_finish(res, &error);

        if (peer == NULL) {
                g_task_return_error(task, error);
        } else {
                /* Another lookup of the connection, by another of its
                 * names, may have finished first: what it found stands,
                 * as every call after it saw that. */
                PtagsPeer *cached = g_hash_table_lookup(miss->cache->peers, miss->name);
                if (cached != NULL) {
                        ptags_peer_free(peer);
                        peer = cached_now(miss->cache, miss->name, cached);
                } else {
                        /* Proven afresh after being pushed out: as
                         * unknown as the entry would have found it. */
                        const PtagsPrivilege *before =
                                g_hash_table_lookup(miss->cache->pushed_out, miss->name);
                        if (before != NULL && peer->process_known &&
                            !ptags_peer_runs_as_proven(peer, before)) {
                                PtagsPeer *changed = ptags_peer_new_unknown(peer);
                                ptags_peer_free(peer);
                                peer = changed;
                        }
                        /* A connection that left meanwhile stays cached
                         * until evicted: harmless, as its name is never
                         * reused. Only unique names are forgotten when
                         * their owner leaves (the bus's own name is not
                         * one), so only they are kept. */
                        if (miss->name[0] == ':')
                                remember(miss->cache, miss->name, peer);
                }
                g_task_return_pointer(task, peer, (GDestroyNotify)ptags_peer_free);
        }
        g_object_unref(task);
}

static void miss_free(Miss *miss)
{
        g_free(miss->name);
        g_free(miss);
}

/* The connection @task asks about is @unique_name (taken). */
static void lookup_unique(GTask *task, char *unique_name)
{
        Miss *miss = g_task_get_task_data(task);
        /* Only the main loop changes the table: no lock needed to read it here. */
        PtagsPeer *peer = g_hash_table_lookup(miss->cache->peers, unique_name);

        miss->name = unique_name;
        if (peer != NULL) {
                g_task_return_pointer(task, cached_now(miss->cache, unique_name, peer),
                                      (GDestroyNotify)ptags_peer_free);
                g_object_unref(task);
                return;
        }
        ptags_peer_lookup_async(miss->cache->connection, unique_name, g_task_get_cancellable(task),
                                looked_up, task);
}

static void owner_found(GObject *source, GAsyncResult *res, gpointer user_data)
{
        GTask *task = user_data;
        GError *error = NULL;
        char *owner = ptags_peer_owner_finish(res, &error);

        if (owner == NULL) {
                g_task_return_error(task, error);
                g_object_unref(task);
                return;
        }
        lookup_unique(task, owner);
}

void ptags_peer_cache_lookup_async(PtagsPeerCache *cache, const char *bus_name,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data)
{
        GTask *task = g_task_new(NULL, cancellable, callback, user_data);
        Miss *miss = g_new0(Miss, 1);

        miss->cache = cache;
        g_task_set_task_data(task, miss, (GDestroyNotify)miss_free);
        if (bus_name[0] == ':') {
                lookup_unique(task, g_strdup(bus_name));
                return;
        }
        /* A well-known name stands for the connection owning it now, and
         * is asked about as that connection: what was learned of it before
         * (that its process ran another program since it was proven, say)
         * holds whichever name a caller uses. */
        ptags_peer_owner_async(cache->connection, bus_name, cancellable, owner_found, task);
}

PtagsPeer *ptags_peer_cache_lookup_finish(GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer(G_TASK(result), error);
}
