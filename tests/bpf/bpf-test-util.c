// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bpf-test-util.c: plumbing for the BPF backend tests (instances, target
 * processes, checks); the cases themselves are in bpf-test.c. */
#include "bpf-test-util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;
const char *child_path;

/* What die() cleans up, so a failed test leaves no process or pin behind. */
static test_instance *current_instance;
static pid_t spawned[64];
static size_t n_spawned;

void check_at(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
        if (ok)
                return;
        va_list ap;
        failures++;
        fprintf(stderr, "FAIL %s:%d: %s: ", file, line, expr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

int check_failures(void)
{
        return failures;
}

void die(const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "FATAL: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        for (size_t i = 0; i < n_spawned; i++)
                kill(spawned[i], SIGKILL);
        if (current_instance) {
                ptags_bpf_close(current_instance->bpf);
                ptags_bpf_uninstall(current_instance->pin_dir, current_instance->state_dir);
                rmdir(current_instance->state_dir);
        }
        exit(1);
}

static void open_or_die(test_instance *t)
{
        char err[512] = "";
        ptags_bpf_options o = {.pin_dir = t->pin_dir, .state_dir = t->state_dir};
        int r = ptags_bpf_open(&o, &t->bpf, err, sizeof(err));
        if (r < 0)
                die("ptags_bpf_open: %s (%s)", err, strerror(-r));
        const char *want = getenv("PTAGS_BPF_TEST_MODE");
        if (want && *want) {
                char expected[32];
                snprintf(expected, sizeof(expected), "bpf-%s", want);
                if (strcmp(ptags_bpf_backend_name(t->bpf), expected) != 0)
                        die("backend is %s, the test run requires %s",
                            ptags_bpf_backend_name(t->bpf), expected);
        }
}

void instance_open(test_instance *t, const char *name)
{
        snprintf(t->pin_dir, sizeof(t->pin_dir), "/sys/fs/bpf/ptags-test-%s-%d", name,
                 (int)getpid());
        snprintf(t->state_dir, sizeof(t->state_dir), "/tmp/ptags-test-%s-%d", name, (int)getpid());
        if (mkdir(t->state_dir, 0700) < 0 && errno != EEXIST)
                die("mkdir %s: %s", t->state_dir, strerror(errno));
        current_instance = t;
        open_or_die(t);
        fprintf(stderr, "backend: %s, pins in %s\n", ptags_bpf_backend_name(t->bpf), t->pin_dir);
}

void instance_reopen(test_instance *t)
{
        ptags_bpf_close(t->bpf);
        t->bpf = NULL;
        open_or_die(t);
}

void instance_destroy(test_instance *t)
{
        current_instance = NULL;
        ptags_bpf_close(t->bpf);
        t->bpf = NULL;
        int r = ptags_bpf_uninstall(t->pin_dir, t->state_dir);
        CHECK(r == 0, "uninstall: %s", strerror(-r));
        rmdir(t->state_dir);
}

void child_spawn(child_proc *c)
{
        int to_child[2], from_child[2];
        if (pipe2(to_child, O_CLOEXEC) < 0 || pipe2(from_child, O_CLOEXEC) < 0)
                die("pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0)
                die("fork: %s", strerror(errno));
        if (pid == 0) {
                dup2(to_child[0], STDIN_FILENO);
                dup2(from_child[1], STDOUT_FILENO);
                execl(child_path, "bpf-child", (char *)NULL);
                _exit(127);
        }
        close(to_child[0]);
        close(from_child[1]);
        if (n_spawned < sizeof(spawned) / sizeof(spawned[0]))
                spawned[n_spawned++] = pid;
        c->pid = pid;
        c->in = to_child[1];
        c->out = from_child[0];
        long reported = child_expect(c, "ready");
        if (reported != pid)
                die("bpf-child reported pid %ld, expected %d", reported, (int)pid);
}

bool child_spawn_at(child_proc *c, pid_t pid)
{
        /* The kernel hands out ns_last_pid + 1 next; other forks on the
         * machine may win the race, so try again a few times. */
        for (int i = 0; i < 100; i++) {
                FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "we");
                if (!f)
                        return false;
                fprintf(f, "%d", (int)pid - 1);
                if (fclose(f) != 0)
                        return false;
                child_spawn(c);
                if (c->pid == pid)
                        return true;
                child_kill(c);
        }
        return false;
}

void child_send(child_proc *c, const char *cmd)
{
        char line[128];
        int n = snprintf(line, sizeof(line), "%s\n", cmd);
        if (write(c->in, line, (size_t)n) != n)
                die("writing to bpf-child: %s", strerror(errno));
}

long child_expect(child_proc *c, const char *word)
{
        char line[128];
        size_t len = 0;
        /* Byte by byte: replies are short and must not be over-read. */
        while (len + 1 < sizeof(line)) {
                ssize_t n = read(c->out, line + len, 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        die("bpf-child %d closed its output", (int)c->pid);
                if (line[len++] == '\n')
                        break;
        }
        line[len] = '\0';
        char got[32];
        long value = 0;
        if (sscanf(line, "%31s %ld", got, &value) != 2 || strcmp(got, word) != 0)
                die("bpf-child said \"%.*s\", expected \"%s\"", (int)len - 1, line, word);
        return value;
}

void kill_pid(pid_t pid)
{
        kill(pid, SIGKILL);
}

void child_kill(child_proc *c)
{
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        close(c->in);
        close(c->out);
}

ptags_set *set_from(const char *text)
{
        ptags_set *s = NULL;
        if (ptags_set_parse(text, strlen(text), &s, NULL) != PTAGS_OK)
                die("bad test set \"%s\"", text);
        return s;
}

bool tags_are(test_instance *t, pid_t pid, const char *text)
{
        ptags_set *got = NULL, *want = set_from(text);
        int r = ptags_bpf_read_tags(t->bpf, pid, &got);
        bool same = r == 0 && ptags_set_equal(got, want);
        if (!same) {
                char *shown = got ? ptags_set_format(got, NULL) : NULL;
                fprintf(stderr, "  pid %d has \"%s\" (r=%d %s), expected \"%s\"\n", (int)pid,
                        shown ? shown : "?", r, r ? ptags_bpf_last_error(t->bpf) : "", text);
                free(shown);
        }
        ptags_set_free(got);
        ptags_set_free(want);
        return same;
}

ptags_bpf_record record_of(test_instance *t, pid_t pid)
{
        ptags_bpf_record rec;
        int r = ptags_bpf_get_record(t->bpf, pid, &rec);
        if (r < 0)
                die("record of %d: %s", (int)pid, ptags_bpf_last_error(t->bpf));
        return rec;
}

int pidfd_of(pid_t pid)
{
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                die("pidfd_open(%d): %s", (int)pid, strerror(errno));
        return fd;
}

void tag(test_instance *t, pid_t pid, const char *text)
{
        ptags_set *s = set_from(text);
        int fd = pidfd_of(pid);
        int r = ptags_bpf_write_tags(t->bpf, fd, s, PTAGS_BPF_NO_MARK);
        close(fd);
        ptags_set_free(s);
        if (r < 0)
                die("tagging %d: %s", (int)pid, ptags_bpf_last_error(t->bpf));
}

void copy_file(const char *from, const char *to)
{
        char buf[65536];
        FILE *in = fopen(from, "re"), *out = fopen(to, "we");
        if (!in || !out)
                die("copy %s to %s: %s", from, to, strerror(errno));
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
                if (fwrite(buf, 1, n, out) != n)
                        die("copy: %s", strerror(errno));
        fclose(in);
        if (fclose(out) != 0)
                die("copy: %s", strerror(errno));
}
