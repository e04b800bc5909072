// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-backend-lsm.c: the ptags-lsm backend's file handling under a proc
 * root: it needs a provider, gives itself its rights, reads and parses the
 * attr file, and names a vanished process; its audit_containerid reads,
 * writes and listing; plus backend selection. */
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "backend-select.h"
#include "errors.h"
#include "target.h"

typedef struct {
        char *root;
        char *own_attr;
        char *run; /* RUNTIME_DIRECTORY: never the host's /run/ptags */
} Fixture;

static void fixture_set_up(Fixture *f, gconstpointer data)
{
        g_autoptr(GError) error = NULL;

        f->root = g_dir_make_tmp("ptags-lsm-XXXXXX", &error);
        g_assert_no_error(error);
        g_autofree char *dir = g_strdup_printf("%s/%d/attr", f->root, (int)getpid());
        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        f->own_attr = g_build_filename(dir, "ptags", NULL);
        g_assert_true(g_file_set_contents(f->own_attr, "", 0, NULL));
        f->run = g_build_filename(f->root, "run", NULL);
        g_setenv("RUNTIME_DIRECTORY", f->run, TRUE);
}

static void fixture_tear_down(Fixture *f, gconstpointer data)
{
        g_autofree char *attr_dir = g_path_get_dirname(f->own_attr);
        g_autofree char *pid_dir = g_path_get_dirname(attr_dir);

        g_unlink(f->own_attr);
        g_rmdir(attr_dir);
        g_rmdir(pid_dir);
        g_rmdir(f->run);
        g_unsetenv("RUNTIME_DIRECTORY");
        g_free(f->run);
        g_rmdir(f->root);
        g_free(f->own_attr);
        g_free(f->root);
}

static void test_grants_own_rights(Fixture *f, gconstpointer data)
{
        g_autoptr(GError) error = NULL;
        PtagsBackend *b = ptags_backend_lsm_new(f->root, &error);

        g_assert_no_error(error);
        g_assert_cmpstr(b->ops->name, ==, "ptags-lsm");
        g_assert_cmpuint(b->ops->max_line, ==, PTAGS_WRITE_MAX - 1);
        g_autofree char *written = NULL;
        g_assert_true(g_file_get_contents(f->own_attr, &written, NULL, NULL));
        for (const char *want = "+ptags:add\n+ptags:sub\n+ptags:set\n+ptags:others\n"; *want;) {
                const char *nl = strchr(want, '\n');
                g_autofree char *line = g_strndup(want, (gsize)(nl - want + 1));
                g_assert_nonnull(strstr(written, line));
                want = nl + 1;
        }
        g_assert_nonnull(strstr(written, "+ptags:ptags:add\n"));
        ptags_backend_free(b);
}

static void test_reads_and_parses(Fixture *f, gconstpointer data)
{
        g_autoptr(GError) error = NULL;
        PtagsBackend *b = ptags_backend_lsm_new(f->root, &error);
        ptags_set *set = NULL;

        g_assert_no_error(error);
        g_assert_true(g_file_set_contents(f->own_attr, "@app:a=v\nb\n", -1, NULL));
        g_assert_cmpint(ptags_backend_read(b, -1, getpid(), &set), ==, 0);
        g_assert_cmpuint(ptags_set_count(set), ==, 2);
        g_assert_true(ptags_set_at(set, 0)->keep);
        g_assert_cmpstr(ptags_set_at(set, 0)->value, ==, "v");
        ptags_set_free(set);

        /* Garbage from the kernel is an error, never a guess. */
        g_assert_true(g_file_set_contents(f->own_attr, "b\na\n", -1, NULL));
        set = NULL;
        g_test_expect_message("ptagsd-lsm", G_LOG_LEVEL_WARNING, "*unparsable*");
        g_assert_cmpint(ptags_backend_read(b, -1, getpid(), &set), ==, -EIO);
        g_test_assert_expected_messages();
        g_assert_null(set);

        /* A pid without a file is a vanished process. */
        g_assert_cmpint(ptags_backend_read(b, -1, 999999999, &set), ==, -ESRCH);
        ptags_backend_free(b);
}

static void test_no_provider(void)
{
        g_autoptr(GError) error = NULL;

        g_assert_null(ptags_backend_lsm_new("/nonexistent-ptags-root", &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED);
        g_assert_nonnull(strstr(error->message, "no ptags provider"));
}

static void test_lsm_list(void)
{
        g_assert_true(ptags_lsm_list_has_ptags("lockdown,capability,ptags,bpf"));
        g_assert_true(ptags_lsm_list_has_ptags("ptags\n"));
        g_assert_false(ptags_lsm_list_has_ptags("capability,bpf\n"));
        g_assert_false(ptags_lsm_list_has_ptags("ptagsx,xptags"));
        g_assert_false(ptags_lsm_list_has_ptags(""));
}

static void test_select(Fixture *f, gconstpointer data)
{
        g_autoptr(GError) error = NULL;

        /* auto with a proc root is ptags-lsm, whatever the kernel has. */
        PtagsBackend *b = ptags_backend_select("auto", f->root, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(b->ops->name, ==, "ptags-lsm");
        ptags_backend_free(b);
        g_assert_null(ptags_backend_select("magic", f->root, &error));
        g_assert_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
}

static void found_contid(pid_t pid, guint64 contid, void *user_data)
{
        GHashTable *seen = user_data;

        g_hash_table_insert(seen, GINT_TO_POINTER(pid), g_memdup2(&contid, sizeof(contid)));
}

static void test_container_ids(Fixture *f, gconstpointer data)
{
        g_autoptr(GError) error = NULL;
        PtagsBackend *b = ptags_backend_lsm_new(f->root, &error);
        PtagsTarget self = {0, -1};
        guint64 id = 0;

        g_assert_no_error(error);
        g_assert_true(ptags_target_pin_pid(&self, getpid(), &error));
        /* No file for a live process: a kernel without audit contid. */
        g_assert_cmpint(b->ops->read_contid(b, self.pidfd, self.pid, &id), ==, -EOPNOTSUPP);

        g_autofree char *path = g_strdup_printf("%s/%d/audit_containerid", f->root, (int)getpid());
        g_assert_true(g_file_set_contents(path, "18446744073709551615", -1, NULL));
        g_assert_cmpint(b->ops->read_contid(b, self.pidfd, self.pid, &id), ==, 0);
        g_assert_cmpuint(id, ==, PTAGS_CONTID_UNSET);
        g_assert_true(g_file_set_contents(path, "4x", -1, NULL));
        g_test_expect_message("ptagsd-lsm", G_LOG_LEVEL_WARNING, "*not a container ID");
        g_assert_cmpint(b->ops->read_contid(b, self.pidfd, self.pid, &id), ==, -EIO);
        g_test_assert_expected_messages();

        g_assert_true(g_file_set_contents(path, "", 0, NULL));
        g_assert_cmpint(b->ops->write_contid(b, self.pidfd, self.pid, 77), ==, 0);
        g_autofree char *written = NULL;
        g_assert_true(g_file_get_contents(path, &written, NULL, NULL));
        g_assert_cmpstr(written, ==, "77");
        g_assert_cmpint(b->ops->read_contid(b, self.pidfd, self.pid, &id), ==, 0);
        g_assert_cmpuint(id, ==, 77);

        /* Listing walks the real /proc; only this process has a file. */
        g_autoptr(GHashTable) seen =
                g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        g_assert_cmpint(b->ops->list_contids(b, found_contid, seen), ==, 0);
        g_assert_cmpuint(g_hash_table_size(seen), ==, 1);
        guint64 *listed = g_hash_table_lookup(seen, GINT_TO_POINTER(getpid()));
        g_assert_nonnull(listed);
        g_assert_cmpuint(*listed, ==, 77);

        g_unlink(path);
        ptags_target_clear(&self);
        ptags_backend_free(b);
}

static gboolean count_found(pid_t pid, const ptags_set *tags, guint64 list_id, void *user_data)
{
        guint *found = user_data;

        found[0]++;
        return found[0] < found[1]; /* found[1]: how many to take */
}

/* The walk ends when the caller has its answer (a reply already too big):
 * nothing more is read or parsed. */
static void test_find_stops(Fixture *f, gconstpointer data)
{
        g_autoptr(GError) error = NULL;
        PtagsBackend *b = ptags_backend_lsm_new(f->root, &error);
        g_assert_no_error(error);
        g_autofree char *dir = g_strdup_printf("%s/%d/attr", f->root, (int)getppid());
        g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
        g_autofree char *parent = g_build_filename(dir, "ptags", NULL);
        g_assert_true(g_file_set_contents(parent, "app:x\n", -1, NULL));
        g_assert_true(g_file_set_contents(f->own_attr, "app:x\n", -1, NULL));

        guint found[2] = {0, 10};
        g_assert_cmpint(b->ops->find(b, "app:*", 5, count_found, found), ==, 0);
        g_assert_cmpuint(found[0], ==, 2);
        guint first[2] = {0, 1};
        g_assert_cmpint(b->ops->find(b, "app:*", 5, count_found, first), ==, 0);
        g_assert_cmpuint(first[0], ==, 1);

        g_unlink(parent);
        g_rmdir(dir);
        g_autofree char *pid_dir = g_path_get_dirname(dir);
        g_rmdir(pid_dir);
        ptags_backend_free(b);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add("/backend-lsm/grants-own-rights", Fixture, NULL, fixture_set_up,
                   test_grants_own_rights, fixture_tear_down);
        g_test_add("/backend-lsm/reads-and-parses", Fixture, NULL, fixture_set_up,
                   test_reads_and_parses, fixture_tear_down);
        g_test_add("/backend-lsm/container-ids", Fixture, NULL, fixture_set_up, test_container_ids,
                   fixture_tear_down);
        g_test_add_func("/backend-lsm/no-provider", test_no_provider);
        g_test_add_func("/backend-lsm/lsm-list", test_lsm_list);
        g_test_add("/backend-lsm/find-stops", Fixture, NULL, fixture_set_up, test_find_stops,
                   fixture_tear_down);
        g_test_add("/backend-lsm/select", Fixture, NULL, fixture_set_up, test_select,
                   fixture_tear_down);
        return g_test_run();
}
