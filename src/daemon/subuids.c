// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* subuids.c: the ranges of subordinate uids, and whose budgets each uid
 * draws on (subuids.h). */
#define G_LOG_DOMAIN "ptagsd-subuids"

#include "subuids.h"

#include <errno.h>
#include <gio/gio.h>
#include <pthread.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* No real /etc/subuid comes near this (a line per user); past it the file
 * is not read, and the table stays as it was. */
#define SUBUID_FILE_MAX_BYTES (16u * 1024u * 1024u)

/* Root hands out its ranges a container at a time, 65536 uids each (LXD's
 * isolated maps): each such block draws on a budget of its own. */
#define ROOT_BLOCK_UIDS 65536u

typedef struct {
        guint32 first;
        guint32 last;   /* inclusive */
        uid_t budget;   /* whose budgets its uids draw on; 0: root's range, by block */
        guint32 origin; /* the line's own first uid (before overlaps were cut) */
} Range;

struct _PtagsSubuidTable {
        GArray *ranges;       /* Range, sorted, disjoint */
        guint skipped;        /* lines left out */
        guint unknown_owners; /* of them, for an owner the user database did not know */
};

/* A decimal uid without sign, spaces or excess; FALSE otherwise. */
static gboolean parse_u32(const char *text, guint64 max, guint64 *out)
{
        if (!g_ascii_isdigit(text[0]) || (text[0] == '0' && text[1] != '\0'))
                return FALSE;
        guint64 v = 0;
        for (const char *p = text; *p != '\0'; p++) {
                if (!g_ascii_isdigit(*p))
                        return FALSE;
                v = v * 10 + (guint64)(*p - '0');
                if (v > max)
                        return FALSE;
        }
        *out = v;
        return TRUE;
}

static gint range_by_first(gconstpointer a, gconstpointer b)
{
        const Range *x = a, *y = b;
        return x->first < y->first ? -1 : x->first > y->first;
}

typedef enum { LINE_OK, LINE_BAD, LINE_UNKNOWN_OWNER } LineResult;

/* One line "OWNER:FIRST:COUNT" into @r. */
static LineResult parse_line(const char *line, PtagsUserLookup lookup, Range *r)
{
        g_auto(GStrv) f = g_strsplit(line, ":", 0);
        guint64 owner, first, count;

        if (g_strv_length(f) != 3 || f[0][0] == '\0' || !parse_u32(f[1], G_MAXUINT32 - 1, &first) ||
            !parse_u32(f[2], G_MAXUINT32, &count) || count == 0 ||
            first + count - 1 > (guint64)G_MAXUINT32 - 1 || /* (uid_t)-1 is no uid */
            first == 0)                                     /* nor is root anyone's */
                return LINE_BAD;
        if (!parse_u32(f[0], G_MAXUINT32 - 1, &owner)) {
                uid_t uid;
                if (lookup == NULL || !lookup(f[0], &uid) || uid == (uid_t)-1)
                        return LINE_UNKNOWN_OWNER;
                owner = uid;
        }
        r->first = r->origin = (guint32)first;
        r->last = (guint32)(first + count - 1);
        r->budget = (uid_t)owner;
        return LINE_OK;
}

PtagsSubuidTable *ptags_subuid_table_parse(const char *text, PtagsUserLookup lookup)
{
        PtagsSubuidTable *t = g_new0(PtagsSubuidTable, 1);
        g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(Range));
        g_auto(GStrv) lines = g_strsplit(text != NULL ? text : "", "\n", 0);

        for (guint i = 0; lines[i] != NULL; i++) {
                const char *line = lines[i];
                Range r;
                if (line[0] == '\0' || line[0] == '#')
                        continue;
                LineResult result = parse_line(line, lookup, &r);
                if (result == LINE_OK)
                        g_array_append_val(all, r);
                else
                        t->skipped++;
                t->unknown_owners += result == LINE_UNKNOWN_OWNER;
        }
        /* Sorted by first uid (the earlier line first among equals), each
         * range cut to the uids no range before it holds. */
        g_array_sort(all, range_by_first);
        t->ranges = g_array_new(FALSE, FALSE, sizeof(Range));
        guint64 next_free = 0;
        for (guint i = 0; i < all->len; i++) {
                Range r = g_array_index(all, Range, i);
                if ((guint64)r.last < next_free)
                        continue;
                if ((guint64)r.first < next_free)
                        r.first = (guint32)next_free;
                g_array_append_val(t->ranges, r);
                next_free = (guint64)r.last + 1;
        }
        return t;
}

void ptags_subuid_table_free(PtagsSubuidTable *t)
{
        if (t == NULL)
                return;
        g_array_unref(t->ranges);
        g_free(t);
}

guint ptags_subuid_table_ranges(const PtagsSubuidTable *t)
{
        return t != NULL ? t->ranges->len : 0;
}

guint ptags_subuid_table_skipped(const PtagsSubuidTable *t)
{
        return t != NULL ? t->skipped : 0;
}

guint ptags_subuid_table_unknown_owners(const PtagsSubuidTable *t)
{
        return t != NULL ? t->unknown_owners : 0;
}

uid_t ptags_subuid_table_budget_uid(const PtagsSubuidTable *t, uid_t uid)
{
        if (t == NULL || uid == 0)
                return uid;
        /* The last range starting at or below @uid. */
        guint lo = 0, hi = t->ranges->len;
        while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                if (g_array_index(t->ranges, Range, mid).first <= uid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return uid;
        const Range *r = &g_array_index(t->ranges, Range, lo - 1);
        if (uid > r->last)
                return uid;
        if (r->budget != 0)
                return r->budget;
        /* Root's: the first uid of its block (never 0: no range holds 0). */
        return r->origin + (uid - r->origin) / ROOT_BLOCK_UIDS * ROOT_BLOCK_UIDS;
}

/* ------------------------------------------------------- the service's */

/* How often a lookup may look whether the file changed (one stat()):
 * shadow's tools write it anew and rename it over the old one. A watch
 * (GFileMonitor) would do without, but costs ptagsd half a MiB. */
#define LOOK_EVERY_US G_USEC_PER_SEC

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static PtagsSubuidTable *table; /* under table_lock */
/* The file, NULL when none: set and cleared by the main thread under
 * table_lock, which other threads read it under. */
static char *table_path;
static struct stat looked;      /* under table_lock: the file at the last look */
static gboolean looked_exists;  /* under table_lock */
static gint64 next_look_us;     /* under table_lock */
static guint reload_idle;       /* under table_lock: a read asked of the main loop */
static GCancellable *reloading; /* main thread: a read under way */
static gboolean reload_again;   /* main thread: the file changed during it */

static gboolean user_lookup(const char *name, uid_t *uid)
{
        long size = sysconf(_SC_GETPW_R_SIZE_MAX);
        g_autofree char *buf = g_malloc(size > 0 ? (gsize)size : 16384);
        struct passwd pw, *found = NULL;

        if (getpwnam_r(name, &pw, buf, size > 0 ? (size_t)size : 16384, &found) != 0 ||
            found == NULL)
                return FALSE;
        *uid = found->pw_uid;
        return TRUE;
}

/* The table in @path (an empty one when there is no such file), or NULL
 * when the file cannot be read. Asks the user database: runs in a thread
 * once the service serves. */
static PtagsSubuidTable *read_table(const char *path, GError **error)
{
        g_autofree char *text = NULL;
        gsize len = 0;
        g_autoptr(GError) local = NULL;

        if (!g_file_get_contents(path, &text, &len, &local)) {
                if (g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return ptags_subuid_table_parse("", NULL);
                g_propagate_error(error, g_steal_pointer(&local));
                return NULL;
        }
        if (len > SUBUID_FILE_MAX_BYTES || memchr(text, '\0', len) != NULL) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                            "%s: over %u bytes, or not text", path, SUBUID_FILE_MAX_BYTES);
                return NULL;
        }
        return ptags_subuid_table_parse(text, user_lookup);
}

/* A user database that does not know an owner yet (sssd still starting,
 * say) is asked again this often. */
#define UNKNOWN_OWNER_RETRY_SECONDS 60

static guint warned_skipped; /* main thread: lines left out, as last told */
static guint unknown_retry;  /* main thread: the next read for unknown owners */

static void reload(void);

static gboolean retry_unknown(gpointer data)
{
        unknown_retry = 0;
        reload();
        return G_SOURCE_REMOVE;
}

/* Tell of @t's left-out lines when their number changed, and read the file
 * again later while the user database does not know an owner. */
static void table_read(const PtagsSubuidTable *t)
{
        if (t->skipped != warned_skipped && t->skipped > 0)
                g_warning("%s: %u lines left out (%u for an owner the user database does not "
                          "know): not OWNER:FIRST:COUNT, an empty range, one holding uid 0 or "
                          "one past the last uid",
                          table_path, t->skipped, t->unknown_owners);
        warned_skipped = t->skipped;
        if (t->unknown_owners > 0 && unknown_retry == 0)
                unknown_retry =
                        g_timeout_add_seconds(UNKNOWN_OWNER_RETRY_SECONDS, retry_unknown, NULL);
}

static void table_replace(PtagsSubuidTable *t)
{
        pthread_mutex_lock(&table_lock);
        PtagsSubuidTable *old = table;
        table = t;
        pthread_mutex_unlock(&table_lock);
        ptags_subuid_table_free(old);
}

static void read_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
        GError *error = NULL;
        PtagsSubuidTable *t = read_table(data, &error);

        if (t == NULL)
                g_task_return_error(task, error);
        else
                g_task_return_pointer(task, t, (GDestroyNotify)ptags_subuid_table_free);
}

static void reloaded(GObject *source, GAsyncResult *res, gpointer data)
{
        g_autoptr(GError) error = NULL;
        PtagsSubuidTable *t = g_task_propagate_pointer(G_TASK(res), &error);

        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return; /* stopped */
        g_clear_object(&reloading);
        if (t != NULL) {
                g_info("%s read again: %u ranges of subordinate uids", table_path,
                       ptags_subuid_table_ranges(t));
                table_read(t);
                table_replace(t);
        } else {
                g_warning("cannot read %s again, the ranges read before stay: %s", table_path,
                          error->message);
        }
        if (reload_again) {
                reload_again = FALSE;
                reload();
        }
}

static void reload(void)
{
        if (reloading != NULL) {
                reload_again = TRUE;
                return;
        }
        reloading = g_cancellable_new();
        g_autoptr(GTask) task = g_task_new(NULL, reloading, reloaded, NULL);
        g_task_set_return_on_cancel(task, TRUE);
        g_task_set_task_data(task, g_strdup(table_path), g_free);
        g_task_run_in_thread(task, read_in_thread);
}

static gboolean reload_now(gpointer data)
{
        pthread_mutex_lock(&table_lock);
        reload_idle = 0;
        pthread_mutex_unlock(&table_lock);
        if (table_path != NULL)
                reload();
        return G_SOURCE_REMOVE;
}

/* The file as it is now into looked (under table_lock): TRUE when it is
 * not as it was. */
static gboolean look(void)
{
        struct stat st;
        gboolean exists = stat(table_path, &st) == 0;
        gboolean changed = exists != looked_exists ||
                           (exists && (st.st_dev != looked.st_dev || st.st_ino != looked.st_ino ||
                                       st.st_size != looked.st_size ||
                                       st.st_mtim.tv_sec != looked.st_mtim.tv_sec ||
                                       st.st_mtim.tv_nsec != looked.st_mtim.tv_nsec ||
                                       st.st_ctim.tv_sec != looked.st_ctim.tv_sec ||
                                       st.st_ctim.tv_nsec != looked.st_ctim.tv_nsec));
        looked = st;
        looked_exists = exists;
        return changed;
}

void ptags_subuids_start(const char *path)
{
        g_autoptr(GError) error = NULL;

        if (path == NULL || *path == '\0')
                return;
        pthread_mutex_lock(&table_lock);
        table_path = g_strdup(path);
        look(); /* before reading: a change made meanwhile is read again */
        next_look_us = g_get_monotonic_time() + LOOK_EVERY_US;
        pthread_mutex_unlock(&table_lock);
        PtagsSubuidTable *t = read_table(path, &error);
        if (t == NULL) {
                g_warning("cannot read %s: every uid draws on its own budgets until it can be "
                          "read: %s",
                          path, error->message);
        } else {
                g_debug("%s: %u ranges of subordinate uids", path, ptags_subuid_table_ranges(t));
                table_read(t);
        }
        table_replace(t);
}

void ptags_subuids_stop(void)
{
        if (reloading != NULL)
                g_cancellable_cancel(reloading);
        g_clear_object(&reloading);
        reload_again = FALSE;
        g_clear_handle_id(&unknown_retry, g_source_remove);
        warned_skipped = 0;
        pthread_mutex_lock(&table_lock);
        if (reload_idle != 0)
                g_source_remove(reload_idle);
        reload_idle = 0;
        g_clear_pointer(&table_path, g_free);
        pthread_mutex_unlock(&table_lock);
        table_replace(NULL);
}

uid_t ptags_budget_uid(uid_t uid)
{
        gint64 now = g_get_monotonic_time();

        pthread_mutex_lock(&table_lock);
        if (table_path != NULL && now >= next_look_us) {
                next_look_us = now + LOOK_EVERY_US;
                if (look() && reload_idle == 0)
                        reload_idle = g_idle_add(reload_now, NULL);
        }
        uid_t budget = ptags_subuid_table_budget_uid(table, uid);
        pthread_mutex_unlock(&table_lock);
        return budget;
}
