// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-cgroup-units.c: the units read from cgroup text must be the ones
 * sd-login reads (polkit rules trust target-unit): by rule on written
 * text, and against sd-login itself on processes placed in real cgroups. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "cgroup-units.h"

static void check_units(const char *text, const char *pid1, PtagsCgroupTree tree,
                        const char *want_unit, const char *want_user_unit)
{
        g_autofree char *unit = NULL, *user_unit = NULL;

        ptags_cgroup_units(text, pid1, tree, &unit, &user_unit);
        if (g_strcmp0(unit, want_unit) != 0 || g_strcmp0(user_unit, want_user_unit) != 0)
                g_error("%s (PID 1 %s): got %s / %s, want %s / %s", text, pid1, unit, user_unit,
                        want_unit, want_user_unit);
}

/* Unified-tree paths below a PID 1 in init.scope, and their units. */
static const struct {
        const char *path, *unit, *user_unit;
} rules[] = {
        {"/system.slice/camera.service", "camera.service", NULL},
        {"/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service", NULL},
        {"/user.slice/user-1000.slice/session-3.scope", "session-3.scope", NULL},
        /* A user's own unit named like a system one stays a user unit. */
        {"/user.slice/user-1000.slice/user@1000.service/app.slice/camera.service",
         "user@1000.service", "camera.service"},
        {"/user.slice/user-0.slice/user@0.service/x.scope", "user@0.service", "x.scope"},
        {"/user.slice/user@1000.service", "user@1000.service", NULL},
        /* Not a uid as systemd reads one: no user unit. */
        {"/user.slice/user@01.service/x.service", "user@01.service", NULL},
        {"/user.slice/user@65535.service/x.service", "user@65535.service", NULL},
        {"/user.slice/user@4294967295.service/x.service", "user@4294967295.service", NULL},
        {"/user.slice/user@4294967296.service/x.service", "user@4294967296.service", NULL},
        {"/user.slice/user@4294967294.service/x.service", "user@4294967294.service", "x.service"},
        {"/user.slice/user@+1.service/x.service", NULL, NULL},
        {"/user.slice/user@1x.service/x.service", "user@1x.service", NULL},
        {"/user.slice/_user@1.service/x.service", "user@1.service", NULL},
        /* One leading '_' escapes a name like a kernel file's. */
        {"/system.slice/_cpu.service", "cpu.service", NULL},
        {"/_system.slice/a.service", "a.service", NULL},
        {"/__x.service", "_x.service", NULL},
        /* Slices only, templates, bad names: no unit. */
        {"/", NULL, NULL},
        {"", NULL, NULL},
        {"/user.slice", NULL, NULL},
        {"/system.slice/foo@.service", NULL, NULL},
        {"/a@b.slice/x.service", NULL, NULL},
        {"/@foo.service", NULL, NULL},
        {"/foo bar.service", NULL, NULL},
        {"/system.slice/foo.unknown", NULL, NULL},
        {"/noext", NULL, NULL},
        {"/.service", NULL, NULL},
        {"/a.b", NULL, NULL},
        {"/x.slice.service", "x.slice.service", NULL},
        {"/foo:bar\\x2d.service", "foo:bar\\x2d.service", NULL},
        {"//system.slice///camera.service", "camera.service", NULL},
        /* A slice below a unit is not skipped again. */
        {"/a.service/b.slice/c.service", "a.service", NULL},
        /* A zombie's path ends in " (deleted)". */
        {"/system.slice/camera.service (deleted)", "camera.service", NULL},
        {"/system.slice/camera.service (deleted) (deleted)", NULL, NULL},
};

static void test_rules(void)
{
        for (gsize i = 0; i < G_N_ELEMENTS(rules); i++) {
                g_autofree char *text = g_strdup_printf("0::%s\n", rules[i].path);
                check_units(text, "0::/init.scope\n", PTAGS_CGROUP_TREE_UNIFIED, rules[i].unit,
                            rules[i].user_unit);
        }
        /* Names of 255 characters are units, of 256 not. */
        g_autofree char *name255 = g_strnfill(247, 'a'), *name256 = g_strnfill(248, 'a');
        g_autofree char *t255 = g_strdup_printf("0::/%s.service\n", name255);
        g_autofree char *u255 = g_strdup_printf("%s.service", name255);
        g_autofree char *t256 = g_strdup_printf("0::/%s.service\n", name256);
        check_units(t255, "0::/\n", PTAGS_CGROUP_TREE_UNIFIED, u255, NULL);
        check_units(t256, "0::/\n", PTAGS_CGROUP_TREE_UNIFIED, NULL, NULL);
}

static void test_trees(void)
{
        static const char hybrid[] = "9:name=systemd:/system.slice/legacy.service\n"
                                     "4:memory:/x\n"
                                     "0::/system.slice/unified.service\n";
        check_units(hybrid, "0::/init.scope\n9:name=systemd:/init.scope\n",
                    PTAGS_CGROUP_TREE_UNIFIED, "unified.service", NULL);
        check_units(hybrid, "0::/init.scope\n9:name=systemd:/init.scope\n",
                    PTAGS_CGROUP_TREE_LEGACY, "legacy.service", NULL);
        check_units(hybrid, "0::/\n9:name=systemd:/\n", PTAGS_CGROUP_TREE_UNKNOWN, NULL, NULL);
        /* The named hierarchy may share its line with controllers. */
        check_units("1:cpu,name=systemd,memory:/a.service\n", "1:cpu,name=systemd,memory:/\n",
                    PTAGS_CGROUP_TREE_LEGACY, "a.service", NULL);
        check_units("1:name=systemdx:/a.service\n", "9:name=systemd:/\n", PTAGS_CGROUP_TREE_LEGACY,
                    NULL, NULL);
        /* The first line of the tree counts; a line also ends at '\r'. */
        check_units("0::/a.service\n0::/b.service\n", "0::/\n", PTAGS_CGROUP_TREE_UNIFIED,
                    "a.service", NULL);
        check_units("0::/a.service\r0::/b.service\n", "0::/\n", PTAGS_CGROUP_TREE_UNIFIED,
                    "a.service", NULL);
        check_units("1::/a.service\n", "0::/\n", PTAGS_CGROUP_TREE_UNIFIED, NULL, NULL);
        /* Nothing known about PID 1: no root, no units (as sd-login). */
        check_units("0::/a.service\n", NULL, PTAGS_CGROUP_TREE_UNIFIED, NULL, NULL);
        check_units("0::/a.service\n", "9:name=systemd:/\n", PTAGS_CGROUP_TREE_UNIFIED, NULL, NULL);
        check_units(NULL, "0::/\n", PTAGS_CGROUP_TREE_UNIFIED, NULL, NULL);
}

/* Paths are taken below PID 1's, less the scope or slice it runs in. */
static void test_root(void)
{
        const PtagsCgroupTree t = PTAGS_CGROUP_TREE_UNIFIED;

        check_units("0::/docker/abc/system.slice/a.service\n", "0::/docker/abc/init.scope\n", t,
                    "a.service", NULL);
        check_units("0::/docker/abc/system.slice/a.service\n", "0::/docker/abc/system.slice\n", t,
                    "a.service", NULL);
        check_units("0::/docker/abc/a.service\n", "0::/docker/abc/system\n", t, "a.service", NULL);
        check_units("0::/docker/abc/a.service\n", "0::/docker/abc\n", t, "a.service", NULL);
        check_units("0::/docker/abc\n", "0::/docker/abc/init.scope\n", t, NULL, NULL);
        /* Outside the root the whole path is read; prefixes are whole
         * components. */
        check_units("0::/other/a.service\n", "0::/docker/abc/init.scope\n", t, NULL, NULL);
        check_units("0::/docker/abcd/a.service\n", "0::/docker/abc/init.scope\n", t, NULL, NULL);
        check_units("0::/x.slice/a.service\n", "0::/docker/init.scope\n", t, "a.service", NULL);
        check_units("0::/a.service\n", "0::/\n", t, "a.service", NULL);
        check_units("0::/a.service (deleted)\n", "0::/init.scope (deleted)\n", t, "a.service",
                    NULL);
}

static void test_unit_name_valid(void)
{
        g_assert_true(ptags_unit_name_valid("a.service", 9, FALSE));
        g_assert_true(ptags_unit_name_valid("a@b.service", 11, TRUE));
        g_assert_false(ptags_unit_name_valid("a@b.service", 11, FALSE));
        g_assert_false(ptags_unit_name_valid("a@.service", 10, TRUE));
        g_assert_true(ptags_unit_name_valid("a@b@c.service", 13, TRUE));
        /* Only the first @len bytes count. */
        g_assert_true(ptags_unit_name_valid("a.servicex", 9, FALSE));
        g_assert_false(ptags_unit_name_valid("a.service", 8, FALSE));
}

/* ---------------------------------------------------- against sd-login */

static const char *tree_dir(void)
{
        switch (ptags_cgroup_tree()) {
        case PTAGS_CGROUP_TREE_UNIFIED:
                return g_file_test("/sys/fs/cgroup/cgroup.controllers", G_FILE_TEST_EXISTS)
                               ? "/sys/fs/cgroup"
                       : g_file_test("/sys/fs/cgroup/unified/cgroup.procs", G_FILE_TEST_EXISTS)
                               ? "/sys/fs/cgroup/unified"
                               : "/sys/fs/cgroup/systemd";
        case PTAGS_CGROUP_TREE_LEGACY:
                return "/sys/fs/cgroup/systemd";
        default:
                return NULL;
        }
}

static gboolean write_text(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        gboolean ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

        if (fd >= 0)
                close(fd);
        return ok;
}

static void compare_with_sd_login(pid_t pid, const char *where)
{
        g_autofree char *path = g_strdup_printf("/proc/%d/cgroup", (int)pid);
        g_autofree char *text = NULL, *pid1 = NULL, *unit = NULL, *user_unit = NULL;
        char *sd_unit = NULL, *sd_user_unit = NULL;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_assert_true(g_file_get_contents("/proc/1/cgroup", &pid1, NULL, NULL));
        ptags_cgroup_units(text, pid1, ptags_cgroup_tree(), &unit, &user_unit);
        if (sd_pid_get_unit(pid, &sd_unit) < 0)
                sd_unit = NULL;
        if (sd_pid_get_user_unit(pid, &sd_user_unit) < 0)
                sd_user_unit = NULL;
        /* ptagsd asks for a user unit only below a user's manager, where
         * sd-login's answer is the same one; elsewhere it never has one. */
        if (sd_unit == NULL || !g_str_has_prefix(sd_unit, "user@"))
                g_clear_pointer(&sd_user_unit, free);
        g_test_message("%s: %s / %s", where, unit, user_unit);
        if (g_strcmp0(unit, sd_unit) != 0 || g_strcmp0(user_unit, sd_user_unit) != 0)
                g_error("%s: ptagsd reads %s / %s, sd-login %s / %s", where, unit, user_unit,
                        sd_unit, sd_user_unit);
        free(sd_unit);
        free(sd_user_unit);
}

static void test_same_as_sd_login(void)
{
        /* This process and PID 1 as they are, on any machine. */
        compare_with_sd_login(getpid(), "this test");
        compare_with_sd_login(1, "PID 1");

        const char *dir = tree_dir();
        if (geteuid() != 0) {
                g_test_skip("placing processes in cgroups needs root");
                return;
        }
        /* As root (CI) a skip would pass unseen: a missing tree fails. */
        if (dir == NULL) {
                g_test_message("no cgroup tree at /sys/fs/cgroup: units cannot be compared");
                g_test_fail();
                return;
        }
        /* Below a private top slice of our own, removed at the end. */
        static const char *const paths[] = {
                "camera.service",
                "x.slice/y.slice/z.service",
                "user@1500.service/app.slice/camera.service",
                "user@1500.service/_blkio.service",
                "user@1500.service/a.slice/b@c.scope",
                "user@1500.service",
                "user@01.service/x.service",
                "user@65535.service/x.service",
                "user@4294967294.service/x.service",
                "_user@1500.service/x.service",
                "_cpu.service",
                "getty@tty1.service",
                "foo@.service/x.service",
                "a@b.slice/x.service",
                "@foo.service",
                "foo bar.service",
                "foo.unknown",
                "noext",
                "a.slice",
                "session-5.scope",
                "x.slice.service/y.service",
                "a:b\\x2d.service",
        };
        g_autofree char *top = g_strdup_printf("%s/ptags-units-%d.slice", dir, (int)getpid());
        g_assert_cmpint(mkdir(top, 0755), ==, 0);
        for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
                g_autofree char *cg = g_build_filename(top, paths[i], NULL);
                g_assert_cmpint(g_mkdir_with_parents(cg, 0755), ==, 0);
                pid_t child = fork();
                g_assert_cmpint(child, >=, 0);
                if (child == 0) {
                        /* Gone with this test, even when it fails. */
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        pause();
                        _exit(0);
                }
                g_autofree char *procs = g_build_filename(cg, "cgroup.procs", NULL);
                g_autofree char *pid_text = g_strdup_printf("%d", (int)child);
                gboolean moved = write_text(procs, pid_text);
                if (moved)
                        compare_with_sd_login(child, paths[i]);
                kill(child, SIGKILL);
                g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
                g_assert_true(moved);
        }
        /* Deepest first; each is empty once its process is reaped. */
        for (gint i = G_N_ELEMENTS(paths) - 1; i >= 0; i--) {
                g_autofree char *cg = g_build_filename(top, paths[i], NULL);
                while (strcmp(cg, top) != 0) {
                        if (rmdir(cg) != 0 && errno != ENOENT && errno != ENOTEMPTY &&
                            errno != EBUSY)
                                g_error("rmdir %s: %s", cg, g_strerror(errno));
                        char *slash = strrchr(cg, '/');
                        *slash = '\0';
                }
        }
        g_assert_cmpint(rmdir(top), ==, 0);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/cgroup-units/rules", test_rules);
        g_test_add_func("/cgroup-units/trees", test_trees);
        g_test_add_func("/cgroup-units/root", test_root);
        g_test_add_func("/cgroup-units/unit-name-valid", test_unit_name_valid);
        g_test_add_func("/cgroup-units/same-as-sd-login", test_same_as_sd_login);
        return g_test_run();
}
