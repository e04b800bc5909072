// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* backend-bpf.c: the bpf backend: tags and audit container IDs kept in BPF
 * task storage by the programs of src/bpf, for stock kernels. */
#define G_LOG_DOMAIN "ptagsd-bpf"

#include "backend.h"
#include "errors.h"
#include "target.h"

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ptags-bpf.h"

/* How often the collector asks whether a walk is due: soon after Applies
 * have added about as much as the table holds, or when sets a walk spared
 * for their grace period fall due. Sets no task refers to are dropped once
 * walks COLLECT_GRACE_MS apart saw no holder (a fork in flight may still be
 * copying one: copy_process of even a very large process takes well under
 * that), and every COLLECT_FULL_S regardless (exits add nothing). Orphans
 * thus live about half a second, so a burst of Applies keeps in /run only
 * what it wrote in that time beside the live sets. */
#define COLLECT_CHECK_MS 250
#define COLLECT_GRACE_MS 250
#define COLLECT_FULL_S   60

typedef struct {
        PtagsBackend parent;
        ptags_bpf *bpf;
        guint collect_source;
        gint64 last_collect; /* g_get_monotonic_time() of the last walk */
} BackendBpf;

static int bpf_read_id(PtagsBackend *b, int pidfd, size_t max_bytes, guint64 *id, ptags_set **out)
{
        BackendBpf *self = (BackendBpf *)b;
        ptags_bpf_record rec;

        if (pidfd < 0)
                return -EBADF;
        /* The pidfd names the very process the caller pinned. */
        int r = ptags_bpf_get_record_pidfd(self->bpf, pidfd, &rec);
        if (r < 0)
                return r;
        /* Task storage outlives the exit until the task is reaped: an
         * exited process (a zombie) has no tags to report. */
        if (!ptags_pidfd_running(pidfd))
                return -ESRCH;
        /* A set's id names the same contents until ptagsd exits: the table
         * never gives an id out twice. */
        *id = rec.set_id;
        return out != NULL ? ptags_bpf_tags_of_record_max(self->bpf, &rec, max_bytes, out) : 0;
}

static int bpf_read_max(PtagsBackend *b, int pidfd, pid_t pid, size_t max_bytes, ptags_set **out)
{
        guint64 id;

        return bpf_read_id(b, pidfd, max_bytes, &id, out);
}

static int bpf_read(PtagsBackend *b, int pidfd, pid_t pid, ptags_set **out)
{
        BackendBpf *self = (BackendBpf *)b;
        ptags_bpf_record rec;
        int r;

        if (pidfd >= 0) {
                r = bpf_read_max(b, pidfd, pid, SIZE_MAX, out);
        } else {
                /* No pidfd (the tests' fallback): by pid. */
                r = ptags_bpf_get_record(self->bpf, pid, &rec);
                if (r == 0)
                        r = ptags_bpf_tags_of_record(self->bpf, &rec, out);
        }
        /* A record naming a set not in the table: a fork slower than the
         * collection's grace (src/bpf/README.md). Said once per process,
         * however often a caller asks about it. */
        static pid_t warned_pid;
        if (r == -EIO && __atomic_exchange_n(&warned_pid, pid, __ATOMIC_RELAXED) != pid)
                g_warning("reading %d: %s", (int)pid, ptags_bpf_last_error(self->bpf));
        else if (r < 0 && r != -ESRCH)
                g_debug("reading %d: %s", (int)pid, ptags_bpf_last_error(self->bpf));
        return r;
}

static int bpf_exec_mark(PtagsBackend *b, int pidfd, guint64 *out)
{
        BackendBpf *self = (BackendBpf *)b;
        uint64_t mark;

        if (pidfd < 0) {
                *out = PTAGS_NO_EXEC_MARK;
                return 0;
        }
        int r = ptags_bpf_exec_mark(self->bpf, pidfd, &mark);
        if (r < 0)
                return r;
        *out = mark;
        return 0;
}

static int bpf_apply(PtagsBackend *b, int pidfd, pid_t pid, const ptags_plan *plan,
                     guint64 exec_mark, PtagsApplyFailure *failure)
{
        BackendBpf *self = (BackendBpf *)b;

        /* One record per thread is replaced whole, so the plan is applied
         * all or nothing. The write goes through the pidfd, so only the
         * pinned process can receive it, never one that reused its pid. */
        if (!ptags_pidfd_running(pidfd))
                return -ESRCH;
        G_STATIC_ASSERT(PTAGS_NO_EXEC_MARK == PTAGS_BPF_NO_MARK);
        int r = ptags_bpf_write_tags(self->bpf, pidfd, ptags_plan_result(plan), exec_mark);
        if (r < 0)
                g_debug("writing %d: %s", (int)pid, ptags_bpf_last_error(self->bpf));
        /* The leader's record is written first, then the other threads':
         * a failure after the first leaves the process with part of it
         * (never a refused line: the whole set is one record). */
        if (r < 0 && r != -ESRCH && ptags_bpf_last_write_partial()) {
                failure->partial = TRUE;
                g_warning("process %d holds part of a change: its main thread took it, but "
                          "writing its other threads failed: %s",
                          (int)pid, ptags_bpf_last_error(self->bpf));
        }
        return r;
}

static gboolean bpf_adds_list(PtagsBackend *b, const ptags_set *tags)
{
        return !ptags_bpf_has_set(((BackendBpf *)b)->bpf, tags);
}

typedef struct {
        BackendBpf *self;
        const char *pattern;
        size_t len;
        PtagsFoundFunc cb;
        void *user_data;
        GHashTable *sets; /* set id -> its tags, parsed once */
} FindWalk;

/* Reports process @pid holding set @set_id (@tid's record) if the set
 * matches; FALSE once the callback wants no more. */
static gboolean find_report(FindWalk *w, pid_t pid, pid_t tid, guint64 set_id)
{
        ptags_set *tags = g_hash_table_lookup(w->sets, &set_id);

        if (tags == NULL) {
                tags = ptags_bpf_set_contents(w->self->bpf, set_id);
                if (tags == NULL) {
                        g_warning("task %d names unknown set %" G_GUINT64_FORMAT, (int)tid, set_id);
                        return TRUE;
                }
                g_hash_table_insert(w->sets, g_memdup2(&set_id, sizeof(set_id)), tags);
        }
        return !ptags_set_matches(tags, w->pattern, w->len, false) ||
               w->cb(pid, tags, set_id, w->user_data);
}

static int bpf_find(PtagsBackend *b, const char *pattern, size_t len, PtagsFoundFunc cb,
                    void *user_data)
{
        BackendBpf *self = (BackendBpf *)b;
        ptags_bpf_task *tasks = NULL;
        size_t n = 0;

        /* The kernel emits only tasks holding a matching set (or, when too
         * many sets match, every tagged task: the check below filters). */
        int r = ptags_bpf_find_tasks(self->bpf, pattern, len, &tasks, &n);
        if (r < 0) {
                g_warning("listing tasks: %s", ptags_bpf_last_error(self->bpf));
                return r;
        }
        /* Records are per thread, and differ while a write is under way or
         * after one failed in part. A process's tags are its main thread's,
         * which GetTags reads: a process is reported by that record only,
         * each shared set parsed once. */
        g_autoptr(GHashTable) leaders = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(GHashTable) others = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(GHashTable) sets = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                                           (GDestroyNotify)ptags_set_free);
        FindWalk w = {self, pattern, len, cb, user_data, sets};
        gboolean more = TRUE;
        for (size_t i = 0; more && i < n; i++) {
                gpointer tgid = GINT_TO_POINTER(tasks[i].tgid);
                if (tasks[i].tid != tasks[i].tgid) {
                        g_hash_table_add(others, tgid);
                        continue;
                }
                g_hash_table_add(leaders, tgid);
                more = find_report(&w, tasks[i].tgid, tasks[i].tid, tasks[i].set_id);
        }
        free(tasks);
        /* Other threads alone came back: the main thread's set does not
         * match, or it has exited while they run (the walk skips exited
         * tasks, GetTags still reads it). Read as GetTags reads it. */
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, others);
        while (more && g_hash_table_iter_next(&it, &key, NULL)) {
                pid_t pid = GPOINTER_TO_INT(key);
                guint64 id;
                if (g_hash_table_contains(leaders, key))
                        continue;
                int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                if (pidfd < 0)
                        continue; /* exited meanwhile */
                r = bpf_read_id(b, pidfd, SIZE_MAX, &id, NULL);
                close(pidfd);
                if (r == 0)
                        more = find_report(&w, pid, pid, id);
        }
        return 0;
}

/* ------------------------------------------------------- container IDs */

static int bpf_read_contid(PtagsBackend *b, int pidfd, pid_t pid, guint64 *out)
{
        BackendBpf *self = (BackendBpf *)b;
        ptags_bpf_record rec;

        int r = pidfd >= 0 ? ptags_bpf_get_record_pidfd(self->bpf, pidfd, &rec)
                           : ptags_bpf_get_record(self->bpf, pid, &rec);
        if (r < 0) {
                g_debug("reading the container ID of %d: %s", (int)pid,
                        ptags_bpf_last_error(self->bpf));
                return r;
        }
        if (pidfd >= 0 && !ptags_pidfd_running(pidfd))
                return -ESRCH; /* an exited process carries nothing */
        *out = rec.valid ? rec.contid : PTAGS_CONTID_UNSET;
        return 0;
}

static int bpf_write_contid(PtagsBackend *b, int pidfd, pid_t pid, guint64 contid)
{
        BackendBpf *self = (BackendBpf *)b;

        /* Every thread gets the ID (their records are separate), and the
         * hooks copy it to every later fork and clone. Through the pidfd,
         * as every write: never the process that reused the pid. */
        if (!ptags_pidfd_running(pidfd))
                return -ESRCH;
        int r = ptags_bpf_write_contid(self->bpf, pidfd, contid);
        if (r < 0)
                g_debug("writing the container ID of %d: %s", (int)pid,
                        ptags_bpf_last_error(self->bpf));
        return r;
}

static int bpf_list_contids(PtagsBackend *b, PtagsContidFunc cb, void *user_data)
{
        BackendBpf *self = (BackendBpf *)b;
        ptags_bpf_task *tasks = NULL;
        size_t n = 0;

        /* One pass of the task iterator: it visits every task but prints
         * only those with a record. */
        int r = ptags_bpf_list_tasks(self->bpf, &tasks, &n);
        if (r < 0) {
                g_warning("listing tasks: %s", ptags_bpf_last_error(self->bpf));
                return r;
        }
        g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (size_t i = 0; i < n; i++) {
                if (tasks[i].contid == PTAGS_CONTID_UNSET ||
                    g_hash_table_contains(seen, GINT_TO_POINTER(tasks[i].tgid)))
                        continue;
                g_hash_table_add(seen, GINT_TO_POINTER(tasks[i].tgid));
                cb(tasks[i].tgid, tasks[i].contid, user_data);
        }
        free(tasks);
        return 0;
}

static gboolean collect_cb(gpointer data)
{
        BackendBpf *self = data;
        size_t freed = 0;
        gint64 now = g_get_monotonic_time();

        if (now - self->last_collect < COLLECT_FULL_S * G_USEC_PER_SEC &&
            !ptags_bpf_collect_wanted(self->bpf))
                return G_SOURCE_CONTINUE;
        self->last_collect = now;
        if (ptags_bpf_collect_aged(self->bpf, COLLECT_GRACE_MS, &freed) < 0)
                g_warning("collecting unused tag sets: %s", ptags_bpf_last_error(self->bpf));
        else if (freed > 0)
                g_debug("collected %zu unused tag sets", freed);
        return G_SOURCE_CONTINUE;
}

static void bpf_free(PtagsBackend *b)
{
        BackendBpf *self = (BackendBpf *)b;

        if (self->collect_source != 0)
                g_source_remove(self->collect_source);
        /* The pinned programs keep running: a restarted ptagsd loses nothing. */
        ptags_bpf_close(self->bpf);
        g_free(self);
}

/* Updating the task storage and starting the task iterators need CAP_BPF,
 * with CAP_PERFMON for tracing programs. Container IDs live in task
 * storage too, so they need nothing more. */
#define BPF_CAPABILITIES (1ull << CAP_BPF | 1ull << CAP_PERFMON)

/* The Backend property says which hooks run, so two tables. */
static const PtagsBackendOps bpf_lsm_ops = {
        .name = "bpf-lsm",
        .capabilities = BPF_CAPABILITIES,
        .read = bpf_read,
        .read_max = bpf_read_max,
        .read_id = bpf_read_id,
        .exec_mark = bpf_exec_mark,
        .apply = bpf_apply,
        .adds_list = bpf_adds_list,
        .find = bpf_find,
        .free = bpf_free,
        .read_contid = bpf_read_contid,
        .write_contid = bpf_write_contid,
        .list_contids = bpf_list_contids,
};

static const PtagsBackendOps bpf_tracepoint_ops = {
        .name = "bpf-tracepoint",
        .capabilities = BPF_CAPABILITIES,
        .read = bpf_read,
        .read_max = bpf_read_max,
        .read_id = bpf_read_id,
        .exec_mark = bpf_exec_mark,
        .apply = bpf_apply,
        .adds_list = bpf_adds_list,
        .find = bpf_find,
        .free = bpf_free,
        .read_contid = bpf_read_contid,
        .write_contid = bpf_write_contid,
        .list_contids = bpf_list_contids,
};

/* PTAGS_BPF_HOOKS=lsm|tracepoint forces the hook kind (tests, and admins
 * who distrust one of them); anything else is refused, not guessed. */
static gboolean hooks_from_env(ptags_bpf_mode *mode, GError **error)
{
        const char *hooks = g_getenv("PTAGS_BPF_HOOKS");

        *mode = PTAGS_BPF_MODE_AUTO;
        if (hooks == NULL || *hooks == '\0')
                return TRUE;
        if (g_strcmp0(hooks, "lsm") == 0)
                *mode = PTAGS_BPF_MODE_LSM;
        else if (g_strcmp0(hooks, "tracepoint") == 0)
                *mode = PTAGS_BPF_MODE_TRACEPOINT;
        else {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                            "the bpf backend cannot start: PTAGS_BPF_HOOKS=%s: expected lsm or "
                            "tracepoint",
                            hooks);
                return FALSE;
        }
        return TRUE;
}

PtagsBackend *ptags_backend_bpf_new(GError **error)
{
        ptags_bpf_options opts = {
                /* A private pin directory keeps a test daemon apart from
                 * the system's; unset means /sys/fs/bpf/ptags. */
                .pin_dir = g_getenv("PTAGS_BPF_PIN_DIR"),
        };
        char why[512] = "";

        if (!hooks_from_env(&opts.mode, error))
                return NULL;
        BackendBpf *self = g_new0(BackendBpf, 1);
        int r = ptags_bpf_open(&opts, &self->bpf, why, sizeof(why));
        if (r < 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                            "the bpf backend cannot start: %s", why);
                g_free(self);
                return NULL;
        }
        self->parent.ops = g_strcmp0(ptags_bpf_backend_name(self->bpf), "bpf-lsm") == 0
                                   ? &bpf_lsm_ops
                                   : &bpf_tracepoint_ops;
        self->last_collect = g_get_monotonic_time();
        self->collect_source = g_timeout_add(COLLECT_CHECK_MS, collect_cb, self);
        g_message("bpf backend ready: %s hooks", ptags_bpf_backend_name(self->bpf));
        return (PtagsBackend *)self;
}

gboolean ptags_backend_bpf_remove_state(GError **error)
{
        /* The same directories the backend would use (see
         * ptags_backend_bpf_new); the set table follows RUNTIME_DIRECTORY. */
        const char *pin_dir = g_getenv("PTAGS_BPF_PIN_DIR");
        int r = ptags_bpf_uninstall(pin_dir, NULL);

        if (r == -EBUSY) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "the bpf state is in use by a running ptagsd: stop it first");
                return FALSE;
        }
        if (r == -EINVAL) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "cannot remove the bpf state: %s", ptags_bpf_last_error(NULL));
                return FALSE;
        }
        if (r < 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "cannot remove the bpf state: %s", g_strerror(-r));
                return FALSE;
        }
        return TRUE;
}
