// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* peer-cache.h: who is behind each bus connection, remembered per unique name
 * until the bus says the connection left (unique names are never reused). */
#pragma once

#include <gio/gio.h>

#include "target.h"

typedef struct _PtagsPeerCache PtagsPeerCache;

/* (transfer full: ptags_peer_cache_free) */
PtagsPeerCache *ptags_peer_cache_new(GDBusConnection *connection);
void ptags_peer_cache_free(PtagsPeerCache *cache);

/* The peer behind @bus_name: ptags_peer_lookup_async of the connection
 * (a well-known name's owner first found with GetNameOwner), answered
 * without that round trip for a connection seen before. A cached caller
 * whose process has exited, run another program or gained a privilege
 * since is unknown from then on, by whichever name it is asked about. */
void ptags_peer_cache_lookup_async(PtagsPeerCache *cache, const char *bus_name,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data);
/* (transfer full: ptags_peer_free) */
PtagsPeer *ptags_peer_cache_lookup_finish(GAsyncResult *result, GError **error);

/* The cached peer behind unique name @bus_name, or NULL without a bus
 * round trip; whether its process still runs is for the caller to check.
 * Safe to call from any thread. (transfer full: ptags_peer_free) */
PtagsPeer *ptags_peer_cache_get(PtagsPeerCache *cache, const char *bus_name);

/* Entries held now (tests). */
guint ptags_peer_cache_size(PtagsPeerCache *cache);
