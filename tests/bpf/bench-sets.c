// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-sets.c: what the BPF backend's set table costs as it grows. For 10
 * and 10,000 distinct sets: Apply median, table file size, RSS, start-up. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf-test-util.h"
#include "ptags-bpf-sets.h"

enum { APPLIES = 101 };

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long rss_kib(void)
{
        char line[256];
        long kib = -1;
        FILE *f = fopen("/proc/self/status", "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld", &kib) == 1)
                        break;
        fclose(f);
        return kib;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* A distinct set of about 200 bytes with one kept tag, as an application
 * label plus a session would be; all share the kept subset. */
static ptags_set *bench_set(const char *kind, long n)
{
        char text[512];
        snprintf(text, sizeof(text),
                 "app:org.example.Viewer\napp:perm.camera\napp:perm.microphone\n"
                 "bench:%s=%ld\nbench:pad=0123456789abcdef0123456789abcdef0123456789abcdef\n"
                 "bench:role=worker\n@session=c0ffee-%ld\n",
                 kind, n, n % 7);
        return set_from(text);
}

/* Start-up in a fresh process (a restarted daemon), run as
 * `bench-sets --startup PIN_DIR STATE_DIR`: open time, and the RSS before
 * and after the open. A forked child would share the parent's heap. */
static int startup_child(const char *pin_dir, const char *state_dir)
{
        long before = rss_kib();
        double start = now_ms();
        char err[512];
        ptags_bpf *b = NULL;
        ptags_bpf_options o = {.pin_dir = pin_dir, .state_dir = state_dir};
        if (ptags_bpf_open(&o, &b, err, sizeof(err)) < 0) {
                fprintf(stderr, "reopen: %s\n", err);
                return 1;
        }
        double ms = now_ms() - start;
        printf("%.3f %ld %ld\n", ms, before, rss_kib());
        ptags_bpf_close(b);
        return 0;
}

static void measure_startup(test_instance *t, double *ms, long *rss_before, long *rss_after)
{
        int p[2];
        if (pipe(p) < 0)
                die("pipe");
        pid_t pid = fork();
        if (pid == 0) {
                dup2(p[1], STDOUT_FILENO);
                execl("/proc/self/exe", "bench-sets", "--startup", t->pin_dir, t->state_dir,
                      (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        FILE *f = fdopen(p[0], "r");
        int status;
        if (!f || fscanf(f, "%lf %ld %ld", ms, rss_before, rss_after) != 3)
                die("start-up measurement failed");
        fclose(f);
        waitpid(pid, &status, 0);
}

/* Loading the table file alone (from a copy, so nothing is rewritten). */
static double measure_load(test_instance *t)
{
        char src[300], dir[300], dst[320], sub[600];
        snprintf(src, sizeof(src), "%s/sets", t->state_dir);
        snprintf(dir, sizeof(dir), "%s/copy", t->state_dir);
        snprintf(dst, sizeof(dst), "%s/sets", dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                die("mkdir %s: %s", dir, strerror(errno));
        copy_file(src, dst);
        ptags_bpf_sets s;
        char err[512] = "";
        if (ptags_bpf_sets_init(&s, dst) < 0)
                die("init");
        double start = now_ms();
        int r = ptags_bpf_sets_load(&s, err, sizeof(err));
        double ms = now_ms() - start;
        if (r < 0)
                die("load: %s", err);
        ptags_bpf_sets_clear(&s);
        /* Whatever the loader left beside the copy goes with it. */
        DIR *d = opendir(dir);
        for (struct dirent *de; d && (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
                unlink(sub);
        }
        if (d)
                closedir(d);
        rmdir(dir);
        return ms;
}

static void run(long n_sets)
{
        char name[64];
        test_instance t;
        snprintf(name, sizeof(name), "bench-sets-%ld", n_sets);
        long rss_start = rss_kib();
        /* Forked first: a child forked later would share the pin lock. */
        pid_t target = fork();
        if (target == 0) {
                for (;;)
                        pause();
        }
        instance_open(&t, name);
        int target_fd = pidfd_of(target);
        /* The distinct sets the table holds; each is interned as an Apply
         * would, so the table keeps it (no collection runs in between). */
        double fill_start = now_ms();
        for (long i = 0; i < n_sets; i++) {
                ptags_set *s = bench_set("live", i);
                uint64_t id;
                if (ptags_bpf_intern(t.bpf, s, &id) < 0)
                        die("intern: %s", ptags_bpf_last_error(t.bpf));
                ptags_set_free(s);
        }
        double fill_ms = now_ms() - fill_start;

        /* Apply: a new distinct set written to a live process each time. */
        static double apply_ms[APPLIES];
        for (int i = 0; i < APPLIES; i++) {
                ptags_set *s = bench_set("apply", i);
                double start = now_ms();
                if (ptags_bpf_write_tags(t.bpf, target_fd, s, PTAGS_BPF_NO_MARK) < 0)
                        die("apply: %s", ptags_bpf_last_error(t.bpf));
                apply_ms[i] = now_ms() - start;
                ptags_set_free(s);
        }
        qsort(apply_ms, APPLIES, sizeof(double), cmp_double);
        long rss_held = rss_kib() - rss_start;

        char path[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/sets", t.state_dir);
        if (stat(path, &st) < 0)
                die("stat %s: %s", path, strerror(errno));
        size_t table_sets = ptags_bpf_set_count(t.bpf);

        ptags_bpf_close(t.bpf);
        t.bpf = NULL;
        double startup_ms;
        long startup_rss0, startup_rss;
        measure_startup(&t, &startup_ms, &startup_rss0, &startup_rss);
        double load_ms = measure_load(&t);
        instance_reopen(&t);

        printf("bench-sets: %ld distinct sets (%zu in the table after %d Applies)\n", n_sets,
               table_sets, APPLIES);
        printf("  fill: %.1f ms total, %.3f ms per new set\n", fill_ms, fill_ms / (double)n_sets);
        printf("  Apply (new set): median %.3f ms, p90 %.3f ms, max %.3f ms\n",
               apply_ms[APPLIES / 2], apply_ms[APPLIES * 9 / 10], apply_ms[APPLIES - 1]);
        printf("  table file: %lld bytes\n", (long long)st.st_size);
        printf("  RSS: +%ld KiB while holding the table (this process)\n", rss_held);
        printf("  start-up (fresh process): open %.1f ms (BPF load included), table load alone "
               "%.2f ms; RSS %ld KiB after the open (+%ld KiB)\n",
               startup_ms, load_ms, startup_rss, startup_rss - startup_rss0);
        fflush(stdout);
        kill(target, SIGKILL);
        waitpid(target, NULL, 0);
        instance_destroy(&t);
}

/* As ptagsd's collector (src/daemon/backend-bpf.c): how often it asks
 * whether a walk is due, and the grace period it gives orphaned sets. */
#define CHECK_MS 250
#define GRACE_MS 250

/* The pattern: one process grows by 1 MiB of values per Apply, 16
 * times, while the collector runs as ptagsd's does. Every intermediate set
 * is garbage once the next is written. */
static void churn(void)
{
        enum { STEPS = 16, CHUNK = 32000, PER_STEP = 32 }; /* 32 x 32000 B ~ 1 MiB */
        test_instance t;
        pid_t target = fork();
        if (target == 0) {
                for (;;)
                        pause();
        }
        instance_open(&t, "bench-sets-churn");
        int target_fd = pidfd_of(target);
        char journal[512];
        snprintf(journal, sizeof(journal), "%s/sets", t.state_dir);
        size_t cap = (size_t)STEPS * PER_STEP * (CHUNK + 32), len = 0;
        char *text = malloc(cap);
        if (!text)
                die("out of memory");
        struct stat st;
        off_t peak = 0;
        double start = now_ms(), last_check = start, apply_max = 0;
        for (int step = 0; step < STEPS; step++) {
                for (int i = 0; i < PER_STEP; i++) {
                        len += (size_t)snprintf(text + len, cap - len,
                                                "big:%05d=", step * PER_STEP + i);
                        memset(text + len, 'v', CHUNK);
                        len += CHUNK;
                        text[len++] = '\n';
                }
                ptags_set *s = NULL;
                if (ptags_set_parse(text, len, &s, NULL) != PTAGS_OK)
                        die("bad churn set");
                double a = now_ms();
                if (ptags_bpf_write_tags(t.bpf, target_fd, s, PTAGS_BPF_NO_MARK) < 0)
                        die("apply: %s", ptags_bpf_last_error(t.bpf));
                a = now_ms() - a;
                apply_max = a > apply_max ? a : apply_max;
                ptags_set_free(s);
                if (now_ms() - last_check >= CHECK_MS) {
                        last_check = now_ms();
                        if (ptags_bpf_collect_wanted(t.bpf))
                                ptags_bpf_collect_aged(t.bpf, GRACE_MS, NULL);
                }
                if (stat(journal, &st) == 0 && st.st_size > peak)
                        peak = st.st_size;
        }
        double burst_ms = now_ms() - start;
        printf("bench-sets: churn, %d Applies growing one process to %.1f MiB (%.0f ms, "
               "slowest Apply %.1f ms)\n",
               STEPS, (double)len / 1048576, burst_ms, apply_max);
        printf("  journal: peak %.1f MiB (old code: every set kept, %.1f MiB, for up to 60 s)\n",
               (double)peak / 1048576, (double)len * (STEPS + 1) / 2 / 1048576);
        /* After the burst: the timer keeps asking once a second. */
        printf("  journal after the burst:");
        for (int i = 1; i <= 4; i++) {
                usleep(1000 * 1000); /* (checks at 1 s steps here) */
                if (ptags_bpf_collect_wanted(t.bpf))
                        ptags_bpf_collect_aged(t.bpf, GRACE_MS, NULL);
                if (stat(journal, &st) == 0)
                        printf(" %d s: %.1f MiB;", i, (double)st.st_size / 1048576);
        }
        printf(" %zu sets\n", ptags_bpf_set_count(t.bpf));
        fflush(stdout);
        free(text);
        kill(target, SIGKILL);
        waitpid(target, NULL, 0);
        instance_destroy(&t);
}

int main(int argc, char **argv)
{
        signal(SIGPIPE, SIG_IGN);
        if (argc == 4 && strcmp(argv[1], "--startup") == 0)
                return startup_child(argv[2], argv[3]);
        if (argc > 1) {
                for (int i = 1; i < argc; i++) {
                        if (strcmp(argv[i], "churn") == 0)
                                churn();
                        else
                                run(atol(argv[i]));
                }
        } else {
                run(10);
                run(10000);
                churn();
        }
        return check_failures() ? 1 : 0;
}
