// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* backend.h: the one small interface between the service and the place where
 * tags really live (the ptags LSM's attr files, or BPF task storage).
 *
 * A backend reads and applies already-validated, already-authorized changes
 * and reports errno-level failures; it never decides about authorization.
 * Backends zero-initialise their ops table, so a member a backend lacks is
 * NULL, which the service reports as NotSupported. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "ptags-model.h"

typedef struct _PtagsBackend PtagsBackend;

/* Called by find() once per process holding a matching tag. @tags is
 * borrowed for the duration of the call only. @list_id is nonzero when the
 * backend knows which processes share one list: within one find(), calls
 * with the same nonzero @list_id carry the same tags (bpf: the set's id).
 * Returns FALSE to end the walk (the answer is known: too big to send). */
typedef gboolean (*PtagsFoundFunc)(pid_t pid, const ptags_set *tags, guint64 list_id,
                                   void *user_data);

/* Called by list_contids() once per live process carrying a container ID. */
typedef void (*PtagsContidFunc)(pid_t pid, guint64 contid, void *user_data);

/* What a failed apply() tells beyond its errno. */
typedef struct {
        /* The change of the plan the kernel refused (its index), when the
         * errno is its verdict on that change; -1 otherwise. */
        gssize refused;
        /* Taking back the changes written before it failed too (another
         * writer changed the tags meanwhile): the process holds part of
         * the plan. */
        gboolean partial;
        /* ptags-lsm: the kernel refused the write because another writer
         * took ptagsd's own rights tags away (see ptagsd(8)). */
        gboolean lost_rights;
} PtagsApplyFailure;

typedef struct {
        /* The Backend D-Bus property: "ptags-lsm", "bpf-lsm" or "bpf-tracepoint". */
        const char *name;
        /* Longest command line (without '\n') it can apply; 0 = no limit.
         * ptags-lsm: PTAGS_WRITE_MAX - 1, as one kernel write is one page. */
        size_t max_line;
        /* Capabilities (a mask of 1 << CAP_*) this backend needs once made,
         * and more it needs where the kernel keeps audit container IDs.
         * ptagsd keeps these and those it needs itself, and drops every
         * other before it serves and before it starts any thread. */
        guint64 capabilities;
        guint64 contid_capabilities;
        /* Read the tags of the process pinned by @pidfd (pid @pid).
         * 0 and *out (transfer full: ptags_set_free), or -errno. */
        int (*read)(PtagsBackend *b, int pidfd, pid_t pid, ptags_set **out);
        /* Optional: read() for a set of at most @max_bytes (-E2BIG when
         * larger, found before any parsing), safe to call from any thread
         * while the main thread applies changes, and logging nothing (a
         * failure is for the caller to handle). */
        int (*read_max)(PtagsBackend *b, int pidfd, pid_t pid, size_t max_bytes, ptags_set **out);
        /* Optional, beside read_max(): an id of the list the pinned process
         * holds that names the same tags for the backend's whole life, so a
         * reader may keep what it made of a list (bpf: the set's id, 0 for
         * none held; no id is given out twice). With @out, also the list
         * itself from the same lookup, as read_max() gives it. Thread-safe
         * as read_max(). 0, or -errno. */
        int (*read_id)(PtagsBackend *b, int pidfd, size_t max_bytes, guint64 *id, ptags_set **out);
        /* Optional, for a backend whose write replaces the whole set: a mark
         * of the program the pinned process runs, which any exec from now
         * on changes. Taken around the read a plan is computed from and
         * given to apply(). 0 and *out, or -errno. */
        int (*exec_mark)(PtagsBackend *b, int pidfd, guint64 *out);
        /* Apply every change of @plan, all or nothing: 0, or -errno with the
         * target's tags as they were before the call (but for
         * @failure->partial) and @failure filled in. @exec_mark: what
         * exec_mark() gave before the plan's read (PTAGS_NO_EXEC_MARK when
         * none); a process that exec'd since gets the change ordered before
         * that exec, so the exec drops what it does not keep. */
        int (*apply)(PtagsBackend *b, int pidfd, pid_t pid, const ptags_plan *plan,
                     guint64 exec_mark, PtagsApplyFailure *failure);
        /* Optional: whether writing @tags would add a list to what the
         * backend keeps itself (bpf: each distinct list once, in ptagsd's
         * memory and its table), so a change that keeps a process's size
         * still grows the backend. NULL: never (ptags-lsm: the kernel keeps
         * each process's list). */
        gboolean (*adds_list)(PtagsBackend *b, const ptags_set *tags);
        /* Call @cb for every live process holding a tag that matches the
         * validated @pattern (empty = any tag). 0 or -errno. */
        int (*find)(PtagsBackend *b, const char *pattern, size_t len, PtagsFoundFunc cb,
                    void *user_data);
        /* Release everything; @b is invalid afterwards. */
        void (*free)(PtagsBackend *b);

        /* Audit container IDs. The service has decided every rule before a
         * write; the kernel may still refuse (its errno is returned). */
        /* The ID of the pinned process; PTAGS_CONTID_UNSET when none. 0 or -errno. */
        int (*read_contid)(PtagsBackend *b, int pidfd, pid_t pid, guint64 *out);
        /* Give the pinned process (every thread) @contid. 0 or -errno. */
        int (*write_contid)(PtagsBackend *b, int pidfd, pid_t pid, guint64 contid);
        /* Call @cb once per live process whose ID is set, and with
         * PTAGS_CONTID_UNSET once per live process whose ID cannot be read
         * (it may carry any). 0 or -errno. Costs one pass over every
         * process (or every task record). */
        int (*list_contids)(PtagsBackend *b, PtagsContidFunc cb, void *user_data);
} PtagsBackendOps;

/* Backends embed this as their first member. */
struct _PtagsBackend {
        const PtagsBackendOps *ops;
        /* Set by ptags_backend_contids_available() (0: not asked yet). */
        int contids;
};

/* The patched-kernel backend: /proc/PID/attr/ptags, or DIR/PID/attr/ptags
 * when @proc_root is non-NULL (tests). (transfer full: ops->free) */
PtagsBackend *ptags_backend_lsm_new(const char *proc_root, GError **error);

#ifdef HAVE_BPF_BACKEND
/* The stock-kernel backend, in backend-bpf.c. (transfer full: ops->free) */
PtagsBackend *ptags_backend_bpf_new(GError **error);
/* Detach the bpf backend's programs and remove its pins and runtime state
 * (uninstalling); fails while a ptagsd runs on them. */
gboolean ptags_backend_bpf_remove_state(GError **error);
#endif

/* Convenience wrappers, so callers never touch ops directly. */
static inline int ptags_backend_read(PtagsBackend *b, int pidfd, pid_t pid, ptags_set **out)
{
        return b->ops->read(b, pidfd, pid, out);
}

#define PTAGS_NO_EXEC_MARK G_MAXUINT64

static inline int ptags_backend_exec_mark(PtagsBackend *b, int pidfd, guint64 *out)
{
        if (b->ops->exec_mark == NULL) {
                *out = PTAGS_NO_EXEC_MARK;
                return 0;
        }
        return b->ops->exec_mark(b, pidfd, out);
}

static inline int ptags_backend_apply(PtagsBackend *b, int pidfd, pid_t pid, const ptags_plan *plan,
                                      guint64 exec_mark, PtagsApplyFailure *failure)
{
        *failure = (PtagsApplyFailure){.refused = -1, .partial = FALSE};
        return b->ops->apply(b, pidfd, pid, plan, exec_mark, failure);
}

static inline gboolean ptags_backend_adds_list(PtagsBackend *b, const ptags_set *tags)
{
        return b->ops->adds_list != NULL && b->ops->adds_list(b, tags);
}

static inline gboolean ptags_backend_has_contids(PtagsBackend *b)
{
        return b->ops->read_contid != NULL && b->ops->write_contid != NULL &&
               b->ops->list_contids != NULL;
}

/* Whether audit container IDs can be read and written: the backend has the
 * operations, and the kernel the file (a ptags-lsm kernel need not carry
 * the contid patches). Asks about ptagsd itself, once. */
gboolean ptags_backend_contids_available(PtagsBackend *b);

static inline void ptags_backend_free(PtagsBackend *b)
{
        if (b != NULL)
                b->ops->free(b);
}
