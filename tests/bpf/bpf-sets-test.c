// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bpf-sets-test.c: the set table's journal and collection: torn tails,
 * damage, old tables, SIGKILL at random moments, bounded growth, grace.
 * Usage: bpf-sets-test CASE PATH-TO-bpf-child; exit 0 = pass. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf-test-util.h"
#include "ptags-bpf-sets.h"

/* ------------------------------------------------- journal, no kernel */

static char dir[64];

static void remove_dir(void)
{
        char cmd[128];
        if (!dir[0])
                return;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "cannot remove %s\n", dir);
        dir[0] = '\0';
}

static void make_dir(void)
{
        snprintf(dir, sizeof(dir), "/tmp/ptags-sets-test-XXXXXX");
        if (!mkdtemp(dir))
                die("mkdtemp: %s", strerror(errno));
        /* die() exits: the directory goes with the process either way. */
        atexit(remove_dir);
}

static char *slurp(const char *path, size_t *len)
{
        FILE *f = fopen(path, "re");
        if (!f)
                die("open %s: %s", path, strerror(errno));
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        char *buf = malloc((size_t)n + 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
                die("read %s", path);
        fclose(f);
        *len = (size_t)n;
        return buf;
}

static void spit(const char *path, const char *buf, size_t len)
{
        FILE *f = fopen(path, "we");
        if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
                die("write %s: %s", path, strerror(errno));
}

static off_t size_of(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 ? st.st_size : -1;
}

static void open_table(ptags_bpf_sets *t, const char *path, int want, char *err, size_t n)
{
        if (ptags_bpf_sets_init(t, path) < 0)
                die("init");
        err[0] = '\0';
        int r = ptags_bpf_sets_load(t, err, n);
        if (r != want)
                die("load %s gave %d (%s), expected %d", path, r, err, want);
}

static uint64_t add(ptags_bpf_sets *t, const char *text, uint64_t kept)
{
        ptags_bpf_set_entry *e = NULL;
        int r = ptags_bpf_sets_add(t, text, strlen(text), kept, &e);
        if (r < 0)
                die("add: %s", strerror(-r));
        return e->id;
}

static bool has(ptags_bpf_sets *t, const char *text, uint64_t id)
{
        ptags_bpf_set_entry *e = ptags_bpf_sets_by_text(t, text, strlen(text));
        return e && e->id == id && ptags_bpf_sets_by_id(t, id) == e;
}

/* A writer killed mid-append leaves any prefix of its last record: every
 * such prefix loads as the table before that record, and is cut off so
 * the next append starts on a whole record. */
static void test_torn_tail(void)
{
        char path[128], copy[128], err[512];
        ptags_bpf_sets t;
        make_dir();
        snprintf(path, sizeof(path), "%s/sets", dir);
        snprintf(copy, sizeof(copy), "%s/copy/sets", dir);
        open_table(&t, path, 0, err, sizeof(err));
        uint64_t kept = add(&t, "@k=1\n", UINT64_MAX);
        uint64_t a = add(&t, "@k=1\na\n", kept);
        uint64_t dropped = add(&t, "gone\n", 0);
        ptags_bpf_set_entry *e = ptags_bpf_sets_by_id(&t, dropped);
        CHECK(ptags_bpf_sets_remove(&t, e) == 0, "remove");
        off_t before = size_of(path);
        uint64_t last = add(&t, "@k=1\nlast=x y z\n", kept);
        off_t after = size_of(path);
        ptags_bpf_sets_clear(&t);
        size_t len;
        char *whole = slurp(path, &len);
        CHECK((off_t)len == after && after > before, "one record appended (%lld..%lld)",
              (long long)before, (long long)after);

        char sub[128];
        snprintf(sub, sizeof(sub), "%s/copy", dir);
        mkdir(sub, 0700);
        int bad = 0;
        for (off_t cut = before; cut < after; cut++) {
                spit(copy, whole, (size_t)cut);
                open_table(&t, copy, 0, err, sizeof(err));
                bool ok = t.count == 2 && has(&t, "@k=1\n", kept) && has(&t, "@k=1\na\n", a) &&
                          !ptags_bpf_sets_by_id(&t, dropped) && !ptags_bpf_sets_by_id(&t, last) &&
                          size_of(copy) == before;
                /* The next append lands on a whole record and survives. */
                uint64_t next = add(&t, "after\n", 0);
                ptags_bpf_sets_clear(&t);
                open_table(&t, copy, 0, err, sizeof(err));
                ok = ok && t.count == 3 && has(&t, "after\n", next) && next > dropped;
                ptags_bpf_sets_clear(&t);
                bad += !ok;
        }
        CHECK(bad == 0, "%d of %lld cut points lost or kept the wrong sets", bad,
              (long long)(after - before));

        /* The whole file: all there. */
        open_table(&t, path, 0, err, sizeof(err));
        CHECK(t.count == 3 && has(&t, "@k=1\nlast=x y z\n", last), "the whole journal loads");
        ptags_bpf_sets_clear(&t);

        /* Damage inside a whole record is refused with a reason, not
         * guessed around, and leaves the table empty. */
        char *damaged = malloc(len);
        memcpy(damaged, whole, len);
        damaged[before - 3] ^= 0x20; /* the length in the head of a DROP */
        spit(copy, damaged, len);
        open_table(&t, copy, -EBADMSG, err, sizeof(err));
        CHECK(strstr(err, "checksum mismatch") != NULL, "named: %s", err);
        CHECK(t.count == 0 && ptags_bpf_sets_by_id(&t, a) == NULL, "nothing loaded");
        ptags_bpf_sets_clear(&t);
        memcpy(damaged, whole, len);
        char *text_a = memmem(damaged, len, "@k=1\na\n", 7);
        CHECK(text_a != NULL, "set a is in the journal");
        if (text_a)
                text_a[5] = 'b'; /* a set's text */
        spit(copy, damaged, len);
        open_table(&t, copy, -EBADMSG, err, sizeof(err));
        CHECK(strstr(err, "checksum mismatch") != NULL, "named: %s", err);
        ptags_bpf_sets_clear(&t);
        spit(copy, "garbage\n", 8);
        open_table(&t, copy, -EBADMSG, err, sizeof(err));
        CHECK(strstr(err, "not a ptags set table") != NULL, "named: %s", err);
        ptags_bpf_sets_clear(&t);
        free(damaged);
        free(whole);
        remove_dir();
}

/* The text table of earlier versions is read (an upgrade keeps every id)
 * and rewritten as a journal; the id counter carries over. */
static void test_legacy(void)
{
        char path[128], err[512];
        ptags_bpf_sets t;
        make_dir();
        snprintf(path, sizeof(path), "%s/sets", dir);
        const char old[] = "ptags-sets 1 9\n2 2 5\n@k=1\n7 2 7\n@k=1\na\n";
        spit(path, old, sizeof(old) - 1);
        open_table(&t, path, 0, err, sizeof(err));
        CHECK(t.count == 2 && has(&t, "@k=1\n", 2) && has(&t, "@k=1\na\n", 7), "old sets read");
        CHECK(ptags_bpf_sets_by_id(&t, 7)->kept_id == 2, "kept subset kept");
        uint64_t id = add(&t, "new\n", 0);
        CHECK(id == 9, "ids continue from the old counter (%" PRIu64 ")", id);
        ptags_bpf_sets_clear(&t);
        size_t len;
        char *now = slurp(path, &len);
        CHECK(len > 16 && memcmp(now, "ptags-sets 2\n", 13) == 0, "rewritten as a journal");
        free(now);
        open_table(&t, path, 0, err, sizeof(err));
        CHECK(t.count == 3 && has(&t, "new\n", 9) && has(&t, "@k=1\na\n", 7), "and reads back");
        ptags_bpf_sets_clear(&t);

        /* Damage in an old table is refused as before. */
        spit(path, "ptags-sets 1 9\n2 2 50\n@k=1\n", 27);
        open_table(&t, path, -EBADMSG, err, sizeof(err));
        CHECK(strstr(err, "bad entry") != NULL, "named: %s", err);
        ptags_bpf_sets_clear(&t);
        remove_dir();
}

/* ------------------------------------------------ with the real kernel */

static unsigned rnd(void)
{
        static unsigned s;
        if (!s)
                s = (unsigned)time(NULL) ^ (unsigned)getpid() << 8;
        s = s * 1103515245u + 12345u;
        return s >> 8;
}

/* A set with @pad_bytes of values (in tags of at most 32,000 bytes), often
 * with a kept tag; distinct per @n. */
static ptags_set *random_set(unsigned n, size_t pad_bytes)
{
        size_t len = pad_bytes + 128 + pad_bytes / 32000 * 16, used = 0;
        char *text = malloc(len);
        if (!text)
                die("out of memory");
        int k = (int)(n % 3);
        used += (size_t)snprintf(text, len, "%sa:n=%u\n",
                                 k == 0   ? ""
                                 : k == 1 ? "@a:keep=1\n"
                                          : "@a:k2\n",
                                 n);
        for (int i = 0; pad_bytes > 0; i++) {
                size_t chunk = pad_bytes > 32000 ? 32000 : pad_bytes;
                used += (size_t)snprintf(text + used, len - used, "b:pad%03d=", i);
                memset(text + used, 'v', chunk);
                used += chunk;
                text[used++] = '\n';
                pad_bytes -= chunk;
        }
        ptags_set *s = NULL;
        if (ptags_set_parse(text, used, &s, NULL) != PTAGS_OK)
                die("bad random set of %zu bytes", used);
        free(text);
        return s;
}

static int exec_kept_fd(test_instance *t)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/exec_kept", t->pin_dir);
        int fd = bpf_obj_get(path);
        if (fd < 0)
                die("no exec map %s: %s", path, strerror(errno));
        return fd;
}

/* What a restarted daemon must find whatever instant the last one died:
 * every id a task holds is in the table, and the exec map holds exactly
 * the table's sets, each naming its kept subset. */
static int check_consistent(test_instance *t)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0;
        int bad = 0;
        if (ptags_bpf_list_tasks(t->bpf, &tasks, &n) < 0)
                die("list: %s", ptags_bpf_last_error(t->bpf));
        int map = exec_kept_fd(t);
        for (size_t i = 0; i < n; i++) {
                if (tasks[i].set_id == 0)
                        continue;
                ptags_set *s = ptags_bpf_set_contents(t->bpf, tasks[i].set_id);
                uint64_t kept = 0;
                if (!s) {
                        fprintf(stderr, "  task %d holds unknown set %" PRIu64 "\n",
                                (int)tasks[i].tid, tasks[i].set_id);
                        bad++;
                } else if (bpf_map_lookup_elem(map, &tasks[i].set_id, &kept) < 0) {
                        fprintf(stderr, "  set %" PRIu64 " has no exec map entry\n",
                                tasks[i].set_id);
                        bad++;
                } else {
                        /* The entry must name exactly the set's kept tags. */
                        ptags_set *k =
                                kept ? ptags_bpf_set_contents(t->bpf, kept) : ptags_set_new();
                        ptags_set_exec_filter(s);
                        if (!k || !ptags_set_equal(k, s)) {
                                fprintf(stderr,
                                        "  set %" PRIu64 ": kept subset %" PRIu64
                                        " wrong or unknown\n",
                                        tasks[i].set_id, kept);
                                bad++;
                        }
                        ptags_set_free(k);
                }
                ptags_set_free(s);
        }
        /* The exec map holds exactly the table's sets: no set without its
         * entry (an exec would drop every tag), no entry left for a set
         * the table dropped. */
        size_t entries = 0;
        uint64_t key, next;
        for (int r = bpf_map_get_next_key(map, NULL, &next); r == 0;
             r = bpf_map_get_next_key(map, &key, &next)) {
                key = next;
                entries++;
                ptags_set *s = ptags_bpf_set_contents(t->bpf, key);
                if (!s) {
                        fprintf(stderr, "  exec map entry for unknown set %" PRIu64 "\n", key);
                        bad++;
                }
                ptags_set_free(s);
        }
        if (entries != ptags_bpf_set_count(t->bpf)) {
                fprintf(stderr, "  %zu exec map entries for %zu sets\n", entries,
                        ptags_bpf_set_count(t->bpf));
                bad++;
        }
        close(map);
        free(tasks);
        return bad;
}

/* A daemon SIGKILLed at random moments while it writes sets of up to
 * 256 KiB and collects (journal appends, drops, compactions): after each
 * kill the next one opens, finds everything consistent, and an exec of
 * each target keeps exactly its kept tags (the exec map was filled). */
static void test_sigkill(test_instance *t)
{
        enum { TARGETS = 4, ROUNDS = 40 };
        child_proc c[TARGETS];
        int c_fd[TARGETS];
        for (int i = 0; i < TARGETS; i++) {
                child_spawn(&c[i]);
                c_fd[i] = pidfd_of(c[i].pid);
        }
        int bad = 0, torn = 0;
        unsigned counter = 0;
        char journal[512];
        snprintf(journal, sizeof(journal), "%s/sets", t->state_dir);
        for (int round = 0; round < ROUNDS; round++) {
                ptags_bpf_close(t->bpf);
                t->bpf = NULL;
                counter += 1000000;
                pid_t writer = fork();
                if (writer == 0) {
                        instance_reopen(t);
                        for (unsigned i = counter;; i++) {
                                ptags_set *s = random_set(i, rnd() % 4 ? rnd() % 512
                                                                       : rnd() % (256 * 1024));
                                if (ptags_bpf_write_tags(t->bpf, c_fd[rnd() % TARGETS], s,
                                                         PTAGS_BPF_NO_MARK) < 0)
                                        _exit(2);
                                ptags_set_free(s);
                                if (i % 16 == 0 && ptags_bpf_collect(t->bpf, NULL) < 0)
                                        _exit(3);
                        }
                }
                usleep(2000 + rnd() % 40000);
                kill(writer, SIGKILL);
                int status;
                waitpid(writer, &status, 0);
                if (!WIFSIGNALED(status))
                        die("writer failed before the kill (status %d)", status);
                off_t killed_size = size_of(journal);
                instance_reopen(t);
                /* The load cuts a torn tail; a compaction also shrinks the
                 * file, but only when the journal holds garbage. */
                torn += size_of(journal) < killed_size;
                bad += check_consistent(t);
                for (int i = 0; i < TARGETS; i++) {
                        ptags_bpf_record rec = record_of(t, c[i].pid);
                        ptags_set *s = ptags_bpf_set_contents(t->bpf, rec.set_id);
                        if (!s)
                                continue; /* counted above */
                        ptags_set_exec_filter(s);
                        child_send(&c[i], "exec");
                        child_expect(&c[i], "ready");
                        ptags_set *now = NULL;
                        if (ptags_bpf_read_tags(t->bpf, c[i].pid, &now) < 0 ||
                            !ptags_set_equal(now, s)) {
                                fprintf(stderr, "  round %d: target %d lost its kept tags\n", round,
                                        i);
                                bad++;
                        }
                        ptags_set_free(now);
                        ptags_set_free(s);
                }
        }
        fprintf(stderr, "sigkill: %d rounds, %d reopens shrank the journal, %d inconsistencies\n",
                ROUNDS, torn, bad);
        CHECK(bad == 0, "%d inconsistencies after kills", bad);
        for (int i = 0; i < TARGETS; i++) {
                close(c_fd[i]);
                child_kill(&c[i]);
        }
}

/* Space follows the live sets: thousands of Applies of new 1 KiB sets,
 * collected as the daemon does, leave a table and a journal the size of
 * what is held, not of what was written. */
static void test_bounded(test_instance *t)
{
        enum { APPLIES = 3000 };
        child_proc held, busy;
        child_spawn(&held);
        child_spawn(&busy);
        int held_fd = pidfd_of(held.pid), busy_fd = pidfd_of(busy.pid);
        ptags_set *s = random_set(1, 1000);
        if (ptags_bpf_write_tags(t->bpf, held_fd, s, PTAGS_BPF_NO_MARK) < 0)
                die("tag: %s", ptags_bpf_last_error(t->bpf));
        ptags_set_free(s);
        char journal[512];
        snprintf(journal, sizeof(journal), "%s/sets", t->state_dir);
        size_t max_count = 0, walks = 0;
        off_t max_size = 0;
        for (unsigned i = 0; i < APPLIES; i++) {
                s = random_set(100 + i, 1000);
                if (ptags_bpf_write_tags(t->bpf, busy_fd, s, PTAGS_BPF_NO_MARK) < 0)
                        die("apply: %s", ptags_bpf_last_error(t->bpf));
                ptags_set_free(s);
                if (ptags_bpf_collect_wanted(t->bpf)) {
                        walks++;
                        if (ptags_bpf_collect(t->bpf, NULL) < 0)
                                die("collect: %s", ptags_bpf_last_error(t->bpf));
                }
                size_t n = ptags_bpf_set_count(t->bpf);
                off_t size = size_of(journal);
                max_count = n > max_count ? n : max_count;
                max_size = size > max_size ? size : max_size;
        }
        fprintf(stderr,
                "bounded: %d Applies of ~1 KiB, %zu walks, at most %zu sets and %lld "
                "journal bytes\n",
                APPLIES, walks, max_count, (long long)max_size);
        /* Held: 2 sets and 2 kept subsets, ~4 KiB. The floors (16 KiB of
         * new sets before a walk, 64 KiB of garbage before a rewrite)
         * bound the rest. */
        CHECK(walks > 0 && walks < APPLIES / 4, "walks only when due (%zu)", walks);
        CHECK(max_count <= 40, "the table held at most %zu sets", max_count);
        CHECK(max_size <= 100 * 1024, "the journal grew to %lld bytes", (long long)max_size);
        ptags_bpf_record rec = record_of(t, held.pid);
        CHECK(ptags_bpf_set_contents(t->bpf, rec.set_id) != NULL, "the held set stays");
        child_kill(&held);
        child_kill(&busy);
}

/* The daemon's collection spares a set for a grace period after its last
 * holder went (a fork may still be copying it) and a freshly interned one
 * (about to be written); once due, it goes, without waiting a minute. */
static void test_grace(test_instance *t)
{
        enum { GRACE = 400 };
        child_proc c;
        child_spawn(&c);
        tag(t, c.pid, "g:first\n");
        uint64_t first = record_of(t, c.pid).set_id;
        tag(t, c.pid, "g:second\n");
        size_t freed = 99;
        /* (The calls come before the checks: a check's message arguments
         * may be evaluated before its condition.) */
        int r = ptags_bpf_collect_aged(t->bpf, GRACE, &freed);
        CHECK(r == 0 && freed == 0, "nothing dropped within the grace period (%zu)", freed);
        CHECK(ptags_bpf_set_contents(t->bpf, first) != NULL, "the orphaned set is spared");
        CHECK(!ptags_bpf_collect_wanted(t->bpf), "no walk wanted before the grace ends");

        uint64_t interned, again;
        ptags_set *s = set_from("g:interned\n");
        if (ptags_bpf_intern(t->bpf, s, &interned) < 0)
                die("intern: %s", ptags_bpf_last_error(t->bpf));
        usleep((GRACE + 100) * 1000);
        CHECK(ptags_bpf_collect_wanted(t->bpf), "a walk is wanted once the grace ended");
        /* Handing a set out again gives it a new grace period. */
        if (ptags_bpf_intern(t->bpf, s, &again) < 0)
                die("intern: %s", ptags_bpf_last_error(t->bpf));
        ptags_set_free(s);
        CHECK(again == interned, "the same set, the same id");
        r = ptags_bpf_collect_aged(t->bpf, GRACE, &freed);
        CHECK(r == 0 && freed == 1, "the orphan went (%zu dropped)", freed);
        CHECK(ptags_bpf_set_contents(t->bpf, first) == NULL, "the first set went");
        CHECK(ptags_bpf_set_contents(t->bpf, interned) != NULL, "the reinterned set stays");
        CHECK(tags_are(t, c.pid, "g:second\n"), "the held set stays");
        CHECK(!ptags_bpf_collect_wanted(t->bpf), "nothing more is due yet");
        /* Without a grace period, what no task holds goes at once. */
        CHECK(ptags_bpf_collect(t->bpf, &freed) == 0 && freed == 1, "plain collect (%zu)", freed);
        CHECK(ptags_bpf_set_contents(t->bpf, interned) == NULL, "the unwritten set went");
        CHECK(tags_are(t, c.pid, "g:second\n"), "the held set still stays");
        child_kill(&c);
}

static bool keep_all_but(ptags_bpf_set_entry *e, void *data)
{
        return e->id != *(uint64_t *)data;
}

/* After a failed append (ENOSPC, say) the journal is rewritten from the
 * table in memory before the next record. A drop's record must not follow
 * that rewrite, which no longer holds the set: a load refuses a drop of an
 * unknown set, and ptagsd would not start again. */
static void test_drop_after_rewrite(void)
{
        char path[128], err[512];
        ptags_bpf_sets t;
        size_t dropped = 0;
        make_dir();
        snprintf(path, sizeof(path), "%s/sets", dir);
        open_table(&t, path, 0, err, sizeof(err));
        uint64_t a = add(&t, "a\n", 0), b = add(&t, "b\n", 0), c = add(&t, "c\n", 0);
        t.must_rewrite = true; /* as a failed append leaves it */
        CHECK(ptags_bpf_sets_retain(&t, keep_all_but, &b, NULL, &dropped) == 0 && dropped == 1,
              "collect b");
        ptags_bpf_sets_clear(&t);
        open_table(&t, path, 0, err, sizeof(err));
        CHECK(has(&t, "a\n", a) && has(&t, "c\n", c) && !ptags_bpf_sets_by_id(&t, b),
              "a and c, not b, after the collection");
        t.must_rewrite = true;
        CHECK(ptags_bpf_sets_remove(&t, ptags_bpf_sets_by_id(&t, c)) == 0, "remove c");
        ptags_bpf_sets_clear(&t);
        open_table(&t, path, 0, err, sizeof(err));
        CHECK(has(&t, "a\n", a) && !ptags_bpf_sets_by_id(&t, c), "a, not c, after the removal");
        ptags_bpf_sets_clear(&t);
}

static const struct {
        const char *name;
        void (*run)(test_instance *t);
        void (*plain)(void);
} cases[] = {
        {"sets-torn-tail", NULL, test_torn_tail},
        {"sets-legacy", NULL, test_legacy},
        {"sets-sigkill", test_sigkill, NULL},
        {"sets-bounded", test_bounded, NULL},
        {"sets-grace", test_grace, NULL},
        {"sets-drop-after-rewrite", NULL, test_drop_after_rewrite},
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
        alarm(600);
        signal(SIGPIPE, SIG_IGN);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                if (strcmp(argv[1], cases[i].name) != 0)
                        continue;
                if (cases[i].plain) {
                        cases[i].plain();
                } else {
                        test_instance t;
                        instance_open(&t, cases[i].name);
                        cases[i].run(&t);
                        instance_destroy(&t);
                }
                printf("%s: %s\n", cases[i].name, check_failures() ? "FAIL" : "PASS");
                return check_failures() ? 1 : 0;
        }
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
}
