// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* clients.c: per-connection and per-uid bookkeeping: uid lookups, unread
 * reply bytes confirmed by the bus or by Peer.Ping, and the round-robin queue of reads. */
#define G_LOG_DOMAIN "ptagsd-clients"

#include "clients.h"

#include "bus-stats.h"
#include "errors.h"
#include "handoff.h"
#include "subuids.h"

#include <pthread.h>

/* Replies smaller than this in total are not worth a round trip. */
#define PING_THRESHOLD (64u * 1024u)
/* A connection that has not read: ask the bus again after this long,
 * doubling up to the maximum, so it is admitted soon after it reads. */
#define RETRY_FIRST_MSEC 50u
#define RETRY_MAX_MSEC   2000u
/* dbus-daemon lets ptagsd await 128 replies and counts its pings among
 * them (polkit checks take up to 112): pings are bounded, for everyone and
 * per uid, and time out, so clients that never answer cannot keep ptagsd
 * from asking polkit or the bus anything. An unanswered ping proves
 * nothing: the replies stay counted and the client is asked again later. */
#define PINGS_MAX         8u
#define PINGS_PER_USER    2u
#define PING_TIMEOUT_MSEC 5000

typedef struct {
        PtagsClientUidFunc done;
        gpointer data;
} UidWait;

typedef struct {
        char *name;
        gboolean uid_known;
        uid_t uid;           /* whose budgets it draws on (subuids.h) */
        GSList *waiting;     /* UidWait, while the lookup runs */
        guint64 unread;      /* reply bytes sent and not yet confirmed read */
        gboolean confirming; /* a question, a ping or a retry is pending */
        guint retry_msec;    /* the next wait before asking the bus again */
        GSource *retry;      /* that wait */
        /* On PtagsClients.ping_waiters (link.data is the record) while it
         * waits for a ping slot: in_queue is that queue. */
        GList link;
        GQueue *in_queue;
} Client;

typedef struct {
        uid_t uid;
        guint64 unread;   /* the sum over its connections */
        guint expensive;  /* queued or running */
        guint pings;      /* Peer.Pings in flight to its connections */
        GQueue queue;     /* Pending */
        gboolean in_turn; /* on PtagsClients.turns */
} User;

typedef struct {
        PtagsClientRunFunc run;
        GDestroyNotify drop;
        gpointer data;
} Pending;

struct _PtagsClients {
        GDBusConnection *bus;
        GMainContext *context; /* where callbacks and questions run */
        const PtagsLimits *limits;
        PtagsBusStats *stats;
        /* Guards every table and record below; never held while a callback
         * of the caller runs. */
        pthread_mutex_t lock; /* not GMutex: ThreadSanitizer sees pthread locks */
        GHashTable *clients;  /* unique name -> Client */
        GHashTable *users;    /* uid -> User, while it holds anything */
        GQueue turns;         /* User with queued calls, in turn order */
        guint pings;          /* Peer.Pings in flight */
        guint64 unread_users; /* the unread bytes of every uid but 0 together */
        gint64 swept_us;      /* when all clients were last asked about (see sweep) */
        GQueue ping_waiters;  /* Client waiting for a ping slot, oldest first */
        guint runner;
        guint name_watch;
        gint stopped; /* atomic: freed, answers still in flight are ignored */
};

/* A question to the bus or a client about one connection, answered later. */
typedef struct {
        PtagsClients *c;
        char *name;
        guint64 bytes; /* a read confirmation: the unread bytes it covers */
        uid_t uid;     /* a Peer.Ping: whose PINGS_PER_USER it holds, when uid_known */
        gboolean uid_known;
} Question;

static Question *question_new(PtagsClients *c, const char *name, guint64 bytes)
{
        Question *q = g_new0(Question, 1);

        /* Reference counted: an answer may arrive after ptags_clients_free(). */
        q->c = g_atomic_rc_box_acquire(c);
        q->name = g_strdup(name);
        q->bytes = bytes;
        return q;
}

static void clients_clear(gpointer p)
{
        PtagsClients *c = p;

        g_hash_table_unref(c->clients);
        g_hash_table_unref(c->users);
        pthread_mutex_destroy(&c->lock);
        g_main_context_unref(c->context);
        g_object_unref(c->bus);
}

static void question_free(Question *q)
{
        g_atomic_rc_box_release_full(q->c, clients_clear);
        g_free(q->name);
        g_free(q);
}

/* The answer to @q came after ptags_clients_free(): drop it. */
static gboolean question_stale(Question *q)
{
        if (!g_atomic_int_get(&q->c->stopped))
                return FALSE;
        question_free(q);
        return TRUE;
}

/* Called with the lock held. */
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

/* Forget @u once it holds nothing (called with the lock held): a user
 * with subordinate uids reaches the bus as each of them, so a record per
 * uid ever seen would grow without bound. user_get() makes it anew. */
static void user_release(PtagsClients *c, User *u)
{
        if (u->unread == 0 && u->expensive == 0 && u->pings == 0 && !u->in_turn &&
            g_queue_is_empty(&u->queue))
                g_hash_table_remove(c->users, GUINT_TO_POINTER(u->uid));
}

/* @bytes of @uid's replies are read or gone (the lock is held). The record
 * holds the sum of its connections' unread bytes: with none, there is none. */
static void user_uncount(PtagsClients *c, uid_t uid, guint64 bytes)
{
        User *u = g_hash_table_lookup(c->users, GUINT_TO_POINTER(uid));

        if (u == NULL)
                return;
        bytes = MIN(bytes, u->unread);
        u->unread -= bytes;
        if (uid != 0)
                c->unread_users -= MIN(bytes, c->unread_users);
        user_release(c, u);
}

/* @bytes more of @uid's replies are unread (the lock is held). */
static void user_count(PtagsClients *c, uid_t uid, guint64 bytes)
{
        user_get(c, uid)->unread += bytes;
        if (uid != 0)
                c->unread_users += bytes;
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

        if (cl->in_queue != NULL)
                g_queue_unlink(cl->in_queue, &cl->link);
        if (cl->retry != NULL) {
                g_source_destroy(cl->retry);
                g_source_unref(cl->retry);
        }
        g_slist_free_full(cl->waiting, g_free);
        g_free(cl->name);
        g_free(cl);
}

/* Tell @waiting (UidWait, stolen from a record) the outcome of a lookup,
 * without the lock: the callbacks call back into this module. */
static void tell_waiting(GSList *waiting, uid_t uid, const GError *error)
{
        for (GSList *l = waiting; l != NULL; l = l->next) {
                UidWait *w = l->data;
                w->done(w->data, uid, error);
        }
        g_slist_free_full(waiting, g_free);
}

/* Forget a connection that left (@why NULL; its unread replies died with
 * it), or whose uid the bus would not tell (@why): its waiting calls get
 * that error, and its next call asks again. */
static void client_remove_because(PtagsClients *c, const char *name, const GError *why)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, name);
        if (cl == NULL) {
                pthread_mutex_unlock(&c->lock);
                return;
        }
        if (cl->uid_known)
                user_uncount(c, cl->uid, cl->unread);
        GSList *waiting = g_steal_pointer(&cl->waiting);
        g_hash_table_remove(c->clients, name);
        pthread_mutex_unlock(&c->lock);

        g_autoptr(GError) error =
                why == NULL || g_error_matches(why, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER)
                        ? g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                      "the caller %s left the bus", name)
                        : g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                      "the bus did not tell the uid of the caller %s: %s", name,
                                      why->message);
        tell_waiting(waiting, (uid_t)-1, error);
}

static void client_remove(PtagsClients *c, const char *name)
{
        client_remove_because(c, name, NULL);
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
        PtagsClients *c = g_atomic_rc_box_new0(PtagsClients);

        c->bus = g_object_ref(bus);
        c->context = g_main_context_ref_thread_default();
        c->limits = limits;
        c->stats = ptags_bus_stats_new(bus);
        pthread_mutex_init(&c->lock, NULL);
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
        g_atomic_int_set(&c->stopped, TRUE);
        g_dbus_connection_signal_unsubscribe(c->bus, c->name_watch);
        if (c->runner != 0)
                g_source_remove(c->runner);
        /* Dropped calls give their turn back into tables still alive, so
         * collect them under the lock and tell them without it. */
        GSList *waiting = NULL;
        GQueue pending = G_QUEUE_INIT;
        GHashTableIter iter;
        gpointer value;
        pthread_mutex_lock(&c->lock);
        g_queue_clear(&c->turns);
        g_hash_table_iter_init(&iter, c->clients);
        while (g_hash_table_iter_next(&iter, NULL, &value))
                waiting = g_slist_concat(waiting, g_steal_pointer(&((Client *)value)->waiting));
        g_hash_table_iter_init(&iter, c->users);
        while (g_hash_table_iter_next(&iter, NULL, &value)) {
                Pending *p;
                while ((p = g_queue_pop_head(&((User *)value)->queue)) != NULL)
                        g_queue_push_tail(&pending, p);
        }
        pthread_mutex_unlock(&c->lock);

        g_autoptr(GError) stopping =
                g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED, "ptagsd is stopping");
        tell_waiting(waiting, (uid_t)-1, stopping);
        Pending *p;
        while ((p = g_queue_pop_head(&pending)) != NULL) {
                p->drop(p->data);
                g_free(p);
        }
        /* Their waits for the bus go with them. */
        pthread_mutex_lock(&c->lock);
        g_hash_table_remove_all(c->clients);
        pthread_mutex_unlock(&c->lock);
        ptags_bus_stats_free(g_steal_pointer(&c->stats));
        g_atomic_rc_box_release_full(c, clients_clear);
}

/* ------------------------------------------------------------------ uids */

static void uid_answered(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Question *q = user_data;
        PtagsClients *c = q->c;
        const char *name = q->name;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);

        if (question_stale(q))
                return;
        if (reply == NULL) {
                g_debug("cannot learn the uid of %s: %s", name, error->message);
                client_remove_because(c, name, error);
                question_free(q);
                return;
        }
        guint32 bus_uid;
        g_variant_get(reply, "(u)", &bus_uid);
        /* Everything counted here is a budget: a subordinate uid's count
         * with its owner's. */
        uid_t uid = ptags_budget_uid(bus_uid);
        pthread_mutex_lock(&c->lock);
        /* A client that left meanwhile was removed and its waiters told. */
        Client *cl = g_hash_table_lookup(c->clients, name);
        GSList *waiting = NULL;
        if (cl != NULL && !cl->uid_known) {
                cl->uid = uid;
                cl->uid_known = TRUE;
                /* Replies counted before the uid was known are its too. */
                if (cl->unread > 0)
                        user_count(c, uid, cl->unread);
        }
        if (cl != NULL)
                waiting = g_slist_reverse(g_steal_pointer(&cl->waiting));
        pthread_mutex_unlock(&c->lock);
        tell_waiting(waiting, uid, NULL);
        question_free(q);
}

static gboolean lookup_now(gpointer data)
{
        Question *q = data;

        ptags_handoff_taken();
        if (question_stale(q))
                return G_SOURCE_REMOVE;
        g_dbus_connection_call(q->c->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "GetConnectionUnixUser",
                               g_variant_new("(s)", q->name), G_VARIANT_TYPE("(u)"),
                               G_DBUS_CALL_FLAGS_NONE, -1, NULL, uid_answered, q);
        return G_SOURCE_REMOVE;
}

/* A record for @sender, whose uid is asked of the bus from the main
 * context (the lock is held; any thread). */
static Client *client_new(PtagsClients *c, const char *sender)
{
        Client *cl = g_new0(Client, 1);

        cl->name = g_strdup(sender);
        g_hash_table_insert(c->clients, cl->name, cl);
        GSource *idle = g_idle_source_new();
        g_source_set_priority(idle, G_PRIORITY_DEFAULT);
        g_source_set_callback(idle, lookup_now, question_new(c, sender, 0), NULL);
        ptags_handoff_attach(idle, c->context);
        g_source_unref(idle);
        return cl;
}

void ptags_clients_get_uid(PtagsClients *c, const char *sender, PtagsClientUidFunc done,
                           gpointer data)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        if (cl != NULL && cl->uid_known) {
                uid_t uid = cl->uid;
                pthread_mutex_unlock(&c->lock);
                done(data, uid, NULL);
                return;
        }
        UidWait *w = g_new0(UidWait, 1);
        w->done = done;
        w->data = data;
        if (cl != NULL) {
                cl->waiting = g_slist_prepend(cl->waiting, w);
                pthread_mutex_unlock(&c->lock);
                return;
        }
        cl = client_new(c, sender);
        cl->waiting = g_slist_prepend(NULL, w);
        pthread_mutex_unlock(&c->lock);
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

/* ------------------------------------------------------- unread replies
 *
 * ptagsd counts the bytes of its replies to each connection and un-counts
 * them once they are known to be read. The bus knows best: dbus-daemon
 * reports the bytes it still holds queued for a connection (Debug.Stats,
 * which Debian's system bus lets root use), so ptagsd's replies beyond that
 * figure have left the bus. A bus that does not tell (dbus-broker, another
 * policy) leaves the Peer.Ping: its answer comes after the client read every
 * earlier reply, but a client that never dispatches never answers. */

static void confirm_send(PtagsClients *c, Client *cl);

/* Un-count @bytes of @cl's replies (the lock is held). */
static void uncount(PtagsClients *c, Client *cl, guint64 bytes)
{
        bytes = MIN(bytes, cl->unread);
        cl->unread -= bytes;
        if (cl->uid_known)
                user_uncount(c, cl->uid, bytes);
}

/* The wait is destroyed with its Client, so the record outlives it. */
typedef struct {
        PtagsClients *c;
        Client *cl;
} Retry;

static gboolean retry_fire(gpointer data)
{
        Retry *r = data;

        pthread_mutex_lock(&r->c->lock);
        /* A refused read in the bus thread may have destroyed this wait
         * while it waited for the lock, and started another in its place:
         * that one is the client's now. */
        if (g_source_is_destroyed(g_main_current_source())) {
                pthread_mutex_unlock(&r->c->lock);
                return G_SOURCE_REMOVE;
        }
        g_clear_pointer(&r->cl->retry, g_source_unref);
        r->cl->confirming = FALSE; /* the wait held the slot */
        confirm_send(r->c, r->cl);
        pthread_mutex_unlock(&r->c->lock);
        return G_SOURCE_REMOVE;
}

/* Ask about @cl again after its current wait, doubling it for the next
 * time (the lock is held). */
static void retry_later(PtagsClients *c, Client *cl)
{
        Retry *r = g_new0(Retry, 1);
        r->c = c;
        r->cl = cl;
        cl->confirming = TRUE;
        /* One wait per client: one left behind would outlive the record. */
        if (cl->retry != NULL) {
                g_source_destroy(cl->retry);
                g_source_unref(cl->retry);
        }
        cl->retry = g_timeout_source_new(cl->retry_msec);
        g_source_set_callback(cl->retry, retry_fire, r, g_free);
        g_source_attach(cl->retry, c->context);
        cl->retry_msec = MIN(cl->retry_msec * 2, RETRY_MAX_MSEC);
}

static guint user_pings(PtagsClients *c, const Client *cl)
{
        User *u = cl->uid_known ? g_hash_table_lookup(c->users, GUINT_TO_POINTER(cl->uid)) : NULL;
        return u != NULL ? u->pings : 0;
}

/* Hand free ping slots to waiting clients (the lock is held): first to
 * users with the fewest pings in flight, and among them to the client
 * that waited longest. A client asking again keeps its place rather than
 * taking a slot the moment it frees: clients that never answer (each ping
 * holds a slot until it times out) could otherwise take every freed slot
 * back, and keep everyone else's replies counted as unread. */
static void ping_hand_out(PtagsClients *c)
{
        while (c->pings < PINGS_MAX) {
                Client *best = NULL;
                guint fewest = PINGS_PER_USER;
                for (GList *l = c->ping_waiters.head; l != NULL && fewest > 0; l = l->next) {
                        guint n = user_pings(c, l->data);
                        if (n < fewest) {
                                fewest = n;
                                best = l->data;
                        }
                }
                if (best == NULL)
                        return;
                g_queue_unlink(&c->ping_waiters, &best->link);
                best->in_queue = NULL;
                best->confirming = FALSE;
                confirm_send(c, best);
        }
}

/* The ping @q held a slot: give it back (the lock is held). */
static void ping_release(PtagsClients *c, const Question *q)
{
        c->pings--;
        User *u = q->uid_known ? g_hash_table_lookup(c->users, GUINT_TO_POINTER(q->uid)) : NULL;
        if (u != NULL) {
                u->pings--;
                user_release(c, u);
        }
        ping_hand_out(c);
}

static void ping_answered(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Question *p = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);

        if (question_stale(p))
                return;
        /* Any answer from the client itself, even an error, comes after it
         * read our earlier replies. An error from the bus (the client left,
         * or a policy forbids the ping) or no answer in time proves
         * nothing: the bytes stay. */
        gboolean read = reply != NULL ||
                        (error != NULL &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) &&
                         !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT) &&
                         !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) &&
                         !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED));
        pthread_mutex_lock(&p->c->lock);
        ping_release(p->c, p);
        Client *cl = g_hash_table_lookup(p->c->clients, p->name);
        if (cl != NULL) {
                cl->confirming = FALSE;
                if (read) {
                        uncount(p->c, cl, p->bytes);
                        if (cl->unread >= PING_THRESHOLD)
                                confirm_send(p->c, cl);
                } else {
                        g_debug("no read confirmation from %s: %s", p->name, error->message);
                }
        }
        pthread_mutex_unlock(&p->c->lock);
        question_free(p);
}

static void queued_answered(gpointer data, gboolean known, guint64 queued)
{
        Question *q = data;
        PtagsClients *c = q->c;

        if (question_stale(q))
                return;
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, q->name);
        if (cl == NULL) {
                pthread_mutex_unlock(&c->lock);
                question_free(q);
                return;
        }
        cl->confirming = FALSE;
        if (!known) {
                /* The bus does not tell (for good: the next confirmation
                 * pings), or the connection is leaving. */
                if (!ptags_bus_stats_available(c->stats))
                        confirm_send(c, cl);
                pthread_mutex_unlock(&c->lock);
                question_free(q);
                return;
        }
        /* Everything ptagsd sent before asking either waits in the bus's
         * queue for the client (at most @queued bytes of it, with others'
         * messages) or has left the bus. */
        guint64 gone = q->bytes - MIN(q->bytes, queued);
        uncount(c, cl, gone);
        if (gone > 0)
                cl->retry_msec = RETRY_FIRST_MSEC;
        if (cl->unread >= PING_THRESHOLD) {
                if (gone > 0) {
                        confirm_send(c, cl);
                } else {
                        /* Not reading: look again later (sooner when a read
                         * is refused), not in a loop. */
                        retry_later(c, cl);
                }
        }
        pthread_mutex_unlock(&c->lock);
        question_free(q);
}

static gboolean ping_now(gpointer data)
{
        Question *q = data;

        ptags_handoff_taken();
        if (question_stale(q))
                return G_SOURCE_REMOVE;
        /* A client that does not answer in time keeps its replies counted
         * until it reads them or leaves the bus. */
        g_dbus_connection_call(q->c->bus, q->name, "/", "org.freedesktop.DBus.Peer", "Ping", NULL,
                               NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, PING_TIMEOUT_MSEC, NULL,
                               ping_answered, q);
        return G_SOURCE_REMOVE;
}

/* Ask whether @cl's counted replies were read (the lock is held; the
 * answers run on the main context, after the lock is released). */
static void confirm_send(PtagsClients *c, Client *cl)
{
        if (cl->confirming)
                return;
        cl->confirming = TRUE;
        if (cl->retry_msec == 0)
                cl->retry_msec = RETRY_FIRST_MSEC;
        if (ptags_bus_stats_available(c->stats)) {
                ptags_bus_stats_queued_for(c->stats, cl->name, queued_answered,
                                           question_new(c, cl->name, cl->unread));
                return;
        }
        User *u = cl->uid_known ? g_hash_table_lookup(c->users, GUINT_TO_POINTER(cl->uid)) : NULL;
        if (c->pings >= PINGS_MAX || (u != NULL && u->pings >= PINGS_PER_USER)) {
                /* Its turn comes when a slot frees (still confirming). */
                cl->link.data = cl;
                g_queue_push_tail_link(&c->ping_waiters, &cl->link);
                cl->in_queue = &c->ping_waiters;
                return;
        }
        if (cl->uid_known && u == NULL)
                u = user_get(c, cl->uid);
        Question *q = question_new(c, cl->name, cl->unread);
        q->uid = cl->uid;
        q->uid_known = u != NULL;
        c->pings++;
        if (u != NULL)
                u->pings++;
        /* From the main context, so the answer runs there too. */
        GSource *idle = g_idle_source_new();
        g_source_set_priority(idle, G_PRIORITY_DEFAULT);
        g_source_set_callback(idle, ping_now, q, NULL);
        ptags_handoff_attach(idle, c->context);
        g_source_unref(idle);
}

/* What every uid but 0 may leave unread together: the bus holds it all,
 * charged to ptagsd, and stops reading ptagsd at its max_incoming_bytes
 * (127 MiB on Debian), so many uids must not add up to that. */
static guint64 all_users_bound(const PtagsClients *c)
{
        return (guint64)PTAGS_UNREAD_ALL_USERS * c->limits->user_unread_reply_bytes;
}

/* Whether the bound of all uids together holds @u back (the lock is held):
 * only while it is passed, and only a uid holding a share of it, a quarter
 * of its own budget, so that uids holding little (a user's reader that
 * reads) are served whatever others leave unread. */
static gboolean all_users_hold_back(PtagsClients *c, uid_t uid, const User *u, guint64 slack)
{
        return uid != 0 && u != NULL && c->unread_users > all_users_bound(c) + slack &&
               u->unread >= c->limits->user_unread_reply_bytes / PTAGS_UNREAD_ALL_USERS;
}

/* While the bound of all uids together is passed, ask about every client
 * with bytes counted, at most once a second (the lock is held): counts
 * below PING_THRESHOLD are never asked about otherwise, and many clients
 * that read each hold some. */
static void sweep(PtagsClients *c)
{
        gint64 now = g_get_monotonic_time();
        if (c->unread_users <= all_users_bound(c) || now - c->swept_us < G_USEC_PER_SEC)
                return;
        c->swept_us = now;
        GHashTableIter it;
        gpointer value;
        g_hash_table_iter_init(&it, c->clients);
        while (g_hash_table_iter_next(&it, NULL, &value)) {
                Client *cl = value;
                if (cl->uid_known && cl->uid != 0 && cl->unread > 0)
                        confirm_send(c, cl);
        }
}

/* Ask about @cl now rather than at its next retry (the lock is held). */
static void confirm_now(PtagsClients *c, Client *cl)
{
        cl->retry_msec = RETRY_FIRST_MSEC;
        if (cl->retry != NULL) {
                g_source_destroy(cl->retry);
                g_clear_pointer(&cl->retry, g_source_unref);
                cl->confirming = FALSE;
        }
        confirm_send(c, cl);
}

gboolean ptags_clients_check_unread(PtagsClients *c, const char *sender, uid_t uid, GError **error)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        /* Checked where its bytes are counted (a caller's key may be from
         * before /etc/subuid changed). */
        if (cl != NULL && cl->uid_known)
                uid = cl->uid;
        User *u = g_hash_table_lookup(c->users, GUINT_TO_POINTER(uid)); /* none: nothing unread */
        gboolean ok = TRUE;

        if (cl != NULL && cl->unread > c->limits->unread_reply_bytes) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "%" G_GUINT64_FORMAT " bytes of replies to this connection are "
                            "still unread, over the MaxUnreadReplyBytes limit of %u; read them "
                            "first",
                            cl->unread, c->limits->unread_reply_bytes);
                ok = FALSE;
        } else if (uid != 0 && u != NULL && u->unread > c->limits->user_unread_reply_bytes) {
                /* Root's connections are many system services: only each
                 * one's own bound applies, so one stalled service cannot
                 * refuse the others. */
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "%" G_GUINT64_FORMAT " bytes of replies to connections of uid %u "
                            "(its subordinate uids included) are still unread, over the "
                            "MaxUserUnreadReplyBytes limit of %u",
                            u->unread, (unsigned)uid, c->limits->user_unread_reply_bytes);
                ok = FALSE;
        } else if (all_users_hold_back(c, uid, u, 0)) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "%" G_GUINT64_FORMAT " bytes of replies to connections of uids other "
                            "than 0 are still unread, over %u times the MaxUserUnreadReplyBytes "
                            "limit of %u",
                            c->unread_users, PTAGS_UNREAD_ALL_USERS,
                            c->limits->user_unread_reply_bytes);
                ok = FALSE;
        }
        /* A refused client may have read meanwhile: have the bus tell before
         * its next call rather than at the next retry. */
        if (!ok && cl != NULL && cl->unread > 0)
                confirm_now(c, cl);
        sweep(c);
        pthread_mutex_unlock(&c->lock);
        return ok;
}

/* The most every uid but 0 together may leave unread once replies are
 * sent: the bound above is checked as reads start, and several reads of
 * one uid may be under way at once, each with a reply of up to
 * MaxMessageBytes. By default 80 MiB, and never past 96 MiB, under the
 * bus's 127 MiB (whatever MaxUserUnreadReplyBytes is set to). */
static guint64 all_users_hard_bound(const PtagsClients *c)
{
        return MIN(all_users_bound(c) + all_users_bound(c) / 4, (guint64)96 * 1024 * 1024);
}

/* Past the hard bound, a uid holding nothing unread still gets replies of
 * up to this much, so that stopped readers of a few users cannot refuse
 * every other user's reads; each such uid adds this much at most, and the
 * bus's limit is 31 MiB or more above the hard bound. */
#define UNREAD_RESERVE (1024u * 1024u)

gboolean ptags_clients_sent(PtagsClients *c, const char *sender, gsize bytes)
{
        if (bytes == 0 || g_atomic_int_get(&c->stopped))
                return TRUE;
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        /* Any reply counts, to a client ptagsd has not asked about yet too
         * (one that only introspects, say): its uid is asked now. */
        if (cl == NULL)
                cl = client_new(c, sender);
        User *u = cl->uid_known ? g_hash_table_lookup(c->users, GUINT_TO_POINTER(cl->uid)) : NULL;
        guint64 held = u != NULL ? u->unread : 0;
        if (bytes > PTAGS_UNREAD_SMALL_REPLY && cl->uid_known && cl->uid != 0 &&
            c->unread_users + bytes > all_users_hard_bound(c) &&
            (held > 0 || bytes > UNREAD_RESERVE)) {
                if (cl->unread > 0)
                        confirm_now(c, cl);
                sweep(c);
                pthread_mutex_unlock(&c->lock);
                return FALSE;
        }
        cl->unread += bytes;
        if (cl->uid_known)
                user_count(c, cl->uid, bytes);
        if (cl->unread >= PING_THRESHOLD)
                confirm_send(c, cl);
        pthread_mutex_unlock(&c->lock);
        return TRUE;
}

gboolean ptags_clients_over_hard_bound(PtagsClients *c, const char *sender)
{
        pthread_mutex_lock(&c->lock);
        Client *cl = g_hash_table_lookup(c->clients, sender);
        User *u = cl != NULL && cl->uid_known && cl->uid != 0
                          ? g_hash_table_lookup(c->users, GUINT_TO_POINTER(cl->uid))
                          : NULL;
        gboolean over =
                cl != NULL &&
                (cl->unread > (guint64)c->limits->unread_reply_bytes + PTAGS_UNREAD_HARD_SLACK ||
                 (u != NULL && u->unread > (guint64)c->limits->user_unread_reply_bytes +
                                                   PTAGS_UNREAD_HARD_SLACK) ||
                 (cl->uid_known && all_users_hold_back(c, cl->uid, u, PTAGS_UNREAD_HARD_SLACK)));
        /* Have the bus asked again at once, as for a refused read. */
        if (over)
                confirm_now(c, cl);
        sweep(c);
        pthread_mutex_unlock(&c->lock);
        return over;
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
        pthread_mutex_unlock(&c->lock);
        PtagsClientRunFunc run = p->run;
        gpointer run_data = p->data;
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
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "uid %u (its subordinate uids included) already has %u reads queued "
                            "or running, the "
                            "MaxExpensiveCalls limit; wait for their replies",
                            (unsigned)uid, u->expensive);
                pthread_mutex_unlock(&c->lock);
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
        user_release(c, u);
        pthread_mutex_unlock(&c->lock);
}
