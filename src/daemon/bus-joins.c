// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-joins.c: when each live connection joined the bus, at the latest.
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
 * new unique name, before any message of that connection) and as it leaves,
 * and hands unique names out in increasing order: ":MAJOR.MINOR" on
 * dbus-daemon, ":1.ID" on dbus-broker. The announcements are read off the
 * socket in GDBus's worker thread (a filter), before the main loop sees the
 * calls they precede, so a busy main loop does not make the bounds later.
 *
 * Every connection seen joining is kept, with the time ptagsd read its
 * announcement, until it leaves: so each live connection is dated by its own
 * join, however many joined since. A name never seen joined before the watch
 * began (older than every name seen) or was not announced yet (newer): both
 * are bounded by the watch's start. Any other name left the bus, or its
 * announcement was lost: it cannot be told, and no process counts as its
 * opener.
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

/* The live connections kept at most (24 bytes each, at most as many again
 * for those that left and are not yet dropped). The bus limits connections
 * far below this. Past it the oldest live one is forgotten: like one that
 * left, it then cannot be told (FALSE), and neither can any name seen below
 * it, none of them live. Fail-closed: a process is refused, never let in. */
#define LIVE_KEPT 65536

typedef struct {
        guint64 major, minor; /* the unique name ":MAJOR.MINOR" */
} Serial;

typedef struct {
        Serial serial;
        guint64 seen_ns; /* CLOCK_BOOTTIME, when ptagsd read the announcement;
                          * 0 once the connection left */
} Join;

/* The filter writes from GDBus's worker thread, peer lookups read from the
 * main loop. (A pthread mutex rather than GMutex, so ThreadSanitizer sees it.) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        GDBusConnection *bus;
        guint filter;
        gboolean watching;
        guint64 since_ns; /* every join after this was seen */
        GArray *table;    /* of Join, in the bus's order: every live one seen */
        guint live;       /* entries of table still live; the others left */
        gboolean seen;    /* a join, the first and last seen since the watch */
        Serial first, last;
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

static Join *entry(guint i)
{
        return &g_array_index(joins.table, Join, i);
}

/* The index of the first entry at or after @serial. */
static guint find(Serial serial)
{
        guint lo = 0, hi = joins.table->len;

        while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                if (serial_cmp(entry(mid)->serial, serial) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Marks @join as gone; once most entries are, drops them. */
static void forget(Join *join)
{
        join->seen_ns = 0;
        joins.live--;
        if (joins.table->len - joins.live <= joins.live)
                return;
        guint kept = 0;
        for (guint i = 0; i < joins.table->len; i++)
                if (entry(i)->seen_ns != 0)
                        *entry(kept++) = *entry(i);
        g_array_set_size(joins.table, kept);
}

static void record_join(Serial serial)
{
        /* Kept in the bus's order; a name out of it is never kept, and
         * lies within the names seen: it cannot be told. */
        if (joins.seen && serial_cmp(joins.last, serial) >= 0)
                return;
        if (!joins.seen)
                joins.first = serial;
        joins.seen = TRUE;
        joins.last = serial;
        if (joins.live == LIVE_KEPT) {
                guint oldest = 0;
                while (entry(oldest)->seen_ns == 0)
                        oldest++;
                forget(entry(oldest));
        }
        g_array_append_val(joins.table, ((Join){serial, boottime_ns()}));
        joins.live++;
}

static void record_leave(Serial serial)
{
        guint i = find(serial);

        if (i < joins.table->len && serial_cmp(entry(i)->serial, serial) == 0 &&
            entry(i)->seen_ns != 0)
                forget(entry(i));
}

static void record(const char *name, gboolean joined)
{
        Serial serial;

        if (!serial_parse(name, &serial))
                return;
        pthread_mutex_lock(&lock);
        if (joins.table != NULL) {
                if (joined)
                        record_join(serial);
                else
                        record_leave(serial);
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
                record(name, TRUE);
        else if (name[0] == ':' && new_owner[0] == '\0' && strcmp(name, old_owner) == 0)
                record(name, FALSE);
        return message;
}

#define NAME_OWNER_CHANGED_RULE                                                                    \
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"            \
        "member='NameOwnerChanged',path='/org/freedesktop/DBus'"

gboolean ptags_bus_joins_watch(GDBusConnection *bus, GError **error)
{
        g_return_val_if_fail(joins.bus == NULL, FALSE);

        pthread_mutex_lock(&lock);
        joins.table = g_array_new(FALSE, FALSE, sizeof(Join));
        joins.live = 0;
        joins.seen = FALSE;
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
        g_clear_pointer(&joins.table, g_array_unref);
        joins.live = 0;
        joins.seen = FALSE;
        pthread_mutex_unlock(&lock);
}

/* The latest time @serial can have joined: when its join was seen, or the
 * watch's start for a name never seen; 0 when that cannot be told. */
static guint64 joined_by(Serial serial)
{
        /* Never seen and newer than every name seen: none was seen yet (it
         * joined before the watch), or its announcement is not read yet or
         * was lost (then the watch's start is earlier than its join:
         * stricter, never wrong). Older than the first name seen: it joined
         * before the watch. */
        if (!joins.seen || serial_cmp(serial, joins.last) > 0 ||
            serial_cmp(serial, joins.first) < 0)
                return joins.since_ns;
        /* Otherwise it left (or was forgotten past LIVE_KEPT), or its
         * announcement was lost. */
        guint i = find(serial);
        if (i == joins.table->len || serial_cmp(entry(i)->serial, serial) != 0)
                return 0;
        return entry(i)->seen_ns; /* 0 once it left */
}

gboolean ptags_bus_joins_may_have_opened(const char *unique_name, guint64 start_ticks)
{
        Serial serial;
        long ticks_per_s = sysconf(_SC_CLK_TCK);

        /* A start of 0 is one that could not be read. */
        if (!serial_parse(unique_name, &serial) || start_ticks == 0)
                return FALSE;
        if (ticks_per_s <= 0 || start_ticks > G_MAXUINT64 / G_GUINT64_CONSTANT(1000000000))
                return FALSE;
        /* The tick a process started in begins at or before its start. */
        guint64 started_ns = start_ticks * (G_GUINT64_CONSTANT(1000000000) / (guint64)ticks_per_s);

        pthread_mutex_lock(&lock);
        guint64 bound = joins.watching ? joined_by(serial) : 0;
        gboolean ok = bound != 0 && started_ns <= bound;
        pthread_mutex_unlock(&lock);
        return ok;
}
