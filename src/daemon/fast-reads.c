// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* fast-reads.c: the cheap reads (GetTags, HasTag, GetPeerTags, PeerHasTag of
 * a small tag list whose caller is already known) answered in GDBus's worker
 * thread, as GDBus answers Peer.Ping, without the two thread hops through
 * the main loop. Anything else, errors included, goes on to the handlers of
 * manager.c, so every error is made in one place. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "fast-reads.h"

#include "args.h"
#include "names.h"
#include "page-writer.h"
#include "service.h"

#include <string.h>

/* A tag list larger than this (in the kernel's read format) is read on the
 * main loop in its uid's turn: the worker thread carries every message of
 * ptagsd, so it only does work about as cheap as routing one. */
#define FAST_READ_MAX_BYTES (16u * 1024u)

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

struct _PtagsFastReads {
        PtagsService *svc;
        guint filter;
        gboolean released; /* GDBus will not call the filter again */
};

/* Pin the process a pid argument names, or the caller's for 0; FALSE when
 * that needs anything but syscalls (the slow path then decides). */
static gboolean pin_pid(PtagsService *svc, const char *sender, guint32 pid, PtagsTarget *target)
{
        if (pid != 0)
                return pid <= G_MAXINT && ptags_target_pin_pid(target, (pid_t)pid, NULL);
        g_autoptr(PtagsPeer) caller = ptags_peer_cache_get(svc->peers, sender);
        return caller != NULL && caller->process_known &&
               ptags_target_copy(target, &caller->target, NULL);
}

static gboolean pin_peer(PtagsService *svc, const char *bus_name, PtagsTarget *target)
{
        /* Only unique names are cached: a well-known name's owner can change. */
        if (bus_name[0] != ':' || !g_dbus_is_name(bus_name))
                return FALSE;
        g_autoptr(PtagsPeer) peer = ptags_peer_cache_get(svc->peers, bus_name);
        return peer != NULL && peer->process_known &&
               ptags_target_copy(target, &peer->target, NULL);
}

/* A target argument: a pid (GetTags, HasTag) or a bus name (the peer reads). */
typedef struct {
        guint32 pid;
        const char *bus_name;
} ArgName;

static gboolean pin(PtagsService *svc, ReadKind kind, const char *sender, ArgName arg,
                    PtagsTarget *target)
{
        return kind == READ_PID || kind == READ_PID_MATCH ? pin_pid(svc, sender, arg.pid, target)
                                                          : pin_peer(svc, arg.bus_name, target);
}

/* The reply body for @msg, or NULL to leave the call to the main loop. */
static GVariant *answer(PtagsService *svc, GDBusMessage *msg, ReadKind kind, const char *sender)
{
        GVariant *body = g_dbus_message_get_body(msg);
        PtagsTarget target = {.pid = 0, .pidfd = -1};
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
        if (!pin(svc, kind, sender, name_or_pid, &target))
                return NULL;
        ptags_set *tags = NULL;
        int r = svc->backend->ops->read_max(svc->backend, target.pidfd, target.pid,
                                            FAST_READ_MAX_BYTES, &tags);
        ptags_target_clear(&target);
        if (r < 0)
                return NULL;
        GVariant *reply;
        if (pattern != NULL)
                reply = g_variant_new("(b)", ptags_set_matches(tags, body_pattern,
                                                               strlen(body_pattern), kept_only));
        else
                reply = g_variant_new("(@a(sbs))", ptags_set_to_variant(tags));
        ptags_set_free(tags);
        return reply;
}

/* Runs in GDBus's worker thread for every incoming message. */
static GDBusMessage *filter(GDBusConnection *connection, GDBusMessage *msg, gboolean incoming,
                            gpointer user_data)
{
        PtagsFastReads *fast = user_data;
        /* Pairs with the release in ptags_fast_reads_new: everything the
         * main thread set up before is visible here (GDBus orders it too,
         * but with locks a thread sanitizer cannot see). */
        PtagsService *svc = __atomic_load_n(&fast->svc, __ATOMIC_ACQUIRE);

        if (!incoming || g_dbus_message_get_message_type(msg) != G_DBUS_MESSAGE_TYPE_METHOD_CALL ||
            g_strcmp0(g_dbus_message_get_path(msg), PTAGS_OBJECT_PATH) != 0 ||
            g_strcmp0(g_dbus_message_get_interface(msg), PTAGS_INTERFACE) != 0 ||
            g_dbus_message_get_unix_fd_list(msg) != NULL)
                return msg;
        const char *member = g_dbus_message_get_member(msg);
        const char *signature = g_dbus_message_get_signature(msg);
        const char *sender = g_dbus_message_get_sender(msg);
        gsize i;
        for (i = 0; i < G_N_ELEMENTS(fast_methods); i++)
                if (g_strcmp0(member, fast_methods[i].member) == 0)
                        break;
        if (i == G_N_ELEMENTS(fast_methods) || sender == NULL ||
            g_strcmp0(signature, fast_methods[i].signature) != 0)
                return msg;

        /* The same admission as the main loop's reads: the caller's uid must
         * be known and its unread replies within their budget. */
        uid_t uid;
        if (!ptags_clients_cached_uid(svc->clients, sender, &uid) ||
            !ptags_clients_check_unread(svc->clients, sender, uid, NULL))
                return msg;

        GVariant *value = answer(svc, msg, fast_methods[i].kind, sender);
        if (value == NULL)
                return msg;

        g_variant_ref_sink(value);
        if ((g_dbus_message_get_flags(msg) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED) == 0) {
                g_autoptr(GDBusMessage) reply = g_dbus_message_new_method_reply(msg);
                g_dbus_message_set_body(reply, value);
                ptags_clients_sent(svc->clients, sender,
                                   g_variant_get_size(value) + PTAGS_WIRE_HEADER_OVERHEAD);
                g_dbus_connection_send_message(connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                               NULL, NULL);
        }
        g_variant_unref(value);
        g_object_unref(msg);
        return NULL;
}

/* GDBus calls this on the main loop once the filter has returned for the
 * last time after its removal. */
static void released(gpointer data)
{
        ((PtagsFastReads *)data)->released = TRUE;
}

PtagsFastReads *ptags_fast_reads_new(PtagsService *svc)
{
        if (svc->backend->ops->read_max == NULL)
                return NULL;
        PtagsFastReads *fast = g_new0(PtagsFastReads, 1);
        __atomic_store_n(&fast->svc, svc, __ATOMIC_RELEASE);
        fast->filter = g_dbus_connection_add_filter(svc->connection, filter, fast, released);
        return fast;
}

void ptags_fast_reads_free(PtagsFastReads *fast)
{
        if (fast == NULL)
                return;
        /* The filter may be running in the worker thread right now: wait
         * until GDBus says it is done with it. */
        g_dbus_connection_remove_filter(fast->svc->connection, fast->filter);
        while (!fast->released)
                g_main_context_iteration(NULL, TRUE);
        g_free(fast);
}
