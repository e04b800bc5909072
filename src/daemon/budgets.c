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
#include <sys/syscall.h>
#include <unistd.h>

#include "errors.h"
#include "subuids.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

/* Defaults fit real use (a permission list of a few dozen short tags, a few
 * values) with room to spare, and keep one process's reply at 256 KiB plus
 * framing. The per-user sums are in the spirit of the kernel's key quotas:
 * ordinary users get a little, root (all system services) much more. */
static const PtagsLimitInfo infos[] = {
        {"max-process-bytes", "MaxProcessBytes", G_STRUCT_OFFSET(PtagsLimits, process_bytes), 1,
         PTAGS_MAX_MESSAGE_BYTES / 2, 256 * KiB, "Bytes of tags and values one process may hold"},
        {"max-user-bytes", "MaxUserBytes", G_STRUCT_OFFSET(PtagsLimits, user_bytes), 1, G_MAXINT,
         4 * MiB, "Bytes all processes of one user other than root may hold"},
        {"max-root-bytes", "MaxRootBytes", G_STRUCT_OFFSET(PtagsLimits, root_bytes), 1, G_MAXINT,
         32 * MiB, "Bytes all processes of root may hold"},
        /* polkit answers in 2-5 ms per check with 8 in flight per call, so
         * 1024 checks take a few seconds, far inside the 25 s timeout. */
        {"max-polkit-changes", "MaxPolkitChanges", G_STRUCT_OFFSET(PtagsLimits, polkit_changes), 1,
         PTAGS_PLAN_MAX_CHANGES, 1024, "Changes needing polkit in one call"},
        /* Each call waiting for polkit holds its message, plan, checks and
         * pidfd (32 calls of 200 changes of 250-byte tags: 23 MB of heap, so
         * about 3.5 KB per change); only the bus would bound how many
         * (dbus-daemon: 128 per connection, 256 connections per user). */
        {"max-polkit-calls", "MaxPolkitCalls", G_STRUCT_OFFSET(PtagsLimits, polkit_calls), 1, 1024,
         32, "Calls one user other than root may have waiting for polkit"},
        /* dbus-daemon queues at most 127 MiB for one connection: stay far below. */
        {"max-unread-reply-bytes", "MaxUnreadReplyBytes",
         G_STRUCT_OFFSET(PtagsLimits, unread_reply_bytes), 64 * KiB, 64 * MiB, 4 * MiB,
         "Bytes of replies one connection may leave unread before its reads are refused"},
        {"max-user-unread-reply-bytes", "MaxUserUnreadReplyBytes",
         G_STRUCT_OFFSET(PtagsLimits, user_unread_reply_bytes), 64 * KiB, 64 * MiB, 16 * MiB,
         "The same for all connections of one user other than root"},
        {"max-expensive-calls", "MaxExpensiveCalls", G_STRUCT_OFFSET(PtagsLimits, expensive_calls),
         1, 1024, 32, "Reads and changes being planned one user may have queued or running"},
        /* The bus bounds the calls awaiting a reply (dbus-daemon: 128 per
         * connection), not those that await none; until ptagsd knows the
         * sender's uid, this is the only bound on what its calls hold. */
        {"max-connection-calls", "MaxConnectionCalls",
         G_STRUCT_OFFSET(PtagsLimits, connection_calls), 1, 4096, 128,
         "Calls one connection may have in progress at once"},
        /* A refusal writes a journal entry and an audit record per change:
         * 64 a second keeps a flood far below journald's default rate limit
         * (10000 entries in 30 s per service). */
        {"max-refusal-records", "MaxRefusalRecords", G_STRUCT_OFFSET(PtagsLimits, refusal_records),
         1, 65536, 64,
         "Records a second the refusals of one user other than root may write, in bursts of 16 "
         "seconds' worth"},
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
        ino_t ino; /* of /proc/PID: a process under a reused pid has another */
        uid_t uid;
        uid_t budget; /* whose sum its bytes are in: ptags_budget_uid(uid) */
        guint64 bytes;
} CachedProcess;

/* A walk of /proc stats every process on the machine (about 2 ms with 1300
 * processes) and reads the tags of those it has not read before, whatever
 * their owner, so one walk answers for every uid. Walks happen at most this
 * often, and the sums of the last one answer in between. Processes started
 * since (forks copy tags without asking ptagsd) count from the next walk on,
 * and a refusal walks afresh unless walks are paused (below). */
#define WALK_MAX_AGE_US (500 * G_TIME_SPAN_MILLISECOND)

/* Anyone may ask for a change a budget then refuses (budgets are checked
 * before polkit is asked), or aim changes at the processes of every user,
 * uids without a process ptagsd has seen included: each such call would
 * walk the machine's processes on the main loop. So after any walk, the
 * next waits this many times as long as the walk took (walks take at most a
 * tenth of the time, however many callers ask and whichever uids they aim
 * at), and the last walk's sums answer meanwhile, refusals included. */
#define WALK_PAUSE_FACTOR 9

/* The bytes of at most this many lists are kept by the lists' ids (see
 * list_bytes): then they are forgotten, all at once. */
#define LIST_BYTES_MAX 4096u

struct _PtagsByteCache {
        /* pid -> CachedProcess: what the last walk found alive, and the
         * processes ptagsd has tagged since. */
        GHashTable *procs;
        /* list id (guint64 *) -> its bytes (guint64 *), where the backend
         * names lists (bpf): processes forked from one share its list, and
         * a walk measured each copy, parsing the whole list every time. */
        GHashTable *list_bytes;
        /* budget uid -> guint64 *: the sum of the bytes of the processes
         * of every uid that draws on its budgets (subuids.h); no entry is 0. */
        GHashTable *sums;
        gint64 walked;    /* g_get_monotonic_time() of the last walk, 0: none */
        gint64 next_walk; /* no walk before this g_get_monotonic_time() */
};

PtagsByteCache *ptags_byte_cache_new(void)
{
        PtagsByteCache *cache = g_new0(PtagsByteCache, 1);

        cache->procs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        cache->sums = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        cache->list_bytes = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
        return cache;
}

void ptags_byte_cache_free(PtagsByteCache *cache)
{
        if (cache == NULL)
                return;
        g_hash_table_unref(cache->procs);
        g_hash_table_unref(cache->sums);
        g_hash_table_unref(cache->list_bytes);
        g_free(cache);
}

static guint64 sum_of(PtagsByteCache *cache, uid_t uid)
{
        guint64 *sum = g_hash_table_lookup(cache->sums, GUINT_TO_POINTER(uid));
        return sum != NULL ? *sum : 0;
}

/* Every change to what a process counts for goes through here, between
 * uncount() and count(), so each uid's sum is kept without visiting every
 * process; a sum back at 0 is forgotten. */
static void sum_add(PtagsByteCache *cache, uid_t uid, guint64 bytes, gboolean add)
{
        gpointer key = GUINT_TO_POINTER(uid);
        guint64 *sum = g_hash_table_lookup(cache->sums, key);

        if (bytes == 0)
                return;
        if (sum == NULL) {
                g_return_if_fail(add);
                sum = g_new0(guint64, 1);
                g_hash_table_insert(cache->sums, key, sum);
        }
        g_return_if_fail(add || *sum >= bytes);
        *sum = add ? *sum + bytes : *sum - bytes;
        if (*sum == 0)
                g_hash_table_remove(cache->sums, key);
}

static void uncount(PtagsByteCache *cache, const CachedProcess *p)
{
        sum_add(cache, p->budget, p->bytes, FALSE);
}

static void count(PtagsByteCache *cache, const CachedProcess *p)
{
        sum_add(cache, p->budget, p->bytes, TRUE);
}

/* @p's owner is @uid, drawing on @budget's budgets (between uncount() and
 * count()). */
static void set_owner(CachedProcess *p, uid_t uid, uid_t budget)
{
        p->uid = uid;
        p->budget = budget;
}

/* Every walk checks the kept sum of the uid asked about against one made by
 * visiting every process; a difference is a bug (fatal under the tests),
 * and the visit's sum is used from then on. */
static void check_sum(PtagsByteCache *cache, uid_t uid)
{
        GHashTableIter iter;
        gpointer value;
        guint64 expected = 0, kept = sum_of(cache, uid);

        g_hash_table_iter_init(&iter, cache->procs);
        while (g_hash_table_iter_next(&iter, NULL, &value))
                if (((CachedProcess *)value)->budget == uid)
                        expected += ((CachedProcess *)value)->bytes;
        if (kept == expected)
                return;
        g_critical("uid %u: kept byte sum %" G_GUINT64_FORMAT ", counted %" G_GUINT64_FORMAT,
                   (unsigned)uid, kept, expected);
        g_hash_table_remove(cache->sums, GUINT_TO_POINTER(uid));
        sum_add(cache, uid, expected, TRUE);
}

/* What @except counts for in @budget's sum, which the caller leaves out. */
static guint64 except_counted(PtagsByteCache *cache, uid_t budget, pid_t except)
{
        CachedProcess *p = g_hash_table_lookup(cache->procs, GINT_TO_POINTER(except));
        return p != NULL && p->budget == budget ? p->bytes : 0;
}

void ptags_byte_cache_expect(PtagsByteCache *cache, pid_t pid, uid_t uid, guint64 bytes)
{
        CachedProcess *p = g_hash_table_lookup(cache->procs, GINT_TO_POINTER(pid));

        /* A process ptagsd itself tags counts at once, even one started
         * after the last walk (whose inode the next walk then fills in). */
        if (p == NULL) {
                p = g_new0(CachedProcess, 1);
                g_hash_table_insert(cache->procs, GINT_TO_POINTER(pid), p);
        } else {
                uncount(cache, p);
        }
        set_owner(p, uid, ptags_budget_uid(uid));
        p->bytes = bytes;
        count(cache, p);
}

void ptags_byte_cache_applied(PtagsByteCache *cache, pid_t pid, guint64 bytes)
{
        CachedProcess *p = g_hash_table_lookup(cache->procs, GINT_TO_POINTER(pid));

        /* A process not counted yet is left to the next walk. */
        if (p == NULL)
                return;
        uncount(cache, p);
        p->bytes = bytes;
        count(cache, p);
}

/* What process @pid holds, in bytes: 0 when it holds nothing, has exited
 * or cannot be read. A list the backend names by an id is read once (and
 * counted in *@lists_read), however many processes hold it. */
static guint64 held_bytes(PtagsBackend *backend, PtagsByteCache *cache, pid_t pid,
                          guint *lists_read)
{
        ptags_set *tags = NULL;
        guint64 bytes = 0;

        if (backend->ops->read_id == NULL) {
                ++*lists_read;
                if (ptags_backend_read(backend, -1, pid, &tags) == 0)
                        bytes = ptags_set_bytes(tags);
                ptags_set_free(tags);
                return bytes;
        }
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        guint64 id = 0;
        if (pidfd < 0)
                return 0;
        if (backend->ops->read_id(backend, pidfd, SIZE_MAX, &id, NULL) == 0 && id != 0) {
                guint64 *known = g_hash_table_lookup(cache->list_bytes, &id);
                if (known != NULL) {
                        bytes = *known;
                } else if (backend->ops->read_id(backend, pidfd, SIZE_MAX, &id, &tags) == 0) {
                        ++*lists_read;
                        bytes = ptags_set_bytes(tags);
                        if (g_hash_table_size(cache->list_bytes) >= LIST_BYTES_MAX)
                                g_hash_table_remove_all(cache->list_bytes);
                        g_hash_table_insert(cache->list_bytes, g_memdup2(&id, sizeof(id)),
                                            g_memdup2(&bytes, sizeof(bytes)));
                }
        }
        ptags_set_free(tags);
        close(pidfd);
        return bytes;
}

/* Visit every process in /proc: read the tags of those not read before (and
 * of @uid's again when @fresh), and forget those that have exited. */
static int walk(PtagsBackend *backend, PtagsByteCache *cache, uid_t uid, gboolean fresh,
                guint *alive, guint *lists_read)
{
        DIR *dir = opendir("/proc");
        struct dirent *de;
        GHashTable *found = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);

        if (dir == NULL) {
                g_hash_table_unref(found);
                return -errno;
        }
        while ((de = readdir(dir)) != NULL) {
                char *end = NULL;
                long pid = strtol(de->d_name, &end, 10);
                struct stat st;
                if (end == de->d_name || *end != '\0' || pid <= 0 || pid > G_MAXINT ||
                    fstatat(dirfd(dir), de->d_name, &st, 0) != 0)
                        continue;
                gpointer key = GINT_TO_POINTER((int)pid);
                CachedProcess *p = NULL;
                if (!g_hash_table_steal_extended(cache->procs, key, NULL, (gpointer *)&p))
                        p = g_new0(CachedProcess, 1);
                g_hash_table_insert(found, key, p);
                uid_t budget = ptags_budget_uid(st.st_uid);
                gboolean known = p->ino == st.st_ino && p->uid == st.st_uid;
                if (known && p->budget != budget) {
                        /* /etc/subuid changed: its bytes go to another sum. */
                        uncount(cache, p);
                        p->budget = budget;
                        count(cache, p);
                }
                if (known && !(fresh && budget == uid))
                        continue;
                uncount(cache, p);
                p->ino = st.st_ino;
                set_owner(p, st.st_uid, budget);
                /* Exited meanwhile or unreadable: it holds nothing. */
                p->bytes = held_bytes(backend, cache, (pid_t)pid, lists_read);
                count(cache, p);
        }
        closedir(dir);
        /* What is left was not found: it has exited. */
        GHashTableIter iter;
        gpointer value;
        g_hash_table_iter_init(&iter, cache->procs);
        while (g_hash_table_iter_next(&iter, NULL, &value))
                uncount(cache, value);
        g_hash_table_unref(cache->procs);
        cache->procs = found;
        *alive = g_hash_table_size(found);
        return 0;
}

int ptags_user_bytes(PtagsBackend *backend, PtagsByteCache *cache, uid_t owner, pid_t except,
                     gboolean fresh, guint64 *out)
{
        uid_t uid = ptags_budget_uid(owner);
        gint64 now = g_get_monotonic_time();
        gboolean due = fresh || cache->walked == 0 || now - cache->walked >= WALK_MAX_AGE_US;

        if (due && now >= cache->next_walk) {
                guint alive = 0, lists_read = 0;
                check_sum(cache, uid);
                int r = walk(backend, cache, uid, fresh, &alive, &lists_read);
                if (r < 0)
                        return r;
                check_sum(cache, uid);
                gint64 end = g_get_monotonic_time();
                cache->walked = now;
                cache->next_walk = end + WALK_PAUSE_FACTOR * (end - now);
                g_debug("uid %u: walked %u processes in %.3f ms, %u lists read", (unsigned)uid,
                        alive, (end - now) / 1000.0, lists_read);
        }
        *out = sum_of(cache, uid) - except_counted(cache, uid, except);
        return 0;
}
