// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bpf-test.c: the BPF backend's kernel-semantics tests (ptags(7) on
 * real kernel hooks). Usage: bpf-test CASE PATH-TO-bpf-child; exit 0 = pass. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf-test-util.h"
#include "ptags-bpf-private.h"

/* fork/clone copies the whole list, values and keep flags, and the
 * container ID; an untagged parent gives an untagged child. */
static void test_fork_inherit(test_instance *t)
{
        child_proc c, plain;
        child_spawn(&c);
        child_spawn(&plain);
        tag(t, c.pid, "app:a\napp:b=1 2\n@app:k=v\n");
        int c_fd = pidfd_of(c.pid);
        CHECK(ptags_bpf_write_contid(t->bpf, c_fd, 42) == 0, "contid");
        close(c_fd);
        child_send(&c, "fork");
        pid_t g = (pid_t)child_expect(&c, "pid");
        CHECK(tags_are(t, g, "app:a\napp:b=1 2\n@app:k=v\n"), "grandchild inherits tags");
        CHECK(record_of(t, g).contid == 42, "grandchild inherits the container ID");
        CHECK(record_of(t, g).set_id == record_of(t, c.pid).set_id, "identical sets share an id");

        child_send(&plain, "fork");
        pid_t pg = (pid_t)child_expect(&plain, "pid");
        CHECK(!record_of(t, pg).valid, "an untagged parent's child has no record");
        CHECK(tags_are(t, pg, ""), "and no tags");

        /* A retag after the fork does not reach the earlier child. */
        tag(t, c.pid, "app:c\n");
        CHECK(tags_are(t, g, "app:a\napp:b=1 2\n@app:k=v\n"), "child keeps its copy");
        kill_pid(g);
        kill_pid(pg);
        child_kill(&c);
        child_kill(&plain);
}

/* execve drops unkept tags and keeps kept ones with their values. */
static void test_exec_drop_keep(test_instance *t)
{
        child_proc c, d;
        child_spawn(&c);
        tag(t, c.pid, "a\nb=1\n@k=v\n@k2\n");
        int c_fd = pidfd_of(c.pid);
        CHECK(ptags_bpf_write_contid(t->bpf, c_fd, 7) == 0, "contid");
        close(c_fd);
        child_send(&c, "exec");
        CHECK(child_expect(&c, "ready") == c.pid, "exec kept the pid");
        CHECK(tags_are(t, c.pid, "@k=v\n@k2\n"), "exec keeps only kept tags");
        CHECK(record_of(t, c.pid).contid == 7, "exec keeps the container ID");

        child_spawn(&d);
        tag(t, d.pid, "x\ny=2\n");
        child_send(&d, "exec");
        child_expect(&d, "ready");
        CHECK(tags_are(t, d.pid, ""), "nothing kept: empty after exec");
        child_kill(&c);
        child_kill(&d);
}

/* Kept tags survive any number of execs; tags added later drop again. */
static void test_exec_twice(test_instance *t)
{
        child_proc c;
        child_spawn(&c);
        tag(t, c.pid, "@k=1\nx\n");
        for (int i = 0; i < 2; i++) {
                child_send(&c, "exec");
                child_expect(&c, "ready");
                CHECK(tags_are(t, c.pid, "@k=1\n"), "after exec %d", i + 1);
        }
        tag(t, c.pid, "@k=1\nlater\n");
        child_send(&c, "exec");
        child_expect(&c, "ready");
        CHECK(tags_are(t, c.pid, "@k=1\n"), "a later unkept tag drops at the next exec");
        child_kill(&c);
}

static size_t threads_with(test_instance *t, pid_t tgid, uint64_t set_id, size_t *total)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, match = 0;
        *total = 0;
        if (ptags_bpf_list_tasks(t->bpf, &tasks, &n) < 0)
                die("list tasks: %s", ptags_bpf_last_error(t->bpf));
        for (size_t i = 0; i < n; i++) {
                if (tasks[i].tgid != tgid)
                        continue;
                (*total)++;
                match += tasks[i].set_id == set_id;
        }
        free(tasks);
        return match;
}

/* Tags are per process: a change reaches every thread, a fork from any
 * thread copies them, an exec from a non-main thread keeps the kept ones.
 * A process of one thread is written without a pass over its threads,
 * where /proc/PID/task's link count tells: its later threads copy it. */
static void test_threads(test_instance *t)
{
        child_proc c;
        size_t total;
        CHECK(ptags_bpf_nlink_counts_threads(),
              "/proc/PID/task's link count tells the threads here (one-thread writes skip the "
              "pass)");
        child_spawn(&c);
        tag(t, c.pid, "t0\n");
        child_send(&c, "threads 1");
        child_expect(&c, "tid");
        uint64_t id0 = record_of(t, c.pid).set_id;
        size_t matching0 = threads_with(t, c.pid, id0, &total);
        CHECK(matching0 == 2 && total == 2,
              "a thread started after a one-thread write copies it (%zu of %zu)", matching0, total);
        child_send(&c, "threads 2");
        for (int i = 0; i < 2; i++)
                child_expect(&c, "tid");
        tag(t, c.pid, "t1\n@t2=v\n");
        uint64_t id = record_of(t, c.pid).set_id;
        size_t matching = threads_with(t, c.pid, id, &total);
        CHECK(matching == 4 && total == 4, "all 4 threads carry the set (%zu of %zu records)",
              matching, total);

        child_send(&c, "fork-thread 2");
        pid_t g = (pid_t)child_expect(&c, "pid");
        CHECK(tags_are(t, g, "t1\n@t2=v\n"), "fork from a non-main thread copies the tags");

        tag(t, c.pid, "@t2=v\nt3\n");
        id = record_of(t, c.pid).set_id;
        matching = threads_with(t, c.pid, id, &total);
        CHECK(matching == 4 && total == 4, "a retag reaches all threads (%zu of %zu)", matching,
              total);
        child_send(&c, "fork-thread 1");
        pid_t g2 = (pid_t)child_expect(&c, "pid");
        CHECK(tags_are(t, g2, "@t2=v\nt3\n"), "fork after a retag copies the new tags");

        child_send(&c, "exec-thread 0");
        CHECK(child_expect(&c, "ready") == c.pid, "exec from a thread keeps the tgid");
        CHECK(tags_are(t, c.pid, "@t2=v\n"), "exec from a non-main thread keeps the kept tags");
        kill_pid(g);
        kill_pid(g2);
        child_kill(&c);
}

static size_t threads_in_container(test_instance *t, pid_t tgid, uint64_t contid, size_t *total)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, match = 0;
        *total = 0;
        if (ptags_bpf_list_tasks(t->bpf, &tasks, &n) < 0)
                die("list tasks: %s", ptags_bpf_last_error(t->bpf));
        for (size_t i = 0; i < n; i++) {
                if (tasks[i].tgid != tgid)
                        continue;
                (*total)++;
                match += tasks[i].contid == contid;
        }
        free(tasks);
        return match;
}

/* A container ID alone (no tags) reaches every thread, is inherited by
 * threads created later and by forks from any thread, and is kept across
 * tag changes and an exec from a non-main thread: it is never cleared. */
static void test_contid(test_instance *t)
{
        child_proc c;
        size_t total;
        child_spawn(&c);
        child_send(&c, "threads 1");
        child_expect(&c, "tid");
        int c_fd = pidfd_of(c.pid);
        CHECK(ptags_bpf_write_contid(t->bpf, c_fd, 77) == 0, "contid");
        close(c_fd);
        CHECK(record_of(t, c.pid).contid == 77 && record_of(t, c.pid).set_id == 0,
              "an ID without tags");
        size_t matching = threads_in_container(t, c.pid, 77, &total);
        CHECK(matching == 2 && total == 2, "both threads carry it (%zu of %zu)", matching, total);

        child_send(&c, "threads 2");
        child_expect(&c, "tid");
        child_expect(&c, "tid");
        matching = threads_in_container(t, c.pid, 77, &total);
        CHECK(matching == 4 && total == 4, "threads created later inherit it (%zu of %zu)",
              matching, total);

        child_send(&c, "fork-thread 2");
        pid_t g = (pid_t)child_expect(&c, "pid");
        CHECK(record_of(t, g).contid == 77, "a fork from a later thread inherits it");

        tag(t, c.pid, "x\n");
        CHECK(record_of(t, c.pid).contid == 77, "a tag change keeps it");
        child_send(&c, "exec-thread 1");
        CHECK(child_expect(&c, "ready") == c.pid, "exec from a thread keeps the tgid");
        CHECK(record_of(t, c.pid).contid == 77, "exec from a non-main thread keeps it");
        CHECK(tags_are(t, c.pid, ""), "while the unkept tag drops");
        kill_pid(g);
        child_kill(&c);
}

/* 10,000 forks while another process retags the forking parent as fast as
 * it can: every child has a record, and it is one of the two whole ones. */
static void test_fork_storm(test_instance *t)
{
        enum { FORKS = 10000 };
        uint64_t ids[2];
        ptags_set *a = set_from("storm:a\n"), *b = set_from("@keep\nstorm:b\n");
        if (ptags_bpf_intern(t->bpf, a, &ids[0]) < 0 || ptags_bpf_intern(t->bpf, b, &ids[1]) < 0)
                die("intern: %s", ptags_bpf_last_error(t->bpf));
        ptags_set_free(a);
        ptags_set_free(b);
        int self = pidfd_of(getpid());
        if (ptags_bpf_write_record(t->bpf, self, ids[0], 1000 + ids[0]) < 0)
                die("first write: %s", ptags_bpf_last_error(t->bpf));

        int started[2];
        if (pipe(started) < 0)
                die("pipe");
        pid_t retagger = fork();
        if (retagger == 0) {
                /* Shares the loader's fds; runs until killed. */
                for (unsigned long i = 0;; i++) {
                        uint64_t id = ids[i & 1];
                        if (ptags_bpf_write_record(t->bpf, self, id, 1000 + id) < 0)
                                _exit(2);
                        if (i == 100 && write(started[1], "x", 1) != 1)
                                _exit(3);
                }
        }
        char x;
        if (read(started[0], &x, 1) != 1)
                die("retagger did not start");

        unsigned seen[2] = {0, 0}, missing = 0, torn = 0;
        for (int i = 0; i < FORKS; i++) {
                pid_t pid = fork();
                if (pid < 0)
                        die("fork: %s", strerror(errno));
                if (pid == 0)
                        _exit(0);
                /* The child is a zombie until reaped: its record is there. */
                int fd = (int)syscall(SYS_pidfd_open, pid, 0);
                ptags_bpf_record rec = {0};
                if (fd < 0 || ptags_bpf_get_record_pidfd(t->bpf, fd, &rec) < 0)
                        die("reading child %d: %s", (int)pid, ptags_bpf_last_error(t->bpf));
                close(fd);
                waitpid(pid, NULL, 0);
                if (!rec.valid)
                        missing++;
                else if (rec.set_id == ids[0] && rec.contid == 1000 + ids[0])
                        seen[0]++;
                else if (rec.set_id == ids[1] && rec.contid == 1000 + ids[1])
                        seen[1]++;
                else
                        torn++;
        }
        kill(retagger, SIGKILL);
        int status;
        waitpid(retagger, &status, 0);
        fprintf(stderr, "forks %d: set A %u, set B %u, missing %u, torn %u\n", FORKS, seen[0],
                seen[1], missing, torn);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "retagger ran to the end");
        CHECK(missing == 0, "%u children without a record", missing);
        CHECK(torn == 0, "%u torn records", torn);
        CHECK(seen[0] > 0 && seen[1] > 0, "both records were seen (the retag raced the forks)");
        uint64_t alloc_failures, exec_misses;
        ptags_bpf_counters(t->bpf, &alloc_failures, &exec_misses);
        CHECK(alloc_failures == 0, "%llu storage allocation failures",
              (unsigned long long)alloc_failures);
}

/* The ids of @tgid's listed threads, at most @max of them in @tids. */
static size_t thread_ids(test_instance *t, pid_t tgid, pid_t *tids, size_t max)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, found = 0;
        if (ptags_bpf_list_tasks(t->bpf, &tasks, &n) < 0)
                die("list tasks: %s", ptags_bpf_last_error(t->bpf));
        for (size_t i = 0; i < n && found < max; i++)
                if (tasks[i].tgid == tgid)
                        tids[found++] = tasks[i].tid;
        free(tasks);
        return found;
}

enum { CHECK_SET = 1, CHECK_CONTID = 2 };

/* How many listed threads of @tgid (of those in @only, when given) hold
 * another set than @set_id or another container ID than @contid (of the
 * fields in @check); *@total gets how many were listed. */
static size_t threads_off(test_instance *t, pid_t tgid, uint64_t set_id, uint64_t contid, int check,
                          const pid_t *only, size_t n_only, size_t *total)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, off = 0;
        *total = 0;
        if (ptags_bpf_list_tasks(t->bpf, &tasks, &n) < 0)
                die("list tasks: %s", ptags_bpf_last_error(t->bpf));
        for (size_t i = 0; i < n; i++) {
                bool checked = only == NULL;
                for (size_t j = 0; !checked && j < n_only; j++)
                        checked = only[j] == tasks[i].tid;
                if (tasks[i].tgid != tgid || !checked)
                        continue;
                (*total)++;
                off += ((check & CHECK_SET) && tasks[i].set_id != set_id) ||
                       ((check & CHECK_CONTID) && tasks[i].contid != contid);
        }
        free(tasks);
        return off;
}

/* A target with 8 threads that stay and 16 that keep coming and going
 * (each starts its successor, which copies its record, and exits), and the
 * ids of two sets. Returns a pidfd of it. */
static int churning_target(test_instance *t, child_proc *c, uint64_t ids[2])
{
        ptags_set *a = set_from("churn:a\n"), *b = set_from("churn:b\n@keep\n");
        if (ptags_bpf_intern(t->bpf, a, &ids[0]) < 0 || ptags_bpf_intern(t->bpf, b, &ids[1]) < 0)
                die("intern: %s", ptags_bpf_last_error(t->bpf));
        ptags_set_free(a);
        ptags_set_free(b);
        child_spawn(c);
        child_send(c, "threads 8");
        for (int i = 0; i < 8; i++)
                child_expect(c, "tid");
        child_send(c, "churn 16");
        if (child_expect(c, "churning") != 16)
                die("the target cannot start its churning threads");
        return pidfd_of(c->pid);
}

/* Writes go on for this long, or until one leaves a thread behind (each is
 * checked at once: the next write would put the thread right). */
#define CHURN_SECONDS 8

/* Writes the churning target for CHURN_SECONDS, or until a check fails,
 * and checks every thread's record after each write: whole records, or
 * (@fields) the set and the container ID in turn. */
static void churn_writes(test_instance *t, bool fields)
{
        child_proc c;
        uint64_t ids[2], alloc_failures = 0, exec_misses;
        int fd = churning_target(t, &c, ids);
        uint64_t set_id = ids[0], contid = 100;
        if (ptags_bpf_write_record(t->bpf, fd, set_id, contid) < 0)
                die("first write: %s", ptags_bpf_last_error(t->bpf));
        /* The LSM hook copies a thread's record when the thread is made,
         * before it is on its process's list: one made across a whole
         * write keeps the old record (src/bpf/README.md). There only the
         * threads listed before each write are checked, and of a write of
         * one field only that field (one made across an earlier write of
         * the other field still has the old value of that one). */
        bool lsm = strcmp(ptags_bpf_backend_name(t->bpf), "bpf-lsm") == 0;
        pid_t before[1024];
        size_t n_before = 0;
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        size_t off = 0, total = 0;
        int writes = 0, r;
        do {
                if (lsm)
                        n_before = thread_ids(t, c.pid, before, 1024);
                if (!fields) {
                        set_id = ids[writes & 1];
                        contid = 100 + (writes & 1);
                        r = ptags_bpf_write_record(t->bpf, fd, set_id, contid);
                } else if (writes & 1) {
                        contid = contid == 100 ? 101 : 100;
                        r = ptags_bpf_write_contid(t->bpf, fd, contid);
                } else {
                        set_id = set_id == ids[0] ? ids[1] : ids[0];
                        r = ptags_bpf_write_set_id(t->bpf, fd, set_id);
                }
                if (r < 0)
                        die("write %d: %s", writes, ptags_bpf_last_error(t->bpf));
                int check = CHECK_SET | CHECK_CONTID;
                if (lsm && fields)
                        check = writes & 1 ? CHECK_CONTID : CHECK_SET;
                off = threads_off(t, c.pid, set_id, contid, check, lsm ? before : NULL, n_before,
                                  &total);
                ptags_bpf_counters(t->bpf, &alloc_failures, &exec_misses);
                writes++;
                clock_gettime(CLOCK_MONOTONIC, &now);
        } while (off == 0 && alloc_failures == 0 && now.tv_sec - start.tv_sec < CHURN_SECONDS);
        fprintf(stderr, "%d writes in %lds\n", writes, (long)(now.tv_sec - start.tv_sec));
        CHECK(off == 0, "after write %d, %zu of %zu threads held another record", writes, off,
              total);
        CHECK(alloc_failures == 0, "after write %d, %llu storage allocation failures", writes,
              (unsigned long long)alloc_failures);
        close(fd);
        child_kill(&c);
}

/* Every write reaches every thread, however fast threads come and go: a
 * walk of the process's threads ends early when the thread it stands on
 * exits, and a thread it missed kept the old record. A thread's record made
 * at once by its fork hook and by a write pass is one record, made by
 * whichever came first, and written. */
static void test_threads_churn(test_instance *t)
{
        churn_writes(t, false);
}

/* A write of the set keeps every thread's container ID, and a write of the
 * container ID every thread's set, for a thread started during the write
 * too: a write pass may reach it before its fork hook copies its parent's
 * record, which the hook then leaves alone. */
static void test_threads_churn_fields(test_instance *t)
{
        churn_writes(t, true);
}

static uint32_t pinned_link_id(test_instance *t, const char *name)
{
        char path[512];
        struct bpf_link_info info = {0};
        uint32_t len = sizeof(info);
        snprintf(path, sizeof(path), "%s/%s", t->pin_dir, name);
        int fd = bpf_obj_get(path);
        if (fd < 0)
                die("no pinned link %s: %s", path, strerror(errno));
        if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
                die("link info %s: %s", path, strerror(errno));
        close(fd);
        return info.id;
}

static void wait_gone(pid_t pid)
{
        for (int i = 0; i < 1000 && kill(pid, 0) == 0; i++)
                usleep(10000);
        CHECK(kill(pid, 0) < 0, "process %d is gone", (int)pid);
}

/* A daemon killed with SIGKILL loses nothing: the hooks keep running,
 * the restarted one resolves every id, and it replaces the links. */
static void test_restart(test_instance *t)
{
        child_proc c;
        int done[2];
        child_spawn(&c);
        ptags_bpf_close(t->bpf);
        t->bpf = NULL;
        uint32_t old_fork_link = 0;
        if (pipe(done) < 0)
                die("pipe");
        pid_t daemon = fork();
        if (daemon == 0) {
                instance_reopen(t);
                tag(t, c.pid, "app:a=1\n@app:k\n");
                ptags_bpf_write_contid(t->bpf, pidfd_of(c.pid), 99);
                if (write(done[1], "x", 1) != 1)
                        _exit(2);
                for (;;)
                        pause();
        }
        char x;
        if (read(done[0], &x, 1) != 1)
                die("first daemon failed");
        kill(daemon, SIGKILL);
        waitpid(daemon, NULL, 0);

        /* No daemon now: the pinned programs still do their work. */
        child_send(&c, "fork");
        pid_t g = (pid_t)child_expect(&c, "pid");
        child_send(&c, "exec");
        child_expect(&c, "ready");

        instance_reopen(t);
        CHECK(tags_are(t, g, "app:a=1\n@app:k\n"), "fork while no daemon ran");
        CHECK(tags_are(t, c.pid, "@app:k\n"), "exec while no daemon ran");
        CHECK(record_of(t, g).contid == 99 && record_of(t, c.pid).contid == 99,
              "container IDs survive");
        CHECK(ptags_bpf_set_count(t->bpf) == 2, "both sets restored (%zu)",
              ptags_bpf_set_count(t->bpf));

        /* A second restart is an upgrade: new links replace the old. */
        old_fork_link = pinned_link_id(t, "fork");
        instance_reopen(t);
        CHECK(pinned_link_id(t, "fork") != old_fork_link, "the fork link was replaced");
        child_send(&c, "fork");
        pid_t g2 = (pid_t)child_expect(&c, "pid");
        CHECK(tags_are(t, g2, "@app:k\n"), "forks inherit after the upgrade");

        /* Unreferenced sets are collected; referenced ones stay. */
        kill_pid(g);
        wait_gone(g);
        size_t freed = 0;
        CHECK(ptags_bpf_collect(t->bpf, &freed) == 0, "collect");
        CHECK(freed == 1 && ptags_bpf_set_count(t->bpf) == 1, "the full set went (%zu freed)",
              freed);
        CHECK(tags_are(t, c.pid, "@app:k\n"), "the kept set stays");
        kill_pid(g2);
        child_kill(&c);
        wait_gone(g2);
        CHECK(ptags_bpf_collect(t->bpf, &freed) == 0 && freed == 1 &&
                      ptags_bpf_set_count(t->bpf) == 0,
              "nothing left once every holder exited");
}

/* FindTagged: the iterator lists every tagged task with its set. */
static bool listed(test_instance *t, pid_t pid, const char *pattern)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0;
        bool found = false;
        if (ptags_bpf_list_tasks(t->bpf, &tasks, &n) < 0)
                die("list: %s", ptags_bpf_last_error(t->bpf));
        for (size_t i = 0; i < n && !found; i++) {
                if (tasks[i].tgid != pid)
                        continue;
                ptags_set *s = ptags_bpf_set_contents(t->bpf, tasks[i].set_id);
                found = s && ptags_set_matches(s, pattern, strlen(pattern), false);
                ptags_set_free(s);
        }
        free(tasks);
        return found;
}

/* The same through the kernel-side filter FindTagged uses: only the
 * holders of a matching set come back, each of its threads once. */
static size_t found_threads(test_instance *t, pid_t pid, const char *pattern, size_t *total)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, mine = 0;
        if (ptags_bpf_find_tasks(t->bpf, pattern, strlen(pattern), &tasks, &n) < 0)
                die("find: %s", ptags_bpf_last_error(t->bpf));
        for (size_t i = 0; i < n; i++) {
                ptags_set *s = ptags_bpf_set_contents(t->bpf, tasks[i].set_id);
                CHECK(s && ptags_set_matches(s, pattern, strlen(pattern), false),
                      "find returned task %d, whose set does not match %s", (int)tasks[i].tid,
                      pattern);
                ptags_set_free(s);
                mine += tasks[i].tgid == pid;
        }
        free(tasks);
        if (total)
                *total = n;
        return mine;
}

static void test_find_tagged(test_instance *t)
{
        child_proc a, b, plain;
        child_spawn(&a);
        child_spawn(&b);
        child_spawn(&plain);
        child_send(&b, "threads 2");
        child_expect(&b, "tid");
        child_expect(&b, "tid");
        tag(t, a.pid, "app:x\n");
        tag(t, b.pid, "app:y\nother=1\n");
        CHECK(listed(t, a.pid, "app:*") && listed(t, b.pid, "app:*"), "both match app:*");
        CHECK(!listed(t, a.pid, "other") && listed(t, b.pid, "other"), "only b has other");
        CHECK(listed(t, b.pid, ""), "the empty pattern matches any tag");
        CHECK(!listed(t, plain.pid, ""), "untagged processes are not listed");
        CHECK(found_threads(t, a.pid, "app:*", NULL) == 1 &&
                      found_threads(t, b.pid, "app:*", NULL) == 3,
              "find app:* returns a once and each of b's three threads");
        CHECK(found_threads(t, a.pid, "other", NULL) == 0 &&
                      found_threads(t, b.pid, "other", NULL) == 3,
              "find other returns only b");
        size_t total = 0;
        CHECK(found_threads(t, a.pid, "no:such", &total) == 0 && total == 0,
              "a pattern no set matches returns no task at all (%zu)", total);

        /* The pinned iterator is readable as a file by administrators. */
        char path[512], buf[65536], want[64];
        snprintf(path, sizeof(path), "%s/tasks", t->pin_dir);
        FILE *f = fopen(path, "re");
        CHECK(f != NULL, "open %s", path);
        size_t len = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
                fclose(f);
        buf[len] = '\0';
        snprintf(want, sizeof(want), "\n%d %d ", (int)a.pid, (int)a.pid);
        CHECK(strstr(buf, want + (strncmp(buf, want + 1, strlen(want) - 1) == 0)) != NULL,
              "the pinned file lists %d", (int)a.pid);

        child_send(&a, "exec");
        child_expect(&a, "ready");
        CHECK(!listed(t, a.pid, "app:x"), "an exec that drops the tag unlists the process");
        child_kill(&a);
        child_kill(&b);
        child_kill(&plain);
}

/* A write that cannot make its walk of one process's threads for want of a
 * file descriptor fails (or walks every task), and later writes walk one
 * process's threads again: only a kernel that has no such walk turns it
 * off. (Before 6.13 the write fails earlier, reading the pid through
 * /proc, and never gets that far.) */
static void test_iter_transient_error(test_instance *t)
{
        child_proc c;
        CHECK(t->bpf->per_process_iter, "this kernel walks one process's threads (6.1+)");
        child_spawn(&c);
        child_send(&c, "threads 1");
        child_expect(&c, "tid");
        tag(t, c.pid, "a\n");
        int fd = pidfd_of(c.pid);
        /* No descriptor left: the lowest free one is the limit. */
        int lowest = dup(0);
        struct rlimit old, none;
        if (lowest < 0 || close(lowest) < 0 || getrlimit(RLIMIT_NOFILE, &old) < 0)
                die("descriptors: %s", strerror(errno));
        none = (struct rlimit){.rlim_cur = (rlim_t)lowest, .rlim_max = old.rlim_max};
        uint64_t id = record_of(t, c.pid).set_id;
        if (setrlimit(RLIMIT_NOFILE, &none) < 0)
                die("setrlimit: %s", strerror(errno));
        int r = ptags_bpf_write_set_id(t->bpf, fd, id);
        if (setrlimit(RLIMIT_NOFILE, &old) < 0)
                die("setrlimit: %s", strerror(errno));
        fprintf(stderr, "write without descriptors: %d (%s)\n", r,
                r < 0 ? ptags_bpf_last_error(t->bpf) : "ok");
        CHECK(t->bpf->per_process_iter, "one write out of descriptors turned the walk of one "
                                        "process's threads off for good");
        CHECK(ptags_bpf_write_set_id(t->bpf, fd, id) == 0, "the next write: %s",
              ptags_bpf_last_error(t->bpf));
        close(fd);
        child_kill(&c);
}

/* Bad input gets a named error and changes nothing. */
static void test_errors(test_instance *t)
{
        child_proc c;
        child_spawn(&c);
        tag(t, c.pid, "ok\n");
        pid_t gone = c.pid;
        int gone_fd = pidfd_of(c.pid);
        ptags_bpf_record before = record_of(t, c.pid);
        CHECK(ptags_bpf_write_set_id(t->bpf, gone_fd, 987654) == -EINVAL, "unknown set id refused");
        CHECK(record_of(t, c.pid).set_id == before.set_id, "and nothing changed");
        child_kill(&c);
        ptags_set *s = set_from("x\n");
        CHECK(ptags_bpf_write_tags(t->bpf, gone_fd, s, PTAGS_BPF_NO_MARK) == -ESRCH,
              "a dead process: ESRCH");
        /* Its pid taken by another process: the pidfd still names the dead
         * one, so the newcomer is never written. */
        child_proc reuse;
        if (child_spawn_at(&reuse, gone)) {
                CHECK(ptags_bpf_write_tags(t->bpf, gone_fd, s, PTAGS_BPF_NO_MARK) == -ESRCH,
                      "the pid's new owner is not written through the old pidfd");
                CHECK(!record_of(t, reuse.pid).valid, "and has no record");
                child_kill(&reuse);
        } else {
                CHECK(false, "could not get pid %d back for the reuse check", (int)gone);
        }
        close(gone_fd);
        ptags_set_free(s);
        ptags_set *got = NULL;
        CHECK(ptags_bpf_read_tags(t->bpf, gone, &got) == -ESRCH, "reading a dead process: ESRCH");

        /* A second loader on the same pins would reuse set ids: refused. */
        char err[512] = "";
        ptags_bpf *twin = NULL;
        ptags_bpf_options same = {.pin_dir = t->pin_dir, .state_dir = t->state_dir};
        CHECK(ptags_bpf_open(&same, &twin, err, sizeof(err)) == -EBUSY && twin == NULL,
              "a second instance on the same pins is refused: %s", err);

        ptags_bpf *lsm = NULL;
        ptags_bpf_options o = {.transient = true, .mode = PTAGS_BPF_MODE_LSM};
        int r = ptags_bpf_open(&o, &lsm, err, sizeof(err));
        if (ptags_bpf_lsm_active()) {
                CHECK(r == 0, "LSM mode where the bpf LSM is active: %s", err);
        } else {
                CHECK(r == -ENOTSUP && strstr(err, "/sys/kernel/security/lsm"),
                      "LSM mode refused with a reason: %s", err);
                CHECK(lsm == NULL, "no handle on failure");
        }
        ptags_bpf_close(lsm);
}

/* Mounts made from here on stay in this test process. */
static void private_mounts(void)
{
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                die("private mount namespace: %s", strerror(errno));
}

/* Opens a loader on @pin_dir (state in @state_dir) and closes it again;
 * the open's result, its reason in @err. */
static int try_open(const char *pin_dir, const char *state_dir, char *err, size_t err_size)
{
        ptags_bpf *b = NULL;
        ptags_bpf_options o = {.pin_dir = pin_dir, .state_dir = state_dir};
        err[0] = '\0';
        int r = ptags_bpf_open(&o, &b, err, err_size);
        ptags_bpf_close(b);
        return r;
}

/* A pin directory another user made (bpffs without mode= is 1777, so
 * anyone can, before ptagsd's first start), or one others may write in,
 * is refused: its owner could remove the pins or hold the lock. */
static void test_pin_dir_trust(test_instance *t)
{
        char mnt[] = "/tmp/ptags-test-bpffs-XXXXXX", pins[64], state[300], err[512];
        struct stat st;
        private_mounts();
        if (!mkdtemp(mnt) || mount("bpf", mnt, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                die("scratch bpffs on %s: %s", mnt, strerror(errno));
        CHECK(stat(mnt, &st) == 0 && (st.st_mode & 07777) == 01777,
              "a bpffs mounted without mode= is open to everyone (%04o)",
              (unsigned)(st.st_mode & 07777));
        snprintf(pins, sizeof(pins), "%s/ptags", mnt);
        snprintf(state, sizeof(state), "%s-trust", t->state_dir);
        if (mkdir(state, 0700) < 0)
                die("mkdir %s: %s", state, strerror(errno));

        pid_t user = fork();
        if (user == 0) {
                if (setgid(65534) < 0 || setuid(65534) < 0 || mkdir(pins, 0700) < 0)
                        _exit(1);
                _exit(0);
        }
        int status;
        if (waitpid(user, &status, 0) != user || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("uid 65534 could not create %s", pins);
        int r = try_open(pins, state, err, sizeof(err));
        CHECK(r == -EPERM && strstr(err, pins) && strstr(err, "owned by uid 65534"),
              "a pin directory of uid 65534 is refused (%d): %s", r, err);
        CHECK(rmdir(pins) == 0, "nothing was pinned in it");

        if (mkdir(pins, 0700) < 0 || chmod(pins, 0777) < 0)
                die("mkdir %s: %s", pins, strerror(errno));
        r = try_open(pins, state, err, sizeof(err));
        CHECK(r == -EPERM && strstr(err, pins) && strstr(err, "writable by group or others"),
              "a pin directory of mode 0777 is refused (%d): %s", r, err);
        CHECK(rmdir(pins) == 0, "nothing was pinned in it");

        char elsewhere[80];
        snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", mnt);
        if (mkdir(elsewhere, 0700) < 0 || symlink(elsewhere, pins) < 0)
                die("symlink %s: %s", pins, strerror(errno));
        r = try_open(pins, state, err, sizeof(err));
        CHECK(r == -ENOTDIR && strstr(err, pins), "a symbolic link is refused (%d): %s", r, err);
        CHECK(unlink(pins) == 0 && rmdir(elsewhere) == 0, "nothing was pinned through it");

        r = try_open(pins, state, err, sizeof(err));
        CHECK(r == 0, "a directory ptagsd creates itself is used: %s", err);
        CHECK(stat(pins, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 07777) == 0700,
              "it is private (uid %u, %04o)", (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        r = try_open(pins, state, err, sizeof(err));
        CHECK(r == 0, "and used again at the next start: %s", err);
        CHECK(ptags_bpf_uninstall(pins, state) == 0, "uninstall");
        rmdir(state);
        umount2(mnt, MNT_DETACH);
        rmdir(mnt);
}

/* Outside the initial pid namespace the programs' pids are not ours: the
 * open is refused, whether /proc is the new namespace's (as unshare -p -f
 * --mount-proc leaves it) or still the host's. */
static void test_pid_namespace(test_instance *t)
{
        char err[512] = "";
        ptags_bpf *b = NULL;
        ptags_bpf_options transient = {.transient = true};
        CHECK(ptags_bpf_open(&transient, &b, err, sizeof(err)) == 0,
              "the initial pid namespace is accepted: %s", err);
        ptags_bpf_close(b);
        for (int own_proc = 0; own_proc < 2; own_proc++) {
                /* No die() or CHECK in there: they belong to this process. */
                pid_t outer = fork();
                if (outer == 0) {
                        if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0 ||
                            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                                _exit(2);
                        pid_t inner = fork();
                        if (inner == 0) {
                                if (own_proc && mount("proc", "/proc", "proc",
                                                      MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                                        _exit(2);
                                int r = ptags_bpf_open(&transient, &b, err, sizeof(err));
                                fprintf(stderr, "  pid %d, %s /proc: %d %s\n", (int)getpid(),
                                        own_proc ? "its own" : "the host's", r, err);
                                _exit(r == -ENOTSUP && strstr(err, "pid namespace") ? 0 : 1);
                        }
                        int status;
                        if (inner < 0 || waitpid(inner, &status, 0) != inner)
                                _exit(2);
                        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 2);
                }
                int status;
                if (outer < 0 || waitpid(outer, &status, 0) != outer || !WIFEXITED(status) ||
                    WEXITSTATUS(status) == 2)
                        die("cannot run in a new pid namespace");
                CHECK(WEXITSTATUS(status) == 0, "a new pid namespace with %s /proc is refused",
                      own_proc ? "its own" : "the host's");
        }
}

/* The set table lost while the pinned records stay (deleted, or another
 * state directory): a fresh table would hand out ids that live records
 * still hold, so a restart is refused until no task holds one. */
static void test_restart_without_table(test_instance *t)
{
        child_proc c, d;
        char sets[300], err[512] = "";
        ptags_bpf *b = NULL;
        ptags_bpf_options o = {.pin_dir = t->pin_dir, .state_dir = t->state_dir};
        char older[310];
        child_spawn(&c);
        child_spawn(&d);
        snprintf(sets, sizeof(sets), "%s/sets", t->state_dir);
        snprintf(older, sizeof(older), "%s.older", sets);
        /* A copy of the table from before c's set was made: a backup. */
        tag(t, c.pid, "app:before\n");
        copy_file(sets, older);
        tag(t, c.pid, "app:a\n@rights:x\n");
        uint64_t held = record_of(t, c.pid).set_id;
        int d_fd = pidfd_of(d.pid);
        CHECK(ptags_bpf_write_contid(t->bpf, d_fd, 5) == 0, "a container ID without tags");
        close(d_fd);
        ptags_bpf_close(t->bpf);
        t->bpf = NULL;

        /* The backup put back lacks the set c holds. */
        CHECK(rename(older, sets) == 0, "rename %s: %s", older, strerror(errno));
        int r = try_open(t->pin_dir, t->state_dir, err, sizeof(err));
        CHECK(r == -ENOENT && strstr(err, "lacks sets") && strstr(err, "--remove-state"),
              "an older table while set %llu is held is refused (%d): %s", (unsigned long long)held,
              r, err);

        CHECK(unlink(sets) == 0, "unlink %s: %s", sets, strerror(errno));
        r = ptags_bpf_open(&o, &b, err, sizeof(err));
        CHECK(r == -ENOENT && strstr(err, sets) && strstr(err, "--remove-state"),
              "a missing table while set %llu is held is refused (%d): %s",
              (unsigned long long)held, r, err);
        if (r == 0) {
                ptags_set *other = set_from("other\n");
                uint64_t id = 0;
                if (ptags_bpf_intern(b, other, &id) < 0)
                        die("intern: %s", ptags_bpf_last_error(b));
                CHECK(id > held,
                      "a new set got id %llu, given out before the table was lost (pid %d "
                      "holds %llu)",
                      (unsigned long long)id, (int)c.pid, (unsigned long long)held);
                ptags_set_free(other);
                ptags_bpf_close(b);
                b = NULL;
                unlink(sets);
        }
        CHECK(access(sets, F_OK) < 0 && errno == ENOENT, "the refusal made no new table");
        CHECK(try_open(t->pin_dir, t->state_dir, err, sizeof(err)) == -ENOENT,
              "and the next start too: %s", err);

        /* So is an emptied one, which reads as a table without sets. */
        int empty = open(sets, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (empty < 0)
                die("creating %s: %s", sets, strerror(errno));
        close(empty);
        r = try_open(t->pin_dir, t->state_dir, err, sizeof(err));
        CHECK(r == -ENOENT && strstr(err, "lists no set") && strstr(err, "--remove-state"),
              "an empty table while set %llu is held is refused (%d): %s", (unsigned long long)held,
              r, err);
        unlink(sets);

        /* A damaged table is refused too, with the same way out. */
        FILE *f = fopen(sets, "we");
        if (!f || fputs("garbage\n", f) < 0 || fclose(f) != 0)
                die("writing %s", sets);
        r = try_open(t->pin_dir, t->state_dir, err, sizeof(err));
        CHECK(r == -EBADMSG && strstr(err, "--remove-state"), "a damaged table is refused: %s",
              err);
        unlink(sets);

        /* Once no task holds a set id, a new table is safe; a container
         * ID alone (kept in the record, not the table) does not hold one. */
        child_kill(&c);
        r = ptags_bpf_open(&o, &t->bpf, err, sizeof(err));
        CHECK(r == 0, "no set held: a new table is made: %s", err);
        if (r < 0)
                die("reopen: %s", err);
        CHECK(record_of(t, d.pid).contid == 5, "the container ID is kept");
        CHECK(access(sets, F_OK) == 0, "the new table is there");
        child_kill(&d);
}

/* A task may hold a set the table dropped: a fork slower than the
 * collection's grace period (src/bpf/README.md). Its id is below every id
 * the table will give out, so no other set can ever take it, and a start
 * goes on; the task reads as an error. */
static void test_restart_with_collected_set(test_instance *t)
{
        child_proc c;
        char sets[300], err[512] = "";
        ptags_bpf_sets table;
        ptags_bpf_options o = {.pin_dir = t->pin_dir, .state_dir = t->state_dir};
        child_spawn(&c);
        snprintf(sets, sizeof(sets), "%s/sets", t->state_dir);
        tag(t, c.pid, "app:held\n");
        uint64_t held = record_of(t, c.pid).set_id;
        ptags_bpf_close(t->bpf);
        t->bpf = NULL;

        /* The collection's drop, as when it lost that race. */
        CHECK(ptags_bpf_sets_init(&table, sets) == 0 &&
                      ptags_bpf_sets_load(&table, err, sizeof(err)) == 0,
              "load %s: %s", sets, err);
        ptags_bpf_set_entry *e = ptags_bpf_sets_by_id(&table, held);
        CHECK(e != NULL && ptags_bpf_sets_remove(&table, e) == 0, "drop set %llu",
              (unsigned long long)held);
        ptags_bpf_sets_clear(&table);

        int r = ptags_bpf_open(&o, &t->bpf, err, sizeof(err));
        CHECK(r == 0, "a start while a task holds collected set %llu (%d): %s",
              (unsigned long long)held, r, err);
        if (r < 0)
                die("reopen: %s", err);
        ptags_set *other = set_from("other\n");
        uint64_t id = 0;
        if (ptags_bpf_intern(t->bpf, other, &id) < 0)
                die("intern: %s", ptags_bpf_last_error(t->bpf));
        CHECK(id > held, "a new set got id %llu, not above the held %llu", (unsigned long long)id,
              (unsigned long long)held);
        ptags_set_free(other);
        child_kill(&c);
}

/* A table that holds "sentinel" in @path. */
static bool sentinel_in(const char *path)
{
        char buf[16] = "";
        FILE *f = fopen(path, "re");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
                fclose(f);
        buf[n] = '\0';
        return strcmp(buf, "sentinel") == 0;
}

/* The set table in /run/ptags is the one of the pins in /sys/fs/bpf/ptags:
 * an instance on other pins must not start on it (a fresh start deletes
 * the table it finds) nor remove it at uninstall. Runs where a scratch
 * bpffs and a tmpfs stand in for the system's /sys/fs/bpf and /run. */
static void test_state_dir_pairing(test_instance *t)
{
        char err[512] = "";
        const char *sets = "/run/ptags/sets", *private_pins = "/sys/fs/bpf/ptags-private";
        pid_t pid = fork();
        if (pid < 0)
                die("fork: %s", strerror(errno));
        if (pid > 0) {
                int status;
                waitpid(pid, &status, 0);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "the checks in the scratch namespace passed");
                return;
        }
        /* No die() here: it would clean up this test's instance. CHECK
         * counts in this process, which exits with the count. */
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") < 0 ||
            mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") < 0 || mkdir("/run/ptags", 0700) < 0) {
                fprintf(stderr, "scratch namespace: %s\n", strerror(errno));
                _exit(1);
        }
        FILE *f = fopen(sets, "we");
        if (!f || fputs("sentinel", f) < 0 || fclose(f) != 0)
                _exit(1);
        unsetenv("RUNTIME_DIRECTORY");

        int r = try_open(private_pins, NULL, err, sizeof(err));
        CHECK(r == -EINVAL && strstr(err, "/run/ptags") && strstr(err, private_pins),
              "private pins with the system's state directory are refused (%d): %s", r, err);
        CHECK(sentinel_in(sets), "the system's table is still there");
        r = ptags_bpf_uninstall(private_pins, NULL);
        CHECK(r == -EINVAL && strstr(ptags_bpf_last_error(NULL), "/run/ptags"),
              "and their uninstall too (%d): %s", r, ptags_bpf_last_error(NULL));
        CHECK(sentinel_in(sets), "the system's table is still there");

        setenv("RUNTIME_DIRECTORY", t->state_dir, 1);
        r = try_open(private_pins, NULL, err, sizeof(err));
        CHECK(r == 0, "with a state directory of their own they work: %s", err);
        CHECK(ptags_bpf_uninstall(private_pins, NULL) == 0, "and uninstall");
        CHECK(sentinel_in(sets), "the system's table is still there");

        /* The system's pairing itself: new pins, so the old table goes. */
        unsetenv("RUNTIME_DIRECTORY");
        r = try_open(NULL, NULL, err, sizeof(err));
        CHECK(r == 0, "the default pins use /run/ptags: %s", err);
        CHECK(!sentinel_in(sets), "and replaced the table their new maps made meaningless");
        CHECK(ptags_bpf_uninstall(NULL, NULL) == 0, "uninstall");
        _exit(check_failures());
}

static const struct {
        const char *name;
        void (*run)(test_instance *t);
} cases[] = {
        {"fork-inherit", test_fork_inherit},
        {"exec-drop-keep", test_exec_drop_keep},
        {"exec-twice", test_exec_twice},
        {"threads", test_threads},
        {"threads-churn", test_threads_churn},
        {"threads-churn-fields", test_threads_churn_fields},
        {"fork-storm", test_fork_storm},
        {"restart", test_restart},
        {"restart-without-table", test_restart_without_table},
        {"restart-with-collected-set", test_restart_with_collected_set},
        {"state-dir-pairing", test_state_dir_pairing},
        {"find-tagged", test_find_tagged},
        {"errors", test_errors},
        {"iter-transient-error", test_iter_transient_error},
        {"contid", test_contid},
        {"pin-dir-trust", test_pin_dir_trust},
        {"pid-namespace", test_pid_namespace},
};

int main(int argc, char **argv)
{
        if (argc == 2 && strcmp(argv[1], "--list") == 0) {
                for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                        printf("%s\n", cases[i].name);
                return 0;
        }
        if (argc != 3) {
                fprintf(stderr, "usage: %s CASE BPF-CHILD | --list\n", argv[0]);
                return 2;
        }
        child_path = argv[2];
        /* Under QEMU there is no meson to enforce a timeout. */
        alarm(600);
        signal(SIGPIPE, SIG_IGN);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                if (strcmp(argv[1], cases[i].name) != 0)
                        continue;
                test_instance t;
                instance_open(&t, cases[i].name);
                cases[i].run(&t);
                instance_destroy(&t);
                printf("%s: %s\n", cases[i].name, check_failures() ? "FAIL" : "PASS");
                return check_failures() ? 1 : 0;
        }
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
}
