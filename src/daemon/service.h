// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* service.h: the state of the one exported object that every handler
 * (manager.c, manager-change.c, manager-container.c) and every call shares. */
#pragma once

#include "authority.h"
#include "backend.h"
#include "budgets.h"
#include "clients.h"
#include "bus-thread.h"
#include "manager.h"
#include "peer-cache.h"
#include "ptags-manager-generated.h"
#include "registry.h"

struct _PtagsService {
        GDBusConnection *connection;
        PtagsManager *skeleton;
        PtagsBackend *backend;
        PtagsAuthority *authority;
        GHashTable *reauthorizing; /* pid -> GQueue of Call waiting to apply */
        PtagsPeerCache *peers;
        PtagsRegistry *registry; /* audit containers (manager-container.c) */
        /* IDs dropped before ptagsd owned its name (containers whose
         * processes ended while it was down), signalled once it does */
        GArray *removed_before_serving; /* guint64; NULL once serving */
        PtagsLimits limits;
        PtagsClients *clients;
        PtagsByteCache *byte_cache; /* for the per-uid budgets */
        GHashTable *leaving;        /* unique name -> its calls waiting for polkit (call.c) */
        guint leaving_watch;
        PtagsBusThread *bus_thread; /* what GDBus's worker thread answers */
        GHashTable *looking_up;     /* bus name -> GQueue of calls waiting for its lookup */
        GHashTable *in_progress;    /* unique name -> how many of its calls live (call.c) */
};
