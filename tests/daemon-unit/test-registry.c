// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-registry.c: the container registry against a stand-in backend: what
 * is saved comes back after a restart, containers without a carrier are
 * reported gone at load, and a member's exit leads to one scan. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"

/* A backend whose processes and IDs the test sets. */
typedef struct {
        PtagsBackend parent;
        GHashTable *ids; /* pid -> guint64* */
        guint scans;
        GHashTable *unreadable; /* pids whose reads fail, or NULL */
        GHashTable *then;       /* the ids of the scans after the next, or NULL */
} FakeBackend;

static int fake_read(PtagsBackend *b, int pidfd, pid_t pid, guint64 *out)
{
        FakeBackend *f = (FakeBackend *)b;
        guint64 *id = g_hash_table_lookup(f->ids, GINT_TO_POINTER(pid));

        if (f->unreadable != NULL && g_hash_table_contains(f->unreadable, GINT_TO_POINTER(pid)))
                return -EIO;

        *out = id ? *id : PTAGS_CONTID_UNSET;
        return 0;
}

static int fake_list(PtagsBackend *b, PtagsContidFunc cb, void *user_data)
{
        FakeBackend *f = (FakeBackend *)b;
        GHashTableIter it;
        gpointer pid, id;

        f->scans++;
        g_hash_table_iter_init(&it, f->ids);
        while (g_hash_table_iter_next(&it, &pid, &id))
                cb(GPOINTER_TO_INT(pid), *(guint64 *)id, user_data);
        if (f->then != NULL) {
                g_hash_table_unref(f->ids);
                f->ids = g_steal_pointer(&f->then);
        }
        return 0;
}

static const PtagsBackendOps fake_ops = {
        .name = "fake",
        .read_contid = fake_read,
        .list_contids = fake_list,
};

static void fake_set(FakeBackend *f, pid_t pid, guint64 id)
{
        g_hash_table_insert(f->ids, GINT_TO_POINTER(pid), g_memdup2(&id, sizeof(id)));
}

static void record_gone(const PtagsContainer *c, void *user_data)
{
        g_array_append_val((GArray *)user_data, c->contid);
}

static pid_t spawn_sleeper(void)
{
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static void test_save_load_and_removal(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-registry-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "sub", "containers", NULL);
        FakeBackend fake = {{&fake_ops}, g_hash_table_new_full(NULL, NULL, NULL, g_free), 0};
        g_autoptr(GArray) gone = g_array_new(FALSE, FALSE, sizeof(guint64));
        pid_t kept = spawn_sleeper(), ended = spawn_sleeper();
        PtagsTarget kept_t, ended_t, me;
        const guint8 uuid[16] = {1, 2, 3};

        g_assert_true(ptags_target_pin_pid(&kept_t, kept, NULL));
        g_assert_true(ptags_target_pin_pid(&ended_t, ended, NULL));
        g_assert_true(ptags_target_pin_pid(&me, getpid(), NULL));
        PtagsRegistry *r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        g_autoptr(GArray) ns = ptags_namespaces_read(&kept_t, NULL);
        g_assert_nonnull(ns);
        g_assert_nonnull(ptags_registry_add(r, 5, PTAGS_CONTID_UNSET, &kept_t, 1000, &me, uuid,
                                            "web", ns, NULL));
        g_assert_nonnull(ptags_registry_add(r, 6, 5, &ended_t, 1000, &me, NULL, NULL, NULL, NULL));
        g_assert_cmpuint(ptags_registry_count_for_budget(r, 1000), ==, 2);
        g_assert_cmpuint(ptags_registry_count_for_budget(r, 0), ==, 0);
        g_autoptr(GVariant) before =
                g_variant_ref_sink(ptags_container_to_variant(ptags_registry_lookup(r, 5)));
        ptags_registry_free(r); /* a restart, as far as the file is concerned */

        /* Container 6 ended while nobody watched: gone at load. */
        fake_set(&fake, kept, 5);
        r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        ptags_registry_load(r);
        g_assert_cmpuint(fake.scans, ==, 1);
        g_assert_cmpuint(gone->len, ==, 1);
        g_assert_cmpuint(g_array_index(gone, guint64, 0), ==, 6);
        PtagsContainer *c = ptags_registry_lookup(r, 5);
        g_assert_nonnull(c);
        g_autoptr(GVariant) after = g_variant_ref_sink(ptags_container_to_variant(c));
        g_assert_true(g_variant_equal(before, after));
        g_assert_cmpuint(c->parent, ==, PTAGS_CONTID_UNSET);
        g_assert_null(ptags_registry_lookup(r, 6));

        /* The watched process exits and no other carries 5: one scan. */
        g_hash_table_remove_all(fake.ids);
        kill(kept, SIGKILL);
        waitpid(kept, NULL, 0);
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
        while (gone->len < 2 && g_get_monotonic_time() < deadline)
                if (!g_main_context_iteration(NULL, FALSE))
                        g_usleep(10000);
        g_assert_cmpuint(gone->len, ==, 2);
        g_assert_cmpuint(g_array_index(gone, guint64, 1), ==, 5);
        g_assert_cmpuint(fake.scans, ==, 2);
        ptags_registry_free(r);

        /* And it stays gone after another restart. */
        r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        ptags_registry_load(r);
        g_assert_null(ptags_registry_lookup(r, 5));
        ptags_registry_free(r);

        kill(ended, SIGKILL);
        waitpid(ended, NULL, 0);
        ptags_target_clear(&kept_t);
        ptags_target_clear(&ended_t);
        ptags_target_clear(&me);
        g_hash_table_unref(fake.ids);
        g_unlink(path);
        g_autofree char *sub = g_path_get_dirname(path);
        g_rmdir(sub);
        g_rmdir(dir);
}

static void wait_for_scans(FakeBackend *f, guint scans)
{
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

        while (f->scans < scans && g_get_monotonic_time() < deadline)
                if (!g_main_context_iteration(NULL, FALSE))
                        g_usleep(10000);
        g_assert_cmpuint(f->scans, ==, scans);
}

/* A registry at @path holding container @contid, registered by this
 * process (pinned into @me) with @leader (pinned into @leader_t). */
static PtagsRegistry *registry_of_one(FakeBackend *fake, const char *path, GArray *gone,
                                      guint64 contid, pid_t leader, PtagsTarget *leader_t,
                                      PtagsTarget *me)
{
        g_assert_true(ptags_target_pin_pid(leader_t, leader, NULL));
        g_assert_true(ptags_target_pin_pid(me, getpid(), NULL));
        PtagsRegistry *r = ptags_registry_new(&fake->parent, path, record_gone, gone);
        g_assert_nonnull(ptags_registry_add(r, contid, PTAGS_CONTID_UNSET, leader_t, 1000, me, NULL,
                                            NULL, NULL, NULL));
        return r;
}

/* A live process that a scan lists with the ID but whose ID then cannot be
 * read may still carry it: its container is kept when the last pinned
 * member exits, and an unnamed ID it carries is adopted at load. */
static void test_unreadable_carrier(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-registry-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "containers", NULL);
        FakeBackend fake = {{&fake_ops},
                            g_hash_table_new_full(NULL, NULL, NULL, g_free),
                            0,
                            g_hash_table_new(NULL, NULL)};
        g_autoptr(GArray) gone = g_array_new(FALSE, FALSE, sizeof(guint64));
        pid_t leader = spawn_sleeper(), carrier = spawn_sleeper();
        PtagsTarget leader_t, me;

        PtagsRegistry *r = registry_of_one(&fake, path, gone, 8, leader, &leader_t, &me);
        fake_set(&fake, carrier, 8);
        g_hash_table_add(fake.unreadable, GINT_TO_POINTER(carrier));
        kill(leader, SIGKILL);
        waitpid(leader, NULL, 0);
        wait_for_scans(&fake, 1);
        g_assert_cmpuint(gone->len, ==, 0);
        g_assert_nonnull(ptags_registry_lookup(r, 8));
        ptags_registry_free(r);

        g_unlink(path);
        r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        g_test_expect_message("ptagsd-registry", G_LOG_LEVEL_WARNING,
                              "audit container 8 is carried by process *");
        ptags_registry_load(r);
        g_test_assert_expected_messages();
        g_assert_nonnull(ptags_registry_lookup(r, 8));
        g_assert_cmpuint(gone->len, ==, 0);
        ptags_registry_free(r);

        kill(carrier, SIGKILL);
        waitpid(carrier, NULL, 0);
        ptags_target_clear(&leader_t);
        ptags_target_clear(&me);
        g_hash_table_unref(fake.ids);
        g_hash_table_unref(fake.unreadable);
        g_unlink(path);
        g_rmdir(dir);
}

/* A carrier that a scan lists but that has exited by the time it is
 * pinned may have forked first: another scan looks for its children before
 * the container is declared gone. One that stays listed once exited (a
 * zombie's record) does not keep the container. */
static void test_carrier_gone_before_pinning(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-registry-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "containers", NULL);
        FakeBackend fake = {{&fake_ops}, g_hash_table_new_full(NULL, NULL, NULL, g_free), 0};
        g_autoptr(GArray) gone = g_array_new(FALSE, FALSE, sizeof(guint64));
        pid_t leader = spawn_sleeper(), child = spawn_sleeper();
        PtagsTarget leader_t, me;
        guint64 nine = 9;

        PtagsRegistry *r = registry_of_one(&fake, path, gone, 9, leader, &leader_t, &me);
        /* The first scan still lists the exited leader; the next, its child. */
        fake_set(&fake, leader, 9);
        fake.then = g_hash_table_new_full(NULL, NULL, NULL, g_free);
        g_hash_table_insert(fake.then, GINT_TO_POINTER(child), g_memdup2(&nine, sizeof(nine)));
        kill(leader, SIGKILL);
        waitpid(leader, NULL, 0);
        wait_for_scans(&fake, 2);
        g_assert_cmpuint(gone->len, ==, 0);
        g_assert_nonnull(ptags_registry_lookup(r, 9));

        /* The child exits; scans keep listing it: gone after one more. */
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        wait_for_scans(&fake, 4);
        g_assert_cmpuint(gone->len, ==, 1);
        g_assert_cmpuint(g_array_index(gone, guint64, 0), ==, 9);
        ptags_registry_free(r);

        ptags_target_clear(&leader_t);
        ptags_target_clear(&me);
        g_hash_table_unref(fake.ids);
        g_unlink(path);
        g_rmdir(dir);
}

/* A container whose leader cannot be watched at registration (out of file
 * descriptors) is looked for later: without a watched process, nothing
 * else would ever notice its end. */
static void test_unwatched_container_is_checked_later(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-registry-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "containers", NULL);
        FakeBackend fake = {{&fake_ops}, g_hash_table_new_full(NULL, NULL, NULL, g_free), 0};
        g_autoptr(GArray) gone = g_array_new(FALSE, FALSE, sizeof(guint64));
        PtagsTarget me;
        /* A pidfd that cannot be duplicated, as when none is left. */
        PtagsTarget leader = {.pid = getpid(), .pidfd = 1000000};

        g_assert_true(ptags_target_pin_pid(&me, getpid(), NULL));
        PtagsRegistry *r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        g_test_expect_message("ptagsd-registry", G_LOG_LEVEL_WARNING,
                              "cannot watch process * of container 11: *");
        PtagsContainer *c = ptags_registry_add(r, 11, PTAGS_CONTID_UNSET, &leader, 1000, &me, NULL,
                                               NULL, NULL, NULL);
        g_test_assert_expected_messages();
        g_assert_nonnull(c);
        g_assert_cmpuint(c->members->len, ==, 0);
        g_assert_cmpuint(c->retry_source, !=, 0);
        ptags_registry_free(r);

        ptags_target_clear(&me);
        g_hash_table_unref(fake.ids);
        g_unlink(path);
        g_rmdir(dir);
}

/* A registry edited by hand: a missing key is no container 0 and no uid 0
 * (the parent unset, the registrant unknown). One that cannot be parsed is
 * kept aside for the administrator, not written over by the next save. */
static void test_edited_and_damaged_files(void)
{
        g_autofree char *dir = g_dir_make_tmp("ptags-registry-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "containers", NULL);
        g_autofree char *aside = g_strconcat(path, ".damaged", NULL);
        FakeBackend fake = {{&fake_ops}, g_hash_table_new_full(NULL, NULL, NULL, g_free), 0};
        g_autoptr(GArray) gone = g_array_new(FALSE, FALSE, sizeof(guint64));
        pid_t carrier = spawn_sleeper();
        g_autofree char *text = g_strdup_printf("[7]\nleader=%d\n", (int)carrier);

        fake_set(&fake, carrier, 7);
        g_assert_true(g_file_set_contents(path, text, -1, NULL));
        PtagsRegistry *r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        ptags_registry_load(r);
        PtagsContainer *c = ptags_registry_lookup(r, 7);
        g_assert_nonnull(c);
        g_assert_cmpuint(c->parent, ==, PTAGS_CONTID_UNSET);
        g_assert_cmpuint(c->owner_uid, ==, PTAGS_REGISTRY_OWNER_UNKNOWN);
        ptags_registry_free(r);

        g_assert_true(g_file_set_contents(path, "[7\nnot a key file\n", -1, NULL));
        r = ptags_registry_new(&fake.parent, path, record_gone, gone);
        g_test_expect_message("ptagsd-registry", G_LOG_LEVEL_WARNING,
                              "cannot read the container registry *; kept as *.damaged");
        g_test_expect_message("ptagsd-registry", G_LOG_LEVEL_WARNING,
                              "audit container 7 is carried by process *");
        ptags_registry_load(r);
        g_test_assert_expected_messages();
        g_autofree char *kept = NULL;
        g_assert_true(g_file_get_contents(aside, &kept, NULL, NULL));
        g_assert_cmpstr(kept, ==, "[7\nnot a key file\n");
        ptags_registry_free(r);

        /* And --remove-state takes it with the rest, but never from under a
         * ptagsd holding the runtime directory's lock (ptags-lsm). */
        int held = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(flock(held, LOCK_EX), ==, 0);
        g_autoptr(GError) busy = NULL;
        g_assert_false(ptags_registry_remove_file(path, &busy));
        g_assert_nonnull(strstr(busy->message, "in use by a running ptagsd"));
        g_assert_true(g_file_test(aside, G_FILE_TEST_EXISTS));
        close(held);
        g_assert_true(ptags_registry_remove_file(path, NULL));
        g_assert_false(g_file_test(aside, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
        kill(carrier, SIGKILL);
        waitpid(carrier, NULL, 0);
        g_hash_table_unref(fake.ids);
        g_rmdir(dir);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/registry/save-load-and-removal", test_save_load_and_removal);
        g_test_add_func("/registry/unreadable-carrier", test_unreadable_carrier);
        g_test_add_func("/registry/carrier-gone-before-pinning", test_carrier_gone_before_pinning);
        g_test_add_func("/registry/unwatched-container-is-checked-later",
                        test_unwatched_container_is_checked_later);
        g_test_add_func("/registry/edited-and-damaged-files", test_edited_and_damaged_files);
        return g_test_run();
}
