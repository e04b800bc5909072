// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bpf-child.c: a scriptable target process for the BPF backend tests. Reads
 * one command per line on stdin (threads, fork, exec, from any thread, and
 * threads that keep coming and going) and answers on stdout, so the test can
 * tag it and observe fork and exec. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_THREADS 16

typedef struct {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        char op[16]; /* "" = idle, "fork" or "exec" */
} worker;

static worker workers[MAX_THREADS];
static int n_workers;

static void reply(const char *word, long value)
{
        /* stdout is a pipe: every answer is one write the test can read. */
        char line[96];
        int n = snprintf(line, sizeof(line), "%s %ld\n", word, value);
        if (write(STDOUT_FILENO, line, (size_t)n) != n)
                _exit(3);
}

static void do_fork(void)
{
        pid_t pid = fork();
        if (pid < 0) {
                reply("error", errno);
                return;
        }
        if (pid == 0) {
                /* Lives until the test kills it: the test reads its record. */
                for (;;)
                        pause();
        }
        reply("pid", pid);
}

static void do_exec(void)
{
        char *argv[] = {"bpf-child", NULL};
        execv("/proc/self/exe", argv);
        reply("error", errno);
}

static void *worker_main(void *data)
{
        worker *w = data;
        pthread_mutex_lock(&w->lock);
        reply("tid", (long)syscall(SYS_gettid));
        for (;;) {
                while (w->op[0] == '\0')
                        pthread_cond_wait(&w->wake, &w->lock);
                if (strcmp(w->op, "fork") == 0)
                        do_fork();
                else
                        do_exec();
                w->op[0] = '\0';
        }
        return NULL;
}

static pthread_attr_t churn_attr;

/* Starts its successor, then exits: "churn N" keeps N threads that are
 * never the same for long, each copying its record from the one before. */
static void *churn_main(void *data)
{
        pthread_t next;
        while (pthread_create(&next, &churn_attr, churn_main, NULL) != 0)
                sched_yield();
        return NULL;
}

static void post(int index, const char *op)
{
        if (index < 0 || index >= n_workers) {
                reply("error", index);
                return;
        }
        worker *w = &workers[index];
        pthread_mutex_lock(&w->lock);
        snprintf(w->op, sizeof(w->op), "%s", op);
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
}

int main(void)
{
        char line[128];
        int arg;

        /* Grandchildren are killed by the test; nobody needs their status. */
        signal(SIGCHLD, SIG_IGN);
        setvbuf(stdin, NULL, _IONBF, 0);
        reply("ready", (long)getpid());
        while (fgets(line, sizeof(line), stdin)) {
                if (sscanf(line, "threads %d", &arg) == 1) {
                        for (int i = 0; i < arg && n_workers < MAX_THREADS; i++) {
                                worker *w = &workers[n_workers++];
                                pthread_mutex_init(&w->lock, NULL);
                                pthread_cond_init(&w->wake, NULL);
                                pthread_create(&w->thread, NULL, worker_main, w);
                        }
                } else if (sscanf(line, "churn %d", &arg) == 1) {
                        pthread_attr_init(&churn_attr);
                        pthread_attr_setdetachstate(&churn_attr, PTHREAD_CREATE_DETACHED);
                        pthread_attr_setstacksize(&churn_attr, 64 * 1024);
                        pthread_t first;
                        int started = 0;
                        for (; started < arg; started++)
                                if (pthread_create(&first, &churn_attr, churn_main, NULL) != 0)
                                        break;
                        reply("churning", started);
                } else if (sscanf(line, "fork-thread %d", &arg) == 1) {
                        post(arg, "fork");
                } else if (sscanf(line, "exec-thread %d", &arg) == 1) {
                        post(arg, "exec");
                } else if (strcmp(line, "fork\n") == 0) {
                        do_fork();
                } else if (strcmp(line, "exec\n") == 0) {
                        do_exec();
                } else if (strcmp(line, "exit\n") == 0) {
                        return 0;
                } else {
                        reply("error", 0);
                }
        }
        return 0;
}
