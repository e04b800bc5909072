/* test-target.c: pinning processes by pid and by pidfd, and the facts read
 * about them (fdinfo Pid:, cgroup unit, comm, uid). */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errors.h"
#include "target.h"

static void test_fdinfo_parse(void)
{
        g_assert_cmpint(ptags_fdinfo_parse_pid("pos:\t0\nflags:\t02000002\nmnt_id:\t15\n"
                                               "ino:\t1041\nPid:\t1234\nNSpid:\t1234\n"),
                        ==, 1234);
        g_assert_cmpint(ptags_fdinfo_parse_pid("pos:\t0\nPid:\t-1\n"), ==, -1);
        g_assert_cmpint(ptags_fdinfo_parse_pid("Pid:\t0\n"), ==, 0);
        g_assert_cmpint(ptags_fdinfo_parse_pid("pos:\t0\nflags:\t02\n"), ==, -2);
        g_assert_cmpint(ptags_fdinfo_parse_pid("NSpid:\t7\n"), ==, -2);
        g_assert_cmpint(ptags_fdinfo_parse_pid("Pid:\tx\n"), ==, -2);
        g_assert_cmpint(ptags_fdinfo_parse_pid(""), ==, -2);
}

static void test_cgroup_unit(void)
{
        g_autofree char *service = ptags_cgroup_parse_unit("0::/system.slice/foo.service\n");
        g_assert_cmpstr(service, ==, "foo.service");
        g_autofree char *scope = ptags_cgroup_parse_unit(
                "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-x-1.scope\n");
        g_assert_cmpstr(scope, ==, "app-x-1.scope");
        g_autofree char *none = ptags_cgroup_parse_unit("0::/\n");
        g_assert_null(none);
        g_autofree char *slice = ptags_cgroup_parse_unit("0::/system.slice\n");
        g_assert_null(slice);
        g_autofree char *v1 =
                ptags_cgroup_parse_unit("12:cpu:/\n1:name=systemd:/system.slice/bar.service\n");
        g_assert_cmpstr(v1, ==, "bar.service");
}

static void test_pin_self(void)
{
        PtagsTarget t;
        g_autoptr(GError) error = NULL;

        g_assert_true(ptags_target_pin_pid(&t, getpid(), &error));
        g_assert_no_error(error);
        g_assert_cmpint(t.pid, ==, getpid());
        g_assert_true(ptags_target_alive(&t));

        PtagsProcessInfo info;
        g_assert_true(ptags_process_info_read(&t, &info, &error));
        g_assert_cmpuint(info.uid, ==, getuid());
        g_assert_cmpstr(info.comm, ==, "test-daemon-tar"); /* comm is cut to 15 bytes */
        g_assert_nonnull(info.exe);
        g_assert_true(g_str_has_suffix(info.exe, "test-daemon-target"));
        ptags_process_info_clear(&info);

        /* A pidfd adopted from a client resolves to the same process. */
        PtagsTarget copy;
        g_assert_true(ptags_target_copy(&copy, &t, &error));
        PtagsTarget adopted;
        g_assert_true(ptags_target_adopt_pidfd(&adopted, copy.pidfd, &error));
        g_assert_cmpint(adopted.pid, ==, getpid());
        ptags_target_clear(&adopted);
        ptags_target_clear(&t);
        g_assert_cmpint(t.pidfd, ==, -1);
}

static pid_t spawn_and_reap(int *pidfd)
{
        pid_t child = fork();

        g_assert_cmpint(child, >=, 0);
        if (child == 0)
                _exit(0);
        *pidfd = (int)syscall(SYS_pidfd_open, child, 0);
        g_assert_cmpint(*pidfd, >=, 0);
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        return child;
}

static void test_exited_process(void)
{
        int pidfd = -1;
        pid_t child = spawn_and_reap(&pidfd);
        PtagsTarget t;
        g_autoptr(GError) error = NULL;

        /* The reaped pid no longer exists. */
        g_assert_false(ptags_target_pin_pid(&t, child, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
        g_clear_error(&error);

        /* A pidfd of an exited process is NoSuchProcess, and is closed. */
        g_assert_false(ptags_target_adopt_pidfd(&t, pidfd, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
        g_assert_cmpint(fcntl(pidfd, F_GETFD), ==, -1);
        g_clear_error(&error);

        g_assert_false(ptags_target_pin_pid(&t, 0, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
}

static void test_not_a_pidfd(void)
{
        PtagsTarget t;
        g_autoptr(GError) error = NULL;
        int fd = dup(STDERR_FILENO);

        g_assert_false(ptags_target_adopt_pidfd(&t, fd, &error));
        g_assert_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
        g_assert_nonnull(strstr(error->message, "pidfd"));
}

static void test_capability_mask(void)
{
        const char *status = "Name:\tx\nCapInh:\t0000000000000000\n"
                             "CapEff:\t0000000200000001\nCapBnd:\t000001ffffffffff\n";

        g_assert_true(ptags_status_has_capability(status, 0));
        g_assert_true(ptags_status_has_capability(status, 33)); /* CAP_MAC_ADMIN */
        g_assert_false(ptags_status_has_capability(status, 32));
        g_assert_false(ptags_status_has_capability(status, 1));
        g_assert_false(ptags_status_has_capability("Name:\tx\n", 0));
        g_assert_false(ptags_status_has_capability(status, 64));
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/target/fdinfo-parse", test_fdinfo_parse);
        g_test_add_func("/target/cgroup-unit", test_cgroup_unit);
        g_test_add_func("/target/capability-mask", test_capability_mask);
        g_test_add_func("/target/pin-self", test_pin_self);
        g_test_add_func("/target/exited-process", test_exited_process);
        g_test_add_func("/target/not-a-pidfd", test_not_a_pidfd);
        return g_test_run();
}
