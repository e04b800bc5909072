// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-stats.h: what the message bus itself reports about the bytes it holds
 * queued (dbus-daemon's org.freedesktop.DBus.Debug.Stats), and ptagsd's watch
 * over its own messages queued there, which pauses its signals before the
 * bus would stop reading from ptagsd. */
#pragma once

#include <gio/gio.h>

/* The watch: ptagsd's messages the bus holds for receivers that do not read
 * (dbus-daemon charges them to ptagsd, and stops reading from ptagsd at its
 * max_incoming_bytes, 127 MiB by default). Over HIGH, ptagsd's signals are
 * dropped until the bus holds less than LOW; over HARD by ptagsd's own count
 * of what it sent since the bus last answered, they are dropped at once. */
#define PTAGS_BUS_QUEUED_HIGH (16u * 1024u * 1024u)
#define PTAGS_BUS_QUEUED_LOW  (8u * 1024u * 1024u)
#define PTAGS_BUS_QUEUED_HARD (24u * 1024u * 1024u)
#define PTAGS_BUS_CHECK_STEP  (1024u * 1024u)
/* While paused, each signal goes as addressed copies to the subscribers
 * that read, at most this many bytes of copies per signal, and none while
 * the bus holds (by the same count) COPIES_HARD: subscribers that take
 * copies and then stop reading must not add up past the bus's limit. */
#define PTAGS_BUS_COPY_BYTES         (8u * 1024u * 1024u)
#define PTAGS_BUS_QUEUED_COPIES_HARD (28u * 1024u * 1024u)
#define PTAGS_BUS_RECHECK_MSEC       500u

typedef struct _PtagsBusStats PtagsBusStats;

/* Reads the bus's figures through @bus (ptagsd's connection) and installs
 * the watch on it. The main context current at the call runs every callback.
 * (transfer full: ptags_bus_stats_free) */
PtagsBusStats *ptags_bus_stats_new(GDBusConnection *bus);
void ptags_bus_stats_free(PtagsBusStats *s);

/* FALSE once the bus refused or lacked the Stats interface (dbus-broker, a
 * policy without it): no figures, and no watch. Any thread. */
gboolean ptags_bus_stats_available(PtagsBusStats *s);

/* @known FALSE: the bus gave no figure (and never will, see above). */
typedef void (*PtagsBusQueuedFunc)(gpointer data, gboolean known, guint64 queued);

/* Ask the bus how many bytes it holds queued for the connection @name
 * (messages from anyone, not yet written to its socket). @done runs on the
 * main context of ptags_bus_stats_new() (any thread may ask). */
void ptags_bus_stats_queued_for(PtagsBusStats *s, const char *name, PtagsBusQueuedFunc done,
                                gpointer data);

/* TRUE while ptagsd's signals are being dropped (tests, logs). Any thread. */
gboolean ptags_bus_stats_signals_paused(PtagsBusStats *s);
