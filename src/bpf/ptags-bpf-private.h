// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf-private.h: the loader handle's insides, shared by the loader
 * (ptags-bpf.c) and the record/set operations (ptags-bpf-tasks.c). */
#pragma once

#include <pthread.h>

#include "ptags-bpf-sets.h"
#include "ptags-bpf.h"

#define BPFFS_ROOT      "/sys/fs/bpf"
#define DEFAULT_PIN_DIR BPFFS_ROOT "/ptags"
#define DEFAULT_STATE   "/run/ptags"
#define SETS_FILE       "sets"

/* The link pins, by role. The names do not say LSM or tracepoint, so a
 * restart in the other mode replaces the old links like an upgrade. */
enum { LINK_FORK, LINK_EXEC, LINK_TASKS, LINK_COUNT };

struct ptags_bpf {
        pthread_mutex_t lock;
        struct ptags_skel *skel;
        bool lsm;
        bool transient;
        char *pin_dir;
        int lock_fd; /* flock on pin_dir: one owner of the maps at a time */
        /* "/proc/self/fd/<lock_fd>": pins are made and opened through the
         * checked descriptor, never through pin_dir again. */
        char pin_base[32];
        struct bpf_link *links[LINK_COUNT];
        struct bpf_link *retag_link;
        struct bpf_link *find_link;
        uint32_t find_gen;     /* last search generation handed to the kernel */
        uint64_t write_token;  /* last mark a pidfd write left (random start) */
        bool per_process_iter; /* iterators limited to one process work here */
        bool pidfd_info;       /* PIDFD_GET_INFO works here (Linux 6.13) */
        bool nlink_threads;    /* ptags_bpf_nlink_counts_threads() */
        ptags_bpf_sets sets;
        /* The collector (ptags-bpf-tasks.c): walks so far, and when the
         * first set a walk spared for its grace period falls due (ms,
         * CLOCK_MONOTONIC; 0 = none waiting), and the table's size then. */
        uint64_t collect_walks;
        int64_t collect_pending_at;
        uint64_t collect_base; /* table bytes after the last walk */
};

/* Records @fmt as the calling thread's last error and returns @r. */
int ptags_bpf_fail(ptags_bpf *b, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ptags_bpf_exec_map_put(ptags_bpf *b, uint64_t id, uint64_t kept_id);
/* Whether /proc is our pid namespace's and the link count of a
 * /proc/PID/task directory is 2 plus the process's threads, as Linux makes
 * it: checked on our own process. */
bool ptags_bpf_nlink_counts_threads(void);
/* ptags_bpf_list_tasks through this handle's own iterator link, before
 * it is pinned (the pinned file may still be an earlier daemon's). */
int ptags_bpf_list_tasks_unpinned(ptags_bpf *b, ptags_bpf_task **out, size_t *n);
/* Milliseconds on CLOCK_MONOTONIC, never 0. */
int64_t ptags_bpf_now_ms(void);
