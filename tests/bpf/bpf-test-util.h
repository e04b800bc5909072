// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bpf-test-util.h: shared plumbing of the BPF backend tests: a private
 * loader instance per test, scriptable target processes, checks. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptags-bpf.h"

/* Counts a failed check and says where; tests exit 1 if any failed. */
#define CHECK(cond, ...) check_at((cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
void check_at(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
int check_failures(void);
/* Aborts the test (exit 1) when a prerequisite fails: nothing is skipped. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A loader instance pinned under its own directory, so tests run side by
 * side and never touch a running daemon's state. */
typedef struct {
        ptags_bpf *bpf;
        char pin_dir[256];
        char state_dir[256];
} test_instance;

/* Opens (or reopens) the instance named @name, dying on failure, and checks
 * the mode against PTAGS_BPF_TEST_MODE ("lsm" or "tracepoint", when set). */
void instance_open(test_instance *t, const char *name);
/* Reopens the same pins and state, as a restarted daemon does. */
void instance_reopen(test_instance *t);
/* Closes and removes every pin and the set table. */
void instance_destroy(test_instance *t);

/* A pidfd of process @pid (writes take one), dying when it cannot be had.
 * The caller closes it. */
int pidfd_of(pid_t pid);

/* A running bpf-child, driven over two pipes. */
typedef struct {
        pid_t pid;
        int in, out;
} child_proc;

/* Path of bpf-child, from argv (set by main). */
extern const char *child_path;

void child_spawn(child_proc *c);
/* child_spawn, steering the kernel to give the child exactly @pid (a freed
 * pid, for reuse tests); false when it could not. */
bool child_spawn_at(child_proc *c, pid_t pid);
/* Sends one command line (without '\n'). */
void child_send(child_proc *c, const char *cmd);
/* Reads one reply "WORD NUMBER ..." and returns NUMBER, dying on another word. */
long child_expect(child_proc *c, const char *word);
void child_kill(child_proc *c);
void kill_pid(pid_t pid);

/* A set from the kernel read format ("a\n@k=v\n"), dying if it is bad. */
ptags_set *set_from(const char *text);
/* True when process @pid's tags are exactly @text. */
bool tags_are(test_instance *t, pid_t pid, const char *text);
/* The record of @pid, dying when it cannot be read. */
ptags_bpf_record record_of(test_instance *t, pid_t pid);
/* Writes @text as the tags of every thread of @pid, dying on failure. */
void tag(test_instance *t, pid_t pid, const char *text);
/* Copy the file @from to @to (made or truncated); dies on failure. */
void copy_file(const char *from, const char *to);
