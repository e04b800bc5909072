// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-joins.h: when each connection joined the bus, at the latest, so that
 * a process started later is never taken for the one that opened it. */
#pragma once

#include <gio/gio.h>

/* Start watching connections join @bus: from the moment this returns TRUE,
 * every unique name the bus hands out is seen. Call once, before serving. */
gboolean ptags_bus_joins_watch(GDBusConnection *bus, GError **error);
void ptags_bus_joins_unwatch(void);

/* Whether a process that started at @start_ticks (clock ticks since boot,
 * as /proc/PID/stat gives them) may have opened the connection called
 * @unique_name: FALSE when it started after the connection joined the bus,
 * and when that cannot be told (no watch, a name of an unknown form, a
 * connection that left the bus, a start of 0). */
gboolean ptags_bus_joins_may_have_opened(const char *unique_name, guint64 start_ticks);
