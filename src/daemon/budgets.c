// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* budgets.c: the budget table (options, properties, defaults, ranges), the
 * byte accounting of tag lists and the per-user sums the budgets compare. */
#define G_LOG_DOMAIN "ptagsd-limits"

#include "budgets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errors.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

/* Defaults fit real use (a permission list of a few dozen short tags, a few
 * values) with room to spare, and keep one process's reply at 256 KiB plus
 * framing. The per-user sums are in the spirit of the kernel's key quotas:
 * ordinary users get a little, root (all system services) much more. */
static const PtagsLimitInfo infos[] = {
        {"max-process-bytes", "MaxProcessBytes", G_STRUCT_OFFSET(PtagsLimits, process_bytes), 1,
         PTAGS_MAX_MESSAGE_BYTES / 2, 256 * KiB,
         "Bytes of tags and values one process may hold (default 262144)"},
        {"max-user-bytes", "MaxUserBytes", G_STRUCT_OFFSET(PtagsLimits, user_bytes), 1, G_MAXINT,
         4 * MiB, "Bytes all processes of one user other than root may hold (default 4194304)"},
        {"max-root-bytes", "MaxRootBytes", G_STRUCT_OFFSET(PtagsLimits, root_bytes), 1, G_MAXINT,
         32 * MiB, "Bytes all processes of root may hold (default 33554432)"},
        /* polkit answers in 2-5 ms per check with 8 in flight per call, so
         * 1024 checks take a few seconds, far inside the 25 s timeout. */
        {"max-polkit-changes", "MaxPolkitChanges", G_STRUCT_OFFSET(PtagsLimits, polkit_changes), 1,
         PTAGS_PLAN_MAX_CHANGES, 1024, "Changes needing polkit in one call (default 1024)"},
        /* dbus-daemon queues at most 127 MiB for one connection: stay far below. */
        {"max-unread-reply-bytes", "MaxUnreadReplyBytes",
         G_STRUCT_OFFSET(PtagsLimits, unread_reply_bytes), 64 * KiB, 64 * MiB, 4 * MiB,
         "Bytes of replies one connection may leave unread before its reads are refused "
         "(default 4194304)"},
        {"max-user-unread-reply-bytes", "MaxUserUnreadReplyBytes",
         G_STRUCT_OFFSET(PtagsLimits, user_unread_reply_bytes), 64 * KiB, 64 * MiB, 16 * MiB,
         "The same for all connections of one user other than root (default 16777216)"},
        {"max-expensive-calls", "MaxExpensiveCalls", G_STRUCT_OFFSET(PtagsLimits, expensive_calls),
         1, 1024, 32,
         "Reads and changes being planned one user may have queued or running (default 32)"},
};

const PtagsLimitInfo *ptags_limit_infos(gsize *n)
{
        *n = G_N_ELEMENTS(infos);
        return infos;
}

static guint *limit_slot(PtagsLimits *l, const PtagsLimitInfo *info)
{
        return G_STRUCT_MEMBER_P(l, info->offset);
}

guint ptags_limit_get(const PtagsLimits *l, const PtagsLimitInfo *info)
{
        return G_STRUCT_MEMBER(guint, l, info->offset);
}

void ptags_limits_init(PtagsLimits *l)
{
        for (gsize i = 0; i < G_N_ELEMENTS(infos); i++)
                *limit_slot(l, &infos[i]) = infos[i].fallback;
}

gboolean ptags_limit_set(PtagsLimits *l, const PtagsLimitInfo *info, gint64 value, GError **error)
{
        if (value < info->min || value > info->max) {
                g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "--%s=%" G_GINT64_FORMAT ": must be between %u and %u", info->option,
                            value, info->min, info->max);
                return FALSE;
        }
        *limit_slot(l, info) = (guint)value;
        return TRUE;
}

guint64 ptags_set_bytes(const ptags_set *s)
{
        guint64 total = 0;

        for (size_t i = 0; s != NULL && i < ptags_set_count(s); i++) {
                const ptags_entry *e = ptags_set_at(s, i);
                total += e->name_len + e->value_len;
        }
        return total;
}

guint64 ptags_set_wire_bound(const ptags_set *s)
{
        size_t n = s != NULL ? ptags_set_count(s) : 0;

        return ptags_set_bytes(s) + (guint64)n * PTAGS_WIRE_TAG_OVERHEAD + 8;
}

uid_t ptags_pid_uid(pid_t pid)
{
        char path[64];
        struct stat st;

        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        return stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

guint ptags_limits_for_uid(const PtagsLimits *l, uid_t uid, const char **property)
{
        *property = uid == 0 ? "MaxRootBytes" : "MaxUserBytes";
        return uid == 0 ? l->root_bytes : l->user_bytes;
}

typedef struct {
        ino_t ino;
        uid_t uid;
        gboolean valid; /* bytes, ino and uid describe the live process */
        guint64 bytes;
        guint seen; /* the scan that last found it alive */
} CachedProcess;

typedef struct {
        gint64 time; /* g_get_monotonic_time() of the uid's last walk */
        guint scan;
        guint64 sum; /* what the uid's processes count for (counted() of each) */
} UidWalk;

/* A walk of /proc stats every process on the machine (about 2 ms with 1300
 * processes): walks at most this often, and sums from what the last walk saw
 * in between. Processes started since (forks copy tags without asking
 * ptagsd) count from the next walk on, and a refusal walks afresh unless
 * walks are paused (below). */
#define WALK_MAX_AGE_US (500 * G_TIME_SPAN_MILLISECOND)

/* Anyone may ask for a change a budget then refuses (budgets are checked
 * before polkit is asked), or aim changes at the processes of every user:
 * each such call would walk the machine's processes on the main loop. So
 * after any walk, the next waits this many times as long as the walk took
 * (walks take at most a tenth of the time, however many callers ask), and
 * the sums of the last walks answer meanwhile, refusals included. A uid's
 * first walk is never held back: there is no sum to answer with. */
#define WALK_PAUSE_FACTOR 9

struct _PtagsByteCache {
        GHashTable *procs; /* pid -> CachedProcess */
        guint scan;
        GHashTable *walks; /* uid -> UidWalk */
        gint64 next_walk;  /* no walk before this g_get_monotonic_time() */
};

PtagsByteCache *ptags_byte_cache_new(void)
{
        PtagsByteCache *cache = g_new0(PtagsByteCache, 1);

        cache->procs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        cache->walks = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        return cache;
}

void ptags_byte_cache_free(PtagsByteCache *cache)
{
        if (cache == NULL)
                return;
        g_hash_table_unref(cache->procs);
        g_hash_table_unref(cache->walks);
        g_free(cache);
}

/* What @p counts for in @walk's sum (@walk is its uid's, or NULL): its bytes
 * when the uid's last walk found it alive (or ptagsd has tagged it since)
 * and nothing has told otherwise. Every change to a process is made
 * between uncount() and count(), so each uid's sum is kept without
 * visiting every process. */
static guint64 counted_in(const UidWalk *walk, const CachedProcess *p)
{
        return walk != NULL && p->valid && p->seen >= walk->scan ? p->bytes : 0;
}

static guint64 counted(PtagsByteCache *cache, const CachedProcess *p)
{
        return counted_in(g_hash_table_lookup(cache->walks, GUINT_TO_POINTER(p->uid)), p);
}

static void uncount(PtagsByteCache *cache, const CachedProcess *p)
{
        UidWalk *walk = g_hash_table_lookup(cache->walks, GUINT_TO_POINTER(p->uid));
        if (walk != NULL)
                walk->sum -= counted_in(walk, p);
}

static void count(PtagsByteCache *cache, const CachedProcess *p)
{
        UidWalk *walk = g_hash_table_lookup(cache->walks, GUINT_TO_POINTER(p->uid));
        if (walk != NULL)
                walk->sum += counted_in(walk, p);
}

/* The sum of @uid as the processes count now, visiting every one. */
static guint64 recount(PtagsByteCache *cache, uid_t uid)
{
        GHashTableIter iter;
        gpointer value;
        guint64 sum = 0;

        g_hash_table_iter_init(&iter, cache->procs);
        while (g_hash_table_iter_next(&iter, NULL, &value))
                if (((CachedProcess *)value)->uid == uid)
                        sum += counted(cache, value);
        return sum;
}

/* Every walk checks the kept sum, before and after, against one it makes
 * itself; a difference is a bug (fatal under the tests), and the walk's
 * own sum is used from then on. */
static void check_sum(PtagsByteCache *cache, uid_t uid, UidWalk *walk, guint64 expected)
{
        if (walk->sum == expected)
                return;
        g_critical("uid %u: kept byte sum %" G_GUINT64_FORMAT ", counted %" G_GUINT64_FORMAT,
                   (unsigned)uid, walk->sum, expected);
        walk->sum = expected;
}

/* What @except counts for in @uid's sum, which the caller leaves out. */
static guint64 except_counted(PtagsByteCache *cache, uid_t uid, pid_t except)
{
        CachedProcess *p = g_hash_table_lookup(cache->procs, GINT_TO_POINTER(except));
        return p != NULL && p->uid == uid ? counted(cache, p) : 0;
}

void ptags_byte_cache_expect(PtagsByteCache *cache, pid_t pid, uid_t uid, guint64 bytes)
{
        CachedProcess *p = g_hash_table_lookup(cache->procs, GINT_TO_POINTER(pid));

        /* A process ptagsd itself tags counts at once, even one started
         * after the last walk. */
        if (p == NULL) {
                p = g_new0(CachedProcess, 1);
                g_hash_table_insert(cache->procs, GINT_TO_POINTER(pid), p);
                p->valid = TRUE;
                p->uid = uid;
        } else {
                uncount(cache, p);
        }
        p->seen = cache->scan;
        p->bytes = bytes;
        count(cache, p);
}

void ptags_byte_cache_applied(PtagsByteCache *cache, pid_t pid, guint64 bytes)
{
        CachedProcess *p = g_hash_table_lookup(cache->procs, GINT_TO_POINTER(pid));

        /* A process not counted yet is left to the next walk. */
        if (p == NULL || !p->valid)
                return;
        uncount(cache, p);
        p->bytes = bytes;
        count(cache, p);
}

int ptags_user_bytes(PtagsBackend *backend, PtagsByteCache *cache, uid_t uid, pid_t except,
                     gboolean fresh, guint64 *out)
{
        /* The owner of /proc/PID is checked first (a stat, no file read), so
         * only the processes of @uid have their tags read, and only those
         * not read before. */
        *out = 0;
        gint64 now = g_get_monotonic_time();
        UidWalk *walk = g_hash_table_lookup(cache->walks, GUINT_TO_POINTER(uid));
        gboolean due = fresh || walk == NULL || now - walk->time >= WALK_MAX_AGE_US;
        if (walk != NULL && (!due || now < cache->next_walk)) {
                *out = walk->sum - except_counted(cache, uid, except);
                return 0;
        }
        DIR *dir = opendir("/proc");
        struct dirent *de;
        guint alive = 0;

        if (dir == NULL)
                return -errno;
        cache->scan++;
        if (walk == NULL) {
                walk = g_new0(UidWalk, 1);
                g_hash_table_insert(cache->walks, GUINT_TO_POINTER(uid), walk);
        } else {
                check_sum(cache, uid, walk, recount(cache, uid));
        }
        walk->time = now;
        /* Nothing counts for the uid until this walk finds it alive. */
        walk->scan = cache->scan;
        walk->sum = 0;
        while ((de = readdir(dir)) != NULL) {
                char *end = NULL;
                long pid = strtol(de->d_name, &end, 10);
                struct stat st;
                if (end == de->d_name || *end != '\0' || pid <= 0 ||
                    fstatat(dirfd(dir), de->d_name, &st, 0) != 0)
                        continue;
                alive++;
                gpointer key = GINT_TO_POINTER((int)pid);
                CachedProcess *p = g_hash_table_lookup(cache->procs, key);
                if (p != NULL) {
                        uncount(cache, p);
                        p->seen = cache->scan;
                        if (p->ino != st.st_ino || p->uid != st.st_uid)
                                p->valid = FALSE; /* another process, or another owner */
                        count(cache, p);
                }
                if (pid == except || st.st_uid != uid)
                        continue;
                if (p == NULL || !p->valid || fresh) {
                        ptags_set *tags = NULL;
                        if (p == NULL) {
                                p = g_new0(CachedProcess, 1);
                                g_hash_table_insert(cache->procs, key, p);
                        }
                        uncount(cache, p);
                        p->ino = st.st_ino;
                        p->uid = st.st_uid;
                        p->valid = TRUE;
                        p->seen = cache->scan;
                        /* Exited meanwhile or unreadable: it holds nothing. */
                        p->bytes = ptags_backend_read(backend, -1, (pid_t)pid, &tags) == 0
                                           ? ptags_set_bytes(tags)
                                           : 0;
                        ptags_set_free(tags);
                        count(cache, p);
                }
                *out += p->bytes;
        }
        closedir(dir);
        check_sum(cache, uid, walk, *out + except_counted(cache, uid, except));
        /* Forget processes that have exited once they are many. */
        if (g_hash_table_size(cache->procs) > 2 * alive + 64) {
                GHashTableIter iter;
                gpointer value;
                g_hash_table_iter_init(&iter, cache->procs);
                while (g_hash_table_iter_next(&iter, NULL, &value)) {
                        if (((CachedProcess *)value)->seen != cache->scan) {
                                uncount(cache, value);
                                g_hash_table_iter_remove(&iter);
                        }
                }
        }
        gint64 end = g_get_monotonic_time();
        cache->next_walk = end + WALK_PAUSE_FACTOR * (end - now);
        g_debug("uid %u: walked %u processes in %.3f ms", (unsigned)uid, alive,
                (end - now) / 1000.0);
        return 0;
}
