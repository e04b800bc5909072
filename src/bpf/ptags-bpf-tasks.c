// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf-tasks.c: the BPF backend's writes and walks: interning sets,
 * retagging every thread of a process, enumerating and collecting. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ptags-bpf-private.h"
#include "ptags-bpf-record.h"
#include "ptags.skel.h"

int64_t ptags_bpf_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1;
}

/* Adds text as a set whose kept subset is @kept_id (UINT64_MAX = itself):
 * journalled, then the exec map filled, and only then the id handed out. */
static int add_set(ptags_bpf *b, const char *text, size_t len, uint64_t kept_id, uint64_t *id)
{
        ptags_bpf_set_entry *e = NULL;
        /* Journalled first: a daemon killed after this point finds the id
         * on restart and refills the exec map from the table; one killed
         * during the append leaves a torn record that the load ignores. */
        int r = ptags_bpf_sets_add(&b->sets, text, len, kept_id, &e);
        if (r < 0)
                return ptags_bpf_fail(b, r, "cannot record a new tag set: %s", strerror(-r));
        r = ptags_bpf_exec_map_put(b, e->id, e->kept_id);
        if (r < 0) {
                /* Never handed out, and must not be found by its text later
                 * without an exec map entry. */
                ptags_bpf_sets_remove(&b->sets, e);
                return r;
        }
        /* Spared by aged collections until it has had time to be written. */
        e->unref_since = ptags_bpf_now_ms();
        *id = e->id;
        return 0;
}

/* A set found by its text is about to be handed out again: a collection
 * that saw no holder must give it a new grace period. */
static uint64_t reuse(ptags_bpf_set_entry *e)
{
        if (e->unref_since != 0)
                e->unref_since = ptags_bpf_now_ms();
        return e->id;
}

static int intern_locked(ptags_bpf *b, const ptags_set *tags, uint64_t *id)
{
        if (ptags_set_count(tags) == 0) {
                *id = PTAGS_SET_EMPTY;
                return 0;
        }
        size_t len = 0, kept_len = 0;
        char *text = ptags_set_format(tags, &len);
        ptags_set *kept = NULL;
        char *kept_text = NULL;
        uint64_t kept_id = PTAGS_SET_EMPTY;
        int r = 0;

        if (!text) {
                r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
                goto out;
        }
        ptags_bpf_set_entry *known = ptags_bpf_sets_by_text(&b->sets, text, len);
        if (known) {
                *id = reuse(known);
                goto out;
        }
        kept = ptags_set_copy(tags);
        if (!kept) {
                r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
                goto out;
        }
        ptags_set_exec_filter(kept);
        kept_text = ptags_set_format(kept, &kept_len);
        if (!kept_text) {
                r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
                goto out;
        }
        if (kept_len == len) {
                /* Everything is kept: the set is its own kept subset. */
                r = add_set(b, text, len, UINT64_MAX, id);
                goto out;
        }
        if (kept_len > 0) {
                known = ptags_bpf_sets_by_text(&b->sets, kept_text, kept_len);
                if (known)
                        kept_id = reuse(known);
                else
                        r = add_set(b, kept_text, kept_len, UINT64_MAX, &kept_id);
        }
        if (r == 0)
                r = add_set(b, text, len, kept_id, id);
out:
        free(text);
        free(kept_text);
        ptags_set_free(kept);
        return r;
}

int ptags_bpf_intern(ptags_bpf *b, const ptags_set *tags, uint64_t *id)
{
        pthread_mutex_lock(&b->lock);
        int r = intern_locked(b, tags, id);
        pthread_mutex_unlock(&b->lock);
        return r;
}

size_t ptags_bpf_set_count(ptags_bpf *b)
{
        pthread_mutex_lock(&b->lock);
        size_t n = b->sets.count;
        pthread_mutex_unlock(&b->lock);
        return n;
}

/* Runs one retag pass; returns the number of tasks of the group it saw. */
static int retag_pass(ptags_bpf *b, struct bpf_link *link, uint32_t phase)
{
        char buf[4096];
        int count = 0;

        b->skel->bss->retag.phase = phase;
        b->skel->bss->retag.at_tail = 0;
        int fd = bpf_iter_create(bpf_link__fd(link));
        if (fd < 0)
                return ptags_bpf_fail(b, -errno, "cannot start the retag iterator: %s",
                                      strerror(errno));
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        count = ptags_bpf_fail(b, -errno, "retag iterator failed: %s",
                                               strerror(errno));
                        break;
                }
                if (n == 0)
                        break;
                count += (int)n;
        }
        close(fd);
        return count;
}

/* A write pass, and a second one for a thread started meanwhile from one
 * the first had not reached yet; returns the number of tasks the last wrote.
 * *@cut: whether either pass ended before the process's last thread (for a
 * walk of one process's threads only: the walk of every task has no such
 * end). */
static int write_passes(ptags_bpf *b, struct bpf_link *link, bool *cut)
{
        int n = retag_pass(b, link, PTAGS_RETAG_WRITE);
        *cut = !b->skel->bss->retag.at_tail;
        if (n > 1) {
                n = retag_pass(b, link, PTAGS_RETAG_WRITE);
                *cut = *cut || !b->skel->bss->retag.at_tail;
        }
        return n;
}

/* What PIDFD_GET_INFO (Linux 6.13) fills, in its first version; later
 * kernels accept this size too. Debian 12's headers predate it. */
struct pidfd_info_v0 {
        uint64_t mask;
        uint64_t cgroupid;
        uint32_t pid, tgid, ppid;
        uint32_t ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
        uint32_t spare0[1];
};
#define PTAGS_PIDFD_GET_INFO _IOWR(0xFF, 11, struct pidfd_info_v0)

/* The pid of the process @pidfd names, in our pid namespace; -ESRCH when
 * gone. Called for every write: the ioctl costs one syscall where the
 * fdinfo file costs three and a procfs lookup. */
static int pidfd_pid(ptags_bpf *b, int pidfd)
{
        if (b->pidfd_info) {
                struct pidfd_info_v0 info = {.mask = 1 /* PIDFD_INFO_PID */};
                if (ioctl(pidfd, PTAGS_PIDFD_GET_INFO, &info) == 0)
                        return info.tgid > 0 ? (int)info.tgid : -ESRCH;
                if (errno == ESRCH)
                        return -ESRCH;
                if (errno != ENOTTY && errno != EINVAL)
                        return -EBADF;
                b->pidfd_info = false; /* before 6.13: ask fdinfo from now on */
        }

        char path[64], text[512];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -EBADF;
        ssize_t n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0)
                return -EBADF;
        text[n] = '\0';
        const char *line = strstr(text, "\nPid:");
        int pid = -1;
        if (line == NULL || sscanf(line + 1, "Pid: %d", &pid) != 1)
                return -EBADF;
        return pid > 0 ? pid : -ESRCH;
}

/* Writes the leader of the process @pidfd names, through the pidfd itself:
 * the kernel resolves it to that very task or fails, whatever its pid has
 * become. Marks the record with a fresh write token. *@set_written and
 * *@contid_written get the leader's whole new record. */
static int write_leader(ptags_bpf *b, int pidfd, uint32_t mask, uint64_t set_id, uint64_t contid,
                        uint64_t *set_written, uint64_t *contid_written)
{
        struct bpf_map *map = b->skel->maps.task_records;
        struct ptags_task_record rec = {0};

        int r = bpf_map__lookup_elem(map, &pidfd, sizeof(pidfd), &rec, sizeof(rec), BPF_F_LOCK);
        if (r < 0 && r != -ENOENT)
                return ptags_bpf_fail(b, r, "cannot read a task record: %s", strerror(-r));
        if (r == -ENOENT || !(rec.flags & PTAGS_RECORD_VALID))
                rec = (struct ptags_task_record){.set_id = PTAGS_SET_EMPTY,
                                                 .contid = PTAGS_CONTID_UNSET};
        rec.flags = PTAGS_RECORD_VALID;
        if (mask & PTAGS_WRITE_SET)
                rec.set_id = set_id;
        if (mask & PTAGS_WRITE_CONTID)
                rec.contid = contid;
        rec.write_token = ++b->write_token;
        *set_written = rec.set_id;
        *contid_written = rec.contid;
        r = bpf_map__update_elem(map, &pidfd, sizeof(pidfd), &rec, sizeof(rec),
                                 BPF_ANY | BPF_F_LOCK);
        /* The kernel answers ENOENT for a pidfd whose process is gone. */
        if (r == -ENOENT || r == -ESRCH)
                return ptags_bpf_fail(b, -ESRCH, "the process has exited");
        if (r < 0)
                return ptags_bpf_fail(b, r, "cannot write a task record: %s", strerror(-r));
        return 0;
}

bool ptags_bpf_nlink_counts_threads(void)
{
        /* /proc must be our pid namespace's, or a pid would name another
         * process there. */
        char self[32];
        ssize_t len = readlink("/proc/self", self, sizeof(self) - 1);
        if (len <= 0)
                return false;
        self[len] = '\0';
        if (strtol(self, NULL, 10) != getpid())
                return false;
        /* Our own threads, counted between two stats that agree (no thread
         * came or went meanwhile), must be the link count less 2. */
        for (int attempt = 0; attempt < 3; attempt++) {
                struct stat before, after;
                DIR *dir;
                if (stat("/proc/self/task", &before) < 0 ||
                    (dir = opendir("/proc/self/task")) == NULL)
                        return false;
                nlink_t threads = 0;
                for (struct dirent *e; (e = readdir(dir)) != NULL;)
                        threads += e->d_name[0] != '.';
                closedir(dir);
                if (stat("/proc/self/task", &after) < 0)
                        return false;
                if (before.st_nlink == after.st_nlink)
                        return before.st_nlink == threads + 2;
        }
        return false;
}

/* Whether process @tgid has one thread (one stat, where the kernel's link
 * count tells); false when unknown. Only as good as the pid: the caller
 * proves the process was alive afterwards. */
static bool one_thread(ptags_bpf *b, int tgid)
{
        char path[48];
        struct stat st;

        snprintf(path, sizeof(path), "/proc/%d/task", tgid);
        return b->nlink_threads && stat(path, &st) == 0 && st.st_nlink == 3;
}

/* Whether the leader @pidfd reaches now carries the mark write_leader left. */
static bool leader_marked(ptags_bpf *b, int pidfd)
{
        struct ptags_task_record rec;

        return bpf_map__lookup_elem(b->skel->maps.task_records, &pidfd, sizeof(pidfd), &rec,
                                    sizeof(rec), BPF_F_LOCK) == 0 &&
               rec.write_token == b->write_token;
}

/* Whether the calling thread's last retag_locked wrote its leader. */
static __thread bool leader_written;

bool ptags_bpf_last_write_partial(void)
{
        return leader_written;
}

/* Whether attaching an iterator of one process's threads failed with @err
 * because this kernel has none (before 6.1 it refuses the pidfd field of
 * a link_info it knows shorter: E2BIG), not for this once (no descriptor
 * or memory left, the process gone: that write walks every task). */
static bool iter_unsupported(int err)
{
        return err == E2BIG || err == EINVAL || err == EOPNOTSUPP || err == 524 /* ENOTSUPP */;
}

/* Writes the record of every thread of the process @pidfd names; *@set_written
 * is the set its leader holds now (the one given, or the one kept for a
 * write of the container ID alone). */
static int retag_once(ptags_bpf *b, int pidfd, uint32_t mask, uint64_t set_id, uint64_t contid,
                      uint64_t *set_written)
{
        int tgid = pidfd_pid(b, pidfd);
        if (tgid < 0)
                return ptags_bpf_fail(b, tgid, "the process has exited");
        uint64_t leader_contid = 0;
        int r = write_leader(b, pidfd, mask, set_id, contid, set_written, &leader_contid);
        if (r < 0)
                return r;
        leader_written = true;
        /* A process of one thread needs no pass over its threads: its only
         * thread was the leader just written (the mark, read after the
         * count, proves no other thread exec'd and took its place, and that
         * the process still lived, so the pid was its own), and a thread it
         * starts from now on copies the new record. The count costs one
         * stat where a pass costs six syscalls and an iterator's set-up. */
        if (one_thread(b, tgid) && leader_marked(b, pidfd))
                return 0;
        /* The leader's whole record: a thread that has none yet (one
         * started during the write, before its fork hook copied its
         * parent's) gets both fields, not a default for the one not
         * written. */
        b->skel->bss->retag = (struct ptags_retag_params){.tgid = tgid,
                                                          .write_mask = mask,
                                                          .set_id = *set_written,
                                                          .contid = leader_contid,
                                                          .write_token = b->write_token};
        /* Since 6.1 an iterator can be limited to one process's threads,
         * so a pass costs that process's threads, not every task on the
         * machine. (The program still checks the struct pid: the kernel
         * turns the pidfd into a pid number for the walk.) Older kernels
         * walk every task through the shared link. */
        union bpf_iter_link_info info = {.task = {.pid_fd = (uint32_t)pidfd}};
        LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
        struct bpf_link *own =
                b->per_process_iter
                        ? bpf_program__attach_iter(b->skel->progs.ptags_iter_retag, &opts)
                        : NULL;
        if (!own && b->per_process_iter && iter_unsupported(errno))
                b->per_process_iter = false; /* this kernel cannot: stop trying */
        struct bpf_link *link = own ? own : b->retag_link;
        int n = retag_pass(b, link, PTAGS_RETAG_FIND);
        if (n >= 0 && b->skel->bss->retag.group_pid == 0) {
                /* No leader of that pid carries our mark: the process exited
                 * (the pid may be someone else's by now), or a thread other
                 * than the leader exec'd and took its place. */
                r = pidfd_pid(b, pidfd) < 0 ? ptags_bpf_fail(b, -ESRCH, "the process has exited")
                                            : ptags_bpf_fail(b, -EAGAIN,
                                                             "the process exec'd from a thread "
                                                             "during the write");
                n = r;
        } else if (n > 1 || (own && !b->skel->bss->retag.at_tail)) {
                /* More threads than the leader (or a walk cut short before
                 * it could tell, below). A thread created while the write
                 * pass runs may copy the old record from a thread not yet
                 * visited: a second pass catches it. */
                bool cut = false;
                n = write_passes(b, link, &cut);
                /* A walk of the process's threads that did not end at its
                 * last thread was cut short by an exit (no count tells:
                 * threads come and go meanwhile). A thread started from
                 * one it missed may hold the old record even if the other
                 * pass ran whole, so either pass cut means the walk of
                 * every task, which goes by pid and steps over exited
                 * ones, twice. */
                if (n >= 0 && own && cut)
                        n = write_passes(b, b->retag_link, &cut);
        }
        bpf_link__destroy(own);
        b->skel->bss->retag.tgid = 0;
        b->skel->bss->retag.group_pid = 0;
        return n < 0 ? n : 0;
}

/* The exec stamp of the task @pidfd reaches now (see struct
 * ptags_exec_stamp); 0 when it has none, or has exited. */
static int exec_stamp(ptags_bpf *b, int pidfd, uint64_t *out)
{
        struct ptags_exec_stamp st = {0};
        int r = bpf_map__lookup_elem(b->skel->maps.task_execs, &pidfd, sizeof(pidfd), &st,
                                     sizeof(st), 0);
        if (r < 0 && r != -ENOENT)
                return ptags_bpf_fail(b, r, "cannot read an exec stamp: %s", strerror(-r));
        *out = st.stamp;
        return 0;
}

/* The stamp of a task the loader watches that has not exec'd since:
 * never an exec's (those are made from the time), and never 0, which is
 * what a task without a stamp reads as. So a mark taken from one task is
 * never the stamp of another that takes its place by an exec. */
#define STAMP_WATCHED 1

int ptags_bpf_exec_mark(ptags_bpf *b, int pidfd, uint64_t *out)
{
        struct ptags_exec_stamp watched = {.stamp = STAMP_WATCHED};
        int r = exec_stamp(b, pidfd, out);
        if (r < 0 || *out != 0)
                return r;
        /* Not watched yet: from now on the exec hooks stamp it, whether or
         * not it holds a record. An exec that stamped it meanwhile is read
         * back. */
        r = bpf_map__update_elem(b->skel->maps.task_execs, &pidfd, sizeof(pidfd), &watched,
                                 sizeof(watched), BPF_NOEXIST);
        if (r == -EEXIST)
                return exec_stamp(b, pidfd, out);
        if (r == -ENOENT || r == -ESRCH)
                return ptags_bpf_fail(b, -ESRCH, "the process has exited");
        if (r < 0)
                return ptags_bpf_fail(b, r, "cannot watch a process's execs: %s", strerror(-r));
        *out = STAMP_WATCHED;
        return 0;
}

/* What an exec leaves of set @id. */
static uint64_t kept_of(ptags_bpf *b, uint64_t id)
{
        const ptags_bpf_set_entry *e =
                id == PTAGS_SET_EMPTY ? NULL : ptags_bpf_sets_by_id(&b->sets, id);
        return e ? e->kept_id : PTAGS_SET_EMPTY;
}

/* A write replaces whole records, so an exec must never fall between what
 * it was computed from and the write: the exec's filtering would be undone
 * (tags it dropped come back), and a change meant for the old program
 * would reach the new one whole. The process's exec stamp, taken with
 * what the write was computed from (@mark; PTAGS_BPF_NO_MARK: now), tells.
 * When it changed, the write is ordered before the exec: the set written
 * is what the exec keeps of it, as the exec's own filtering would have
 * left it. */
#define RETAG_TRIES 3

static int retag_locked(ptags_bpf *b, int pidfd, uint32_t mask, uint64_t set_id, uint64_t contid,
                        uint64_t mark)
{
        uint64_t stamp, written;
        leader_written = false;
        int r = exec_stamp(b, pidfd, &stamp);
        if (r < 0)
                return r;
        if (mark == PTAGS_BPF_NO_MARK)
                mark = stamp;
        else if (stamp != mark && (mask & PTAGS_WRITE_SET))
                set_id = kept_of(b, set_id);
        r = retag_once(b, pidfd, mask, set_id, contid, &written);
        /* A thread that exec'd after the leader was written took its place
         * unwritten (-EAGAIN). The kernel writes every thread at once, so
         * there the exec comes after the write: the new leader gets what
         * the exec keeps of it, as children the old leader forked
         * meanwhile already carry the write. */
        for (int i = 1; r == -EAGAIN && i < RETAG_TRIES; i++)
                r = retag_once(b, pidfd, mask,
                               (mask & PTAGS_WRITE_SET) ? kept_of(b, set_id) : set_id, contid,
                               &written);
        /* An exec during the write itself: the record may be the one
         * written or what the exec kept of it; the kept part is right for
         * both. (A second exec keeps it whole: kept sets are kept.) */
        if (r == 0 && (r = exec_stamp(b, pidfd, &stamp)) == 0 && stamp != mark &&
            kept_of(b, written) != written)
                r = retag_once(b, pidfd, mask | PTAGS_WRITE_SET, kept_of(b, written), contid,
                               &written);
        return r;
}

bool ptags_bpf_has_set(ptags_bpf *b, const ptags_set *tags)
{
        if (ptags_set_count(tags) == 0)
                return true;
        size_t len = 0;
        char *text = ptags_set_format(tags, &len);
        if (!text)
                return false; /* out of memory: say it would add one */
        pthread_mutex_lock(&b->lock);
        bool held = ptags_bpf_sets_by_text(&b->sets, text, len) != NULL;
        pthread_mutex_unlock(&b->lock);
        free(text);
        return held;
}

int ptags_bpf_write_tags(ptags_bpf *b, int pidfd, const ptags_set *tags, uint64_t mark)
{
        uint64_t id;
        leader_written = false; /* a failed intern writes nothing */
        pthread_mutex_lock(&b->lock);
        int r = intern_locked(b, tags, &id);
        if (r == 0)
                r = retag_locked(b, pidfd, PTAGS_WRITE_SET, id, 0, mark);
        pthread_mutex_unlock(&b->lock);
        return r;
}

int ptags_bpf_write_set_id(ptags_bpf *b, int pidfd, uint64_t set_id)
{
        pthread_mutex_lock(&b->lock);
        int r = set_id == PTAGS_SET_EMPTY || ptags_bpf_sets_by_id(&b->sets, set_id)
                        ? retag_locked(b, pidfd, PTAGS_WRITE_SET, set_id, 0, PTAGS_BPF_NO_MARK)
                        : ptags_bpf_fail(b, -EINVAL, "unknown set id %" PRIu64, set_id);
        pthread_mutex_unlock(&b->lock);
        return r;
}

int ptags_bpf_write_record(ptags_bpf *b, int pidfd, uint64_t set_id, uint64_t contid)
{
        pthread_mutex_lock(&b->lock);
        int r = set_id == PTAGS_SET_EMPTY || ptags_bpf_sets_by_id(&b->sets, set_id)
                        ? retag_locked(b, pidfd, PTAGS_WRITE_SET | PTAGS_WRITE_CONTID, set_id,
                                       contid, PTAGS_BPF_NO_MARK)
                        : ptags_bpf_fail(b, -EINVAL, "unknown set id %" PRIu64, set_id);
        pthread_mutex_unlock(&b->lock);
        return r;
}

int ptags_bpf_write_contid(ptags_bpf *b, int pidfd, uint64_t contid)
{
        pthread_mutex_lock(&b->lock);
        int r = retag_locked(b, pidfd, PTAGS_WRITE_CONTID, 0, contid, PTAGS_BPF_NO_MARK);
        pthread_mutex_unlock(&b->lock);
        return r;
}

/* -------------------------------------------------------- enumeration */

/* Reads @fd (an iterator) to its end into *@out (transfer full: free())
 * and closes it; @what names the iterator in errors. */
static int read_to_end(ptags_bpf *b, int fd, size_t cap, const char *what, char **out,
                       size_t *out_len)
{
        size_t len = 0;
        char *buf = malloc(cap);
        int r = 0;
        while (buf) {
                if (len == cap) {
                        char *bigger = realloc(buf, cap * 2);
                        if (!bigger)
                                break;
                        buf = bigger;
                        cap *= 2;
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = ptags_bpf_fail(b, -errno, "%s iterator failed: %s", what,
                                           strerror(errno));
                        break;
                }
                if (n == 0) {
                        *out = buf;
                        *out_len = len;
                        close(fd);
                        return 0;
                }
                len += (size_t)n;
        }
        close(fd);
        free(buf);
        return r < 0 ? r : ptags_bpf_fail(b, -ENOMEM, "out of memory");
}

static int read_iterator(ptags_bpf *b, bool pinned, char **out, size_t *out_len)
{
        int fd;
        if (!pinned) {
                fd = bpf_iter_create(bpf_link__fd(b->links[LINK_TASKS]));
        } else {
                /* The pinned file is what administrators read too. */
                fd = openat(b->lock_fd, "tasks", O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0)
                return ptags_bpf_fail(b, -errno, "cannot start the task iterator: %s",
                                      strerror(errno));
        return read_to_end(b, fd, 65536, "task", out, out_len);
}

static int list_tasks(ptags_bpf *b, bool pinned, ptags_bpf_task **out, size_t *n)
{
        char *text = NULL;
        size_t len = 0, count = 0, cap = 0;
        ptags_bpf_task *tasks = NULL;
        int r = read_iterator(b, pinned, &text, &len);
        if (r < 0)
                return r;
        for (size_t pos = 0; pos < len;) {
                char *nl = memchr(text + pos, '\n', len - pos);
                if (!nl)
                        break;
                *nl = '\0';
                ptags_bpf_task t;
                int tgid, tid;
                if (sscanf(text + pos, "%d %d %" SCNu64 " %" SCNu64, &tgid, &tid, &t.set_id,
                           &t.contid) != 4) {
                        r = ptags_bpf_fail(b, -EBADMSG, "bad iterator line: %s", text + pos);
                        break;
                }
                t.tgid = tgid;
                t.tid = tid;
                if (count == cap) {
                        cap = cap ? cap * 2 : 256;
                        ptags_bpf_task *v = realloc(tasks, cap * sizeof(*v));
                        if (!v) {
                                r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
                                break;
                        }
                        tasks = v;
                }
                tasks[count++] = t;
                pos = (size_t)(nl - text) + 1;
        }
        free(text);
        if (r < 0) {
                free(tasks);
                return r;
        }
        *out = tasks;
        *n = count;
        return 0;
}

int ptags_bpf_list_tasks(ptags_bpf *b, ptags_bpf_task **out, size_t *n)
{
        return list_tasks(b, !b->transient, out, n);
}

int ptags_bpf_list_tasks_unpinned(ptags_bpf *b, ptags_bpf_task **out, size_t *n)
{
        return list_tasks(b, false, out, n);
}

/* True when a tag of the set @text (the kernel's read format, one
 * "[@]TAG[=VALUE]" per line) matches the validated pattern. */
static bool set_text_matches(const char *text, size_t len, const char *pat, size_t pat_len)
{
        for (size_t pos = 0; pos < len;) {
                const char *line = text + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t line_len = nl ? (size_t)(nl - line) : len - pos;
                pos += line_len + 1;
                if (line_len > 0 && line[0] == '@') {
                        line++;
                        line_len--;
                }
                const char *eq = memchr(line, '=', line_len);
                size_t name_len = eq ? (size_t)(eq - line) : line_len;
                if (name_len > 0 && ptags_pattern_match(pat, pat_len, line, name_len))
                        return true;
        }
        return false;
}

/* Empties the map of the searches' set ids (older generations pile up). */
static void forget_search_ids(ptags_bpf *b)
{
        struct bpf_map *map = b->skel->maps.find_ids;
        uint64_t key, next;
        bool more = bpf_map__get_next_key(map, NULL, &key, sizeof(key)) == 0;
        while (more) {
                more = bpf_map__get_next_key(map, &key, &next, sizeof(key)) == 0;
                bpf_map__delete_elem(map, &key, sizeof(key), 0);
                key = next;
        }
}

/* Hands the kernel the @n set ids of a search, in one batch, under a new
 * generation; 0 = they cannot be handed over (the walk then emits every
 * tagged task, and the caller filters). */
static uint32_t mark_sets(ptags_bpf *b, const uint64_t *ids, uint32_t n)
{
        int fd = bpf_map__fd(b->skel->maps.find_ids);
        uint32_t gen = ++b->find_gen;
        if (gen == 0)
                gen = ++b->find_gen; /* 0 means "no filter" to the program */
        uint32_t *gens = malloc(n * sizeof(*gens));
        if (!gens)
                return 0;
        for (uint32_t i = 0; i < n; i++)
                gens[i] = gen;
        LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
        uint32_t count = n;
        int r = bpf_map_update_batch(fd, ids, gens, &count, &opts);
        if (r == -E2BIG || r == -ENOSPC || r == -ENOMEM) {
                /* Full of older searches' ids: start the map over. */
                forget_search_ids(b);
                count = n;
                r = bpf_map_update_batch(fd, ids, gens, &count, &opts);
        }
        free(gens);
        return r == 0 && count == n ? gen : 0;
}

/* The ids of the sets with a tag matching the pattern, counted in *@n.
 * (transfer full: free()) */
static uint64_t *matching_set_ids(ptags_bpf *b, const char *pat, size_t pat_len, uint32_t *n)
{
        uint64_t *ids = malloc((b->sets.count ? b->sets.count : 1) * sizeof(*ids));
        *n = 0;
        for (ptags_bpf_set_entry *e = b->sets.first; ids && e; e = e->next)
                if (set_text_matches(e->text, e->len, pat, pat_len))
                        ids[(*n)++] = e->id;
        return ids;
}

int ptags_bpf_find_tasks(ptags_bpf *b, const char *pattern, size_t len, ptags_bpf_task **out,
                         size_t *n)
{
        pthread_mutex_lock(&b->lock);
        uint32_t matching = 0;
        uint64_t *ids = matching_set_ids(b, pattern, len, &matching);
        /* Tasks hold only sets of the table (and no set is added while we
         * hold the lock): when none matches, no task can, and the walk of
         * every task is spared. When every set matches, the kernel needs
         * no list (0: emit every tagged task). */
        bool none = ids && matching == 0;
        b->skel->bss->find_gen =
                ids && !none && matching < b->sets.count ? mark_sets(b, ids, matching) : 0;
        free(ids);
        char *buf = NULL;
        size_t used = 0;
        int r = 0;
        if (!none) {
                int fd = bpf_iter_create(bpf_link__fd(b->find_link));
                r = fd < 0 ? ptags_bpf_fail(b, -errno, "cannot start the find iterator: %s",
                                            strerror(errno))
                           : read_to_end(b, fd, 256 * sizeof(struct ptags_list_entry), "find", &buf,
                                         &used);
        }
        if (r == 0 && used % sizeof(struct ptags_list_entry) != 0)
                r = ptags_bpf_fail(b, -EBADMSG, "find iterator: a torn record");
        size_t count = used / sizeof(struct ptags_list_entry);
        struct ptags_list_entry *entries = (struct ptags_list_entry *)buf;
        pthread_mutex_unlock(&b->lock);
        ptags_bpf_task *tasks = r == 0 ? calloc(count ? count : 1, sizeof(*tasks)) : NULL;
        if (r == 0 && !tasks)
                r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
        for (size_t i = 0; r == 0 && i < count; i++)
                tasks[i] = (ptags_bpf_task){.tgid = entries[i].tgid,
                                            .tid = entries[i].tid,
                                            .set_id = entries[i].set_id,
                                            .contid = entries[i].contid};
        free(buf);
        if (r < 0)
                return r;
        *out = tasks;
        *n = count;
        return 0;
}

/* ---------------------------------------------------------- collection */

typedef struct {
        ptags_bpf *b;
        uint64_t walk;
        int64_t now, grace;
} collect_ctx;

static void mark(ptags_bpf *b, uint64_t id, uint64_t walk)
{
        ptags_bpf_set_entry *e = ptags_bpf_sets_by_id(&b->sets, id);
        if (!e)
                return;
        e->seen = walk;
        /* An exec of a holder turns the set into its kept subset. */
        ptags_bpf_set_entry *k = e->kept_id != e->id && e->kept_id != PTAGS_SET_EMPTY
                                         ? ptags_bpf_sets_by_id(&b->sets, e->kept_id)
                                         : NULL;
        if (k)
                k->seen = walk;
}

/* Not held at this walk, but too recently seen held (or interned) to go. */
static bool spared(const ptags_bpf_set_entry *e, const collect_ctx *c)
{
        return e->seen != c->walk && c->now - e->unref_since < c->grace;
}

static bool keep_set(ptags_bpf_set_entry *e, void *data)
{
        collect_ctx *c = data;
        if (e->seen == c->walk) {
                e->unref_since = 0;
                return true;
        }
        if (!spared(e, c))
                return false;
        int64_t due = e->unref_since + c->grace;
        if (c->b->collect_pending_at == 0 || due < c->b->collect_pending_at)
                c->b->collect_pending_at = due;
        return true;
}

static void drop_exec_entry(uint64_t id, void *data)
{
        collect_ctx *c = data;
        /* Before the journal says so: a kill in between leaves a set that
         * a restart refills and the next collection drops again. */
        bpf_map__delete_elem(c->b->skel->maps.exec_kept, &id, sizeof(id), 0);
}

static int collect(ptags_bpf *b, int64_t grace_ms, size_t *freed)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, dropped = 0;
        pthread_mutex_lock(&b->lock);
        /* Under the lock no new id is handed out, so a set not referenced
         * now can only become referenced through a task that holds it,
         * which the walk sees, or through an exec of such a task, whose
         * kept subset is retained below. Linear in tasks and sets. */
        int r = ptags_bpf_list_tasks(b, &tasks, &n);
        if (r < 0)
                goto out;
        collect_ctx c = {
                .b = b, .walk = ++b->collect_walks, .now = ptags_bpf_now_ms(), .grace = grace_ms};
        for (size_t i = 0; i < n; i++)
                mark(b, tasks[i].set_id, c.walk);
        /* A set spared for its grace period keeps its kept subset too; the
         * first pass dates every set that has just lost its last holder. */
        for (ptags_bpf_set_entry *e = b->sets.first; e; e = e->next)
                if (e->seen != c.walk && e->unref_since == 0)
                        e->unref_since = c.now;
        for (ptags_bpf_set_entry *e = b->sets.first; e; e = e->next)
                if (spared(e, &c) && e->kept_id != e->id && e->kept_id != PTAGS_SET_EMPTY)
                        mark(b, e->kept_id, c.walk);
        b->collect_pending_at = 0;
        b->sets.added_bytes = 0;
        r = ptags_bpf_sets_retain(&b->sets, keep_set, &c, drop_exec_entry, &dropped);
        b->collect_base = b->sets.live_bytes;
        if (r < 0)
                r = ptags_bpf_fail(b, r, "cannot record dropped sets: %s", strerror(-r));
out:
        if (freed)
                *freed = dropped;
        free(tasks);
        pthread_mutex_unlock(&b->lock);
        return r;
}

int ptags_bpf_collect(ptags_bpf *b, size_t *freed)
{
        return collect(b, 0, freed);
}

int ptags_bpf_collect_aged(ptags_bpf *b, unsigned grace_ms, size_t *freed)
{
        return collect(b, grace_ms, freed);
}

/* Below this many bytes of new sets, waiting for more costs little. */
#define COLLECT_MIN_ADDED (16u * 1024u)

bool ptags_bpf_collect_wanted(ptags_bpf *b)
{
        pthread_mutex_lock(&b->lock);
        /* Amortized: a walk after as many new bytes as the table held
         * after the last one keeps the table within twice its live size. */
        uint64_t floor = b->collect_base > COLLECT_MIN_ADDED ? b->collect_base : COLLECT_MIN_ADDED;
        bool wanted = b->sets.added_bytes >= floor ||
                      (b->collect_pending_at != 0 && ptags_bpf_now_ms() >= b->collect_pending_at);
        pthread_mutex_unlock(&b->lock);
        return wanted;
}

int ptags_bpf_counters(ptags_bpf *b, uint64_t *alloc_failures, uint64_t *exec_misses)
{
        *alloc_failures = b->skel->bss->alloc_failures;
        *exec_misses = b->skel->bss->exec_misses;
        return 0;
}
