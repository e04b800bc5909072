// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-thread.c: the calls answered in GDBus's worker thread, as GDBus
 * answers Peer.Ping, without the two thread hops through the main loop:
 *  - the cheap reads (GetTags, HasTag, GetPeerTags, PeerHasTag of a small
 *    tag list whose caller is already known), which share nothing with the
 *    main loop but thread-safe lookups;
 *  - root's changes, which need no polkit and so never wait: the whole
 *    change (manager-change.c) runs here while holding the main loop's
 *    lock, which the main thread lets go of only while it polls (and the
 *    bus thread waits for only briefly).
 * Anything else, and anything that would wait, goes on to the handlers on
 * the main loop, so every error is made in one place. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "bus-thread.h"

#include "args.h"
#include "budgets.h"
#include "call.h"
#include "errors.h"
#include "names.h"
#include "page-writer.h"
#include "service.h"

#include <pthread.h>
#include <string.h>

/* A tag list larger than this (in the kernel's read format) is read on the
 * main loop in its uid's turn: the worker thread carries every message of
 * ptagsd, so it only does work about as cheap as routing one. */
#define FAST_READ_MAX_BYTES (16u * 1024u)

/* GetTags and GetPeerTags replies kept by the id of the list they show, when
 * the backend names lists so (bpf: each distinct set once, however many
 * processes share it): building a reply of ten tags cost more than all the
 * rest of the read. Direct-mapped, and only for short lists: at most 32
 * replies of 32 tags and 1 KiB of names and values (about 11 KiB each). */
#define REPLY_CACHE_SLOTS     32u
#define REPLY_CACHE_MAX_TAGS  32u
#define REPLY_CACHE_MAX_BYTES 1024u

typedef struct {
        guint64 id;
        GVariant *body; /* the whole reply body, "(a(sbs))"; NULL: empty slot */
} CachedReply;

/* The pidfds of the processes GetTags and HasTag named, kept by pid:
 * opening a pidfd and closing it cost more than the lookup itself. A kept
 * pidfd is used only while its process runs (every read checks, after its
 * lookup), and a running process holds its pid, so it is the process the
 * pid names. Once it has exited, the pid is pinned afresh. Direct-mapped:
 * at most PIDFD_SLOTS descriptors. */
#define PIDFD_SLOTS 64u

typedef enum {
        READ_PID,        /* (u): GetTags */
        READ_PID_MATCH,  /* (us): HasTag */
        READ_PEER,       /* (s): GetPeerTags */
        READ_PEER_MATCH, /* (ss): PeerHasTag */
} ReadKind;

static const struct {
        const char *member;
        const char *signature;
        ReadKind kind;
} fast_methods[] = {
        {"GetTags", "u", READ_PID},
        {"HasTag", "us", READ_PID_MATCH},
        {"GetPeerTags", "s", READ_PEER},
        {"PeerHasTag", "ss", READ_PEER_MATCH},
};

/* The change methods; ApplyFd (its pidfd) always goes to the main loop. */
static const struct {
        const char *member;
        const char *signature;
} change_methods[] = {
        {"AddTag", "usb"},  {"RemoveTag", "us"}, {"SetValue", "uss"},
        {"SetKeep", "usb"}, {"Apply", "uas"},    {"ApplyFd", "has"},
};

struct _PtagsBusThread {
        PtagsService *svc;
        gboolean reads; /* the backend reads thread-safely */
        guint filter;
        gboolean released; /* GDBus will not call the filter again */
        gint ready;        /* set last: what the filter reads is set up */
        /* Only the filter uses the replies and pidfds; the lock is for the
         * sanitizer, which cannot see that GDBus is done with the filter
         * before ptags_bus_thread_free frees them. */
        pthread_mutex_t cache_lock;
        CachedReply replies[REPLY_CACHE_SLOTS];
        PtagsTarget pidfds[PIDFD_SLOTS]; /* pidfd -1: an empty slot */
};

/* ------------------------------------------- calls passed to the main loop
 *
 * Every method call the filter lets through is counted under its sender
 * until its message is freed, which is after its reply at the earliest (a
 * call in flight holds its message). While a connection has any counted,
 * none of its changes runs here, or it could overtake an earlier call of
 * the same connection; other connections' calls never hold it back, as a
 * bus does not order calls of different connections either. Static, as
 * messages may outlive the bus thread's own state.
 *
 * The counts are also what bounds the messages ptagsd holds: GDBus reads
 * whatever the bus delivers, and the main loop takes calls in turn, so
 * without a bound at arrival a client (calls without a reply, which the
 * bus does not limit) could queue gigabytes while the main loop is busy.
 * A call is refused here when its connection has MaxConnectionCalls
 * counted already, or MaxMessageBytes of them; and while the calls counted
 * for everyone hold PASSED_TOTAL_MAX bytes, a call is let through only if
 * it is small and its connection has none waiting (a client that awaits
 * each reply keeps going), or if it is root's. */

#define PASSED_TOTAL_MAX (64u * 1024u * 1024u)
#define PASSED_SMALL     (64u * 1024u)

typedef struct {
        guint calls;
        gsize bytes;
} Passed;

typedef struct {
        char *sender;
        gsize bytes;
} PassedCall;

static pthread_mutex_t passed_lock = PTHREAD_MUTEX_INITIALIZER;
static GHashTable *passed; /* sender (owned) -> Passed (owned) */
static gsize passed_total; /* bytes of every counted call */
static GQuark passed_quark;

static void passed_done(gpointer data)
{
        PassedCall *call = data;

        pthread_mutex_lock(&passed_lock);
        Passed *n = g_hash_table_lookup(passed, call->sender);
        passed_total -= call->bytes;
        if (n != NULL) {
                n->bytes -= call->bytes;
                if (--n->calls == 0)
                        g_hash_table_remove(passed, call->sender);
        }
        pthread_mutex_unlock(&passed_lock);
        g_free(call->sender);
        g_free(call);
}

/* Whether ptagsd knows @sender for a connection of root's: asked only of
 * calls past the total above, not of every call. (The peer cache's lock
 * is never held while this file's is taken.) */
static gboolean known_root(PtagsBusThread *bt, const char *sender)
{
        g_autoptr(PtagsPeer) peer = ptags_peer_cache_get(bt->svc->peers, sender);
        return peer != NULL && peer->uid == 0;
}

/* Counts @msg, a method call of @bytes, under @sender, if the bounds above
 * let it through; otherwise says which bound it would pass (transfer full:
 * g_free) and counts nothing. */
static char *pass(PtagsBusThread *bt, GDBusMessage *msg, const char *sender, gsize bytes)
{
        guint max_calls = bt->svc->limits.connection_calls;
        char *refusal = NULL;

        pthread_mutex_lock(&passed_lock);
        Passed *n = g_hash_table_lookup(passed, sender);
        guint calls = n != NULL ? n->calls : 0;
        gsize held = n != NULL ? n->bytes : 0;
        if (calls >= max_calls)
                refusal = g_strdup_printf("connection %s already has %u calls in progress, the "
                                          "MaxConnectionCalls limit; wait for their replies",
                                          sender, calls);
        else if (calls > 0 && bytes > PTAGS_MAX_MESSAGE_BYTES - held)
                refusal = g_strdup_printf(
                        "connection %s already has %" G_GSIZE_FORMAT " bytes of calls in "
                        "progress; with this one (%" G_GSIZE_FORMAT " bytes) they would pass the "
                        "MaxMessageBytes limit of %u; wait for their replies",
                        sender, held, bytes, PTAGS_MAX_MESSAGE_BYTES);
        else if (passed_total + bytes > PASSED_TOTAL_MAX && (calls > 0 || bytes > PASSED_SMALL) &&
                 !known_root(bt, sender))
                refusal = g_strdup_printf(
                        "ptagsd holds %" G_GSIZE_FORMAT " bytes of calls waiting for it, %u at "
                        "most; a call over %u bytes, or one from a connection with calls in "
                        "progress, waits until they are answered; try again",
                        passed_total, PASSED_TOTAL_MAX, PASSED_SMALL);
        if (refusal == NULL) {
                if (n == NULL) {
                        n = g_new0(Passed, 1);
                        g_hash_table_insert(passed, g_strdup(sender), n);
                }
                n->calls++;
                n->bytes += bytes;
                passed_total += bytes;
        }
        pthread_mutex_unlock(&passed_lock);
        if (refusal == NULL) {
                PassedCall *call = g_new(PassedCall, 1);
                call->sender = g_strdup(sender);
                call->bytes = bytes;
                g_object_set_qdata_full(G_OBJECT(msg), passed_quark, call, passed_done);
        }
        return refusal;
}

void ptags_bus_thread_call_done(GDBusMessage *msg)
{
        if (passed_quark != 0)
                g_object_set_qdata(G_OBJECT(msg), passed_quark, NULL);
}

/* What a value holds in ptagsd's memory as GDBus parsed it, added to
 * @so_far: its bytes, and PTAGS_VALUE_COST for each value in it (GDBus makes
 * one GVariant of each, but one of a whole array of fixed-size numbers).
 * Counting stops once past @max, so a huge body is not walked whole. */
#define PTAGS_VALUE_COST 48u

static gsize value_cost(GVariant *v, gsize so_far, gsize max)
{
        const char *type = g_variant_get_type_string(v);

        so_far += PTAGS_VALUE_COST;
        if (!g_variant_is_container(v) ||
            (type[0] == 'a' && type[1] != '\0' && strchr("ybnqiuxtdh", type[1]) != NULL))
                return so_far + g_variant_get_size(v);
        gsize n = g_variant_n_children(v);
        for (gsize i = 0; i < n && so_far <= max; i++) {
                GVariant *child = g_variant_get_child_value(v, i);
                so_far = value_cost(child, so_far, max);
                g_variant_unref(child);
        }
        return so_far;
}

/* What method call @msg holds, as value_cost counts it, past @max once it
 * holds more. */
static gsize call_cost(GDBusMessage *msg, gsize max)
{
        GVariant *body = g_dbus_message_get_body(msg);
        return PTAGS_WIRE_HEADER_OVERHEAD + (body != NULL ? value_cost(body, 0, max) : 0);
}

/* Whether a call of @sender's is on its way to, or in flight on, the main loop. */
static gboolean has_passed(const char *sender)
{
        pthread_mutex_lock(&passed_lock);
        gboolean any = g_hash_table_contains(passed, sender);
        pthread_mutex_unlock(&passed_lock);
        return any;
}

/* ------------------------------------------------- the main loop's lock
 *
 * Held by the main thread except while it polls: whoever holds it may do
 * what a main-loop callback may. The bus thread waits for it at most
 * LOOP_LOCK_WAIT_USEC, then leaves the change to the main loop: the main
 * thread may itself be waiting for the bus thread (a synchronous D-Bus
 * call), so an unbounded wait could hang both.
 *
 * It does wait that long because not waiting feeds on itself: a change
 * passed to the main loop keeps the main thread busy, so the next root
 * change finds the lock taken and is passed too, and under a steady stream
 * of changes most of them would pay the two hops through the main loop.
 * The bound is about one slow main-loop callback (a search of 100 tagged
 * processes); a wait that long only holds up the other messages queued
 * behind a root change. */

#define LOOP_LOCK_WAIT_USEC  1000
#define LOOP_LOCK_RETRY_USEC 20

static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;

static gint poll_unlocked(GPollFD *fds, guint n_fds, gint timeout)
{
        pthread_mutex_unlock(&loop_lock);
        gint r = g_poll(fds, n_fds, timeout);
        pthread_mutex_lock(&loop_lock);
        return r;
}

/* The main loop's lock within LOOP_LOCK_WAIT_USEC: TRUE when taken. Tried
 * again every LOOP_LOCK_RETRY_USEC on the monotonic clock, where a timed
 * lock would count on the wall clock, which can be set back. */
static gboolean loop_lock_soon(void)
{
        gint64 until = g_get_monotonic_time() + LOOP_LOCK_WAIT_USEC;

        while (pthread_mutex_trylock(&loop_lock) != 0) {
                if (g_get_monotonic_time() >= until)
                        return FALSE;
                g_usleep(LOOP_LOCK_RETRY_USEC);
        }
        return TRUE;
}

/* A process pinned for one read. Its pidfd is borrowed, from a kept pidfd
 * (@kept) or from a cached peer (@peer holds it open), or else owned. */
typedef struct {
        PtagsTarget target;
        PtagsPeer *peer;
        gboolean kept;
} Pinned;

#define PINNED_NONE                                                                                \
        {                                                                                          \
                .target = {.pid = 0, .pidfd = -1 }                                                 \
        }

static void pinned_release(Pinned *p)
{
        if (p->peer != NULL)
                ptags_peer_free(p->peer);
        else if (!p->kept)
                ptags_target_clear(&p->target);
        *p = (Pinned)PINNED_NONE;
}

/* Borrow the pidfd of a cached @peer (taken) whose process is provably the
 * connection's now. */
static gboolean pin_to_peer(Pinned *p, PtagsPeer *peer)
{
        if (peer == NULL || !ptags_peer_process_unchanged(peer)) {
                ptags_peer_free(peer);
                return FALSE;
        }
        p->peer = peer;
        p->target = peer->target;
        return TRUE;
}

/* Pin the process a pid argument names, or the caller's for 0; FALSE when
 * that needs anything but syscalls (the slow path then decides). */
static gboolean pin_pid(PtagsBusThread *bt, const char *sender, guint32 pid, Pinned *p)
{
        if (pid == 0)
                return pin_to_peer(p, ptags_peer_cache_get(bt->svc->peers, sender));
        if (pid > G_MAXINT)
                return FALSE;
        /* A caller in another pid namespace would mean another process by
         * @pid, and the slow path refuses it: so it decides for a caller
         * not known yet too. */
        g_autoptr(PtagsPeer) caller = ptags_peer_cache_get(bt->svc->peers, sender);
        if (caller == NULL || caller->pid_namespace == PTAGS_PID_NAMESPACE_OTHER)
                return FALSE;
        pthread_mutex_lock(&bt->cache_lock);
        PtagsTarget slot = bt->pidfds[pid % PIDFD_SLOTS];
        pthread_mutex_unlock(&bt->cache_lock);
        if (slot.pidfd >= 0 && slot.pid == (pid_t)pid) {
                p->target = slot;
                p->kept = TRUE;
                return TRUE;
        }
        return ptags_target_pin_pid(&p->target, (pid_t)pid, NULL);
}

/* Keep the pidfd @p owns in its pid's slot, closing the one there. */
static void pidfd_keep(PtagsBusThread *bt, Pinned *p)
{
        pthread_mutex_lock(&bt->cache_lock);
        PtagsTarget *slot = &bt->pidfds[(guint32)p->target.pid % PIDFD_SLOTS];
        ptags_target_clear(slot);
        *slot = p->target;
        pthread_mutex_unlock(&bt->cache_lock);
        p->kept = TRUE;
}

/* Close the kept pidfd @p borrowed: its process has exited. */
static void pidfd_forget(PtagsBusThread *bt, Pinned *p)
{
        pthread_mutex_lock(&bt->cache_lock);
        ptags_target_clear(&bt->pidfds[(guint32)p->target.pid % PIDFD_SLOTS]);
        pthread_mutex_unlock(&bt->cache_lock);
        *p = (Pinned)PINNED_NONE;
}

static gboolean pin_peer(PtagsService *svc, const char *bus_name, Pinned *p)
{
        /* Only unique names are cached: a well-known name's owner can change. */
        if (bus_name[0] != ':' || !g_dbus_is_name(bus_name))
                return FALSE;
        return pin_to_peer(p, ptags_peer_cache_get(svc->peers, bus_name));
}

/* A target argument: a pid (GetTags, HasTag) or a bus name (the peer reads). */
typedef struct {
        guint32 pid;
        const char *bus_name;
} ArgName;

static gboolean pin(PtagsBusThread *bt, ReadKind kind, const char *sender, ArgName arg, Pinned *p)
{
        return kind == READ_PID || kind == READ_PID_MATCH ? pin_pid(bt, sender, arg.pid, p)
                                                          : pin_peer(bt->svc, arg.bus_name, p);
}

/* The reply to GetTags or GetPeerTags about the pinned @target from the
 * kept replies (the backend names lists), or NULL when it cannot be read
 * here. (transfer full) */
static GVariant *tags_reply(PtagsBusThread *bt, const PtagsTarget *target)
{
        PtagsBackend *backend = bt->svc->backend;
        guint64 id;

        if (backend->ops->read_id(backend, target->pidfd, FAST_READ_MAX_BYTES, &id, NULL) < 0)
                return NULL;
        pthread_mutex_lock(&bt->cache_lock);
        CachedReply *slot = &bt->replies[id % REPLY_CACHE_SLOTS];
        GVariant *kept = slot->body != NULL && slot->id == id ? g_variant_ref(slot->body) : NULL;
        pthread_mutex_unlock(&bt->cache_lock);
        if (kept != NULL)
                return kept;
        /* The list and its id from one lookup: the process may have changed
         * lists since the first. */
        ptags_set *tags = NULL;
        if (backend->ops->read_id(backend, target->pidfd, FAST_READ_MAX_BYTES, &id, &tags) < 0)
                return NULL;
        GVariant *body = g_variant_ref_sink(g_variant_new("(@a(sbs))", ptags_set_to_variant(tags)));
        if (ptags_set_count(tags) <= REPLY_CACHE_MAX_TAGS &&
            ptags_set_bytes(tags) <= REPLY_CACHE_MAX_BYTES) {
                pthread_mutex_lock(&bt->cache_lock);
                slot = &bt->replies[id % REPLY_CACHE_SLOTS];
                g_clear_pointer(&slot->body, g_variant_unref);
                slot->id = id;
                slot->body = g_variant_ref(body);
                pthread_mutex_unlock(&bt->cache_lock);
        }
        ptags_set_free(tags);
        return body;
}

/* The reply body about the pinned @target: the list, or whether it holds
 * @body_pattern when @pattern is set. NULL when it cannot be read here.
 * (transfer full) */
static GVariant *read_reply(PtagsBusThread *bt, const PtagsTarget *target, const char *pattern,
                            const char *body_pattern, gboolean kept_only)
{
        PtagsBackend *backend = bt->svc->backend;

        if (pattern == NULL && backend->ops->read_id != NULL)
                return tags_reply(bt, target);
        ptags_set *tags = NULL;
        if (backend->ops->read_max(backend, target->pidfd, target->pid, FAST_READ_MAX_BYTES,
                                   &tags) < 0)
                return NULL;
        GVariant *reply;
        if (pattern != NULL)
                reply = g_variant_new("(b)", ptags_set_matches(tags, body_pattern,
                                                               strlen(body_pattern), kept_only));
        else
                reply = g_variant_new("(@a(sbs))", ptags_set_to_variant(tags));
        ptags_set_free(tags);
        return g_variant_ref_sink(reply);
}

/* The reply body for @msg, or NULL to leave the call to the main loop.
 * (transfer full) */
static GVariant *answer(PtagsBusThread *bt, GDBusMessage *msg, ReadKind kind, const char *sender)
{
        GVariant *body = g_dbus_message_get_body(msg);
        const char *pattern = NULL;
        ArgName name_or_pid = {0};

        if (kind == READ_PID)
                g_variant_get(body, "(u)", &name_or_pid.pid);
        else if (kind == READ_PID_MATCH)
                g_variant_get(body, "(u&s)", &name_or_pid.pid, &pattern);
        else if (kind == READ_PEER)
                g_variant_get(body, "(&s)", &name_or_pid.bus_name);
        else
                g_variant_get(body, "(&s&s)", &name_or_pid.bus_name, &pattern);
        /* The arguments first, as every handler does: nothing is pinned
         * for a call whose pattern is bad. */
        gboolean kept_only = FALSE;
        g_autofree char *body_pattern = NULL;
        if (pattern != NULL && !ptags_query_pattern_parse(pattern, &kept_only, &body_pattern, NULL))
                return NULL;
        Pinned pinned = PINNED_NONE;
        if (!pin(bt, kind, sender, name_or_pid, &pinned))
                return NULL;
        GVariant *reply = read_reply(bt, &pinned.target, pattern, body_pattern, kept_only);
        if (reply == NULL && pinned.kept && !ptags_target_alive(&pinned.target)) {
                /* The kept pidfd's process has exited: the pid may name
                 * another process by now. */
                pidfd_forget(bt, &pinned);
                if (!pin(bt, kind, sender, name_or_pid, &pinned))
                        return NULL;
                reply = read_reply(bt, &pinned.target, pattern, body_pattern, kept_only);
        }
        if (reply != NULL && pinned.peer == NULL && !pinned.kept)
                pidfd_keep(bt, &pinned);
        pinned_release(&pinned);
        return reply;
}

/* A read of fast_methods[@i]: answered here (TRUE, @msg consumed) or not. */
static gboolean read_now(PtagsBusThread *bt, GDBusConnection *connection, GDBusMessage *msg,
                         gsize i, const char *sender)
{
        PtagsService *svc = bt->svc;

        /* The same admission as the main loop's reads: the caller's uid must
         * be known and its unread replies within their budget. And in the
         * same order: a read must not overtake an earlier call of its
         * connection on its way to the main loop, such as a change it
         * expects to see. */
        uid_t uid;
        if (!bt->reads || has_passed(sender) ||
            !ptags_clients_cached_uid(svc->clients, sender, &uid) ||
            !ptags_clients_check_unread(svc->clients, sender, uid, NULL))
                return FALSE;

        GVariant *value = answer(bt, msg, fast_methods[i].kind, sender);
        if (value == NULL)
                return FALSE;

        if ((g_dbus_message_get_flags(msg) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED) == 0) {
                g_autoptr(GDBusMessage) reply = g_dbus_message_new_method_reply(msg);
                g_dbus_message_set_body(reply, value);
                g_dbus_connection_send_message(connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                               NULL, NULL);
        }
        g_variant_unref(value);
        return TRUE;
}

/* Whether a change could overtake an earlier call of its own connection
 * here: ApplyFd (its pidfd, or the lack of one, is the main loop's to
 * judge) and any call carrying a file descriptor always go to the main
 * loop, and so does every change while an earlier call of the connection is
 * on its way to the main loop or in flight there (queued, learning its
 * caller). Only this thread counts calls as passed on, so a FALSE stays
 * FALSE while it runs the change. */
static gboolean change_must_pass(GDBusMessage *msg, const char *sender)
{
        return strcmp(g_dbus_message_get_member(msg), "ApplyFd") == 0 ||
               g_dbus_message_get_unix_fd_list(msg) != NULL || has_passed(sender);
}

/* A change from a known root connection: run here (TRUE, @msg consumed) when
 * it cannot wait, or let the main loop have it (FALSE). Root takes no turn
 * in its uid's queue here: the bus thread runs one change at a time, in
 * full. */
static gboolean change_now(PtagsBusThread *bt, GDBusMessage *msg, const char *sender)
{
        /* The caller as the changes know it (call_lookup_peer): peer-cache.c
         * is thread-safe. */
        g_autoptr(PtagsPeer) peer = ptags_peer_cache_get(bt->svc->peers, sender);

        if (peer == NULL || peer->uid != 0 || change_must_pass(msg, sender) || !loop_lock_soon())
                return FALSE;
        /* The caller is known without asking the bus or waiting behind a
         * lookup (main-loop state); the change goes on with this answer. */
        PtagsPeer *known = call_known_peer(bt->svc, sender);
        gboolean now = known != NULL && known->uid == 0;
        if (now)
                ptags_manager_change_in_bus_thread(bt->svc, msg, g_steal_pointer(&known));
        g_clear_pointer(&known, ptags_peer_free);
        pthread_mutex_unlock(&loop_lock);
        return now;
}

/* Whether @msg carries more file descriptors than its arguments name ('h'):
 * ptagsd would hold the extra ones for the call's whole life (while polkit
 * is asked, up to its timeout), multiplying every bound on what a caller
 * can make it hold by the bus's 16 descriptors a message. */
static gboolean carries_extra_fds(GDBusMessage *msg)
{
        GUnixFDList *fds = g_dbus_message_get_unix_fd_list(msg);
        const char *signature = g_dbus_message_get_signature(msg);
        gint handles = 0;

        if (fds == NULL)
                return FALSE;
        for (const char *c = signature; c != NULL && *c != '\0'; c++)
                handles += *c == 'h';
        return g_unix_fd_list_get_length(fds) > handles;
}

/* Refuse @msg at once (consumed, its descriptors closed with it) with
 * @error and @text (consumed), unless it awaits no reply. */
static void refuse(GDBusConnection *connection, GDBusMessage *msg, const char *error, char *text)
{
        if ((g_dbus_message_get_flags(msg) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED) == 0) {
                g_autoptr(GDBusMessage) reply =
                        g_dbus_message_new_method_error_literal(msg, error, text);
                g_dbus_connection_send_message(connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                               NULL, NULL);
        }
        g_free(text);
        g_object_unref(msg);
}

static void refuse_extra_fds(GDBusConnection *connection, GDBusMessage *msg)
{
        refuse(connection, msg, "org.freedesktop.DBus.Error.InvalidArgs",
               g_strdup_printf(
                       "%u file descriptors sent with %s; ptagsd takes one for each argument "
                       "of type 'h' and no more",
                       (guint)g_unix_fd_list_get_length(g_dbus_message_get_unix_fd_list(msg)),
                       g_dbus_message_get_member(msg) ? g_dbus_message_get_member(msg) : "a call"));
}

static gsize reply_size(GDBusMessage *msg)
{
        GVariant *body = g_dbus_message_get_body(msg);
        return (body != NULL ? g_variant_get_size(body) : 0) + PTAGS_WIRE_HEADER_OVERHEAD;
}

/* The short error sent in place of @reply (same serial, same call), whose
 * @bytes would take what uids but 0 leave unread past the bus's reach. */
static GDBusMessage *unread_refusal(GDBusMessage *reply, gsize bytes)
{
        GDBusMessage *error = g_dbus_message_new();
        g_autofree char *text = g_strdup_printf(
                "the reply (%" G_GSIZE_FORMAT " bytes) would take the replies that "
                "connections of uids other than 0 leave unread past what ptagsd lets them hold "
                "together; try again once they have read",
                bytes);

        g_dbus_message_set_message_type(error, G_DBUS_MESSAGE_TYPE_ERROR);
        g_dbus_message_set_flags(error, G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED);
        g_dbus_message_set_serial(error, g_dbus_message_get_serial(reply));
        g_dbus_message_set_reply_serial(error, g_dbus_message_get_reply_serial(reply));
        g_dbus_message_set_destination(error, g_dbus_message_get_destination(reply));
        g_dbus_message_set_error_name(error, ptags_error_dbus_name(PTAGS_ERROR_LIMIT_EXCEEDED));
        g_dbus_message_set_body(error, g_variant_new("(s)", text));
        return error;
}

/* Every reply ptagsd sends, whatever the call (Introspect, Properties and
 * Peer ones too, which GDBus answers itself, and every refusal), counts
 * against its destination's unread budget: the bus holds what a client does
 * not read and charges it to ptagsd, whom it stops reading past
 * max_incoming_bytes. The message to send: @msg, or (@msg consumed) a
 * short error in its place when it would take what all uids but 0 leave
 * unread past their bound. */
static GDBusMessage *count_reply(PtagsBusThread *bt, GDBusMessage *msg)
{
        GDBusMessageType type = g_dbus_message_get_message_type(msg);
        const char *to = g_dbus_message_get_destination(msg);

        if ((type != G_DBUS_MESSAGE_TYPE_METHOD_RETURN && type != G_DBUS_MESSAGE_TYPE_ERROR) ||
            to == NULL || to[0] != ':')
                return msg;
        gsize bytes = reply_size(msg);
        if (ptags_clients_sent(bt->svc->clients, to, bytes))
                return msg;
        GDBusMessage *error = unread_refusal(msg, bytes);
        g_object_unref(msg); /* @to was msg's */
        ptags_clients_sent(bt->svc->clients, g_dbus_message_get_destination(error),
                           reply_size(error));
        return error;
}

/* Runs in GDBus's worker thread for every message, in and out. */
static GDBusMessage *filter(GDBusConnection *connection, GDBusMessage *msg, gboolean incoming,
                            gpointer user_data)
{
        PtagsBusThread *bt = user_data;
        /* Pairs with the release in ptags_bus_thread_new: everything the
         * main thread set up before is visible here (GDBus orders it too,
         * but with locks a thread sanitizer cannot see). */
        if (__atomic_load_n(&bt->ready, __ATOMIC_ACQUIRE) == 0)
                return msg;
        if (!incoming)
                return count_reply(bt, msg);

        const char *sender = g_dbus_message_get_sender(msg);
        if (g_dbus_message_get_message_type(msg) != G_DBUS_MESSAGE_TYPE_METHOD_CALL ||
            sender == NULL)
                return msg;
        /* Far past its budget, a connection's calls go unanswered: each
         * answer, a refusal too, would only add to what it leaves unread. */
        if (ptags_clients_over_hard_bound(bt->svc->clients, sender)) {
                g_object_unref(msg);
                return NULL;
        }
        if (carries_extra_fds(msg)) {
                refuse_extra_fds(connection, msg);
                return NULL;
        }
        /* No call of ptagsd's takes anything near this (Apply: 1 MiB and
         * 4096 lines). */
        gsize bytes = call_cost(msg, PTAGS_MAX_MESSAGE_BYTES);
        if (bytes > PTAGS_MAX_MESSAGE_BYTES) {
                refuse(connection, msg, ptags_error_dbus_name(PTAGS_ERROR_LIMIT_EXCEEDED),
                       g_strdup_printf("the call would take more than %u bytes of memory (its "
                                       "bytes and %u for each value in it), the MaxMessageBytes "
                                       "limit",
                                       PTAGS_MAX_MESSAGE_BYTES, PTAGS_VALUE_COST));
                return NULL;
        }
        gboolean done = FALSE;
        if (g_strcmp0(g_dbus_message_get_path(msg), PTAGS_OBJECT_PATH) == 0 &&
            g_strcmp0(g_dbus_message_get_interface(msg), PTAGS_INTERFACE) == 0) {
                const char *member = g_dbus_message_get_member(msg);
                const char *signature = g_dbus_message_get_signature(msg);
                for (gsize i = 0; i < G_N_ELEMENTS(fast_methods); i++)
                        if (g_strcmp0(member, fast_methods[i].member) == 0 &&
                            g_strcmp0(signature, fast_methods[i].signature) == 0 &&
                            g_dbus_message_get_unix_fd_list(msg) == NULL)
                                done = read_now(bt, connection, msg, i, sender);
                for (gsize i = 0; i < G_N_ELEMENTS(change_methods); i++)
                        if (g_strcmp0(member, change_methods[i].member) == 0 &&
                            g_strcmp0(signature, change_methods[i].signature) == 0)
                                done = change_now(bt, msg, sender);
        }
        if (!done) {
                /* Any method call, of any interface: a later change of the
                 * same connection must not overtake it. */
                char *refusal = pass(bt, msg, sender, bytes);
                if (refusal != NULL) {
                        refuse(connection, msg, ptags_error_dbus_name(PTAGS_ERROR_LIMIT_EXCEEDED),
                               refusal);
                        return NULL;
                }
                return msg;
        }
        g_object_unref(msg);
        return NULL;
}

/* GDBus calls this on the main loop once the filter has returned for the
 * last time after its removal. */
static void released(gpointer data)
{
        ((PtagsBusThread *)data)->released = TRUE;
}

PtagsBusThread *ptags_bus_thread_new(PtagsService *svc)
{
        PtagsBusThread *bt = g_new0(PtagsBusThread, 1);

        /* From now on the main thread holds the lock but while it polls. */
        pthread_mutex_lock(&loop_lock);
        g_main_context_set_poll_func(NULL, poll_unlocked);
        bt->svc = svc;
        bt->reads = svc->backend->ops->read_max != NULL;
        pthread_mutex_init(&bt->cache_lock, NULL);
        for (gsize i = 0; i < PIDFD_SLOTS; i++)
                bt->pidfds[i] = (PtagsTarget){.pid = 0, .pidfd = -1};
        pthread_mutex_lock(&passed_lock);
        if (passed == NULL)
                passed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        passed_quark = g_quark_from_static_string("ptags-bus-thread-passed");
        pthread_mutex_unlock(&passed_lock);
        __atomic_store_n(&bt->ready, 1, __ATOMIC_RELEASE);
        bt->filter = g_dbus_connection_add_filter(svc->connection, filter, bt, released);
        return bt;
}

void ptags_bus_thread_free(PtagsBusThread *bt)
{
        if (bt == NULL)
                return;
        /* The filter may be running in the worker thread right now: wait
         * until GDBus says it is done with it. */
        g_dbus_connection_remove_filter(bt->svc->connection, bt->filter);
        while (!bt->released)
                g_main_context_iteration(NULL, TRUE);
        g_main_context_set_poll_func(NULL, NULL);
        pthread_mutex_unlock(&loop_lock);
        pthread_mutex_lock(&bt->cache_lock);
        for (gsize i = 0; i < REPLY_CACHE_SLOTS; i++)
                g_clear_pointer(&bt->replies[i].body, g_variant_unref);
        for (gsize i = 0; i < PIDFD_SLOTS; i++)
                ptags_target_clear(&bt->pidfds[i]);
        pthread_mutex_unlock(&bt->cache_lock);
        pthread_mutex_destroy(&bt->cache_lock);
        g_free(bt);
}
