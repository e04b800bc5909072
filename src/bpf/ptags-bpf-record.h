// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf-record.h: the per-task record and iterator parameters shared by
 * the kernel programs (ptags.bpf.c) and the user-space loader (ptags-bpf.c).
 * Both sides include it, so the layout can never disagree. */
#pragma once

/* A record the daemon or a hook has written; freshly created storage is
 * all zero, so this bit tells "daemon already set it" from "empty". */
#define PTAGS_RECORD_VALID 1u

/* Set id 0 is the empty tag set; real sets are numbered from 1. */
#define PTAGS_SET_EMPTY 0ull

/* Which fields a retag pass writes (the iterator's parameters). */
#define PTAGS_WRITE_SET    1u
#define PTAGS_WRITE_CONTID 2u

/* One per task that has ever been tagged (or descends from one). The lock
 * makes a fork copy and a daemon write atomic against each other: a child
 * gets the old or the new record, never half of each (a plain copy may tear). */
struct ptags_task_record {
        struct bpf_spin_lock lock;
        __u32 flags;
        __u64 set_id;
        __u64 contid;
        /* The loader's mark on the one task it wrote through a pidfd; never
         * copied to a child, so it names that very task (see the retag
         * iterator). */
        __u64 write_token;
};

/* A task's exec stamp, written only by the exec hooks: odd while an exec
 * filters the task's record, even once it is done, and never the same
 * for two execs (it is made from the time). The loader reads it around its
 * writes: a stamp that changed means an exec overlapped the write, which
 * replaced the whole record and may have undone the exec's filtering. */
struct ptags_exec_stamp {
        __u64 stamp;
};

/* One task as the find iterator emits it: binary, for the loader only. */
struct ptags_list_entry {
        __s32 tgid;
        __s32 tid;
        __u64 set_id;
        __u64 contid;
};

/* Retag passes: first find the process the loader wrote through its pidfd,
 * then write every thread of exactly that process. */
#define PTAGS_RETAG_FIND  1u
#define PTAGS_RETAG_WRITE 2u

/* The retag iterator's parameters and, after a FIND pass, its finding. */
struct ptags_retag_params {
        __s32 tgid;
        /* The fields written into a thread that has a record; one without
         * gets both. */
        __u32 write_mask;
        /* The leader's whole new record. */
        __u64 set_id;
        __u64 contid;
        __u32 phase;
        /* Set at each task of the group a pass sees: whether it was the last
         * of its process's thread list then. */
        __u32 at_tail;
        __u64 write_token;
        /* FIND's result: the address of the process's struct pid (its thread
         * group id), 0 when not found. The loader's pidfd holds a reference
         * to it, so no other process can have it while the loader looks. */
        __u64 group_pid;
};
