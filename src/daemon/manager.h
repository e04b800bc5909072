// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager.h: the one exported object, /org/ptags/Manager, whose handlers
 * answer every org.ptags.Manager method. */
#pragma once

#include <gio/gio.h>

#include "authority.h"
#include "backend.h"
#include "budgets.h"

typedef struct _PtagsService PtagsService;

/* Export the manager on @connection with the budgets @limits (copied).
 * Borrows @backend and @authority, which must outlive the service.
 * (transfer full: ptags_service_free) */
PtagsService *ptags_service_new(GDBusConnection *connection, PtagsBackend *backend,
                                PtagsAuthority *authority, const PtagsLimits *limits,
                                GError **error);
void ptags_service_free(PtagsService *svc);

/* Connect the change methods (manager-change.c) to the service's skeleton. */
void ptags_manager_connect_changes(PtagsService *svc);
/* Run the change @message (AddTag, RemoveTag, SetValue, SetKeep or Apply,
 * of the signature it declares) from @caller (transfer full, known:
 * call_known_peer) to its reply in the bus thread, holding the main loop's
 * lock; only for a call that never waits (bus-thread.c). */
void ptags_manager_change_in_bus_thread(PtagsService *svc, GDBusMessage *message,
                                        PtagsPeer *caller);

/* Load the container registry and connect the container methods
 * (manager-container.c); ptags_manager_free_containers undoes it. */
void ptags_manager_connect_containers(PtagsService *svc);
void ptags_manager_free_containers(PtagsService *svc);

/* ptagsd owns its bus name: signal what happened before anyone could
 * hear it. */
void ptags_manager_serving(PtagsService *svc);
