// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-fork.c: what the BPF hooks cost a fork and an exec. Measures, in one
 * run, fork+exit and fork+exec with the programs attached and detached, for
 * an untagged and a tagged parent, and prints attached/detached ratios. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptags-bpf.h"

enum { ROUNDS = 31, FORKS = 400, EXECS = 60 };

typedef struct {
        pid_t pid;
        int cmd, result;
} worker;

static double now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per fork+wait (exec = false) or fork+exec(/bin/true)+wait. */
static double measure(bool exec, int n)
{
        char *argv[] = {"true", NULL};
        double start = now_ns();
        for (int i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid == 0) {
                        if (exec)
                                execv("/bin/true", argv);
                        _exit(0);
                }
                if (pid < 0) {
                        perror("fork");
                        exit(1);
                }
                waitpid(pid, NULL, 0);
        }
        return (now_ns() - start) / n;
}

/* A worker measures on request, so its tags stay fixed for the whole run
 * while the parent attaches and detaches the programs between rounds. */
static worker worker_start(void)
{
        int cmd[2], res[2];
        if (pipe(cmd) < 0 || pipe(res) < 0) {
                perror("pipe");
                exit(1);
        }
        pid_t pid = fork();
        if (pid == 0) {
                char op;
                while (read(cmd[0], &op, 1) == 1) {
                        double ns = measure(op == 'e', op == 'e' ? EXECS : FORKS);
                        if (write(res[1], &ns, sizeof(ns)) != sizeof(ns))
                                _exit(1);
                }
                _exit(0);
        }
        close(cmd[0]);
        close(res[1]);
        return (worker){.pid = pid, .cmd = cmd[1], .result = res[0]};
}

static double worker_run(worker *w, char op)
{
        double ns;
        if (write(w->cmd, &op, 1) != 1 || read(w->result, &ns, sizeof(ns)) != sizeof(ns)) {
                fprintf(stderr, "worker %d failed\n", (int)w->pid);
                exit(1);
        }
        return ns;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return v[n / 2];
}

int main(void)
{
        char err[512] = "";
        ptags_bpf *bpf = NULL;
        ptags_bpf_options o = {.transient = true};
        int r = ptags_bpf_open(&o, &bpf, err, sizeof(err));
        if (r < 0) {
                fprintf(stderr, "bench-fork: %s\n", err);
                return 1;
        }
        worker w[2] = {worker_start(), worker_start()};
        int w1_fd = (int)syscall(SYS_pidfd_open, w[1].pid, 0);
        ptags_set *tags = NULL;
        const char *text = "app:camera\napp:mic\n@session=42\n";
        if (ptags_set_parse(text, strlen(text), &tags, NULL) != PTAGS_OK ||
            ptags_bpf_write_tags(bpf, w1_fd, tags, PTAGS_BPF_NO_MARK) < 0) {
                fprintf(stderr, "bench-fork: tagging: %s\n", ptags_bpf_last_error(bpf));
                return 1;
        }
        ptags_set_free(tags);

        /* [tagged][op][attached][round]. Short rounds alternate the two
         * states (and which comes first), and each round's attached time is
         * divided by its own detached time: machine load drifts slowly, so
         * the paired ratio cancels most of it; the median drops outliers. */
        static double t[2][2][2][ROUNDS], ratio[2][2][ROUNDS];
        const char ops[2] = {'f', 'e'};
        for (int round = 0; round < ROUNDS; round++) {
                for (int step = 0; step < 2; step++) {
                        int attached = step ^ (round & 1);
                        r = attached ? ptags_bpf_attach(bpf) : ptags_bpf_detach(bpf);
                        if (r < 0) {
                                fprintf(stderr, "bench-fork: %s\n", ptags_bpf_last_error(bpf));
                                return 1;
                        }
                        for (int tagged = 0; tagged < 2; tagged++)
                                for (int op = 0; op < 2; op++)
                                        t[tagged][op][attached][round] =
                                                worker_run(&w[tagged], ops[op]);
                }
                for (int tagged = 0; tagged < 2; tagged++)
                        for (int op = 0; op < 2; op++)
                                ratio[tagged][op][round] =
                                        t[tagged][op][1][round] / t[tagged][op][0][round];
        }
        printf("bench-fork: backend %s, %d rounds of %d forks / %d execs, medians\n",
               ptags_bpf_backend_name(bpf), ROUNDS, FORKS, EXECS);
        const char *op_names[2] = {"fork+exit", "fork+exec"};
        const double target[2] = {1.05, 1.10};
        for (int tagged = 0; tagged < 2; tagged++)
                for (int op = 0; op < 2; op++) {
                        double off = median(t[tagged][op][0], ROUNDS);
                        double on = median(t[tagged][op][1], ROUNDS);
                        double q = median(ratio[tagged][op], ROUNDS);
                        printf("%-9s %-8s detached %8.1f us  attached %8.1f us  ratio %.3f "
                               "(target <= %.2f: %s)\n",
                               op_names[op], tagged ? "tagged" : "untagged", off / 1e3, on / 1e3, q,
                               target[tagged], q <= target[tagged] ? "met" : "MISSED");
                }
        /* What one retag costs the daemon: the iterator walks every task. */
        ptags_set *alt[2] = {NULL, NULL};
        ptags_set_parse("retag:a\n", 8, &alt[0], NULL);
        ptags_set_parse("retag:b\n", 8, &alt[1], NULL);
        double start = now_ns();
        for (int i = 0; i < 200; i++)
                if (ptags_bpf_write_tags(bpf, w1_fd, alt[i & 1], PTAGS_BPF_NO_MARK) < 0) {
                        fprintf(stderr, "bench-fork: retag: %s\n", ptags_bpf_last_error(bpf));
                        return 1;
                }
        printf("retag of a single-threaded process: %.1f us\n", (now_ns() - start) / 200 / 1e3);
        ptags_set_free(alt[0]);
        ptags_set_free(alt[1]);
        fflush(stdout);
        /* Each worker holds the other's pipe ends: end them explicitly. */
        for (int i = 0; i < 2; i++) {
                kill(w[i].pid, SIGKILL);
                waitpid(w[i].pid, NULL, 0);
        }
        ptags_bpf_close(bpf);
        return 0;
}
