// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* clients.h: what ptagsd keeps per bus client so that no client can stall
 * the others: the uid behind each connection, the bytes of replies it has not
 * read yet, and a fair queue of reads per uid. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "budgets.h"

typedef struct _PtagsClients PtagsClients;

/* A queued call's next step (GLib 2.74's GSourceOnceFunc, on older GLib). */
typedef void (*PtagsClientRunFunc)(gpointer data);

/* Watches @bus for connections leaving. Borrows @limits, which must outlive
 * it. (transfer full: ptags_clients_free) */
PtagsClients *ptags_clients_new(GDBusConnection *bus, const PtagsLimits *limits);
void ptags_clients_free(PtagsClients *c);

/* Called once the uid of a connection is known; @error (transfer none) set
 * when it could not be learnt (the connection left). */
typedef void (*PtagsClientUidFunc)(gpointer data, uid_t uid, const GError *error);

/* The uid behind @sender when already learnt (no I/O). Any thread. */
gboolean ptags_clients_cached_uid(PtagsClients *c, const char *sender, uid_t *uid);

/* Learn the uid behind @sender (asked of the bus once per connection). */
void ptags_clients_get_uid(PtagsClients *c, const char *sender, PtagsClientUidFunc done,
                           gpointer data);

/* LimitExceeded when @sender (a connection of @uid) or @uid as a whole has
 * more unread reply bytes than its budget. Any thread. */
gboolean ptags_clients_check_unread(PtagsClients *c, const char *sender, uid_t uid, GError **error);

/* Count @bytes of a reply just sent to @sender (any thread). Once enough is outstanding,
 * ptagsd pings the connection (org.freedesktop.DBus.Peer.Ping): the answer
 * comes after the client has read every earlier reply, which un-counts them. */
void ptags_clients_sent(PtagsClients *c, const char *sender, gsize bytes);

/* Queue a read (an "expensive call") of @uid: @run(@data) is called from the main loop,
 * in turn with the queued calls of other uids (round robin). LimitExceeded
 * when @uid already has MaxExpensiveCalls queued or running. Calls still
 * queued when @c is freed get @drop(@data) instead. */
gboolean ptags_clients_queue_expensive(PtagsClients *c, uid_t uid, PtagsClientRunFunc run,
                                       GDestroyNotify drop, gpointer data, GError **error);
/* A queued call of @uid has finished (replied). */
void ptags_clients_expensive_done(PtagsClients *c, uid_t uid);
