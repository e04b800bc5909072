// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags.bpf.c: kernel half of the BPF backend. Keeps each task's tag-set id
 * and container ID in task storage, copies it at fork and filters it at exec. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "ptags-bpf-record.h"

char LICENSE[] SEC("license") = "GPL";

#define CONTID_UNSET (~0ull)

struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct ptags_task_record);
} task_records SEC(".maps");

/* The exec stamp of each task that holds a record or that the loader
 * asked to watch (struct ptags_exec_stamp). Not pinned: stamps are only
 * compared within one loader's life. */
struct {
        __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, int);
        __type(value, struct ptags_exec_stamp);
} task_execs SEC(".maps");

/* Set id -> id of its kept subset; filled by the daemon before the id is
 * given to any task, so an exec never finds a hole (pitfall 6). */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 262144);
        __type(key, __u64);
        __type(value, __u64);
} exec_kept SEC(".maps");

/* Set ids a FindTagged is after: set id -> the search's generation. Filled
 * by the loader under its mutex just before a find pass, so the kernel
 * emits only the tasks that hold a matching set. Not preallocated: this map
 * is made anew at every start, and 65536 preallocated entries took a
 * quarter of a restart; it grows only as searches use it. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __uint(max_entries, 65536);
        __type(key, __u64);
        __type(value, __u32);
} find_ids SEC(".maps");

/* The current search's generation; 0 = emit every tagged task. */
__u32 find_gen = 0;

/* Counters user space reads for diagnostics: storage allocation failures
 * and exec lookups that found no entry (each one dropped every tag). */
__u64 alloc_failures = 0;
__u64 exec_misses = 0;

/* Written by user space before each retag pass; the pass runs under the
 * loader's mutex so there is exactly one writer. */
struct ptags_retag_params retag = {};

/* @task's storage in @map, created when missing. Of two creations at once
 * (a fork hook and a retag pass, an exec hook and the loader) the second
 * fails, but the first's storage is there: it is looked up again. */
static __always_inline void *get_or_create(void *map, struct task_struct *task)
{
        void *v = bpf_task_storage_get(map, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

        return v ? v : bpf_task_storage_get(map, task, 0, 0);
}

static __always_inline void copy_record(struct task_struct *parent, struct task_struct *child,
                                        bool overwrite)
{
        struct ptags_task_record *src, *dst;
        __u64 set_id, contid;
        __u32 flags;

        /* No storage is created for untagged parents: that keeps the
         * untagged fork cost at one failed lookup (pitfall 4). */
        src = bpf_task_storage_get(&task_records, parent, 0, 0);
        if (!src)
                return;
        bpf_spin_lock(&src->lock);
        set_id = src->set_id;
        contid = src->contid;
        flags = src->flags;
        bpf_spin_unlock(&src->lock);
        /* An empty record means the same as none: the child pays no
         * allocation, and a record the daemon already wrote stays. */
        if (!(flags & PTAGS_RECORD_VALID) || (set_id == PTAGS_SET_EMPTY && contid == CONTID_UNSET))
                return;

        dst = get_or_create(&task_records, child);
        if (!dst) {
                __sync_fetch_and_add(&alloc_failures, 1);
                return;
        }
        bpf_spin_lock(&dst->lock);
        /* The tracepoint runs after the child is visible: a record the
         * daemon wrote in between is newer than the parent's (pitfall 5). */
        if (overwrite || !(dst->flags & PTAGS_RECORD_VALID)) {
                dst->set_id = set_id;
                dst->contid = contid;
                dst->flags = PTAGS_RECORD_VALID;
        }
        bpf_spin_unlock(&dst->lock);
}

static __always_inline void exec_filter(struct task_struct *task)
{
        struct ptags_task_record *rec;
        struct ptags_exec_stamp *st;
        __u64 set_id, kept_id, *kept, now;

        rec = bpf_task_storage_get(&task_records, task, 0, 0);
        /* A task with a record gets a stamp; one without has nothing to
         * filter and is stamped only when the loader watches it. */
        if (rec)
                st = get_or_create(&task_execs, task);
        else
                st = bpf_task_storage_get(&task_execs, task, 0, 0);
        if (rec && !st)
                __sync_fetch_and_add(&alloc_failures, 1);
        now = bpf_ktime_get_ns();
        /* Odd before the record changes: the record's lock orders this
         * store before the change for a loader that takes the lock after. */
        if (st)
                st->stamp = now * 2 + 1;
        if (!rec)
                goto stamped;
        bpf_spin_lock(&rec->lock);
        set_id = rec->set_id;
        bpf_spin_unlock(&rec->lock);
        if (set_id == PTAGS_SET_EMPTY)
                goto stamped;

        kept = bpf_map_lookup_elem(&exec_kept, &set_id);
        if (kept) {
                kept_id = *kept;
        } else {
                /* Fail closed: an unknown set keeps nothing. */
                kept_id = PTAGS_SET_EMPTY;
                __sync_fetch_and_add(&exec_misses, 1);
        }
        bpf_spin_lock(&rec->lock);
        /* A daemon write that raced the exec wins here; the loader sees the
         * stamp change and filters what it wrote itself. */
        if (rec->set_id == set_id)
                rec->set_id = kept_id;
        bpf_spin_unlock(&rec->lock);
stamped:
        if (st)
                st->stamp = now * 2 + 2;
}

/* --- LSM path: runs inside copy_process, before the child is visible. */

SEC("lsm/task_alloc")
int BPF_PROG(ptags_lsm_task_alloc, struct task_struct *task, unsigned long clone_flags)
{
        copy_record(bpf_get_current_task_btf(), task, true);
        return 0;
}

SEC("lsm/bprm_committed_creds")
int BPF_PROG(ptags_lsm_exec, struct linux_binprm *bprm)
{
        exec_filter(bpf_get_current_task_btf());
        return 0;
}

/* --- Tracepoint path: where the bpf LSM is not active. */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ptags_tp_fork, struct task_struct *parent, struct task_struct *child)
{
        /* The hook fires in the thread that called fork, which is the
         * thread whose record the child must get. */
        copy_record(bpf_get_current_task_btf(), child, false);
        return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ptags_tp_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
        exec_filter(bpf_get_current_task_btf());
        return 0;
}

/* --- Iterators. */

/* Text dump of every tagged task, "TGID TID SET_ID CONTID\n"; pinned so
 * `cat` works for administrators and FindTagged reads it (pitfall 7). */
SEC("iter/task")
int ptags_iter_dump(struct bpf_iter__task *ctx)
{
        struct seq_file *seq = ctx->meta->seq;
        struct task_struct *task = ctx->task;
        struct ptags_task_record *rec;
        __u64 set_id, contid;
        __u32 flags;
        int tgid, tid;

        if (!task)
                return 0;
        rec = bpf_task_storage_get(&task_records, task, 0, 0);
        if (!rec)
                return 0;
        bpf_spin_lock(&rec->lock);
        set_id = rec->set_id;
        contid = rec->contid;
        flags = rec->flags;
        bpf_spin_unlock(&rec->lock);
        if (!(flags & PTAGS_RECORD_VALID))
                return 0;
        tgid = BPF_CORE_READ(task, tgid);
        tid = BPF_CORE_READ(task, pid);
        BPF_SEQ_PRINTF(seq, "%d %d %llu %llu\n", tgid, tid, set_id, contid);
        return 0;
}

/* Every tagged task holding a set of the current search, as binary
 * struct ptags_list_entry records (the text dump above is for people). */
SEC("iter/task")
int ptags_iter_find(struct bpf_iter__task *ctx)
{
        struct seq_file *seq = ctx->meta->seq;
        struct task_struct *task = ctx->task;
        struct ptags_task_record *rec;
        struct ptags_list_entry e;
        __u32 flags, gen = find_gen, *found;

        /* A task that has exited (a zombie until reaped) keeps its record
         * but holds nothing: an exited process is gone to every method. */
        if (!task || BPF_CORE_READ(task, exit_state) != 0)
                return 0;
        rec = bpf_task_storage_get(&task_records, task, 0, 0);
        if (!rec)
                return 0;
        bpf_spin_lock(&rec->lock);
        e.set_id = rec->set_id;
        e.contid = rec->contid;
        flags = rec->flags;
        bpf_spin_unlock(&rec->lock);
        if (!(flags & PTAGS_RECORD_VALID) || e.set_id == PTAGS_SET_EMPTY)
                return 0;
        if (gen != 0) {
                found = bpf_map_lookup_elem(&find_ids, &e.set_id);
                if (!found || *found != gen)
                        return 0;
        }
        e.tgid = BPF_CORE_READ(task, tgid);
        e.tid = BPF_CORE_READ(task, pid);
        bpf_seq_write(seq, &e, sizeof(e));
        return 0;
}

/* Whether @task is the last thread of its process's list now. A walk of one
 * process's threads (Linux 6.1+) ends early when the thread it stands on
 * exits, or when a read resumes at a thread that has exited: one whose last
 * task was not the last thread may have missed some. */
static __always_inline __u32 last_thread(struct task_struct *task)
{
        __u64 head = (__u64)BPF_CORE_READ(task, signal) +
                     bpf_core_field_offset(struct signal_struct, thread_head);

        return (__u64)BPF_CORE_READ(task, thread_node.next) == head;
}

/* Writes the retag parameters into every thread of one process: task
 * storage is per thread (pitfall 3) and a pidfd reaches only the leader
 * before 6.9. The loader has already written the leader through its pidfd,
 * marked with a write token. A FIND pass looks for that mark on a leader
 * with the right thread-group id and notes its struct pid; a WRITE pass then
 * writes the tasks whose thread group is that struct pid. A process that
 * reused the pid has another struct pid, so it is never written. Each pass
 * emits one byte per task of the group it saw or wrote, so the caller can
 * count, and says whether the last of them ended the thread list. */
SEC("iter/task")
int ptags_iter_retag(struct bpf_iter__task *ctx)
{
        struct seq_file *seq = ctx->meta->seq;
        struct task_struct *task = ctx->task;
        struct ptags_task_record *rec;
        __u32 mask = retag.write_mask;
        __u64 set_id = retag.set_id, contid = retag.contid;
        struct pid *group;
        char mark = 't';

        if (!task || retag.tgid <= 0 || BPF_CORE_READ(task, tgid) != retag.tgid)
                return 0;
        group = BPF_CORE_READ(task, signal, pids[PIDTYPE_TGID]);
        if (retag.phase == PTAGS_RETAG_FIND) {
                retag.at_tail = last_thread(task);
                if (BPF_CORE_READ(task, pid) == retag.tgid) {
                        rec = bpf_task_storage_get(&task_records, task, 0, 0);
                        if (rec && rec->write_token == retag.write_token)
                                retag.group_pid = (__u64)group;
                }
                bpf_seq_write(seq, &mark, 1);
                return 0;
        }
        if (retag.phase != PTAGS_RETAG_WRITE || retag.group_pid == 0 ||
            (__u64)group != retag.group_pid)
                return 0;
        rec = get_or_create(&task_records, task);
        if (!rec) {
                __sync_fetch_and_add(&alloc_failures, 1);
                retag.at_tail = 0;
                return 0;
        }
        bpf_spin_lock(&rec->lock);
        /* A thread without a record yet may be one started during the write,
         * whose fork hook will find this record and leave it: it takes the
         * leader's whole new record, never a default for the field not
         * written (that would drop its tags or its container ID). */
        if (!(rec->flags & PTAGS_RECORD_VALID)) {
                rec->set_id = set_id;
                rec->contid = contid;
                rec->flags = PTAGS_RECORD_VALID;
        } else {
                if (mask & PTAGS_WRITE_SET)
                        rec->set_id = set_id;
                if (mask & PTAGS_WRITE_CONTID)
                        rec->contid = contid;
        }
        bpf_spin_unlock(&rec->lock);
        /* Read after the write: a thread this one started in time to copy
         * the old record was on the list before that copy. */
        retag.at_tail = last_thread(task);
        bpf_seq_write(seq, &mark, 1);
        return 0;
}
