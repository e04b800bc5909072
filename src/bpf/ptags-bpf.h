// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf.h: the BPF backend's loader library. Loads and pins the kernel
 * programs, keeps the tag-set table, reads and writes per-task records. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptags-model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Conventions: functions returning int give 0 or a negative errno, and a
 * human-readable reason for the calling thread's last failure is kept
 * (ptags_bpf_last_error). A handle is safe to use from several threads. */

typedef struct ptags_bpf ptags_bpf;

typedef enum {
        PTAGS_BPF_MODE_AUTO = 0,   /* LSM hooks when the bpf LSM is active, else tracepoints */
        PTAGS_BPF_MODE_LSM,        /* LSM hooks or fail */
        PTAGS_BPF_MODE_TRACEPOINT, /* tp_btf hooks even where the LSM would work */
} ptags_bpf_mode;

typedef struct {
        /* Where maps and links are pinned; NULL = /sys/fs/bpf/ptags. A
         * private directory isolates a test instance from the daemon's.
         * Created 0700 when missing; an existing one that is a symbolic
         * link (-ENOTDIR), another user's or writable by group or others
         * (-EPERM) is refused. */
        const char *pin_dir;
        /* Where the set table is kept; NULL = $RUNTIME_DIRECTORY, else
         * /run/ptags. /run/ptags belongs to the default pin_dir: another
         * pin_dir with it is refused (-EINVAL). */
        const char *state_dir;
        ptags_bpf_mode mode;
        /* false: nothing pinned, nothing persisted, everything goes away
         * with the handle (benchmarks). */
        bool transient;
} ptags_bpf_options;

/* Cheap check that this kernel can run the backend at all (task storage,
 * BTF, BPF syscall allowed). 0 when it can; otherwise a negative errno and
 * a reason in @why. */
int ptags_bpf_probe(char *why, size_t why_size);

/* True when "bpf" is in /sys/kernel/security/lsm (LSM programs run only
 * then, even when the kernel was built with them). */
bool ptags_bpf_lsm_active(void);

/* Load, reuse pinned maps (restart keeps every record), attach the new
 * links, then release the previously pinned ones (upgrade without a gap).
 * Pinned maps whose set table is missing while a task holds a set id are
 * refused (-ENOENT), like a damaged table (-EBADMSG): a new table would
 * give those ids to other sets. Outside the initial pid namespace: -ENOTSUP.
 * On failure *out is untouched and @err (may be NULL) gets the reason.
 * (transfer full: ptags_bpf_close) */
int ptags_bpf_open(const ptags_bpf_options *opts, ptags_bpf **out, char *err, size_t err_size);
/* Closes the handle; pinned programs keep running. NULL is allowed. */
void ptags_bpf_close(ptags_bpf *b);
/* Removes every pin under @pin_dir and the set table in @state_dir (NULLs
 * mean the defaults): the programs are detached once no process holds them.
 * -EBUSY while a loader (a running ptagsd) holds the pins; -EINVAL, with
 * ptags_bpf_last_error(NULL) saying why, for a private @pin_dir with the
 * system's state directory (the table there is not that pin_dir's). */
int ptags_bpf_uninstall(const char *pin_dir, const char *state_dir);

/* "bpf-lsm" or "bpf-tracepoint". (transfer none, static) */
const char *ptags_bpf_backend_name(const ptags_bpf *b);
/* The reason for the calling thread's last failure; @b may be NULL.
 * (transfer none, valid until this thread's next call) */
const char *ptags_bpf_last_error(const ptags_bpf *b);

/* Transient handles only (benchmarks): detach and reattach the hooks. */
int ptags_bpf_detach(ptags_bpf *b);
int ptags_bpf_attach(ptags_bpf *b);

/* ------------------------------------------------------------ records */

typedef struct {
        bool valid;      /* false: the task was never tagged */
        uint64_t set_id; /* 0 = empty set */
        uint64_t contid; /* PTAGS_CONTID_UNSET when none */
} ptags_bpf_record;

/* The record of process @pid (its thread-group leader). -ESRCH when the
 * process is gone; an untagged task gives valid = false, set 0, unset. */
int ptags_bpf_get_record(ptags_bpf *b, pid_t pid, ptags_bpf_record *out);

/* The same for the process a pidfd names (the daemon pins targets so). */
int ptags_bpf_get_record_pidfd(ptags_bpf *b, int pidfd, ptags_bpf_record *out);
/* The contents of the set a record names. (transfer full: ptags_set_free) */
int ptags_bpf_tags_of_record(ptags_bpf *b, const ptags_bpf_record *rec, ptags_set **out);
/* The same, or -E2BIG without parsing anything when the set takes more
 * than @max_bytes in the kernel's read format. */
int ptags_bpf_tags_of_record_max(ptags_bpf *b, const ptags_bpf_record *rec, size_t max_bytes,
                                 ptags_set **out);

/* The tags of process @pid. (transfer full: ptags_set_free) */
int ptags_bpf_read_tags(ptags_bpf *b, pid_t pid, ptags_set **out);

/* Writes name the process by a pidfd, never by a pid number: only the process
 * the pidfd holds is ever written, or -ESRCH once it has exited, even if its
 * pid now belongs to another process. -EAGAIN when a thread other than the
 * leader exec'd during the write (try again). */

/* A mark of the program the process @pidfd names runs: any exec from now
 * on changes it (watching the process's execs from now on). Taken before
 * reading the tags a write is computed from, and given to the write. */
int ptags_bpf_exec_mark(ptags_bpf *b, int pidfd, uint64_t *out);
/* No mark: a write compares the stamp it finds when it starts. */
#define PTAGS_BPF_NO_MARK UINT64_MAX

/* Give every thread of the process @pidfd names the set @tags: interns it
 * (and its kept subset, exec map first) and writes the record of each
 * thread. When the process exec'd since @mark (or execs during the write),
 * the write is ordered before that exec: the process gets what the exec
 * keeps of @tags. */
int ptags_bpf_write_tags(ptags_bpf *b, int pidfd, const ptags_set *tags, uint64_t mark);

/* Whether the table already holds a set of exactly @tags (the empty set
 * always counts as held). */
bool ptags_bpf_has_set(ptags_bpf *b, const ptags_set *tags);

/* After the calling thread's last write failed: whether the process's
 * leader had taken the new record before the failure (a thread pass that
 * failed, or threads that kept exec'ding), so the process holds part of
 * the write: its leader the new set, other threads the old one. */
bool ptags_bpf_last_write_partial(void);

/* Give every thread an already interned set id (tests, restore). */
int ptags_bpf_write_set_id(ptags_bpf *b, int pidfd, uint64_t set_id);

/* Set id and container ID together, in one locked write per thread. */
int ptags_bpf_write_record(ptags_bpf *b, int pidfd, uint64_t set_id, uint64_t contid);

/* Write the container ID of every thread. */
int ptags_bpf_write_contid(ptags_bpf *b, int pidfd, uint64_t contid);

/* ----------------------------------------------------------- set table */

/* The id of @tags, adding it (and its kept subset, exec map entry first)
 * when new; the empty set is 0. Persisted before it returns. */
int ptags_bpf_intern(ptags_bpf *b, const ptags_set *tags, uint64_t *id);
/* The contents of set @id, or NULL when unknown. (transfer full) */
ptags_set *ptags_bpf_set_contents(ptags_bpf *b, uint64_t id);
/* Number of sets in the table (the empty set not counted). */
size_t ptags_bpf_set_count(ptags_bpf *b);
/* Drops every set no live task refers to (directly or as the kept subset
 * of a referenced set); *freed (may be NULL) gets how many. A fork in
 * flight (its child not yet listed) may still be copying such a set: the
 * daemon uses ptags_bpf_collect_aged instead. */
int ptags_bpf_collect(ptags_bpf *b, size_t *freed);
/* The same, but a set goes only once walks at least @grace_ms apart found
 * no holder; a set interned within @grace_ms is not dropped either (it may
 * be about to be written). Costs one walk of the tasks and of the table. */
int ptags_bpf_collect_aged(ptags_bpf *b, unsigned grace_ms, size_t *freed);
/* True when a collection is worth its walk now: the sets added since the
 * last one outweigh the table (or a floor), or sets a walk spared for
 * their grace period are due. Cheap; for a timer to ask often. */
bool ptags_bpf_collect_wanted(ptags_bpf *b);

/* ------------------------------------------------------- enumeration */

typedef struct {
        pid_t tgid;
        pid_t tid;
        uint64_t set_id;
        uint64_t contid;
} ptags_bpf_task;

/* Every task with a record, through the pinned iterator (pitfall 7).
 * (transfer full: free(*out)) */
int ptags_bpf_list_tasks(ptags_bpf *b, ptags_bpf_task **out, size_t *n);

/* Every task holding a set with a tag that matches the validated @pattern
 * (empty: any tag), through the kernel-side filter of the find iterator:
 * the walk emits only those tasks. (transfer full: free(*out)) */
int ptags_bpf_find_tasks(ptags_bpf *b, const char *pattern, size_t len, ptags_bpf_task **out,
                         size_t *n);

/* Kernel-side diagnostic counters. */
int ptags_bpf_counters(ptags_bpf *b, uint64_t *alloc_failures, uint64_t *exec_misses);

#ifdef __cplusplus
}
#endif
