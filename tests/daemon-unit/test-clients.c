// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-clients.c: ptagsd's per-client bookkeeping on a private bus: the uid
 * cache, the unread-reply calls hammered from several threads while the
 * main loop gets the bus's answers, and per-uid records that go once a uid
 * holds nothing. */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clients.h"
#include "errors.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizers' allocator, which mallinfo2() knows nothing of, counts
 * (GCC ships no header declaring it). */
size_t __sanitizer_get_current_allocated_bytes(void);
#define SANITIZED 1
#endif

typedef struct {
        GPid bus_pid;
        char *address;
        char *dir;
        GDBusConnection *server; /* ptagsd's side */
        GDBusConnection *client;
        PtagsLimits limits;
        PtagsClients *clients;
        const char *name; /* the client's unique name */
} Fixture;

/* Dies with the test, even when an assertion aborts it. */
static void die_with_parent(gpointer unused)
{
        prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* A private bus that lets everyone send anything, the Stats interface too
 * (but for @deny_member of the bus, when not NULL). */
static void start_bus_denying(Fixture *f, const char *deny_member)
{
        g_autoptr(GError) error = NULL;
        f->dir = g_dir_make_tmp("ptags-clients-XXXXXX", &error);
        g_assert_no_error(error);
        g_autofree char *config = g_build_filename(f->dir, "bus.conf", NULL);
        g_autofree char *text = g_strdup_printf(
                "<busconfig><type>session</type><listen>unix:dir=%s</listen>"
                "<auth>EXTERNAL</auth><policy context=\"default\">"
                "<allow user=\"*\"/><allow own=\"*\"/>"
                "<allow send_type=\"method_call\"/><allow send_type=\"signal\"/>"
                "<allow send_requested_reply=\"true\" send_type=\"method_return\"/>"
                "<allow send_requested_reply=\"true\" send_type=\"error\"/>"
                "<allow receive_type=\"method_call\"/><allow receive_type=\"method_return\"/>"
                "<allow receive_type=\"error\"/><allow receive_type=\"signal\"/>"
                "%s%s%s</policy></busconfig>",
                f->dir,
                deny_member ? "<deny send_destination=\"org.freedesktop.DBus\" "
                              "send_interface=\"org.freedesktop.DBus\" send_member=\""
                            : "",
                deny_member ? deny_member : "", deny_member ? "\"/>" : "");
        g_assert_true(g_file_set_contents(config, text, -1, &error));
        g_autofree char *config_arg = g_strconcat("--config-file=", config, NULL);
        char *argv[] = {"dbus-daemon", "--nofork", "--print-address=1", config_arg, NULL};
        int out = -1;
        g_assert_true(g_spawn_async_with_pipes(
                NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent,
                NULL, &f->bus_pid, NULL, &out, NULL, &error));
        g_assert_no_error(error);
        FILE *stream = fdopen(out, "r");
        char line[1024];
        g_assert_nonnull(fgets(line, sizeof line, stream));
        fclose(stream);
        f->address = g_strstrip(g_strdup(line));
}

static void start_bus(Fixture *f)
{
        start_bus_denying(f, NULL);
}

static void stop_bus(Fixture *f)
{
        kill(f->bus_pid, SIGTERM);
        waitpid(f->bus_pid, NULL, 0);
        g_spawn_close_pid(f->bus_pid);
        g_autofree char *config = g_build_filename(f->dir, "bus.conf", NULL);
        g_unlink(config);
        g_rmdir(f->dir);
        g_free(f->dir);
        g_free(f->address);
}

static GDBusConnection *connect_to(Fixture *f)
{
        g_autoptr(GError) error = NULL;
        GDBusConnection *c = g_dbus_connection_new_for_address_sync(
                f->address,
                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                NULL, NULL, &error);
        g_assert_no_error(error);
        return c;
}

static void uid_learnt(gpointer data, uid_t uid, const GError *error)
{
        g_assert_no_error(error);
        *(gint64 *)data = uid;
}

static void fixture_set_up(Fixture *f, gconstpointer unused)
{
        start_bus(f);
        f->server = connect_to(f);
        f->client = connect_to(f);
        f->name = g_dbus_connection_get_unique_name(f->client);
        ptags_limits_init(&f->limits);
        f->clients = ptags_clients_new(f->server, &f->limits);

        gint64 uid = -1;
        ptags_clients_get_uid(f->clients, f->name, uid_learnt, &uid);
        while (uid == -1)
                g_main_context_iteration(NULL, TRUE);
        g_assert_cmpint(uid, ==, getuid());
}

static void fixture_tear_down(Fixture *f, gconstpointer unused)
{
        ptags_clients_free(f->clients);
        g_object_unref(f->client);
        g_object_unref(f->server);
        stop_bus(f);
}

static void test_cached_uid(Fixture *f, gconstpointer unused)
{
        uid_t uid = (uid_t)-1;

        g_assert_true(ptags_clients_cached_uid(f->clients, f->name, &uid));
        g_assert_cmpuint(uid, ==, getuid());
        /* Never asked about: no answer, and no I/O to find one. */
        g_assert_false(ptags_clients_cached_uid(f->clients, ":1.9999", &uid));
        g_assert_cmpuint(uid, ==, getuid());
}

typedef struct {
        Fixture *f;
        int rounds;
        gint refused;
        gint finished;
} Worker;

static gpointer hammer(gpointer data)
{
        Worker *w = data;

        for (int i = 0; i < w->rounds; i++) {
                uid_t uid;
                g_autoptr(GError) error = NULL;
                g_assert_true(ptags_clients_cached_uid(w->f->clients, w->f->name, &uid));
                ptags_clients_sent(w->f->clients, w->f->name, 4096);
                ptags_clients_sent(w->f->clients, ":1.9999", 4096); /* unknown: ignored */
                if (!ptags_clients_check_unread(w->f->clients, w->f->name, uid, &error))
                        g_atomic_int_inc(&w->refused);
        }
        g_atomic_int_inc(&w->finished);
        return NULL;
}

/* Counted bytes never sent are not queued at the bus: the bus's answers
 * un-count them, however many threads count and check meanwhile. */
static void test_threads(Fixture *f, gconstpointer unused)
{
        enum { THREADS = 4, ROUNDS = 5000 };
        Worker w = {f, ROUNDS, 0, 0};
        GThread *threads[THREADS];

        for (int i = 0; i < THREADS; i++)
                threads[i] = g_thread_new("hammer", hammer, &w);
        /* The main loop meanwhile runs the bus's answers. */
        while (g_atomic_int_get(&w.finished) < THREADS) {
                if (!g_main_context_iteration(NULL, FALSE))
                        g_usleep(100);
        }
        for (int i = 0; i < THREADS; i++)
                g_thread_join(threads[i]);
        g_test_message("%d of %d checks refused while counting", w.refused, THREADS * ROUNDS);

        /* 80 MiB were counted in all; the bus holds none of it. */
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        gboolean ok = FALSE;
        while (!ok && g_get_monotonic_time() < deadline) {
                g_autoptr(GError) error = NULL;
                ok = ptags_clients_check_unread(f->clients, f->name, getuid(), &error);
                g_main_context_iteration(NULL, !ok);
        }
        g_assert_true(ok);
}

/* Answers still in flight when ptagsd stops are dropped, not run on freed
 * tables (best seen under -Db_sanitize=address). */
static void test_free_with_answers_pending(Fixture *f, gconstpointer unused)
{
        ptags_clients_sent(f->clients, f->name, 1024 * 1024);
        g_autoptr(GError) error = NULL;
        ptags_clients_check_unread(f->clients, f->name, getuid(), &error);
        ptags_clients_free(g_steal_pointer(&f->clients));
        gint64 until = g_get_monotonic_time() + G_USEC_PER_SEC / 5;
        while (g_get_monotonic_time() < until) {
                if (!g_main_context_iteration(NULL, FALSE))
                        g_usleep(1000);
        }
}

/* Bytes this process has allocated and not freed. */
static gsize allocated_bytes(void)
{
#ifdef SANITIZED
        return __sanitizer_get_current_allocated_bytes();
#else
        return mallinfo2().uordblks;
#endif
}

typedef struct {
        PtagsClients *clients;
        uid_t uid;
} Queued;

static void run_and_finish(gpointer data)
{
        Queued *q = data;
        ptags_clients_expensive_done(q->clients, q->uid);
}

static void dropped(gpointer data)
{
}

/* A user granted subordinate uids can reach the bus as each of them (on a
 * bus that does not look uids up, such as dbus-broker): what is kept per
 * uid must go once that uid has nothing left with ptagsd. */
static void test_users_are_forgotten(Fixture *f, gconstpointer unused)
{
        const guint users = 100000;
        g_autoptr(GError) error = NULL;

        /* Warm up the tables' own growth first. */
        for (int round = 0; round < 2; round++) {
                gsize before = allocated_bytes();
                for (guint i = 0; i < users; i++) {
                        uid_t uid = 3000000 + round * users + i;
                        g_assert_true(
                                ptags_clients_check_unread(f->clients, ":1.9999", uid, &error));
                        Queued q = {f->clients, uid};
                        g_assert_true(ptags_clients_queue_expensive(f->clients, uid, run_and_finish,
                                                                    dropped, &q, &error));
                        /* The queued call runs (and finishes) at once. */
                        while (g_main_context_iteration(NULL, FALSE))
                                ;
                }
                gsize after = allocated_bytes();
                g_test_message("round %d: %zu -> %zu bytes allocated", round, before, after);
                if (round == 1)
                        g_assert_cmpuint(after, <, before + 512 * 1024);
        }
}

static void uid_refused(gpointer data, uid_t uid, const GError *error)
{
        g_assert_nonnull(error);
        *(GError **)data = g_error_copy(error);
}

/* A caller whose uid the bus will not tell has not left the bus: its calls
 * get the bus's reason, and one that did leave is told so. */
static void test_uid_the_bus_does_not_tell(void)
{
        Fixture f = {0};
        start_bus_denying(&f, "GetConnectionUnixUser");
        f.server = connect_to(&f);
        f.client = connect_to(&f);
        ptags_limits_init(&f.limits);
        f.clients = ptags_clients_new(f.server, &f.limits);

        GError *error = NULL;
        ptags_clients_get_uid(f.clients, g_dbus_connection_get_unique_name(f.client), uid_refused,
                              &error);
        while (error == NULL)
                g_main_context_iteration(NULL, TRUE);
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED);
        g_assert_nonnull(strstr(error->message, "did not tell the uid"));
        g_clear_error(&error);
        fixture_tear_down(&f, NULL);

        start_bus(&f);
        f.server = connect_to(&f);
        f.client = connect_to(&f);
        f.clients = ptags_clients_new(f.server, &f.limits);
        ptags_clients_get_uid(f.clients, ":1.999", uid_refused, &error);
        while (error == NULL)
                g_main_context_iteration(NULL, TRUE);
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
        g_assert_nonnull(strstr(error->message, "left the bus"));
        g_clear_error(&error);
        fixture_tear_down(&f, NULL);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/clients/uid-the-bus-does-not-tell", test_uid_the_bus_does_not_tell);
        g_test_add("/clients/cached-uid", Fixture, NULL, fixture_set_up, test_cached_uid,
                   fixture_tear_down);
        g_test_add("/clients/threads", Fixture, NULL, fixture_set_up, test_threads,
                   fixture_tear_down);
        g_test_add("/clients/free-with-answers-pending", Fixture, NULL, fixture_set_up,
                   test_free_with_answers_pending, fixture_tear_down);
        g_test_add("/clients/users-are-forgotten", Fixture, NULL, fixture_set_up,
                   test_users_are_forgotten, fixture_tear_down);
        return g_test_run();
}
