// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* clients.h: what ptagsd keeps per bus client so that no client can stall
 * the others: the uid behind each connection, the bytes of replies it has not
 * read yet, and a fair queue of reads per uid.
 *
 * Threads: a mutex guards every table. ptags_clients_cached_uid(),
 * ptags_clients_check_unread() and ptags_clients_sent() may be called from
 * any thread (GDBus's worker thread included) and never block on I/O. The
 * others belong to the thread running the main context current at
 * ptags_clients_new(), where every callback (uid lookups, queued calls, bus
 * answers) runs. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "budgets.h"

typedef struct _PtagsClients PtagsClients;

/* A queued call's next step (GLib 2.74's GSourceOnceFunc, on older GLib). */
typedef void (*PtagsClientRunFunc)(gpointer data);

/* Watches @bus for connections leaving, and watches what the bus holds of
 * ptagsd's messages (bus-stats.h). Borrows @limits, which must outlive it.
 * Main thread. (transfer full: ptags_clients_free) */
PtagsClients *ptags_clients_new(GDBusConnection *bus, const PtagsLimits *limits);
void ptags_clients_free(PtagsClients *c);

/* Called once the uid of a connection is known; @error (transfer none) set
 * when it could not be learnt (the connection left). Every uid here is the
 * one whose per-uid budgets the connection draws on (subuids.h), fixed
 * when it is learnt: the bus's, or the owner's of a subordinate uid. */
typedef void (*PtagsClientUidFunc)(gpointer data, uid_t uid, const GError *error);

/* Learn the (budget) uid behind @sender (asked of the bus once per connection).
 * Main thread; @done may run before this returns. */
void ptags_clients_get_uid(PtagsClients *c, const char *sender, PtagsClientUidFunc done,
                           gpointer data);

/* The uid behind @sender into *@uid when already known, without I/O (FALSE
 * otherwise). Any thread. */
gboolean ptags_clients_cached_uid(PtagsClients *c, const char *sender, uid_t *uid);

/* LimitExceeded when @sender (a connection of @uid) or @uid as a whole has
 * more unread reply bytes than its budget (a refusal also has the bus asked
 * again, so a client that has read since is admitted at once). Any thread. */
gboolean ptags_clients_check_unread(PtagsClients *c, const char *sender, uid_t uid, GError **error);

/* Count @bytes of a reply (of any call) about to be sent to @sender. Once enough is outstanding,
 * ptagsd asks the bus how much it still holds queued for the connection
 * (dbus-daemon's Debug.Stats): the rest has been read, or at least has left
 * the bus. Where the bus does not tell, it pings the connection
 * (org.freedesktop.DBus.Peer.Ping): the answer comes after the client has
 * read every earlier reply. Either un-counts them.
 * FALSE, counting nothing, for a reply larger than PTAGS_UNREAD_SMALL_REPLY
 * to a connection of a uid but 0 that would take what all such uids leave
 * unread past five times MaxUserUnreadReplyBytes: the caller sends a short
 * error instead. Any thread. */
gboolean ptags_clients_sent(PtagsClients *c, const char *sender, gsize bytes);

/* Replies at most this large are always sent (errors, answers of a few
 * tags); the per-connection bounds keep their sum in check. */
#define PTAGS_UNREAD_SMALL_REPLY (4u * 1024u)

/* How far past MaxUnreadReplyBytes (or MaxUserUnreadReplyBytes) a
 * connection's unread replies may go before its calls go unanswered: reads
 * are refused at the budget, but the refusals are replies too, as are the
 * answers to Introspect, Properties and Peer calls. */
#define PTAGS_UNREAD_HARD_SLACK (1024u * 1024u)
/* Every uid but 0 together may leave this many times
 * MaxUserUnreadReplyBytes unread (64 MiB by default, half of the bus's
 * limit on Debian). */
#define PTAGS_UNREAD_ALL_USERS 4u

/* Whether @sender's unread replies (or its uid's, or all uids' but 0's,
 * for a connection of a uid but 0) are past their budget by more than
 * PTAGS_UNREAD_HARD_SLACK: then none of its calls
 * is answered, since every answer would wait in the bus, which stops
 * reading ptagsd once it holds max_incoming_bytes of its messages. Has the
 * bus asked again, as a refused read does. Any thread. */
gboolean ptags_clients_over_hard_bound(PtagsClients *c, const char *sender);

/* Queue a read (an "expensive call") of @uid: @run(@data) is called from the main loop,
 * in turn with the queued calls of other uids (round robin). LimitExceeded
 * when @uid already has MaxExpensiveCalls queued or running. Calls still
 * queued when @c is freed get @drop(@data) instead. Main thread. */
gboolean ptags_clients_queue_expensive(PtagsClients *c, uid_t uid, PtagsClientRunFunc run,
                                       GDestroyNotify drop, gpointer data, GError **error);
/* A queued call of @uid has finished (replied). Main thread. */
void ptags_clients_expensive_done(PtagsClients *c, uid_t uid);
