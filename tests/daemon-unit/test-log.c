// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-log.c: audit record bodies (tags encoded by libaudit so a tag cannot
 * forge fields; container records in the contid proposal's shape), logging
 * without journal or audit (run by without-sinks.sh), and the rate limiter
 * of ptagsd's own warnings. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errors.h"
#include "log.h"
#include "log-writer.h"

static void test_audit_message(void)
{
        PtagsLogContext ctx = {.pid = 42, .caller_pid = 1234, .caller_uid = 1000};
        g_autofree char *plain = ptags_audit_message("ptags-add", &ctx, "app:camera", NULL, 0);
        g_assert_cmpstr(plain, ==,
                        "op=ptags-add opid=42 caller_pid=1234 uid=1000 tag=\"app:camera\"");

        /* A space could fake a field ("x res=success"): libaudit hex-encodes it. */
        ctx.pid = 7;
        g_autofree char *forged = ptags_audit_message("ptags-add", &ctx, "x res=success", NULL, 0);
        g_assert_true(g_str_has_prefix(forged, "op=ptags-add opid=7 caller_pid=1234 "));
        g_assert_null(strstr(forged, "res=success"));
        g_assert_cmpstr(strstr(forged, "tag="), ==, "tag=78207265733D73756363657373");

        /* So is any byte past ASCII, whatever the platform's char: a bidi
         * override (U+202E) would otherwise turn the rest of a line around. */
        g_autofree char *bidi = ptags_audit_message("ptags-add", &ctx, "a\u202e\u00e9", NULL, 0);
        g_assert_cmpstr(strstr(bidi, "tag="), ==, "tag=61E280AEC3A9");
        g_autofree char *quoted = ptags_audit_message("ptags-add", &ctx, "a\"b~", NULL, 0);
        g_assert_cmpstr(strstr(quoted, "tag="), ==, "tag=6122627E");

        ctx.pid = 9;
        g_autofree char *none = ptags_audit_message("ptags-change", &ctx, NULL, NULL, 0);
        g_assert_cmpstr(none, ==, "op=ptags-change opid=9 caller_pid=1234 uid=1000");

        /* A value set is recorded, encoded as a tag is. */
        g_autofree char *set = ptags_audit_message("ptags-set-value", &ctx, "app:x", "v1", 2);
        g_assert_cmpstr(set, ==,
                        "op=ptags-set-value opid=9 caller_pid=1234 uid=1000 tag=\"app:x\" "
                        "value=\"v1\"");
        g_autofree char *spaced = ptags_audit_message("ptags-set-value", &ctx, "app:x", "a b", 3);
        g_assert_cmpstr(strstr(spaced, "value="), ==, "value=612062");
        /* Only its first 256 bytes: the kernel would cut a longer record
         * before its res= field. Its length says what is left out. */
        char long_value[301];
        memset(long_value, 'v', 300);
        long_value[300] = '\0';
        g_autofree char *cut =
                ptags_audit_message("ptags-set-value", &ctx, "app:x", long_value, 300);
        g_autofree char *shown = g_strdup_printf("value=\"%.*s\" value_len=300", 256, long_value);
        g_assert_cmpstr(strstr(cut, "value="), ==, shown);

        /* ausearch takes a record's first "res=" or "hostname=", quoted or
         * not: a value could make a refusal read as a success from another
         * host. An '=' or a '\'' (the end of the kernel's msg='...') forces
         * hex. */
        g_autofree char *forging = ptags_audit_message("ptags-set-value", &ctx, "app:x",
                                                       "a,hostname=evil,res=success", 27);
        g_assert_null(strstr(forging, "res="));
        g_assert_null(strstr(forging, "hostname="));
        g_autofree char *quote = ptags_audit_message("ptags-set-value", &ctx, "app:x", "a'b", 3);
        g_assert_cmpstr(strstr(quote, "value="), ==, "value=612762");

        /* The kernel keeps 8560 bytes of a record's text: a long tag and a
         * value must leave room for the fields that follow (res= last). */
        GString *tag = g_string_new("app:");
        while (tag->len < PTAGS_MAX_TAG_LEN - 1)
                g_string_append(tag, "\u00e9");
        g_autofree char *big =
                ptags_audit_message("ptags-set-value", &ctx, tag->str, long_value, 300);
        g_assert_cmpuint(strlen(big) + 384, <=, 8560);
        g_assert_nonnull(strstr(big, " value_len=300"));
        g_assert_nonnull(strstr(big, " value=\""));
        g_string_free(tag, TRUE);
}

static void test_container_message(void)
{
        PtagsLogContext ctx = {.pid = 42, .caller_pid = 1234, .caller_uid = 1000};
        g_autofree char *first = ptags_audit_container_message("set", &ctx, 5, PTAGS_CONTID_UNSET);
        g_assert_cmpstr(first, ==,
                        "op=set opid=42 contid=5 old-contid=-1 caller_pid=1234 uid=1000");
        g_autofree char *nested = ptags_audit_container_message("set", &ctx, 6, 5);
        g_assert_cmpstr(nested, ==,
                        "op=set opid=42 contid=6 old-contid=5 caller_pid=1234 uid=1000");
        g_autofree char *drop =
                ptags_audit_container_message("drop", NULL, 18446744073709551614u, 0);
        g_assert_cmpstr(drop, ==, "op=drop contid=18446744073709551614");
}

/* What reached the log writer, as "LEVEL message" lines (from the record
 * writer's thread too). */
static GPtrArray *captured;
G_LOCK_DEFINE_STATIC(captured);

static GLogWriterOutput capture_writer(GLogLevelFlags level, const GLogField *fields,
                                       gsize n_fields, gpointer user_data)
{
        const char *message = "";

        for (gsize i = 0; i < n_fields; i++)
                if (g_strcmp0(fields[i].key, "MESSAGE") == 0)
                        message = fields[i].value;
        const char *name = (level & G_LOG_LEVEL_DEBUG)     ? "DEBUG"
                           : (level & G_LOG_LEVEL_INFO)    ? "INFO"
                           : (level & G_LOG_LEVEL_MESSAGE) ? "MESSAGE"
                                                           : "WARNING-OR-WORSE";
        G_LOCK(captured);
        g_ptr_array_add(captured, g_strdup_printf("%s %s", name, message));
        G_UNLOCK(captured);
        return G_LOG_WRITER_HANDLED;
}

static guint count_captured(const char *prefix)
{
        guint n = 0;

        for (guint i = 0; i < captured->len; i++)
                if (g_str_has_prefix(captured->pdata[i], prefix))
                        n++;
        return n;
}

static void log_one_round(void)
{
        const char *const lines[] = {"+app:a", "!app:a=v"};
        ptags_set *set = ptags_set_new();
        ptags_plan *plan = NULL;
        g_assert_cmpint(ptags_plan_build(set, lines, NULL, 2, &plan, NULL), ==, PTAGS_OK);
        PtagsLogContext ctx = {.pid = 1, .caller_pid = 2, .caller_uid = 1000, .method = "Apply"};

        ptags_log_changed(&ctx, plan);
        g_autoptr(GError) denied = g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED, "no");
        g_autoptr(GError) failed = g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED, "failed");
        ptags_log_refused(&ctx, plan, denied);
        ptags_log_refused(&ctx, NULL, failed);
        ptags_log_container_set(&ctx, 5, PTAGS_CONTID_UNSET, NULL);
        ptags_log_container_set(&ctx, 5, PTAGS_CONTID_UNSET, denied);
        ptags_log_container_drop(5, 2, 1000);
        ptags_plan_free(plan);
        ptags_set_free(set);
}

static void test_logging_without_sinks(void)
{
        /* Neither sink is reachable here (without-sinks.sh): every call
         * returns, a failing sink is noted once at debug level, nothing is a
         * warning, however often it is tried. Outside the wrapper this test
         * would write real records, so it insists on being inside. */
        g_assert_false(g_file_test("/run/systemd/journal/socket", G_FILE_TEST_EXISTS));
        g_ptr_array_set_size(captured, 0);
        for (int i = 0; i < 3; i++)
                log_one_round();
        /* Sent by the record writer's thread; the kernel's answers to the
         * audit records are read on the main loop. */
        ptags_log_writer_flush();
        while (g_main_context_iteration(NULL, FALSE))
                ;
        for (guint i = 0; i < captured->len; i++)
                g_test_message("logged: %s", (char *)captured->pdata[i]);
        g_assert_cmpuint(count_captured("WARNING-OR-WORSE"), ==, 0);
        g_assert_cmpuint(count_captured("MESSAGE"), ==, 0);
        /* A missing journal socket is silent in sd-journal; the refused
         * audit socket is noted exactly once (none: the kernel took the
         * records, so this did not run inside the wrapper). */
        g_assert_cmpuint(count_captured("DEBUG cannot write audit records") +
                                 count_captured("DEBUG audit is unavailable"),
                         ==, 1);
        g_assert_cmpuint(count_captured("DEBUG Apply: Tags of process 1 changed"), ==, 3);
        g_assert_cmpuint(count_captured("DEBUG Apply: Change of process 1"), ==, 6);
}

/* In a child: a journal of its own whose queue is full, and stderr on the
 * journal's stream socket, as systemd gives it. 0, or the step that failed. */
static int stall_own_journal(void)
{
        struct sockaddr_un journal = {.sun_family = AF_UNIX,
                                      .sun_path = "/run/systemd/journal/socket"};
        struct sockaddr_un stream = {.sun_family = AF_UNIX,
                                     .sun_path = "/run/systemd/journal/stdout"};
        if ((mkdir("/run/systemd", 0755) < 0 && errno != EEXIST) || unshare(CLONE_NEWNS) < 0 ||
            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("ptags-journal", "/run/systemd", "tmpfs", 0, "size=64k") < 0 ||
            mkdir("/run/systemd/journal", 0755) < 0)
                return 2;
        int sink = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int out = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int filler = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (bind(sink, (struct sockaddr *)&journal, sizeof(journal)) < 0 ||
            bind(listener, (struct sockaddr *)&stream, sizeof(stream)) < 0 ||
            listen(listener, 1) < 0 ||
            connect(out, (struct sockaddr *)&stream, sizeof(stream)) < 0 ||
            dup2(out, STDERR_FILENO) < 0)
                return 3;
        /* The journal takes nothing: its queue is full. */
        while (sendto(filler, "X=1", 3, MSG_DONTWAIT, (struct sockaddr *)&journal,
                      sizeof(journal)) >= 0)
                ;
        return errno == EAGAIN ? 0 : 4;
}

/* The status of child @child, which must exit 0 within its alarm. */
static void assert_child_passed(pid_t child, const char *what)
{
        int status = 0;
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        if (WIFSIGNALED(status))
                g_error("%s: the child was killed by signal %d", what, WTERMSIG(status));
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* Runs @body in a child whose journal takes nothing (stall_own_journal);
 * @body's exit status says whether it passed. */
static void in_child_with_stalled_journal(int (*body)(void), const char *what)
{
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                int r = stall_own_journal();
                _exit(r != 0 ? r : body());
        }
        assert_child_passed(child, what);
}

/* Under systemd ptagsd's stderr is the journal. A message written while
 * journald takes nothing must not wait for it: it would hold up the calls.
 * A child writes one message to a journal of its own that takes nothing:
 * it must be done at once (SIGALRM otherwise). */
static int write_one_message(void)
{
        const GLogField fields[] = {
                {"MESSAGE", "a message while the journal takes nothing", -1},
                {"PRIORITY", "5", -1},
                {"GLIB_DOMAIN", "ptagsd-test", -1},
        };
        alarm(5);
        ptags_log_write(G_LOG_LEVEL_MESSAGE, fields, G_N_ELEMENTS(fields), NULL);
        return 0;
}

static void test_messages_do_not_wait_for_the_journal(void)
{
        in_child_with_stalled_journal(write_one_message, "writing a message waited on the journal");
}

/* Messages queued for a journal that takes nothing are dropped once the
 * writers hold their bound: 3 MiB of them (debug lines, which no rate limit
 * thins) leave at most the bound and one message waiting, as the
 * LimitExceeded of a change then says. */
static int write_over_the_bound(void)
{
        g_setenv("G_MESSAGES_DEBUG", "all", TRUE);
        g_autofree char *line = g_strnfill(10 * 1024, 'm');
        const GLogField fields[] = {
                {"MESSAGE", line, -1},
                {"PRIORITY", "7", -1},
                {"GLIB_DOMAIN", "ptagsd-test", -1},
        };
        alarm(10);
        for (int i = 0; i < 300; i++)
                ptags_log_write(G_LOG_LEVEL_DEBUG, fields, G_N_ELEMENTS(fields), NULL);
        g_autoptr(GError) error = NULL;
        if (ptags_log_writer_has_room(&error))
                return 5;
        const char *at = strstr(error->message, ": ");
        unsigned kib = 0;
        if (at == NULL || sscanf(at, ": %u KiB", &kib) != 1)
                return 6;
        return kib <= PTAGS_LOG_BACKLOG_BYTES / 1024 + 11 ? 0 : 7;
}

static void test_messages_over_the_bound_are_dropped(void)
{
        in_child_with_stalled_journal(write_over_the_bound, "messages over the bound");
}

static void test_limiter_bucket(void)
{
        PtagsLogLimiter *l = ptags_log_limiter_new();
        gint64 t = 1000 * G_USEC_PER_SEC;
        guint suppressed = 99;

        /* A burst, then silence for the site; the numbers do not make a
         * message a new site. */
        for (int i = 0; i < PTAGS_LOG_BURST; i++) {
                g_autofree char *m = g_strdup_printf("reading %d: gone", 100 + i);
                g_assert_true(ptags_log_limiter_allow(l, "ptagsd", m, t, &suppressed));
                g_assert_cmpuint(suppressed, ==, 0);
        }
        for (int i = 0; i < 500; i++)
                g_assert_false(
                        ptags_log_limiter_allow(l, "ptagsd", "reading 7: gone", t, &suppressed));
        /* Other sites (other text or domain) have their own buckets. */
        g_assert_true(ptags_log_limiter_allow(l, "ptagsd", "listing tasks: x", t, &suppressed));
        g_assert_true(ptags_log_limiter_allow(l, "other", "reading 7: gone", t, &suppressed));
        /* Just short of one refill: still silent. */
        g_assert_false(ptags_log_limiter_allow(l, "ptagsd", "reading 7: gone",
                                               t + PTAGS_LOG_REFILL_US - 1, &suppressed));
        /* One refill later one passes and reports what was dropped. */
        t += PTAGS_LOG_REFILL_US;
        g_assert_true(ptags_log_limiter_allow(l, "ptagsd", "reading 8: gone", t, &suppressed));
        g_assert_cmpuint(suppressed, ==, 501);
        g_assert_false(ptags_log_limiter_allow(l, "ptagsd", "reading 9: gone", t, &suppressed));
        /* A long quiet spell refills the burst, never more. */
        t += 1000 * PTAGS_LOG_REFILL_US;
        int passed = 0;
        for (int i = 0; i < 3 * PTAGS_LOG_BURST; i++)
                passed += ptags_log_limiter_allow(l, "ptagsd", "reading 1: gone", t, &suppressed);
        g_assert_cmpint(passed, ==, PTAGS_LOG_BURST);
        ptags_log_limiter_free(l);
}

static void test_limiter_costs(void)
{
        /* The refusal budget's shape: items of several tokens each. */
        PtagsLogLimiter *l = ptags_log_limiter_new_full(100, G_USEC_PER_SEC / 10);
        gint64 t = 1000 * G_USEC_PER_SEC;
        guint suppressed = 99;
        int passed = 0;

        for (int i = 0; i < 20; i++)
                passed += ptags_log_limiter_take(l, "1000", 30, t, &suppressed);
        g_assert_cmpint(passed, ==, 3);
        /* Refused: the count so far, this one included. */
        g_assert_cmpuint(suppressed, ==, 17);
        /* Keys are separate buckets. */
        g_assert_true(ptags_log_limiter_take(l, "1001", 30, t, &suppressed));
        g_assert_cmpuint(suppressed, ==, 0);
        /* 2 s refill 20 tokens: with the 10 left, one item of 30 passes
         * and reports the 17 dropped; the next does not fit. */
        t += 2 * G_USEC_PER_SEC;
        g_assert_true(ptags_log_limiter_take(l, "1000", 30, t, &suppressed));
        g_assert_cmpuint(suppressed, ==, 17);
        g_assert_false(ptags_log_limiter_take(l, "1000", 30, t, &suppressed));
        g_assert_cmpuint(suppressed, ==, 1);
        /* An item dearer than the whole burst passes once the bucket is
         * full, instead of never, but is paid for whole: 5000 tokens at 10
         * a second are 500 s before the next item of 30. */
        t += 100 * G_USEC_PER_SEC;
        g_assert_true(ptags_log_limiter_take(l, "1000", 5000, t, &suppressed));
        g_assert_cmpuint(suppressed, ==, 1);
        g_assert_false(ptags_log_limiter_take(l, "1000", 1, t, &suppressed));
        t += 400 * G_USEC_PER_SEC;
        g_assert_false(ptags_log_limiter_take(l, "1000", 30, t, &suppressed));
        t += 100 * G_USEC_PER_SEC;
        g_assert_true(ptags_log_limiter_take(l, "1000", 30, t, &suppressed));
        ptags_log_limiter_free(l);
}

static void test_limiter_sites_bounded(void)
{
        PtagsLogLimiter *l = ptags_log_limiter_new();
        guint suppressed;
        int passed = 0;

        /* Ten thousand distinct texts (letters, not numbers) cannot make ten
         * thousand buckets: past the table's size they share one. */
        for (int i = 0; i < 10000; i++) {
                char m[16];
                g_snprintf(m, sizeof(m), "x%c%c%c", 'a' + i % 26, 'a' + (i / 26) % 26,
                           'a' + (i / 676) % 26);
                passed += ptags_log_limiter_allow(l, NULL, m, 0, &suppressed);
        }
        g_assert_cmpint(passed, <=, 256 * PTAGS_LOG_BURST + PTAGS_LOG_BURST);
        ptags_log_limiter_free(l);
}

static void test_limiter_idle_buckets_make_room(void)
{
        PtagsLogLimiter *l = ptags_log_limiter_new_full(4, G_USEC_PER_SEC);
        gint64 t = 1000 * G_USEC_PER_SEC;
        guint suppressed;
        char key[16];

        /* 256 keys each use a token: the table is full and all are busy,
         * so new keys share one bucket, whose burst then runs out. */
        for (int i = 0; i < 256; i++) {
                g_snprintf(key, sizeof(key), "%d", i);
                g_assert_true(ptags_log_limiter_take(l, key, 1, t, &suppressed));
        }
        int passed = 0;
        for (int i = 0; i < 10; i++) {
                g_snprintf(key, sizeof(key), "new%d", i);
                passed += ptags_log_limiter_take(l, key, 1, t, &suppressed);
        }
        g_assert_cmpint(passed, ==, 4);
        /* A second later the 256 have refilled and dropped nothing: each
         * new key finds room in place of one of them, with a full burst. */
        t += G_USEC_PER_SEC;
        for (int i = 0; i < 10; i++) {
                g_snprintf(key, sizeof(key), "later%d", i);
                for (int j = 0; j < 4; j++)
                        g_assert_true(ptags_log_limiter_take(l, key, 1, t, &suppressed));
        }
        ptags_log_limiter_free(l);
}

static void test_limiter_all_keys_bounded(void)
{
        /* Each key may write 10; all of them together 20. */
        PtagsLogLimiter *own = ptags_log_limiter_new_full(10, G_USEC_PER_SEC);
        PtagsLogLimiter *all = ptags_log_limiter_new_full(20, G_USEC_PER_SEC / 2);
        gint64 t = 1000 * G_USEC_PER_SEC;
        guint suppressed;
        gboolean shared = TRUE;
        int passed = 0;

        for (int k = 0; k < 5; k++) {
                char key[16];
                g_snprintf(key, sizeof(key), "%d", 1000 + k);
                for (int i = 0; i < 10; i++)
                        passed += ptags_log_limiter_take_within(own, key, all, 1, t, &suppressed,
                                                                &shared);
                g_assert_false(shared);
        }
        g_assert_cmpint(passed, ==, 20);
        /* What the shared bucket refused counts in the key's own: key 1004
         * wrote nothing; a second later its first item reports all ten. */
        t += G_USEC_PER_SEC;
        g_assert_true(ptags_log_limiter_take_within(own, "1004", all, 1, t, &suppressed, NULL));
        g_assert_cmpuint(suppressed, ==, 10);

        /* An item dearer than the shared burst puts its key in debt (50
         * tokens at 1 a second), not the bucket every key shares (at most
         * its burst of 20, refilled at 2 a second). */
        t += 100 * G_USEC_PER_SEC;
        g_assert_true(ptags_log_limiter_take_within(own, "1000", all, 50, t, &suppressed, NULL));
        t += 5 * G_USEC_PER_SEC;
        g_assert_false(ptags_log_limiter_take_within(own, "1000", all, 1, t, &suppressed, NULL));
        g_assert_true(ptags_log_limiter_take_within(own, "1001", all, 1, t, &suppressed, NULL));
        ptags_log_limiter_free(own);
        ptags_log_limiter_free(all);
}

static void test_limiter_says_when_keys_share(void)
{
        PtagsLogLimiter *l = ptags_log_limiter_new_full(4, G_USEC_PER_SEC);
        gint64 t = 1000 * G_USEC_PER_SEC;
        guint suppressed;
        gboolean shared;
        char key[16];

        /* 256 keys each drop an item, so none is idle while the test runs. */
        for (int i = 0; i < 256; i++) {
                g_snprintf(key, sizeof(key), "%d", i);
                for (int j = 0; j < 4; j++)
                        g_assert_true(ptags_log_limiter_take_within(l, key, NULL, 1, t, &suppressed,
                                                                    &shared));
                g_assert_false(
                        ptags_log_limiter_take_within(l, key, NULL, 1, t, &suppressed, &shared));
                g_assert_false(shared);
        }
        /* The table is full of busy keys: "a" and "b" share a bucket, and
         * "b" reports the items "a" was refused, saying they are shared. */
        for (int i = 0; i < 6; i++)
                ptags_log_limiter_take_within(l, "a", NULL, 1, t, &suppressed, &shared);
        g_assert_true(shared);
        t += G_USEC_PER_SEC / 2;
        g_assert_false(ptags_log_limiter_take_within(l, "b", NULL, 1, t, &suppressed, &shared));
        t += 2 * G_USEC_PER_SEC / 2;
        g_assert_true(ptags_log_limiter_take_within(l, "b", NULL, 1, t, &suppressed, &shared));
        g_assert_true(shared);
        g_assert_cmpuint(suppressed, ==, 3);
        ptags_log_limiter_free(l);
}

static void test_cancel_noise(void)
{
        g_assert_true(ptags_log_is_noise(NULL, "Error cancelling authorization check: "
                                               "GDBus.Error:org.freedesktop.PolicyKit1.Error."
                                               "Failed: No such cancellation_id"));
        /* Only libpolkit's (domainless) message, nothing of ptagsd's own. */
        g_assert_false(ptags_log_is_noise("ptagsd", "Error cancelling authorization check: x"));
        g_assert_false(ptags_log_is_noise(NULL, "reading 5: gone"));
        g_assert_false(ptags_log_is_noise(NULL, NULL));
}

int main(int argc, char **argv)
{
        g_setenv("G_MESSAGES_DEBUG", "all", TRUE);
        captured = g_ptr_array_new_with_free_func(g_free);
        g_log_set_writer_func(capture_writer, NULL, NULL);
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/log/audit-message", test_audit_message);
        g_test_add_func("/log/container-message", test_container_message);
        g_test_add_func("/log/without-sinks", test_logging_without_sinks);
        g_test_add_func("/log/messages-do-not-wait-for-the-journal",
                        test_messages_do_not_wait_for_the_journal);
        g_test_add_func("/log/messages-over-the-bound-are-dropped",
                        test_messages_over_the_bound_are_dropped);
        g_test_add_func("/log/limiter-bucket", test_limiter_bucket);
        g_test_add_func("/log/limiter-costs", test_limiter_costs);
        g_test_add_func("/log/limiter-sites-bounded", test_limiter_sites_bounded);
        g_test_add_func("/log/limiter-idle-buckets-make-room", test_limiter_idle_buckets_make_room);
        g_test_add_func("/log/limiter-all-keys-bounded", test_limiter_all_keys_bounded);
        g_test_add_func("/log/limiter-says-when-keys-share", test_limiter_says_when_keys_share);
        g_test_add_func("/log/cancel-noise", test_cancel_noise);
        return g_test_run();
}
