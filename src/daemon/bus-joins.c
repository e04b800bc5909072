// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-joins.c: when each connection joined the bus, at the latest.
 *
 * Without a ProcessFD the bus reports the pid of the process that called
 * connect(). That process may have exited while a child kept the socket, and
 * its pid may since belong to another process of the same uid, one holding
 * tags the connection's own process lacks. A process that started after the
 * connection joined the bus cannot have opened it, and a pid is taken again
 * only after a full turn of the pid space, so it is the later process that
 * is caught.
 *
 * The bus announces each connection as it joins (NameOwnerChanged for its
 * new unique name, before any message of that connection) and hands unique
 * names out in increasing order: ":MAJOR.MINOR" on dbus-daemon, ":1.ID" on
 * dbus-broker. So the time ptagsd saw a name announced, or any later name,
 * bounds when that connection joined; a name never seen joined before the
 * watch began. The announcements are read off the socket in GDBus's worker
 * thread (a filter), before the main loop sees the calls they precede, so a
 * busy main loop does not make the bounds later.
 *
 * The bound is the join (Hello), not connect(): a connection may wait up to
 * the bus's authentication timeout (5 s by default on the system bus) in
 * between, and a pid taken again in that gap is not caught. */
#define G_LOG_DOMAIN "ptagsd-peer"

#include "bus-joins.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The last joins kept: 24 bytes each. A connection that joined before all
 * of them is bounded by the oldest kept, later than its own join: looser,
 * never wrong. */
#define JOINS_KEPT 2048

typedef struct {
        guint64 major, minor; /* the unique name ":MAJOR.MINOR" */
} Serial;

typedef struct {
        Serial serial;
        guint64 seen_ns; /* CLOCK_BOOTTIME, when ptagsd read the announcement */
} Join;

/* The filter writes from GDBus's worker thread, peer lookups read from the
 * main loop. (A pthread mutex rather than GMutex, so ThreadSanitizer sees it.) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        GDBusConnection *bus;
        guint filter;
        gboolean watching;
        guint64 since_ns; /* every join after this was seen */
        Join *ring;       /* oldest at (next - len) mod JOINS_KEPT */
        guint next, len;
        gboolean dropped; /* a join older than the oldest kept was seen */
} joins;

static guint64 boottime_ns(void)
{
        struct timespec now;

        clock_gettime(CLOCK_BOOTTIME, &now);
        return (guint64)now.tv_sec * G_GUINT64_CONSTANT(1000000000) + (guint64)now.tv_nsec;
}

static gboolean serial_parse(const char *name, Serial *out)
{
        if (name[0] != ':')
                return FALSE;
        const char *dot = strchr(name, '.');
        if (dot == NULL || dot == name + 1)
                return FALSE;
        g_autofree char *major = g_strndup(name + 1, (gsize)(dot - name - 1));
        return g_ascii_string_to_unsigned(major, 10, 0, G_MAXUINT64, &out->major, NULL) &&
               g_ascii_string_to_unsigned(dot + 1, 10, 0, G_MAXUINT64, &out->minor, NULL);
}

static int serial_cmp(Serial a, Serial b)
{
        if (a.major != b.major)
                return a.major < b.major ? -1 : 1;
        return a.minor < b.minor ? -1 : a.minor > b.minor;
}

static Join *kept(guint i)
{
        return &joins.ring[(joins.next + JOINS_KEPT - joins.len + i) % JOINS_KEPT];
}

static void record(const char *name)
{
        Serial serial;

        if (!serial_parse(name, &serial))
                return;
        pthread_mutex_lock(&lock);
        /* Kept in the bus's order; one out of it would only loosen bounds. */
        if (joins.ring != NULL &&
            (joins.len == 0 || serial_cmp(kept(joins.len - 1)->serial, serial) < 0)) {
                joins.ring[joins.next] = (Join){serial, boottime_ns()};
                joins.next = (joins.next + 1) % JOINS_KEPT;
                if (joins.len < JOINS_KEPT)
                        joins.len++;
                else
                        joins.dropped = TRUE;
        }
        pthread_mutex_unlock(&lock);
}

static GDBusMessage *join_filter(GDBusConnection *bus, GDBusMessage *message, gboolean incoming,
                                 gpointer user_data)
{
        if (!incoming || g_dbus_message_get_message_type(message) != G_DBUS_MESSAGE_TYPE_SIGNAL ||
            g_strcmp0(g_dbus_message_get_member(message), "NameOwnerChanged") != 0 ||
            g_strcmp0(g_dbus_message_get_interface(message), "org.freedesktop.DBus") != 0 ||
            /* The bus sets the sender: no connection can claim this one. */
            g_strcmp0(g_dbus_message_get_sender(message), "org.freedesktop.DBus") != 0)
                return message;
        GVariant *body = g_dbus_message_get_body(message);
        const char *name, *old_owner, *new_owner;
        if (body == NULL || !g_variant_is_of_type(body, G_VARIANT_TYPE("(sss)")))
                return message;
        g_variant_get(body, "(&s&s&s)", &name, &old_owner, &new_owner);
        if (name[0] == ':' && old_owner[0] == '\0' && strcmp(name, new_owner) == 0)
                record(name);
        return message;
}

#define NAME_OWNER_CHANGED_RULE                                                                    \
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"            \
        "member='NameOwnerChanged',path='/org/freedesktop/DBus'"

gboolean ptags_bus_joins_watch(GDBusConnection *bus, GError **error)
{
        g_return_val_if_fail(joins.bus == NULL, FALSE);

        pthread_mutex_lock(&lock);
        joins.ring = g_new(Join, JOINS_KEPT);
        joins.next = joins.len = 0;
        joins.dropped = FALSE;
        pthread_mutex_unlock(&lock);
        joins.bus = g_object_ref(bus);
        joins.filter = g_dbus_connection_add_filter(bus, join_filter, NULL, NULL);
        /* The bus applies the rule before it answers: every name handed out
         * after the reply was seen by the filter, installed before. */
        g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "AddMatch", g_variant_new("(s)", NAME_OWNER_CHANGED_RULE), NULL,
                G_DBUS_CALL_FLAGS_NONE, -1, NULL, error);
        if (reply == NULL) {
                g_prefix_error(error, "cannot watch connections join the bus: ");
                ptags_bus_joins_unwatch();
                return FALSE;
        }
        pthread_mutex_lock(&lock);
        joins.since_ns = boottime_ns();
        joins.watching = TRUE;
        pthread_mutex_unlock(&lock);
        return TRUE;
}

void ptags_bus_joins_unwatch(void)
{
        if (joins.bus == NULL)
                return;
        g_dbus_connection_remove_filter(joins.bus, joins.filter);
        g_clear_object(&joins.bus);
        pthread_mutex_lock(&lock);
        joins.watching = FALSE;
        g_clear_pointer(&joins.ring, g_free);
        joins.next = joins.len = 0;
        pthread_mutex_unlock(&lock);
}

/* The latest time @serial can have joined: the sighting of the first kept
 * name at or after it, or the watch's start for a name never seen. */
static guint64 joined_by(Serial serial)
{
        guint lo = 0, hi = joins.len;

        while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                if (serial_cmp(kept(mid)->serial, serial) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Never seen and newer than every name seen: none was seen yet (it
         * joined before the watch), or its announcement was lost (then the
         * watch's start is earlier than its join: stricter, never wrong). */
        if (lo == joins.len)
                return joins.since_ns;
        if (lo == 0 && !joins.dropped && serial_cmp(kept(0)->serial, serial) != 0)
                return joins.since_ns; /* older than the first name seen */
        return kept(lo)->seen_ns;
}

gboolean ptags_bus_joins_may_have_opened(const char *unique_name, guint64 start_ticks)
{
        Serial serial;
        long ticks_per_s = sysconf(_SC_CLK_TCK);

        if (!serial_parse(unique_name, &serial))
                return FALSE;
        if (ticks_per_s <= 0 || start_ticks > G_MAXUINT64 / G_GUINT64_CONSTANT(1000000000))
                return FALSE;
        /* The tick a process started in begins at or before its start. */
        guint64 started_ns = start_ticks * (G_GUINT64_CONSTANT(1000000000) / (guint64)ticks_per_s);

        pthread_mutex_lock(&lock);
        gboolean ok = joins.watching && started_ns <= joined_by(serial);
        pthread_mutex_unlock(&lock);
        return ok;
}
