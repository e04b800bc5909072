// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-stats.c: the bus's own figures of queued bytes (Debug.Stats), and the
 * watch that pauses ptagsd's signals before receivers that stop reading
 * them can make dbus-daemon stop reading ptagsd. */
#define G_LOG_DOMAIN "ptagsd-bus"

#include "bus-stats.h"

#include "budgets.h"
#include "handoff.h"
#include "names.h"

#include <pthread.h>
#include <string.h>

#define STATS_INTERFACE "org.freedesktop.DBus.Debug.Stats"

/* Reference counted: the bus filter and the questions in flight may outlive
 * ptags_bus_stats_free() (see g_dbus_connection_remove_filter()). */
struct _PtagsBusStats {
        GDBusConnection *bus;
        GMainContext *context;
        guint filter;
        gint refused; /* atomic: the bus gives no figures */
        gint freed;   /* atomic */

        /* Guards the watch below. Not a GMutex: ThreadSanitizer sees
         * pthread locks. */
        pthread_mutex_t lock;
        guint64 sent;          /* bytes ptagsd sent since the bus last answered */
        guint64 sent_at_query; /* of which were sent before the question in flight */
        guint64 queued;        /* ptagsd's messages the bus held at its last answer */
        gboolean checking;     /* a question (or a recheck timer) is pending */
        gboolean paused;       /* ptagsd's signals are being dropped */
        gboolean announced;    /* the pause was logged */
        guint64 dropped;       /* signals dropped during this pause */
        /* While paused, the subscribers that do read: each gets its own
         * copy of every signal (addressed to it, so the stalled ones get
         * none). NULL until the bus has told who they are. */
        GPtrArray *readers;
        gboolean listing; /* a look for them is under way */
};

static PtagsBusStats *stats_ref(PtagsBusStats *s)
{
        return g_atomic_rc_box_acquire(s);
}

static void stats_clear(gpointer p)
{
        PtagsBusStats *s = p;

        g_object_unref(s->bus);
        g_main_context_unref(s->context);
        pthread_mutex_destroy(&s->lock);
        g_clear_pointer(&s->readers, g_ptr_array_unref);
}

static void stats_unref(gpointer p)
{
        g_atomic_rc_box_release_full(p, stats_clear);
}

gboolean ptags_bus_stats_available(PtagsBusStats *s)
{
        return !g_atomic_int_get(&s->refused);
}

gboolean ptags_bus_stats_signals_paused(PtagsBusStats *s)
{
        pthread_mutex_lock(&s->lock);
        gboolean paused = s->paused;
        pthread_mutex_unlock(&s->lock);
        return paused;
}

/* --------------------------------------------------------------- questions */

typedef struct {
        PtagsBusStats *s;
        char *name;
        const char *field; /* "OutgoingBytes", or "IncomingBytes" for our own */
        PtagsBusQueuedFunc done;
        gpointer data;
} Question;

static void question_free(Question *q)
{
        stats_unref(q->s);
        g_free(q->name);
        g_free(q);
}

/* Whether an error says the bus will never answer this kind of question:
 * anything but a connection gone or a passing shortage. (dbus-broker knows
 * the method but answers Failed, "unimplemented".) */
static gboolean error_is_final(const GError *error)
{
        if (!g_dbus_error_is_remote_error(error))
                return FALSE; /* our own connection closing, a timeout */
        return !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) &&
               !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_MEMORY) &&
               !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED) &&
               !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) &&
               !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT) &&
               !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_TIMED_OUT) &&
               !g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_DISCONNECTED);
}

static void refuse(PtagsBusStats *s, const char *why)
{
        if (g_atomic_int_compare_and_exchange(&s->refused, FALSE, TRUE))
                g_message("the bus does not report queued bytes (%s): unread replies are "
                          "confirmed by Peer.Ping only, and ptagsd's signals are not watched "
                          "(on dbus-daemon a receiver that stops reading them can make the bus "
                          "stop reading ptagsd)",
                          why);
}

static void answered(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Question *q = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);
        guint32 bytes = 0;
        gboolean known = FALSE;

        if (reply != NULL) {
                g_autoptr(GVariant) dict = g_variant_get_child_value(reply, 0);
                known = g_variant_lookup(dict, q->field, "u", &bytes);
                if (!known)
                        refuse(q->s, "its statistics lack the byte counts");
        } else if (error_is_final(error)) {
                refuse(q->s, error->message);
        } else {
                g_debug("no statistics for %s: %s", q->name, error->message);
        }
        q->done(q->data, known, bytes);
        question_free(q);
}

static void ask(Question *q)
{
        if (g_atomic_int_get(&q->s->refused)) {
                q->done(q->data, FALSE, 0);
                question_free(q);
                return;
        }
        g_dbus_connection_call(q->s->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               STATS_INTERFACE, "GetConnectionStats", g_variant_new("(s)", q->name),
                               G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, -1, NULL,
                               answered, q);
}

static gboolean ask_now(gpointer data)
{
        ptags_handoff_taken();
        ask(data);
        return G_SOURCE_REMOVE;
}

/* On the main context, whichever thread asks (the answer runs there too),
 * and never before the asker returns: it may hold its own lock. */
static void ask_on_main(Question *q)
{
        GSource *idle = g_idle_source_new();

        g_source_set_priority(idle, G_PRIORITY_DEFAULT);
        g_source_set_callback(idle, ask_now, q, NULL);
        ptags_handoff_attach(idle, q->s->context);
        g_source_unref(idle);
}

void ptags_bus_stats_queued_for(PtagsBusStats *s, const char *name, PtagsBusQueuedFunc done,
                                gpointer data)
{
        Question *q = g_new0(Question, 1);

        q->s = stats_ref(s);
        q->name = g_strdup(name);
        q->field = "OutgoingBytes";
        q->done = done;
        q->data = data;
        ask_on_main(q);
}

/* ------------------------------------------------- asking about many
 *
 * What the bus holds for each of a list of connections, asked one at a
 * time (the bus bounds the calls one connection may have pending). */

#define HOLDER_BYTES (1024u * 1024u)

/* @queued[i] is what the bus holds for @names[i], G_MAXUINT64 if unknown. */
typedef void (*WalkDone)(PtagsBusStats *s, GPtrArray *names, const guint64 *queued);

typedef struct {
        PtagsBusStats *s;
        GPtrArray *names; /* unique names, ptagsd's own left out */
        GArray *queued;   /* guint64, one per name answered so far */
        WalkDone done;
} Walk;

static void walk_next(Walk *w);

static void walk_answered(gpointer data, gboolean known, guint64 queued)
{
        Walk *w = data;
        guint64 v = known ? queued : G_MAXUINT64;

        g_array_append_val(w->queued, v);
        walk_next(w);
}

static void walk_next(Walk *w)
{
        if (w->queued->len < w->names->len) {
                ptags_bus_stats_queued_for(w->s, w->names->pdata[w->queued->len], walk_answered, w);
                return;
        }
        w->done(w->s, w->names, (const guint64 *)w->queued->data);
        stats_unref(w->s);
        g_ptr_array_unref(w->names);
        g_array_unref(w->queued);
        g_free(w);
}

/* Ask about every connection in @names (transfer full) but ptagsd's own. */
static void walk_start(PtagsBusStats *s, GPtrArray *names, WalkDone done)
{
        Walk *w = g_new0(Walk, 1);
        const char *own = g_dbus_connection_get_unique_name(s->bus);

        for (guint i = names->len; i-- > 0;) {
                const char *name = names->pdata[i];
                if (name[0] != ':' || g_strcmp0(name, own) == 0)
                        g_ptr_array_remove_index(names, i);
        }
        w->s = stats_ref(s);
        w->names = names;
        w->queued = g_array_new(FALSE, FALSE, sizeof(guint64));
        w->done = done;
        walk_next(w);
}

/* ------------------------------------------------------------ the holders
 *
 * When the signals pause, name the connections the bus holds much for, so
 * an administrator sees who stopped reading. */

typedef struct {
        char *name;
        guint64 queued;
} Holder;

static void holder_credentials(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Holder *h = user_data;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, NULL);
        guint32 uid = G_MAXUINT32, pid = 0;

        if (reply != NULL) {
                g_autoptr(GVariant) dict = g_variant_get_child_value(reply, 0);
                g_variant_lookup(dict, "UnixUserID", "u", &uid);
                g_variant_lookup(dict, "ProcessID", "u", &pid);
        }
        g_warning("connection %s (uid %d, pid %u) is not reading: the bus holds %" G_GUINT64_FORMAT
                  " bytes for it",
                  h->name, uid == G_MAXUINT32 ? -1 : (int)uid, pid, h->queued);
        g_free(h->name);
        g_free(h);
}

static void holders_walked(PtagsBusStats *s, GPtrArray *names, const guint64 *queued)
{
        for (guint i = 0; i < names->len; i++) {
                if (queued[i] == G_MAXUINT64 || queued[i] < HOLDER_BYTES)
                        continue;
                Holder *h = g_new0(Holder, 1);
                h->name = g_strdup(names->pdata[i]);
                h->queued = queued[i];
                g_dbus_connection_call(s->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "GetConnectionCredentials",
                                       g_variant_new("(s)", h->name), G_VARIANT_TYPE("(a{sv})"),
                                       G_DBUS_CALL_FLAGS_NONE, -1, NULL, holder_credentials, h);
        }
}

static void holders_listed(GObject *source, GAsyncResult *res, gpointer user_data)
{
        PtagsBusStats *s = user_data;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, NULL);
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

        if (reply != NULL) {
                g_autoptr(GVariantIter) iter = NULL;
                const char *name;
                g_variant_get(reply, "(as)", &iter);
                while (g_variant_iter_next(iter, "&s", &name))
                        g_ptr_array_add(names, g_strdup(name));
        }
        walk_start(s, names, holders_walked);
        stats_unref(s);
}

static void report_holders(PtagsBusStats *s)
{
        g_dbus_connection_call(s->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "ListNames", NULL, G_VARIANT_TYPE("(as)"),
                               G_DBUS_CALL_FLAGS_NONE, -1, NULL, holders_listed, stats_ref(s));
}

/* ------------------------------------------------ subscribers that read
 *
 * A pause must not silence ptagsd for everyone because one receiver
 * stopped reading. The bus lists every connection's match rules
 * (Debug.Stats.GetAllMatchRules); those with a rule that can match
 * ptagsd's signals, and for which the bus holds less than HOLDER_BYTES,
 * get addressed copies while the pause lasts. */

/* One "key='value'" of a match rule: does @rule say @key, and is it @want
 * (or one of @want2)? Absent keys match anything. */
static gboolean rule_allows(char **fields, const char *key, const char *want, const char *want2)
{
        size_t n = strlen(key);

        for (char **f = fields; *f != NULL; f++) {
                const char *v = *f;
                while (g_ascii_isspace(*v))
                        v++;
                if (strncmp(v, key, n) != 0 || v[n] != '=')
                        continue;
                v += n + 1;
                g_autofree char *value =
                        v[0] == '\'' ? g_strndup(v + 1, strcspn(v + 1, "'")) : g_strdup(v);
                return g_strcmp0(value, want) == 0 || (want2 != NULL && strcmp(value, want2) == 0);
        }
        return TRUE;
}

/* Whether a connection with match rule @rule may want ptagsd's signals. A
 * rule too clever for this reading gets the copies: a receiver drops what
 * it did not ask for. */
static gboolean rule_wants_ours(const char *rule, const char *own)
{
        g_auto(GStrv) fields = g_strsplit(rule, ",", -1);

        return rule_allows(fields, "type", "signal", NULL) &&
               rule_allows(fields, "sender", PTAGS_BUS_NAME, own) &&
               rule_allows(fields, "interface", PTAGS_INTERFACE, NULL) &&
               rule_allows(fields, "path", PTAGS_OBJECT_PATH, NULL);
}

static void readers_walked(PtagsBusStats *s, GPtrArray *names, const guint64 *queued)
{
        GPtrArray *readers = g_ptr_array_new_with_free_func(g_free);

        for (guint i = 0; i < names->len; i++)
                if (queued[i] < HOLDER_BYTES)
                        g_ptr_array_add(readers, g_strdup(names->pdata[i]));
        pthread_mutex_lock(&s->lock);
        s->listing = FALSE;
        /* Kept from halfway to a pause on (see own_answered). */
        if (s->paused || s->queued >= PTAGS_BUS_QUEUED_LOW) {
                g_clear_pointer(&s->readers, g_ptr_array_unref);
                s->readers = g_steal_pointer(&readers);
        }
        pthread_mutex_unlock(&s->lock);
        if (readers != NULL)
                g_ptr_array_unref(readers);
}

static void rules_listed(GObject *source, GAsyncResult *res, gpointer user_data)
{
        PtagsBusStats *s = user_data;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, NULL);
        const char *own = g_dbus_connection_get_unique_name(s->bus);
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

        if (reply != NULL) {
                g_autoptr(GVariantIter) iter = NULL;
                const char *name;
                GVariantIter *rules;
                g_variant_get(reply, "(a{sas})", &iter);
                while (g_variant_iter_next(iter, "{&sas}", &name, &rules)) {
                        const char *rule;
                        gboolean wants = FALSE;
                        while (g_variant_iter_next(rules, "&s", &rule))
                                wants = wants || rule_wants_ours(rule, own);
                        g_variant_iter_free(rules);
                        if (wants)
                                g_ptr_array_add(names, g_strdup(name));
                }
        }
        walk_start(s, names, readers_walked);
        stats_unref(s);
}

/* Look (again) for the subscribers that read. */
static void list_readers(PtagsBusStats *s)
{
        pthread_mutex_lock(&s->lock);
        gboolean busy = s->listing;
        s->listing = TRUE;
        pthread_mutex_unlock(&s->lock);
        if (busy)
                return;
        g_dbus_connection_call(s->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               STATS_INTERFACE, "GetAllMatchRules", NULL,
                               G_VARIANT_TYPE("(a{sas})"), G_DBUS_CALL_FLAGS_NONE, -1, NULL,
                               rules_listed, stats_ref(s));
}

/* -------------------------------------------------------------- the watch */

static void check_own(PtagsBusStats *s);

static gboolean recheck(gpointer data)
{
        PtagsBusStats *s = data;

        if (!g_atomic_int_get(&s->freed))
                check_own(s);
        return G_SOURCE_REMOVE;
}

static void own_answered(gpointer data, gboolean known, guint64 queued)
{
        PtagsBusStats *s = data;
        gboolean announce = FALSE, resumed = FALSE, again = FALSE, later = FALSE;
        guint64 dropped = 0;

        if (g_atomic_int_get(&s->freed))
                return;
        pthread_mutex_lock(&s->lock);
        if (!known) {
                /* No figure: stop watching (the bus refused) or try again
                 * at the next step of sent bytes. */
                s->checking = FALSE;
                s->paused = FALSE;
                pthread_mutex_unlock(&s->lock);
                return;
        }
        s->queued = queued;
        s->sent -= MIN(s->sent, s->sent_at_query);
        s->sent_at_query = 0;
        if (!s->paused && queued >= PTAGS_BUS_QUEUED_HIGH)
                s->paused = TRUE;
        if (s->paused && !s->announced) {
                s->announced = TRUE;
                announce = TRUE;
        }
        if (s->paused && queued < PTAGS_BUS_QUEUED_LOW &&
            queued + s->sent < PTAGS_BUS_QUEUED_HARD) {
                s->paused = FALSE;
                s->announced = FALSE;
                resumed = TRUE;
                dropped = s->dropped;
                s->dropped = 0;
                g_clear_pointer(&s->readers, g_ptr_array_unref);
        }
        /* Halfway to a pause, learn who reads, so that a pause loses no
         * signal while the bus is asked; forget them once well below. */
        gboolean prefetch = !s->paused && queued >= PTAGS_BUS_QUEUED_LOW;
        if (!s->paused && queued < PTAGS_BUS_QUEUED_LOW)
                g_clear_pointer(&s->readers, g_ptr_array_unref);
        /* Paused: look again shortly, whatever ptagsd sends meanwhile. */
        if (s->paused)
                later = TRUE;
        else if (s->sent >= PTAGS_BUS_CHECK_STEP)
                again = TRUE;
        else
                s->checking = FALSE;
        pthread_mutex_unlock(&s->lock);

        if (announce) {
                g_warning("signals paused: the bus holds %" G_GUINT64_FORMAT " bytes of ptagsd's "
                          "messages for receivers that do not read them (over %u); until it "
                          "holds less than %u, TagsChanged and the container signals go only "
                          "to the subscribers that read, one addressed copy each",
                          queued, PTAGS_BUS_QUEUED_HIGH, PTAGS_BUS_QUEUED_LOW);
                report_holders(s);
        }
        if (resumed)
                g_message("signals resumed: the bus holds %" G_GUINT64_FORMAT
                          " bytes of ptagsd's messages; %" G_GUINT64_FORMAT " signals were dropped",
                          queued, dropped);
        if (later || prefetch)
                list_readers(s); /* subscribers come, go and stop reading */
        if (later) {
                GSource *timer = g_timeout_source_new(PTAGS_BUS_RECHECK_MSEC);
                g_source_set_callback(timer, recheck, stats_ref(s), stats_unref);
                g_source_attach(timer, s->context);
                g_source_unref(timer);
        } else if (again) {
                check_own(s);
        }
}

/* Ask the bus what it holds of ptagsd's own messages (s->checking is set). */
static void check_own(PtagsBusStats *s)
{
        Question *q = g_new0(Question, 1);

        q->s = stats_ref(s);
        q->name = g_strdup(g_dbus_connection_get_unique_name(s->bus));
        q->field = "IncomingBytes";
        q->done = own_answered;
        q->data = s;
        pthread_mutex_lock(&s->lock);
        s->sent_at_query = s->sent;
        pthread_mutex_unlock(&s->lock);
        ask(q);
}

static gboolean check_own_now(gpointer data)
{
        PtagsBusStats *s = data;

        if (!g_atomic_int_get(&s->freed))
                check_own(s);
        return G_SOURCE_REMOVE;
}

/* Runs in GDBus's worker thread for every message ptagsd sends: counts its
 * bytes, asks the bus every PTAGS_BUS_CHECK_STEP of them, and drops our own
 * signals while paused. */
static GDBusMessage *watch_filter(GDBusConnection *bus, GDBusMessage *message, gboolean incoming,
                                  gpointer user_data)
{
        PtagsBusStats *s = user_data;

        if (incoming || g_atomic_int_get(&s->refused) || g_atomic_int_get(&s->freed))
                return message;
        GVariant *body = g_dbus_message_get_body(message);
        guint64 size = PTAGS_WIRE_HEADER_OVERHEAD + (body != NULL ? g_variant_get_size(body) : 0);
        /* Broadcasts are paused; the addressed copies sent below come back
         * through here and are held to their own bound. */
        gboolean signal = g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_SIGNAL &&
                          g_strcmp0(g_dbus_message_get_interface(message), PTAGS_INTERFACE) == 0;
        gboolean ours = signal && g_dbus_message_get_destination(message) == NULL;
        gboolean drop = FALSE, kick = FALSE;
        g_autoptr(GPtrArray) readers = NULL;

        pthread_mutex_lock(&s->lock);
        guint64 held = s->queued + s->sent + size;
        if (ours && !s->paused && held >= PTAGS_BUS_QUEUED_HARD)
                s->paused = TRUE; /* no time to wait for the bus's answer */
        if (ours && s->paused) {
                drop = TRUE;
                /* No copy would pass its bound: the signal reaches no one. */
                if (s->readers != NULL && held < PTAGS_BUS_QUEUED_COPIES_HARD)
                        readers = g_ptr_array_ref(s->readers);
                else
                        s->dropped++;
        } else if (signal && held >= PTAGS_BUS_QUEUED_COPIES_HARD) {
                /* An addressed copy is held to a bound too: each costs
                 * ptagsd its whole size (a broadcast, once), and the
                 * subscribers that take them may be many and read none.
                 * (Not counted among the signals dropped for everyone.) */
                drop = TRUE;
        } else {
                s->sent += size;
        }
        if (!s->checking && (s->paused || s->sent >= PTAGS_BUS_CHECK_STEP)) {
                s->checking = TRUE;
                kick = TRUE;
        }
        pthread_mutex_unlock(&s->lock);

        if (kick) {
                GSource *idle = g_idle_source_new();
                g_source_set_priority(idle, G_PRIORITY_HIGH);
                g_source_set_callback(idle, check_own_now, stats_ref(s), stats_unref);
                g_source_attach(idle, s->context);
                g_source_unref(idle);
        }
        if (drop && readers != NULL) {
                /* Sent from here, the copies queue behind this write and
                 * come back through this filter as addressed messages. At
                 * most PTAGS_BUS_COPY_BYTES of them per signal: many
                 * subscribers must not multiply ptagsd's output without
                 * bound (the bus fans a broadcast out at its own cost). */
                guint most = (guint)MAX(1, PTAGS_BUS_COPY_BYTES / size);
                if (readers->len > most)
                        g_debug("%s: copies for %u of %u subscribers",
                                g_dbus_message_get_member(message), most, readers->len);
                for (guint i = 0; i < readers->len && i < most; i++) {
                        g_autoptr(GDBusMessage) copy = g_dbus_message_copy(message, NULL);
                        if (copy == NULL)
                                continue;
                        g_dbus_message_set_destination(copy, readers->pdata[i]);
                        g_dbus_connection_send_message(bus, copy, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                                       NULL, NULL);
                }
        } else if (drop) {
                g_debug("dropped %s: the bus holds too much of ptagsd's output",
                        g_dbus_message_get_member(message));
        }
        if (drop) {
                g_object_unref(message);
                return NULL;
        }
        return message;
}

/* --------------------------------------------------------------- lifetime */

PtagsBusStats *ptags_bus_stats_new(GDBusConnection *bus)
{
        PtagsBusStats *s = g_atomic_rc_box_new0(PtagsBusStats);

        s->bus = g_object_ref(bus);
        s->context = g_main_context_ref_thread_default();
        pthread_mutex_init(&s->lock, NULL);
        s->filter = g_dbus_connection_add_filter(bus, watch_filter, stats_ref(s), stats_unref);
        /* A first look, which also learns whether the bus answers at all. */
        s->checking = TRUE;
        check_own(s);
        return s;
}

void ptags_bus_stats_free(PtagsBusStats *s)
{
        if (s == NULL)
                return;
        g_atomic_int_set(&s->freed, TRUE);
        g_dbus_connection_remove_filter(s->bus, s->filter);
        stats_unref(s);
}
