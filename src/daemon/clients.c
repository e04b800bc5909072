// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* clients.c: per-connection and per-uid bookkeeping: uid lookups, unread
 * reply bytes confirmed by Peer.Ping, and the round-robin queue of reads. */
#define G_LOG_DOMAIN "ptagsd-clients"

#include "clients.h"

#include "errors.h"

#include <pthread.h>

/* Replies smaller than this in total are not worth a ping round trip. */
#define PING_THRESHOLD (64u * 1024u)

typedef struct {
        PtagsClientUidFunc done;
        gpointer data;
} UidWait;

typedef struct {
        char *name;
        gboolean uid_known;
        uid_t uid;
        GSList *waiting; /* UidWait, while the lookup runs */
        guint64 unread;  /* reply bytes sent and not yet confirmed read */
        guint64 pinged;  /* of which the ping in flight covers this many */
        gboolean ping_pending;
} Client;

typedef struct {
        uid_t uid;
        guint64 unread;   /* the sum over its connections */
        guint expensive;  /* queued or running */
        GQueue queue;     /* Pending */
        gboolean in_turn; /* on PtagsClients.turns */
} User;

typedef struct {
        PtagsClientRunFunc run;
        GDestroyNotify drop;
        gpointer data;
} Pending;

/* A question to the bus or a client about one connection, answered later. */
typedef struct {
        PtagsClients *c;
        char *name;
        guint64 bytes; /* a ping: the unread bytes it covers */
} Question;

static Question *question_new(PtagsClients *c, const char *name, guint64 bytes)
{
        Question *q = g_new0(Question, 1);

        q->c = c;
        q->name = g_strdup(name);
        q->bytes = bytes;
        return q;
}

static void question_free(Question *q)
{
        g_free(q->name);
        g_free(q);
}

/* Everything runs on the main loop except ptags_clients_cached_uid,
 * ptags_clients_check_unread and ptags_clients_sent, which GDBus's worker
 * thread also calls for the reads it answers; the lock guards the tables
 * and their entries. (A pthread mutex, which ThreadSanitizer sees.) Never
 * held while calling out. */
struct _PtagsClients {
        pthread_mutex_t lock;
        GDBusConnection *bus;
        const PtagsLimits *limits;
        GHashTable *clients; /* unique name -> Client */
        GHashTable *users;   /* uid -> User; few, kept for the daemon's life */
        GQueue turns;        /* User with queued calls, in turn order */
        guint runner;
        guint name_watch;
};

static User *user_get(PtagsClients *c, uid_t uid)
{
        User *u = g_hash_table_lookup(c->users, GUINT_TO_POINTER(uid));

        if (u == NULL) {
                u = g_new0(User, 1);
                u->uid = uid;
                g_queue_init(&u->queue);
                g_hash_table_insert(c->users, GUINT_TO_POINTER(uid), u);
        }
        return u;
}

static void user_free(gpointer p)
{
        User *u = p;

        g_queue_clear_full(&u->queue, g_free);
        g_free(u);
}

static void client_free(gpointer p)
{
        Client *cl = p;

        g_slist_free_full(cl->waiting, g_free);
        g_free(cl->name);
        g_free(cl);
}

/* Forget a connection that left; its unread replies died with it. */
static void client_remove(PtagsClients *c, const char *name)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, name);

        if (cl == NULL) {
                pthread_mutex_unlock(&c->lock);
                return;
        }
        if (cl->uid_known)
                user_get(c, cl->uid)->unread -= cl->unread;
        GSList *waiting = g_steal_pointer(&cl->waiting);
        g_hash_table_remove(c->clients, name);
        pthread_mutex_unlock(&c->lock);
        g_autoptr(GError) error = g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                              "the caller %s left the bus", name);
        for (GSList *l = waiting; l != NULL; l = l->next) {
                UidWait *w = l->data;
                w->done(w->data, (uid_t)-1, error);
        }
        g_slist_free_full(waiting, g_free);
}

static void name_owner_changed(GDBusConnection *bus, const char *sender, const char *path,
                               const char *interface, const char *signal, GVariant *params,
                               gpointer user_data)
{
        const char *name, *old_owner, *new_owner;

        g_variant_get(params, "(&s&s&s)", &name, &old_owner, &new_owner);
        if (name[0] == ':' && new_owner[0] == '\0')
                client_remove(user_data, name);
}

PtagsClients *ptags_clients_new(GDBusConnection *bus, const PtagsLimits *limits)
{
        PtagsClients *c = g_new0(PtagsClients, 1);

        pthread_mutex_init(&c->lock, NULL);

        c->bus = g_object_ref(bus);
        c->limits = limits;
        c->clients = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, client_free);
        c->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, user_free);
        g_queue_init(&c->turns);
        c->name_watch = g_dbus_connection_signal_subscribe(
                bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                "/org/freedesktop/DBus", NULL, G_DBUS_SIGNAL_FLAGS_NONE, name_owner_changed, c,
                NULL);
        return c;
}

void ptags_clients_free(PtagsClients *c)
{
        if (c == NULL)
                return;
        g_dbus_connection_signal_unsubscribe(c->bus, c->name_watch);
        if (c->runner != 0)
                g_source_remove(c->runner);
        g_queue_clear(&c->turns);
        /* Dropped calls give their turn back into tables still alive. */
        GHashTableIter iter;
        gpointer value;
        g_autoptr(GError) stopping =
                g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED, "ptagsd is stopping");
        g_hash_table_iter_init(&iter, c->clients);
        while (g_hash_table_iter_next(&iter, NULL, &value)) {
                GSList *waiting = g_steal_pointer(&((Client *)value)->waiting);
                for (GSList *l = waiting; l != NULL; l = l->next) {
                        UidWait *w = l->data;
                        w->done(w->data, (uid_t)-1, stopping);
                }
                g_slist_free_full(waiting, g_free);
        }
        g_hash_table_iter_init(&iter, c->users);
        while (g_hash_table_iter_next(&iter, NULL, &value)) {
                Pending *p;
                while ((p = g_queue_pop_head(&((User *)value)->queue)) != NULL) {
                        p->drop(p->data);
                        g_free(p);
                }
        }
        g_hash_table_unref(c->clients);
        g_hash_table_unref(c->users);
        g_object_unref(c->bus);
        pthread_mutex_destroy(&c->lock);
        g_free(c);
}

/* ------------------------------------------------------------------ uids */

static void uid_answered(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Question *q = user_data;
        PtagsClients *c = q->c;
        g_autofree char *name = g_strdup(q->name);
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);

        question_free(q);
        if (reply == NULL) {
                g_debug("cannot learn the uid of %s: %s", name, error->message);
                client_remove(c, name);
                return;
        }
        guint32 uid;
        g_variant_get(reply, "(u)", &uid);
        pthread_mutex_lock(&c->lock);
        /* A client that left meanwhile was removed and its waiters told. */
        Client *cl = g_hash_table_lookup(c->clients, name);
        if (cl == NULL) {
                pthread_mutex_unlock(&c->lock);
                return;
        }
        cl->uid = uid;
        cl->uid_known = TRUE;
        GSList *waiting = g_slist_reverse(g_steal_pointer(&cl->waiting));
        pthread_mutex_unlock(&c->lock);
        for (GSList *l = waiting; l != NULL; l = l->next) {
                UidWait *w = l->data;
                w->done(w->data, uid, NULL);
        }
        g_slist_free_full(waiting, g_free);
}

gboolean ptags_clients_cached_uid(PtagsClients *c, const char *sender, uid_t *uid)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        gboolean known = cl != NULL && cl->uid_known;
        if (known)
                *uid = cl->uid;
        pthread_mutex_unlock(&c->lock);
        return known;
}

void ptags_clients_get_uid(PtagsClients *c, const char *sender, PtagsClientUidFunc done,
                           gpointer data)
{
        uid_t uid;

        if (ptags_clients_cached_uid(c, sender, &uid)) {
                done(data, uid, NULL);
                return;
        }
        UidWait *w = g_new0(UidWait, 1);
        w->done = done;
        w->data = data;
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        if (cl != NULL) {
                cl->waiting = g_slist_prepend(cl->waiting, w);
                pthread_mutex_unlock(&c->lock);
                return;
        }
        cl = g_new0(Client, 1);
        cl->name = g_strdup(sender);
        cl->waiting = g_slist_prepend(NULL, w);
        g_hash_table_insert(c->clients, cl->name, cl);
        pthread_mutex_unlock(&c->lock);
        g_dbus_connection_call(
                c->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "GetConnectionUnixUser", g_variant_new("(s)", sender), G_VARIANT_TYPE("(u)"),
                G_DBUS_CALL_FLAGS_NONE, -1, NULL, uid_answered, question_new(c, sender, 0));
}

/* ------------------------------------------------------- unread replies */

gboolean ptags_clients_check_unread(PtagsClients *c, const char *sender, uid_t uid, GError **error)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        guint64 unread = cl != NULL ? cl->unread : 0;
        guint64 user_unread = user_get(c, uid)->unread;
        pthread_mutex_unlock(&c->lock);

        if (unread > c->limits->unread_reply_bytes) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "%" G_GUINT64_FORMAT " bytes of replies to this connection are "
                            "still unread, over the MaxUnreadReplyBytes limit of %u; read them "
                            "first",
                            unread, c->limits->unread_reply_bytes);
                return FALSE;
        }
        /* Root's connections are many system services: only each one's own
         * bound applies, so one stalled service cannot refuse the others. */
        if (uid != 0 && user_unread > c->limits->user_unread_reply_bytes) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "%" G_GUINT64_FORMAT " bytes of replies to connections of uid %u "
                            "are still unread, over the MaxUserUnreadReplyBytes limit of %u",
                            user_unread, (unsigned)uid, c->limits->user_unread_reply_bytes);
                return FALSE;
        }
        return TRUE;
}

static void ping_send(PtagsClients *c, const char *name);

static void ping_answered(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Question *p = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);
        /* Any answer from the client itself, even an error, comes after it
         * read our earlier replies. An error from the bus (the client left,
         * or a policy forbids the ping) proves nothing: the bytes stay. */
        gboolean read = reply != NULL ||
                        (error != NULL &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED) &&
                         !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED));
        gboolean again = FALSE;
        pthread_mutex_lock(&p->c->lock);
        Client *cl = g_hash_table_lookup(p->c->clients, p->name);
        if (cl != NULL) {
                cl->ping_pending = FALSE;
                if (read) {
                        cl->unread -= p->bytes;
                        if (cl->uid_known)
                                user_get(p->c, cl->uid)->unread -= p->bytes;
                        again = cl->unread >= PING_THRESHOLD;
                        cl->ping_pending = again;
                } else {
                        g_debug("no read confirmation from %s: %s", p->name, error->message);
                }
        }
        pthread_mutex_unlock(&p->c->lock);
        if (again)
                ping_send(p->c, p->name);
        question_free(p);
}

/* Ping @name, which has ping_pending set, for all its unread bytes. */
static void ping_send(PtagsClients *c, const char *name)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, name);
        guint64 unread = cl != NULL ? cl->unread : 0;
        pthread_mutex_unlock(&c->lock);
        if (cl == NULL)
                return;
        Question *p = question_new(c, name, unread);

        /* No timeout: a stopped client keeps its replies counted until it
         * reads them or leaves the bus. */
        g_dbus_connection_call(c->bus, cl->name, "/", "org.freedesktop.DBus.Peer", "Ping", NULL,
                               NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, G_MAXINT, NULL, ping_answered,
                               p);
}

/* Pings are sent from the main loop, whichever thread sent the reply. */
static gboolean ping_send_idle(gpointer data)
{
        Question *q = data;

        ping_send(q->c, q->name);
        question_free(q);
        return G_SOURCE_REMOVE;
}

void ptags_clients_sent(PtagsClients *c, const char *sender, gsize bytes)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        gboolean ping = FALSE;

        if (cl != NULL && cl->uid_known) {
                cl->unread += bytes;
                user_get(c, cl->uid)->unread += bytes;
                ping = !cl->ping_pending && cl->unread >= PING_THRESHOLD;
                if (ping)
                        cl->ping_pending = TRUE;
        }
        pthread_mutex_unlock(&c->lock);
        if (ping)
                g_main_context_invoke(NULL, ping_send_idle, question_new(c, sender, 0));
}

/* ------------------------------------------------------ expensive calls */

/* One queued call per dispatch, taking users in turn: a user with many
 * queued calls waits for its next turn behind every other user's one. The
 * idle priority lets incoming calls be admitted (or refused) first. */
static gboolean run_next(gpointer data)
{
        PtagsClients *c = data;
        pthread_mutex_lock(&c->lock);
        User *u = g_queue_pop_head(&c->turns);

        if (u == NULL) {
                c->runner = 0;
                pthread_mutex_unlock(&c->lock);
                return G_SOURCE_REMOVE;
        }
        Pending *p = g_queue_pop_head(&u->queue);
        if (g_queue_is_empty(&u->queue))
                u->in_turn = FALSE;
        else
                g_queue_push_tail(&c->turns, u);
        PtagsClientRunFunc run = p->run;
        gpointer run_data = p->data;
        pthread_mutex_unlock(&c->lock);
        g_free(p);
        run(run_data);
        return G_SOURCE_CONTINUE;
}

gboolean ptags_clients_queue_expensive(PtagsClients *c, uid_t uid, PtagsClientRunFunc run,
                                       GDestroyNotify drop, gpointer data, GError **error)
{
        pthread_mutex_lock(&c->lock);
        User *u = user_get(c, uid);

        if (u->expensive >= c->limits->expensive_calls) {
                pthread_mutex_unlock(&c->lock);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "uid %u already has %u reads queued or running, the "
                            "MaxExpensiveCalls limit; wait for their replies",
                            (unsigned)uid, u->expensive);
                return FALSE;
        }
        Pending *p = g_new0(Pending, 1);
        p->run = run;
        p->drop = drop;
        p->data = data;
        u->expensive++;
        g_queue_push_tail(&u->queue, p);
        if (!u->in_turn) {
                u->in_turn = TRUE;
                g_queue_push_tail(&c->turns, u);
        }
        if (c->runner == 0)
                c->runner = g_idle_add(run_next, c);
        pthread_mutex_unlock(&c->lock);
        return TRUE;
}

void ptags_clients_expensive_done(PtagsClients *c, uid_t uid)
{
        pthread_mutex_lock(&c->lock);
        User *u = user_get(c, uid);

        if (u->expensive > 0)
                u->expensive--;
        pthread_mutex_unlock(&c->lock);
}
