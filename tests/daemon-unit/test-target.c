// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-target.c: pinning processes by pid and by pidfd, and the facts read
 * about them (fdinfo Pid:, comm, uid). */
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <linux/capability.h>
#include <signal.h>
#include <string.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statfs.h>
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
        g_assert_cmpuint(info.uids[0], ==, getuid());
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

typedef struct {
        GMutex lock;
        GCond cond;
        pid_t tid;
        gboolean done;
} ThreadInfo;

static gpointer report_tid_and_wait(gpointer data)
{
        ThreadInfo *info = data;

        g_mutex_lock(&info->lock);
        info->tid = (pid_t)syscall(SYS_gettid);
        g_cond_broadcast(&info->cond);
        while (!info->done)
                g_cond_wait(&info->cond, &info->lock);
        g_mutex_unlock(&info->lock);
        return NULL;
}

static void test_thread_id(void)
{
        ThreadInfo info = {0};
        GThread *thread = g_thread_new("tid", report_tid_and_wait, &info);
        PtagsTarget t;
        g_autoptr(GError) error = NULL;

        g_mutex_lock(&info.lock);
        while (info.tid == 0)
                g_cond_wait(&info.cond, &info.lock);
        g_mutex_unlock(&info.lock);

        /* Tags belong to processes; a thread id is refused with a hint. */
        g_assert_false(ptags_target_pin_pid(&t, info.tid, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
        g_autofree char *hint = g_strdup_printf("a thread of process %d", (int)getpid());
        g_assert_nonnull(strstr(error->message, hint));
        g_clear_error(&error);

        /* So is a pidfd of one thread (PIDFD_THREAD, which is O_EXCL, since
         * Linux 6.9; older kernels cannot make one). */
        int thread_fd = (int)syscall(SYS_pidfd_open, info.tid, O_EXCL);
        if (thread_fd < 0) {
                g_assert_cmpint(errno, ==, EINVAL);
        } else {
                g_assert_false(ptags_target_adopt_pidfd(&t, thread_fd, &error));
                g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
                g_assert_nonnull(strstr(error->message, hint));
                g_clear_error(&error);
        }

        g_mutex_lock(&info.lock);
        info.done = TRUE;
        g_cond_broadcast(&info.cond);
        g_mutex_unlock(&info.lock);
        g_thread_join(thread);
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

static void test_status_comm(void)
{
        g_autofree char *plain = ptags_status_comm("Name:\tsleep\nUmask:\t0022\n");
        g_autofree char *escaped = ptags_status_comm("Name:\ta\\\\n\\nb\\\\\nState:\tS\n");
        g_autofree char *later = ptags_status_comm("Umask:\t0022\nName:\tx\n");

        g_assert_cmpstr(plain, ==, "sleep");
        /* A backslash, the letter n, a newline, b and a backslash. */
        g_assert_cmpstr(escaped, ==, "a\\n\nb\\");
        g_assert_cmpstr(later, ==, "x");
        g_assert_null(ptags_status_comm("Umask:\t0022\n"));
        g_assert_null(ptags_status_comm("Name:\tcut off"));
}

/* A child that runs @prepare(@data), then waits to be killed (and dies
 * with the test, should it fail). */
static pid_t spawn_paused(void (*prepare)(gconstpointer data), gconstpointer data)
{
        int go[2];
        g_assert_cmpint(pipe(go), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                close(go[0]);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                prepare(data);
                if (write(go[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(go[1]);
        char c;
        g_assert_cmpint(read(go[0], &c, 1), ==, 1);
        close(go[0]);
        return child;
}

static void set_name(gconstpointer name)
{
        prctl(PR_SET_NAME, name);
}

/* A name with the characters the kernel escapes in /proc/PID/status reads
 * as /proc/PID/comm shows it. */
static void test_comm_as_the_comm_file(void)
{
        static const char *const names[] = {"a\\n\nb\\c", "tab\there", "x\n", "end "};
        for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
                pid_t child = spawn_paused(set_name, names[i]);

                PtagsTarget t;
                PtagsProcessInfo info;
                g_autoptr(GError) error = NULL;
                g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int)child);
                g_autofree char *file = NULL;
                g_assert_true(g_file_get_contents(path, &file, NULL, NULL));
                g_assert_true(ptags_target_pin_pid(&t, child, &error));
                g_assert_true(ptags_process_info_read(&t, &info, &error));
                g_assert_no_error(error);
                g_assert_cmpstr(info.comm, ==, g_strchomp(file));
                ptags_process_info_clear(&info);
                ptags_target_clear(&t);
                kill(child, SIGKILL);
                g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        }
}

static void set_effective_cap(unsigned cap, gboolean on)
{
        struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct data[2];

        g_assert_cmpint(syscall(SYS_capget, &header, data), ==, 0);
        if (on)
                data[cap / 32].effective |= 1u << (cap % 32);
        else
                data[cap / 32].effective &= ~(1u << (cap % 32));
        g_assert_cmpint(syscall(SYS_capset, &header, data), ==, 0);
}

static void drop_two_caps(gconstpointer unused)
{
        set_effective_cap(CAP_MAC_ADMIN, FALSE);
        set_effective_cap(CAP_CHOWN, FALSE);
}

/* The effective set in /proc/PID/status, the kernel's own text. */
static guint64 status_cap_eff(pid_t pid)
{
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
        g_autofree char *status = NULL;

        g_assert_true(g_file_get_contents(path, &status, NULL, NULL));
        const char *line = strstr(status, "\nCapEff:");
        g_assert_nonnull(line);
        return g_ascii_strtoull(line + strlen("\nCapEff:"), NULL, 16);
}

/* Every capability number, for this process and for a child that dropped
 * two from its effective set, as the status shows; none once exited. */
static void test_target_capability(void)
{
        pid_t child = spawn_paused(drop_two_caps, NULL);

        const pid_t pids[] = {getpid(), child};
        for (gsize i = 0; i < G_N_ELEMENTS(pids); i++) {
                PtagsTarget t;
                g_autoptr(GError) error = NULL;
                g_assert_true(ptags_target_pin_pid(&t, pids[i], &error));
                guint64 eff = status_cap_eff(pids[i]);
                for (guint cap = 0; cap < 64; cap++)
                        g_assert_cmpint(ptags_target_has_capability(&t, cap), ==, (eff >> cap) & 1);
                g_assert_false(ptags_target_has_capability(&t, 64));
                g_assert_false(ptags_target_has_capability(&t, G_MAXUINT));
                ptags_target_clear(&t);
        }
        /* Root has it; the child dropped it. */
        PtagsTarget self, kid;
        g_assert_true(ptags_target_pin_pid(&self, getpid(), NULL));
        g_assert_true(ptags_target_pin_pid(&kid, child, NULL));
        g_assert_cmpint(ptags_target_has_capability(&self, CAP_MAC_ADMIN), ==, geteuid() == 0);
        g_assert_false(ptags_target_has_capability(&kid, CAP_MAC_ADMIN));
        g_assert_false(ptags_target_has_capability(&kid, CAP_CHOWN));
        kill(child, SIGKILL);
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        g_assert_false(ptags_target_has_capability(&kid, CAP_SETUID));
        ptags_target_clear(&kid);
        ptags_target_clear(&self);
}

/* Replace @path's text without replacing the file (a bind mount holds it). */
static void write_in_place(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (gssize)strlen(text));
        close(fd);
}

static void assert_user_name(uid_t uid, gint64 now, const char *expected)
{
        g_autofree char *name = ptags_user_name(uid, now);
        g_assert_cmpstr(name, ==, expected);
}

/* In a child with a mount namespace of its own, /etc/passwd is a file the
 * test rewrites: a name is kept for a second, an unknown uid too, and only
 * a few uids are. */
static void user_names_in_own_passwd(const char *passwd)
{
        const gint64 t = g_get_monotonic_time(), second = G_USEC_PER_SEC;

        g_assert_cmpint(unshare(CLONE_NEWNS), ==, 0);
        g_assert_cmpint(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), ==, 0);
        write_in_place(passwd, "alpha:x:4242:4242::/:/bin/false\n");
        g_assert_cmpint(mount(passwd, "/etc/passwd", NULL, MS_BIND, NULL), ==, 0);

        assert_user_name(4242, t, "alpha");
        assert_user_name(4243, t, NULL);
        write_in_place(passwd, "beta:x:4242:4242::/:/bin/false\n"
                               "gamma:x:4243:4243::/:/bin/false\n");
        /* Within the second: what was asked first, the absence too. */
        assert_user_name(4242, t + second / 2, "alpha");
        assert_user_name(4243, t + second - 1, NULL);
        /* From the second on: asked again. */
        assert_user_name(4242, t + second, "beta");
        assert_user_name(4243, t + second, "gamma");

        /* Eight other uids, then 4242 is asked again though its answer
         * would still be good. */
        write_in_place(passwd, "delta:x:4242:4242::/:/bin/false\n");
        for (uid_t uid = 5000; uid < 5008; uid++)
                assert_user_name(uid, t + second + 1, NULL);
        assert_user_name(4242, t + second + 2, "delta");
}

static void test_user_name_kept(void)
{
        if (geteuid() != 0) {
                g_test_skip("a mount namespace of its own needs root");
                return;
        }
        g_autofree char *passwd = NULL;
        int fd = g_file_open_tmp("ptags-passwd-XXXXXX", &passwd, NULL);
        g_assert_cmpint(fd, >=, 0);
        close(fd);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                user_names_in_own_passwd(passwd);
                _exit(0);
        }
        int status;
        g_assert_cmpint(waitpid(child, &status, 0), ==, child);
        unlink(passwd);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

static void test_alive_without_cap_kill(void)
{
        /* ptagsd runs without CAP_KILL: probing another user's process with
         * signal 0 fails with EPERM, which must still count as alive. */
        g_assert_cmpuint(getuid(), ==, 0); /* the test needs root, as CI has */
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                /* Never outlive a failing test, nor hold its output open. */
                alarm(30);
                close(STDOUT_FILENO);
                close(STDERR_FILENO);
                if (setresuid(65534, 65534, 65534) != 0)
                        _exit(1);
                pause();
                _exit(0);
        }
        PtagsTarget t;
        g_autoptr(GError) error = NULL;
        g_assert_true(ptags_target_pin_pid(&t, child, &error));
        /* wait until the child runs as nobody */
        for (int i = 0; i < 500; i++) {
                g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)child);
                g_autofree char *status = NULL;
                g_assert_true(g_file_get_contents(path, &status, NULL, NULL));
                if (strstr(status, "\nUid:\t65534") != NULL)
                        break;
                g_usleep(2000);
        }
        set_effective_cap(CAP_KILL, FALSE);
        g_assert_cmpint(kill(child, 0), ==, -1); /* the premise: EPERM */
        gboolean alive = ptags_target_alive(&t);
        set_effective_cap(CAP_KILL, TRUE);
        g_assert_true(alive);

        g_assert_cmpint(kill(child, SIGKILL), ==, 0);
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        g_assert_false(ptags_target_alive(&t));
        ptags_target_clear(&t);
}

/* A bus that answers GetConnectionCredentials with a ProcessFD for @pid and
 * the uid 65534, on one end of a socket pair. */
static const char fake_bus_xml[] =
        "<node><interface name='org.freedesktop.DBus'>"
        "<method name='GetConnectionCredentials'><arg type='s' direction='in'/>"
        "<arg type='a{sv}' direction='out'/></method></interface></node>";

static void fake_bus_call(GDBusConnection *connection, const char *sender, const char *path,
                          const char *interface, const char *method, GVariant *params,
                          GDBusMethodInvocation *inv, gpointer data)
{
        pid_t pid = GPOINTER_TO_INT(data);
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        g_assert_cmpint(pidfd, >=, 0);
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        int index = g_unix_fd_list_append(fds, pidfd, NULL);
        close(pidfd);
        GVariantBuilder creds;
        g_variant_builder_init(&creds, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&creds, "{sv}", "UnixUserID", g_variant_new_uint32(65534));
        const guint32 groups[] = {65534};
        g_variant_builder_add(&creds, "{sv}", "UnixGroupIDs",
                              g_variant_new_fixed_array(G_VARIANT_TYPE_UINT32, groups, 1, 4));
        g_variant_builder_add(&creds, "{sv}", "ProcessID", g_variant_new_uint32((guint32)pid));
        g_variant_builder_add(&creds, "{sv}", "ProcessFD", g_variant_new_handle(index));
        g_dbus_method_invocation_return_value_with_unix_fd_list(
                inv, g_variant_new("(a{sv})", &creds), fds);
}

static void got_connection(GObject *source, GAsyncResult *res, gpointer data)
{
        *(GDBusConnection **)data = g_dbus_connection_new_finish(res, NULL);
}

static void got_peer(GObject *source, GAsyncResult *res, gpointer data)
{
        *(PtagsPeer **)data = ptags_peer_lookup_finish(res, NULL);
}

/* What ptagsd learns of the connection whose ProcessFD is @pid's. */
static PtagsPeer *peer_with_process_fd(pid_t pid)
{
        int sv[2];
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_autoptr(GSocket) server_socket = g_socket_new_from_fd(sv[0], NULL);
        g_autoptr(GSocket) client_socket = g_socket_new_from_fd(sv[1], NULL);
        g_autoptr(GSocketConnection) server_stream =
                g_socket_connection_factory_create_connection(server_socket);
        g_autoptr(GSocketConnection) client_stream =
                g_socket_connection_factory_create_connection(client_socket);
        g_autofree char *guid = g_dbus_generate_guid();
        GDBusConnection *server = NULL;
        g_dbus_connection_new(G_IO_STREAM(server_stream), guid,
                              G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_SERVER, NULL, NULL,
                              got_connection, &server);
        g_autoptr(GDBusConnection) client = g_dbus_connection_new_sync(
                G_IO_STREAM(client_stream), NULL, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                NULL, NULL, NULL);
        g_assert_nonnull(client);
        while (server == NULL)
                g_main_context_iteration(NULL, TRUE);
        g_autoptr(GDBusNodeInfo) node = g_dbus_node_info_new_for_xml(fake_bus_xml, NULL);
        static const GDBusInterfaceVTable vtable = {fake_bus_call, NULL, NULL, {0}};
        guint id = g_dbus_connection_register_object(server, "/org/freedesktop/DBus",
                                                     node->interfaces[0], &vtable,
                                                     GINT_TO_POINTER(pid), NULL, NULL);
        g_assert_cmpuint(id, >, 0);
        PtagsPeer *peer = NULL;
        ptags_peer_lookup_async(client, ":1.7", NULL, got_peer, &peer);
        while (peer == NULL)
                g_main_context_iteration(NULL, TRUE);
        g_dbus_connection_unregister_object(server, id);
        g_dbus_connection_close_sync(client, NULL, NULL);
        g_object_unref(server);
        return peer;
}

static gboolean runs_with_euid(pid_t pid, uid_t euid)
{
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
        g_autofree char *status = NULL;
        g_autofree char *want = g_strdup_printf("\nUid:\t65534\t%u\t", (unsigned)euid);
        for (int i = 0; i < 1000; i++) {
                if (g_file_get_contents(path, &status, NULL, NULL) && strstr(status, want) != NULL)
                        return TRUE;
                g_clear_pointer(&status, g_free);
                g_usleep(5000);
        }
        return FALSE;
}

/* A child of nobody (in group @gid) that executes @program 600 once @go_fd
 * is readable (at once when it is -1). */
static pid_t spawn_as_nobody_in(gid_t gid, const char *program, int go_fd)
{
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                char byte;
                alarm(30); /* never outlive a failing test */
                if (setresgid(gid, gid, gid) != 0 || setresuid(65534, 65534, 65534) != 0)
                        _exit(1);
                if (go_fd >= 0 && read(go_fd, &byte, 1) != 1)
                        _exit(1);
                execl(program, program, "600", (char *)NULL);
                _exit(1);
        }
        return child;
}

static pid_t spawn_as_nobody(const char *program, int go_fd)
{
        return spawn_as_nobody_in(65534, program, go_fd);
}

static void kill_and_reap(pid_t child)
{
        kill(child, SIGKILL);
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
}

/* The bus's ProcessFD proves which process opened a connection, not what it
 * runs as since: one that executed a setuid program (a child keeping the
 * connection) lends the caller nothing, whether it did so before ptagsd
 * first looked at it or after. */
static void test_peer_process_fd_that_becomes_root(void)
{
        g_assert_cmpuint(getuid(), ==, 0); /* the test needs root, as CI has */
        g_autofree char *dir = g_dir_make_tmp("ptags-suid-XXXXXX", NULL);
        g_autofree char *suid_sleep = g_build_filename(dir, "sleep", NULL);
        g_autofree char *contents = NULL;
        gsize length = 0;
        g_assert_true(g_file_get_contents("/bin/sleep", &contents, &length, NULL));
        g_assert_true(g_file_set_contents(suid_sleep, contents, (gssize)length, NULL));
        g_assert_cmpint(chmod(dir, 0755), ==, 0);
        g_assert_cmpint(chmod(suid_sleep, 04755), ==, 0);

        /* A process of the connection's uid: known, and still so. */
        pid_t plain = spawn_as_nobody("/bin/sleep", -1);
        g_assert_true(runs_with_euid(plain, 65534));
        g_autoptr(PtagsPeer) ordinary = peer_with_process_fd(plain);
        g_assert_true(ordinary->process_known);
        g_assert_true(ptags_peer_process_unchanged(ordinary));
        kill_and_reap(plain);
        g_assert_false(ptags_peer_process_unchanged(ordinary));

        /* Running a setuid-root program when first looked at: unknown. */
        pid_t root = spawn_as_nobody(suid_sleep, -1);
        g_assert_true(runs_with_euid(root, 0));
        g_autoptr(PtagsPeer) elevated = peer_with_process_fd(root);
        g_assert_false(elevated->process_known);
        kill_and_reap(root);

        /* Known, then a setuid-root program: no longer the caller's. */
        int go[2];
        g_assert_cmpint(pipe(go), ==, 0);
        pid_t later = spawn_as_nobody(suid_sleep, go[0]);
        g_assert_true(runs_with_euid(later, 65534));
        g_autoptr(PtagsPeer) before = peer_with_process_fd(later);
        g_assert_true(before->process_known);
        g_assert_true(ptags_peer_process_unchanged(before));
        g_assert_cmpint(write(go[1], "x", 1), ==, 1);
        g_assert_true(runs_with_euid(later, 0));
        g_assert_false(ptags_peer_process_unchanged(before));
        kill_and_reap(later);
        close(go[0]);
        close(go[1]);

        /* A setgid program, when first looked at: no more the caller's
         * than a setuid one (its egid is not the one it connected with). */
        g_autofree char *sgid_sleep = g_build_filename(dir, "sgid-sleep", NULL);
        g_assert_true(g_file_set_contents(sgid_sleep, contents, (gssize)length, NULL));
        g_assert_cmpint(chown(sgid_sleep, 0, 0), ==, 0);
        g_assert_cmpint(chmod(sgid_sleep, 02755), ==, 0);
        pid_t sgid = spawn_as_nobody(sgid_sleep, -1);
        g_autofree char *sgid_status = g_strdup_printf("/proc/%d/status", (int)sgid);
        for (int i = 0; i < 1000; i++) {
                g_autofree char *text = NULL;
                if (g_file_get_contents(sgid_status, &text, NULL, NULL) &&
                    strstr(text, "\nGid:\t65534\t0\t") != NULL)
                        break;
                g_usleep(5000);
        }
        g_autoptr(PtagsPeer) setgid_peer = peer_with_process_fd(sgid);
        g_assert_false(setgid_peer->process_known);
        kill_and_reap(sgid);

        /* One gid throughout, but not one the connection had (a setgid
         * program that made its real gid its effective one). */
        pid_t regrouped = spawn_as_nobody_in(100, "/bin/sleep", -1);
        g_autofree char *regrouped_status = g_strdup_printf("/proc/%d/status", (int)regrouped);
        for (int i = 0; i < 1000; i++) {
                g_autofree char *text = NULL;
                if (g_file_get_contents(regrouped_status, &text, NULL, NULL) &&
                    strstr(text, "\nGid:\t100\t100\t") != NULL && strstr(text, "\nUid:\t65534"))
                        break;
                g_usleep(5000);
        }
        g_autoptr(PtagsPeer) regrouped_peer = peer_with_process_fd(regrouped);
        g_assert_false(regrouped_peer->process_known);
        kill_and_reap(regrouped);

        g_assert_cmpint(unlink(sgid_sleep), ==, 0);
        g_assert_cmpint(unlink(suid_sleep), ==, 0);
        g_assert_cmpint(rmdir(dir), ==, 0);
}

/* A child of nobody, dumpable (so /proc/PID stays readable to its owner),
 * that either kept CAP_MAC_ADMIN from root or entered a user namespace of
 * its own, where it holds every capability; then it waits. -1 when the
 * kernel refuses nobody a user namespace. */
static pid_t spawn_nobody_with_mac_admin(gboolean own_userns)
{
        int ready[2];
        g_assert_cmpint(pipe(ready), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                alarm(30); /* never outlive a failing test */
                close(ready[0]);
                if (prctl(PR_SET_KEEPCAPS, !own_userns, 0, 0, 0) != 0 ||
                    setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0 ||
                    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
                        _exit(1);
                if (own_userns && unshare(CLONE_NEWUSER) != 0)
                        _exit(2);
                if (!own_userns)
                        set_effective_cap(CAP_MAC_ADMIN, TRUE); /* kept in the permitted set */
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char byte;
        ssize_t n = read(ready[0], &byte, 1);
        close(ready[0]);
        if (n == 1)
                return child;
        int wstatus = 0;
        g_assert_cmpint(waitpid(child, &wstatus, 0), ==, child);
        g_assert_true(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 2);
        return -1; /* user namespaces are closed to nobody here */
}

/* The kernel looks for CAP_MAC_ADMIN in the initial user namespace. Nobody
 * that kept it from root holds it there; nobody in a user namespace of its
 * own holds it only there, which counts for nothing, neither when proven
 * nor when asked. */
static void test_capability_in_own_user_namespace(void)
{
        g_assert_cmpuint(getuid(), ==, 0); /* the test needs root, as CI has */
        PtagsTarget self;
        g_assert_true(ptags_target_pin_pid(&self, getpid(), NULL));
        g_assert_true(ptags_target_has_capability(&self, CAP_MAC_ADMIN));
        ptags_target_clear(&self);

        pid_t kept = spawn_nobody_with_mac_admin(FALSE);
        g_autoptr(PtagsPeer) holder = peer_with_process_fd(kept);
        g_assert_true(holder->process_known);
        g_assert_true(holder->proven.caps >> CAP_MAC_ADMIN & 1);
        g_assert_true(ptags_target_has_capability(&holder->target, CAP_MAC_ADMIN));
        kill_and_reap(kept);

        pid_t inside = spawn_nobody_with_mac_admin(TRUE);
        if (inside < 0) {
                /* Not a skip: this case is the one test of the rule, and a
                 * skip would pass unseen (it runs as root, where CI has
                 * user namespaces). */
                g_test_message("unprivileged user namespaces are disabled: the rule for "
                               "capabilities held in a user namespace of one's own is untested");
                g_test_fail();
                return;
        }
        g_assert_true(status_cap_eff(inside) >> CAP_MAC_ADMIN & 1); /* the premise */
        g_autoptr(PtagsPeer) peer = peer_with_process_fd(inside);
        g_test_message("proven: known %d, caps %#" G_GINT64_MODIFIER "x; has CAP_MAC_ADMIN now: %d",
                       peer->process_known, peer->proven.caps,
                       ptags_target_has_capability(&peer->target, CAP_MAC_ADMIN));
        g_assert_true(peer->process_known);
        g_assert_false(peer->proven.caps >> CAP_MAC_ADMIN & 1);
        g_assert_false(ptags_target_has_capability(&peer->target, CAP_MAC_ADMIN));
        g_assert_true(ptags_peer_process_unchanged(peer));
        kill_and_reap(inside);
}

/* A process that exited but was not reaped is gone to every method. */
static void test_zombie_is_not_alive(void)
{
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0)
                _exit(0);
        PtagsTarget t;
        g_autoptr(GError) error = NULL;
        g_assert_true(ptags_target_pin_pid(&t, child, &error));
        /* Until it exits it may be running; once it is a zombie it is not. */
        for (int i = 0; i < 500 && ptags_target_alive(&t); i++)
                g_usleep(2000);
        g_assert_false(ptags_target_alive(&t));
        g_assert_true(kill(child, 0) == 0); /* the premise: not reaped yet */
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        ptags_target_clear(&t);
}

#define STATUS(uid, gid, prm, eff, amb)                                                            \
        "Name:\tx\nUid:\t" uid "\nGid:\t" gid "\nCapInh:\t0000000000000000\nCapPrm:\t" prm         \
        "\nCapEff:\t" eff "\nCapBnd:\t000001ffffffffff\nCapAmb:\t" amb "\n"
#define NO_CAPS "0000000000000000"

static void test_plain_process(void)
{
        static const guint32 groups[] = {100, 1000};

        /* An ordinary process of uid 1000, group 1000. */
        g_assert_true(ptags_status_is_plain_process_of(STATUS("1000\t1000\t1000\t1000",
                                                              "1000\t1000\t1000\t1000", NO_CAPS,
                                                              NO_CAPS, NO_CAPS),
                                                       1000, groups, G_N_ELEMENTS(groups)));
        g_assert_true(ptags_status_is_plain_process_of(STATUS("1000\t1000\t1000\t1000",
                                                              "1000\t1000\t1000\t1000", NO_CAPS,
                                                              NO_CAPS, NO_CAPS),
                                                       1000, NULL, 0));
        /* Another uid, or a setuid program run by 1000 (su, passwd). */
        g_assert_false(ptags_status_is_plain_process_of(
                STATUS("0\t0\t0\t0", "0\t0\t0\t0", "000001ffffffffff", "000001ffffffffff", NO_CAPS),
                1000, NULL, 0));
        g_assert_false(ptags_status_is_plain_process_of(
                STATUS("1000\t0\t0\t0", "1000\t1000\t1000\t1000", "000001ffffffffff",
                       "000001ffffffffff", NO_CAPS),
                1000, NULL, 0));
        g_assert_false(ptags_status_is_plain_process_of(
                STATUS("1000\t1000\t0\t1000", "1000\t1000\t1000\t1000", NO_CAPS, NO_CAPS, NO_CAPS),
                1000, NULL, 0));
        /* A setgid program, or a group the bus did not see. */
        g_assert_false(ptags_status_is_plain_process_of(
                STATUS("1000\t1000\t1000\t1000", "1000\t42\t42\t42", NO_CAPS, NO_CAPS, NO_CAPS),
                1000, NULL, 0));
        g_assert_false(ptags_status_is_plain_process_of(
                STATUS("1000\t1000\t1000\t1000", "42\t42\t42\t42", NO_CAPS, NO_CAPS, NO_CAPS), 1000,
                groups, G_N_ELEMENTS(groups)));
        /* File capabilities or kept capabilities, in any of the three sets. */
        g_assert_false(ptags_status_is_plain_process_of(
                STATUS("1000\t1000\t1000\t1000", "1000\t1000\t1000\t1000", "0000000000000001",
                       NO_CAPS, NO_CAPS),
                1000, NULL, 0));
        g_assert_false(ptags_status_is_plain_process_of(STATUS("1000\t1000\t1000\t1000",
                                                               "1000\t1000\t1000\t1000", NO_CAPS,
                                                               "0000000200000000", NO_CAPS),
                                                        1000, NULL, 0));
        g_assert_false(ptags_status_is_plain_process_of(STATUS("1000\t1000\t1000\t1000",
                                                               "1000\t1000\t1000\t1000", NO_CAPS,
                                                               NO_CAPS, "0000000000000400"),
                                                        1000, NULL, 0));
        /* Root is root: any root process may stand for a root connection. */
        g_assert_true(ptags_status_is_plain_process_of(
                STATUS("0\t0\t0\t0", "0\t0\t0\t0", "000001ffffffffff", "000001ffffffffff", NO_CAPS),
                0, NULL, 0));
        /* Unreadable text proves nothing. */
        g_assert_false(ptags_status_is_plain_process_of("Name:\tx\n", 1000, NULL, 0));
}

/* Moves @pid into a new cgroup of the first hierarchy root may write here;
 * returns that cgroup's directory (to remove once empty) or NULL. */
/* Move @pid to a new cgroup: a unit of its own (ptags-test-PID.scope at the
 * top) when @under is NULL, else a cgroup below @under (the same unit). */
static char *move_to_new_cgroup(pid_t pid, const char *under)
{
        if (under != NULL) {
                g_autofree char *dir = g_build_filename(under, "inner", NULL);
                g_autofree char *procs = g_build_filename(dir, "cgroup.procs", NULL);
                g_autofree char *text = g_strdup_printf("%d", (int)pid);
                if (mkdir(dir, 0755) != 0)
                        return NULL;
                int fd = open(procs, O_WRONLY | O_CLOEXEC);
                gboolean moved = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
                if (fd >= 0)
                        close(fd);
                if (!moved) {
                        rmdir(dir);
                        return NULL;
                }
                return g_steal_pointer(&dir);
        }
        static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd",
                                            "/sys/fs/cgroup"};
        for (guint i = 0; i < G_N_ELEMENTS(roots); i++) {
                struct statfs fs;
                if (statfs(roots[i], &fs) != 0 ||
                    (fs.f_type != CGROUP_SUPER_MAGIC && fs.f_type != CGROUP2_SUPER_MAGIC))
                        continue;
                g_autofree char *dir =
                        g_strdup_printf("%s/ptags-test-%d.scope", roots[i], (int)getpid());
                if (mkdir(dir, 0755) != 0)
                        continue;
                g_autofree char *procs = g_build_filename(dir, "cgroup.procs", NULL);
                g_autofree char *text = g_strdup_printf("%d", (int)pid);
                int fd = open(procs, O_WRONLY | O_CLOEXEC);
                gboolean moved = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
                if (fd >= 0)
                        close(fd);
                if (moved)
                        return g_steal_pointer(&dir);
                rmdir(dir);
        }
        return NULL;
}

/* A child that runs @then once a byte arrives on *@go (the write end, the
 * caller's to write and close), and exits if it returns. */
static pid_t fork_held(int *go, void (*then)(void))
{
        int fds[2];
        g_assert_cmpint(pipe(fds), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                char c;
                close(fds[1]);
                if (read(fds[0], &c, 1) == 1)
                        then();
                _exit(1);
        }
        close(fds[0]);
        *go = fds[1];
        return child;
}

/* Gone with the test, even one that fails (a new euid clears the
 * parent-death signal, so it is set after). */
static void become_nobody(void)
{
        if (setresuid(0, 65534, 0) == 0 && prctl(PR_SET_PDEATHSIG, SIGKILL) == 0) {
                alarm(60);
                pause();
        }
}

static void exec_sleep(void)
{
        execl("/bin/sleep", "sleep", "60", (char *)NULL);
}

/* A process that changes its effective uid without an exec is another
 * process as far as polkit's answer goes: the re-check must notice it. */
static void test_same_process_info_after_setuid(void)
{
        int go;
        g_assert_cmpuint(getuid(), ==, 0); /* the test needs root, as CI has */
        pid_t child = fork_held(&go, become_nobody);

        PtagsTarget t;
        g_autoptr(GError) error = NULL;
        PtagsProcessInfo seen;
        g_assert_true(ptags_target_pin_pid(&t, child, &error));
        g_assert_true(ptags_process_info_read(&t, &seen, &error));
        g_assert_true(ptags_process_info_same(&t, &seen, &error));

        g_assert_cmpint(write(go, "x", 1), ==, 1);
        close(go);
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)child);
        gboolean changed = FALSE;
        for (int i = 0; i < 500 && !changed; i++) {
                g_autofree char *status = NULL;
                g_assert_true(g_file_get_contents(path, &status, NULL, NULL));
                changed = strstr(status, "\nUid:\t0\t65534\t0\t65534\n") != NULL;
                if (!changed)
                        g_usleep(10000);
        }
        g_assert_true(changed);
        g_assert_false(ptags_process_info_same(&t, &seen, &error));
        g_assert_no_error(error);

        ptags_process_info_clear(&seen);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        ptags_target_clear(&t);
}

/* The re-check after polkit answered: the same program stays the same, and
 * so does one that moves within its unit; an exec or a move to another unit
 * does not. (A rename, which only the process itself can make, is
 * test_concurrency's.) */
static void test_same_process_info(void)
{
        int go;
        pid_t child = fork_held(&go, exec_sleep);

        PtagsTarget t;
        g_autoptr(GError) error = NULL;
        PtagsProcessInfo seen;
        g_assert_true(ptags_target_pin_pid(&t, child, &error));
        g_assert_true(ptags_process_info_read(&t, &seen, &error));
        g_assert_nonnull(seen.cgroup);
        g_assert_true(ptags_process_info_same(&t, &seen, &error));
        g_assert_no_error(error);

        g_autofree char *cgroup = NULL, *inner = NULL;
        if (geteuid() == 0) {
                cgroup = move_to_new_cgroup(child, NULL);
                g_assert_nonnull(cgroup); /* root can always make one here */
                g_assert_false(ptags_process_info_same(&t, &seen, &error));
                g_assert_no_error(error);
                ptags_process_info_clear(&seen);
                g_assert_true(ptags_process_info_read(&t, &seen, &error));
                g_assert_true(ptags_process_info_same(&t, &seen, &error));
                inner = move_to_new_cgroup(child, cgroup);
                g_assert_nonnull(inner);
                g_assert_true(ptags_process_info_same(&t, &seen, &error));
                g_assert_no_error(error);
        } else {
                g_test_message("not root: the cgroup move is not tried");
        }

        g_assert_cmpint(write(go, "x", 1), ==, 1);
        close(go);
        g_autofree char *exe_link = g_strdup_printf("/proc/%d/exe", (int)child);
        for (int i = 0; i < 500; i++) {
                g_autofree char *exe = g_file_read_link(exe_link, NULL);
                if (exe != NULL && g_str_has_suffix(exe, "/sleep"))
                        break;
                g_usleep(10000);
        }
        g_assert_false(ptags_process_info_same(&t, &seen, &error));
        g_assert_no_error(error);

        kill(child, SIGKILL);
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        g_assert_false(ptags_process_info_same(&t, &seen, &error));
        g_assert_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS);
        if (inner != NULL)
                g_assert_cmpint(rmdir(inner), ==, 0);
        if (cgroup != NULL)
                g_assert_cmpint(rmdir(cgroup), ==, 0);
        ptags_process_info_clear(&seen);
        ptags_target_clear(&t);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/target/fdinfo-parse", test_fdinfo_parse);
        g_test_add_func("/target/status-comm", test_status_comm);
        g_test_add_func("/target/comm-as-the-comm-file", test_comm_as_the_comm_file);
        g_test_add_func("/target/pin-self", test_pin_self);
        g_test_add_func("/target/exited-process", test_exited_process);
        g_test_add_func("/target/capability", test_target_capability);
        g_test_add_func("/target/user-name-kept", test_user_name_kept);
        g_test_add_func("/target/alive-without-cap-kill", test_alive_without_cap_kill);
        g_test_add_func("/target/peer-process-fd-that-becomes-root",
                        test_peer_process_fd_that_becomes_root);
        g_test_add_func("/target/capability-in-own-user-namespace",
                        test_capability_in_own_user_namespace);
        g_test_add_func("/target/not-a-pidfd", test_not_a_pidfd);
        g_test_add_func("/target/thread-id", test_thread_id);
        g_test_add_func("/target/zombie-is-not-alive", test_zombie_is_not_alive);
        g_test_add_func("/target/plain-process", test_plain_process);
        g_test_add_func("/target/same-process-info", test_same_process_info);
        g_test_add_func("/target/same-process-info-after-setuid",
                        test_same_process_info_after_setuid);
        return g_test_run();
}
