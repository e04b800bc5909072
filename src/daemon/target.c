// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* target.c: pidfd pinning of target and caller processes, and the process
 * facts (uid, exe, comm, unit) polkit details and logs are built from. */
#define G_LOG_DOMAIN "ptagsd-target"

#include "target.h"

#include "bus-joins.h"
#include "cgroup-units.h"
#include "errors.h"
#include "lineage.h"
#include "subuids.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* " (a thread of process N)" when /proc knows the thread's process, else "".
 * (transfer full) */
static char *thread_hint(pid_t tid)
{
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)tid);
        g_autofree char *status = NULL;
        const char *tgid;

        if (g_file_get_contents(path, &status, NULL, NULL) &&
            (tgid = strstr(status, "\nTgid:")) != NULL)
                return g_strdup_printf(" (a thread of process %ld)",
                                       strtol(tgid + strlen("\nTgid:"), NULL, 10));
        return g_strdup("");
}

gboolean ptags_target_pin_pid(PtagsTarget *t, pid_t pid, GError **error)
{
        t->pid = 0;
        t->pidfd = -1;
        if (pid <= 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                            "argument pid: %d is not a process id", (int)pid);
                return FALSE;
        }
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0) {
                int saved = errno;
                if (saved == ESRCH) {
                        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                    "argument pid: process %d does not exist", (int)pid);
                } else if (saved == EINVAL || saved == ENOENT) { /* a thread, not a process */
                        g_autofree char *hint = thread_hint(pid);
                        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                    "argument pid: %d is a thread id, not a process id%s", (int)pid,
                                    hint);
                } else {
                        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                    "cannot pin process %d: %s", (int)pid, g_strerror(saved));
                }
                return FALSE;
        }
        t->pid = pid;
        t->pidfd = fd;
        return TRUE;
}

int ptags_fdinfo_parse_pid(const char *fdinfo)
{
        for (const char *line = fdinfo; line != NULL && *line != '\0';) {
                if (g_str_has_prefix(line, "Pid:")) {
                        char *end = NULL;
                        long v = strtol(line + 4, &end, 10);
                        if (end == line + 4 || v < -1 || v > G_MAXINT)
                                return -2;
                        return (int)v;
                }
                line = strchr(line, '\n');
                if (line != NULL)
                        line++;
        }
        return -2;
}

/* Whether @fd is a pidfd, from its name alone: its fdinfo is the caller's
 * to grow (an epoll fd lists every entry there, millions if the caller
 * wants), and the kernel builds all of it at the first read. */
static gboolean is_pidfd(int fd)
{
        static const char name[] = "anon_inode:[pidfd]";
        char path[48], link[sizeof(name)];

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, link, sizeof(link));
        return n == (ssize_t)sizeof(name) - 1 && memcmp(link, name, sizeof(name) - 1) == 0;
}

gboolean ptags_target_adopt_pidfd(PtagsTarget *t, int pidfd, GError **error)
{
        g_autofree char *path = g_strdup_printf("/proc/self/fdinfo/%d", pidfd);
        g_autofree char *text = NULL;

        t->pid = 0;
        t->pidfd = -1;
        if (!is_pidfd(pidfd)) {
                close(pidfd);
                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                            "argument pidfd: not a process file descriptor");
                return FALSE;
        }
        if (!g_file_get_contents(path, &text, NULL, NULL)) {
                close(pidfd);
                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                            "argument pidfd: cannot inspect the descriptor");
                return FALSE;
        }
        int pid = ptags_fdinfo_parse_pid(text);
        /* pidfd_open(..., PIDFD_THREAD) (Linux 6.9) names one thread, shown
         * as O_EXCL among the file's flags; tags belong to processes. */
        const char *flags = strstr(text, "flags:");
        if (pid > 0 && flags != NULL && (g_ascii_strtoull(flags + 6, NULL, 8) & O_EXCL) != 0) {
                close(pidfd);
                g_autofree char *hint = thread_hint(pid);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                            "argument pidfd: it names thread %d, not a process%s", pid, hint);
                return FALSE;
        }
        if (pid == -2) {
                close(pidfd);
                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                            "argument pidfd: not a process file descriptor");
                return FALSE;
        }
        if (pid <= 0) {
                close(pidfd);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                            pid == 0 ? "argument pidfd: the process is not visible to ptagsd"
                                     : "argument pidfd: the process has exited");
                return FALSE;
        }
        t->pid = pid;
        t->pidfd = pidfd;
        return TRUE;
}

gboolean ptags_target_copy(PtagsTarget *dst, const PtagsTarget *src, GError **error)
{
        dst->pid = src->pid;
        dst->pidfd = fcntl(src->pidfd, F_DUPFD_CLOEXEC, 3);
        if (dst->pidfd < 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED, "cannot duplicate pidfd: %s",
                            g_strerror(errno));
                return FALSE;
        }
        return TRUE;
}

gboolean ptags_pidfd_running(int pidfd)
{
        /* A pidfd turns readable once its process has exited, zombie or
         * reaped, which is what "gone" means to every method. (Signal 0
         * would still reach a zombie.) */
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        int r;

        if (pidfd < 0)
                return FALSE;
        do
                r = poll(&p, 1, 0);
        while (r < 0 && errno == EINTR);
        return r == 0;
}

gboolean ptags_target_alive(const PtagsTarget *t)
{
        return ptags_pidfd_running(t->pidfd);
}

void ptags_target_clear(PtagsTarget *t)
{
        if (t->pidfd >= 0)
                close(t->pidfd);
        t->pidfd = -1;
        t->pid = 0;
}

/* What is left to read of @fd, a /proc file, or NULL past @max bytes or on
 * an error. These files report no size (g_file_get_contents would go
 * through stdio), and only a read of nothing ends them: a seq_file hands
 * out whole records, so a shorter read is not the end. */
static char *read_fd_text_max(int fd, gsize max)
{
        gsize size = 4096, len = 0;
        char *text = g_malloc(size);
        for (;;) {
                if (len > max) {
                        g_clear_pointer(&text, g_free);
                        break;
                }
                if (size - 1 - len == 0) {
                        size *= 2;
                        text = g_realloc(text, size);
                }
                ssize_t n = read(fd, text + len, size - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        g_clear_pointer(&text, g_free);
                        break;
                }
                if (n == 0)
                        break;
                len += (gsize)n;
        }
        if (text != NULL)
                text[len] = '\0';
        return text;
}

/* The whole text of NAME in @dir (an open /proc/PID, or AT_FDCWD for a
 * whole path), or NULL (also when longer than @max bytes). */
static char *read_proc_text_max(int dir, const char *name, gsize max)
{
        int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return NULL;
        char *text = read_fd_text_max(fd, max);
        close(fd);
        return text;
}

static char *read_proc_text_at(int dir, const char *name)
{
        return read_proc_text_max(dir, name, G_MAXSIZE);
}

/* /proc/PID as a directory handle, so the files below it are opened
 * without looking the pid up again, or -1. */
static int open_proc_dir(pid_t pid)
{
        char path[32];

        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

typedef enum { NS_USER, NS_PID, N_NS_KINDS } NsKind;

/* Whether @ns (a stat of a /proc/PID/ns/ file) is ptagsd's own namespace
 * of that @kind. */
static gboolean is_our_namespace(NsKind kind, const struct stat *ns)
{
        static const char *const own[N_NS_KINDS] = {"/proc/self/ns/user", "/proc/self/ns/pid"};
        static struct stat ours[N_NS_KINDS];
        static gsize read_once;

        if (g_once_init_enter(&read_once)) {
                for (int i = 0; i < N_NS_KINDS; i++)
                        if (stat(own[i], &ours[i]) < 0)
                                ours[i].st_ino = 0;
                g_once_init_leave(&read_once, 1);
        }
        return ours[kind].st_ino != 0 && ns->st_dev == ours[kind].st_dev &&
               ns->st_ino == ours[kind].st_ino;
}

static gboolean is_our_user_namespace(const struct stat *ns)
{
        return is_our_namespace(NS_USER, ns);
}

/* Whether process @pid is in ptagsd's own user namespace. The kernel
 * weighs CAP_MAC_ADMIN in the initial namespace, but any user may create a
 * namespace of its own and hold every capability in it, and capget() and
 * /proc show those sets as if they were real. So a process's capabilities
 * count only in ours; one whose namespace cannot be read holds none. Ask
 * after reading them: nothing returns to an ancestor namespace, so a
 * process in ours now was in ours then. */
static gboolean in_our_user_namespace(pid_t pid)
{
        struct stat ns;
        char path[48];

        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        return stat(path, &ns) == 0 && is_our_user_namespace(&ns);
}

/* Whether the mount namespace of the process whose /proc/PID is @dir
 * belongs to ptagsd's own user namespace: made by root, or by the service
 * manager for a unit. Any user may make a mount namespace of its own,
 * inside a user namespace of its own, and mount any program over any path
 * there, so what /proc/PID/exe reads inside it is that user's word. No
 * process moves from such a namespace into one of root's, so one found in
 * root's after its link was read was in root's when it was read. */
static gboolean mounts_are_roots(int dir, struct stat *mnt_ns)
{
        struct stat ns;
        int mnt = openat(dir, "ns/mnt", O_RDONLY | O_CLOEXEC);
        int owner = mnt >= 0 ? ioctl(mnt, NS_GET_USERNS) : -1;
        gboolean ours = owner >= 0 && fstat(owner, &ns) == 0 && is_our_user_namespace(&ns) &&
                        fstat(mnt, mnt_ns) == 0;

        if (owner >= 0)
                close(owner);
        if (mnt >= 0)
                close(mnt);
        return ours;
}

/* A mountinfo field with its octal escapes (\040 for a space, ...) undone. */
static char *mountinfo_field(const char *field)
{
        GString *out = g_string_sized_new(strlen(field));

        for (const char *p = field; *p != '\0'; p++) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
                    p[3] >= '0' && p[3] <= '7') {
                        g_string_append_c(
                                out, (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0')));
                        p += 3;
                } else {
                        g_string_append_c(out, *p);
                }
        }
        return g_string_free(out, FALSE);
}

/* The place "MAJ:MIN PATH-IN-FILE-SYSTEM" of @path, which mountinfo line
 * @f (split in 6) covers: NULL when that mount's point is not @path or a
 * directory above it. */
static char *place_in(char **f, const char *path)
{
        g_autofree char *root = mountinfo_field(f[3]);
        g_autofree char *point = mountinfo_field(f[4]);
        gsize len = strlen(point);

        if (strcmp(point, "/") == 0)
                return g_strdup_printf("%s %s%s", f[2], strcmp(root, "/") == 0 ? "" : root, path);
        if (strncmp(path, point, len) != 0 || (path[len] != '\0' && path[len] != '/'))
                return NULL;
        return g_strdup_printf("%s %s%s", f[2], strcmp(root, "/") == 0 ? "" : root, path + len);
}

/* Where @path lies in the mount table @mountinfo: on mount @mount_id when
 * given (nonzero), else on the deepest mount point at or above it (the
 * last of equals). "MAJ:MIN PATH-IN-FILE-SYSTEM", or NULL. Read from text
 * alone: nothing here reaches the file system the program lives on. Only
 * the lines that may answer are split: a table may be megabytes. */
static char *file_system_place(const char *mountinfo, const char *path, guint64 mount_id)
{
        g_autofree char *best = NULL;
        gsize best_len = 0;

        for (const char *line = mountinfo; *line != '\0';) {
                const char *end = strchrnul(line, '\n');
                const char *next = *end != '\0' ? end + 1 : end;
                if (mount_id != 0 && g_ascii_strtoull(line, NULL, 10) != mount_id) {
                        line = next;
                        continue;
                }
                g_autofree char *text = g_strndup(line, end - line);
                g_auto(GStrv) f = g_strsplit(text, " ", 6);
                line = next;
                if (g_strv_length(f) < 6)
                        continue;
                if (mount_id != 0)
                        return place_in(f, path);
                g_autofree char *place = place_in(f, path);
                gsize len = strlen(f[4]);
                if (place != NULL && len >= best_len) {
                        g_free(best);
                        best = g_steal_pointer(&place);
                        best_len = len;
                }
        }
        return g_steal_pointer(&best);
}

/* Mount tables past this size are not read for target-exe (a namespace may
 * hold 100000 mounts): the path is then not told. Users can grow the
 * system's own table (FUSE mounts, 1000 each by default, with long mount
 * points), so this is far above any real system's. */
#define MOUNTINFO_MAX_BYTES (32 * 1024 * 1024)

/* ------------------------------------------------- the kept mount tables
 *
 * Reading a mount table makes the kernel print every mount of the
 * namespace, and a change through polkit reads two of them twice (when
 * asking and when looking again). So two tables are kept, and read again
 * only once they change (or are a quarter of a second old): pid 1's, the
 * system's view that every verdict is checked against, and ptagsd's own.
 * Each stays open: a mountinfo file tells through poll() that its
 * namespace's mounts changed since it was last asked (holding it keeps
 * that namespace, which lives as long as its process anyway). A table
 * shows the mounts below the root of its own process: a target in the
 * namespace and under the root of either sees that very table, so its
 * verdict comes from the kept text, and is kept until either table is
 * read again; others have their own table read. */
typedef struct {
        const char *pid;  /* "1" or "self" */
        int fd;           /* its mountinfo; -1: not open */
        char *text;       /* NULL: unreadable */
        gboolean known;   /* the namespace and root below could be read */
        struct stat ns;   /* its mount namespace */
        struct stat root; /* its root directory: mountinfo shows paths below it */
        gint64 retry_us;  /* an unreadable table is tried again from then */
        gint64 read_us;   /* when it was read */
} KeptTable;

/* A rename of a directory above a mount point changes the table's text but
 * is not a change poll() reports: a table is read again at least this
 * often. (pid 1's was once read once a second by the clock alone.) */
#define KEPT_TABLE_MAX_AGE_US (250 * G_TIME_SPAN_MILLISECOND)

enum { TABLE_SYSTEM, TABLE_OWN, N_TABLES };
static KeptTable kept_tables[N_TABLES] = {{"1", -1}, {"self", -1}};
/* "TABLE MOUNT-ID PATH" -> whether the path names the same place on the
 * system (GINT_TO_POINTER: 1 or 2); emptied when a table changes. */
static GHashTable *exe_verdicts;
#define EXE_VERDICTS_MAX 256
static pthread_mutex_t mounts_lock = PTHREAD_MUTEX_INITIALIZER;

static gboolean same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The namespace and root of @t's process, read around opening its table:
 * the same before and after, or unknown (under mounts_lock). */
static gboolean table_identity(KeptTable *t, const struct stat *ns, const struct stat *root)
{
        char path[32];
        struct stat ns2, root2;

        snprintf(path, sizeof(path), "/proc/%s/ns/mnt", t->pid);
        if (stat(path, &ns2) != 0 || !same_file(ns, &ns2))
                return FALSE;
        snprintf(path, sizeof(path), "/proc/%s/root", t->pid);
        if (stat(path, &root2) != 0 || !same_file(root, &root2))
                return FALSE;
        t->ns = *ns;
        t->root = *root;
        return TRUE;
}

static void table_close(KeptTable *t)
{
        if (t->fd >= 0)
                close(t->fd);
        t->fd = -1;
        g_clear_pointer(&t->text, g_free);
        t->known = FALSE;
}

/* Bring @t up to date: TRUE when its text may differ from the last time
 * (under mounts_lock). */
static gboolean table_refresh(KeptTable *t)
{
        gint64 now = g_get_monotonic_time();

        if (t->fd >= 0) {
                struct pollfd p = {.fd = t->fd, .events = POLLPRI};
                if (now - t->read_us < KEPT_TABLE_MAX_AGE_US &&
                    (poll(&p, 1, 0) == 0 || (p.revents & (POLLPRI | POLLERR | POLLNVAL)) == 0))
                        return FALSE;
                /* Opened afresh: its process may have moved to another
                 * namespace or root, which the open file would not follow. */
                table_close(t);
        }
        if (now < t->retry_us)
                return FALSE;
        char path[32];
        struct stat ns, root;
        snprintf(path, sizeof(path), "/proc/%s/ns/mnt", t->pid);
        gboolean identity = stat(path, &ns) == 0;
        snprintf(path, sizeof(path), "/proc/%s/root", t->pid);
        identity = identity && stat(path, &root) == 0;
        snprintf(path, sizeof(path), "/proc/%s/mountinfo", t->pid);
        t->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        t->text = t->fd >= 0 ? read_fd_text_max(t->fd, MOUNTINFO_MAX_BYTES) : NULL;
        if (t->text == NULL) {
                table_close(t);
                t->retry_us = now + G_USEC_PER_SEC;
                return TRUE;
        }
        t->known = identity && table_identity(t, &ns, &root);
        t->read_us = now;
        return TRUE;
}

/* Whether @path, on mount @mount_id in the table @theirs, names the same
 * place on the same file system in the system's table @systems. */
static gboolean places_agree(const char *theirs, const char *systems, const char *path,
                             guint64 mount_id)
{
        g_autofree char *place = file_system_place(theirs, path, mount_id);
        g_autofree char *system = place != NULL ? file_system_place(systems, path, 0) : NULL;
        return system != NULL && strcmp(place, system) == 0;
}

/* Whether @path, the target's exe link as read (a path in its own mount
 * namespace, whose /proc/PID is @dir and whose mount namespace is @ns),
 * names the same place on the same file system in pid 1's view, the
 * system's. A namespace of root's may still hold a user's program mounted
 * over a trusted path (setuid sandbox helpers make such namespaces); the
 * program may even lie on a mount of another namespace, run through a
 * descriptor. So the mount the program lies on is taken by its id (statx,
 * answered without asking the file system), must be in the target's table
 * and cover the path; and the system's table must put the path at the same
 * place. A service's own namespace, with parts of the system mounted again
 * read-only, names the same places. Where pid 1's table cannot be read,
 * ptagsd's own is used (the unit's: /tmp is its own there). */
static gboolean exe_is_the_systems(int dir, const struct stat *ns, const char *path)
{
        static const char deleted[] = " (deleted)";
        gsize len = strlen(path);
        struct statx stx;
        struct stat root;

        if (path[0] != '/' || (len >= sizeof(deleted) - 1 &&
                               strcmp(path + len - (sizeof(deleted) - 1), deleted) == 0))
                return FALSE;
        if (statx(dir, "exe", AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) != 0 ||
            !(stx.stx_mask & STATX_MNT_ID))
                return FALSE;
        gboolean root_known = fstatat(dir, "root", &root, 0) == 0;

        pthread_mutex_lock(&mounts_lock);
        gboolean changed = FALSE;
        for (guint i = 0; i < N_TABLES; i++)
                changed |= table_refresh(&kept_tables[i]);
        if (exe_verdicts == NULL)
                exe_verdicts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        if (changed || g_hash_table_size(exe_verdicts) >= EXE_VERDICTS_MAX)
                g_hash_table_remove_all(exe_verdicts);
        const KeptTable *sys = kept_tables[TABLE_SYSTEM].text != NULL ? &kept_tables[TABLE_SYSTEM]
                               : kept_tables[TABLE_OWN].text != NULL  ? &kept_tables[TABLE_OWN]
                                                                      : NULL;
        if (sys == NULL) {
                pthread_mutex_unlock(&mounts_lock);
                return FALSE;
        }
        for (guint i = 0; root_known && i < N_TABLES; i++) {
                const KeptTable *t = &kept_tables[i];
                if (!t->known || !same_file(ns, &t->ns) || !same_file(&root, &t->root))
                        continue;
                g_autofree char *key = g_strdup_printf("%u %" G_GUINT64_FORMAT " %s", i,
                                                       (guint64)stx.stx_mnt_id, path);
                int verdict = GPOINTER_TO_INT(g_hash_table_lookup(exe_verdicts, key));
                if (verdict == 0) {
                        verdict = places_agree(t->text, sys->text, path, stx.stx_mnt_id) ? 1 : 2;
                        g_hash_table_insert(exe_verdicts, g_steal_pointer(&key),
                                            GINT_TO_POINTER(verdict));
                }
                pthread_mutex_unlock(&mounts_lock);
                return verdict == 1;
        }
        g_autofree char *system = file_system_place(sys->text, path, 0);
        pthread_mutex_unlock(&mounts_lock);
        if (system == NULL)
                return FALSE;
        /* Another namespace, or another root: its own table, read now. */
        g_autofree char *theirs_text = read_proc_text_max(dir, "mountinfo", MOUNTINFO_MAX_BYTES);
        g_autofree char *place =
                theirs_text != NULL ? file_system_place(theirs_text, path, stx.stx_mnt_id) : NULL;
        return place != NULL && strcmp(place, system) == 0;
}

static char *read_proc_text(pid_t pid, const char *name)
{
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
        return read_proc_text_at(AT_FDCWD, path);
}

/* ------------------------------------------- facts that change about never */

/* A uid's name (asked of the user database through NSS) and PID 1's cgroup
 * (the root the units are read against) cost more than the target's own
 * facts, for answers that change about never: each is reused for a second,
 * so a renamed user reaches polkit's details within a second. A handful of
 * uids are kept, the most recently asked. */
#define KEPT_FACT_US    G_USEC_PER_SEC
#define KEPT_USER_NAMES 8

typedef struct {
        gint64 until; /* g_get_monotonic_time() it is good until; 0: unused */
        uid_t uid;
        char *text; /* the name or PID 1's cgroup; NULL: none */
} KeptFact;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static KeptFact kept_names[KEPT_USER_NAMES];
static KeptFact kept_pid1;

/* A copy of @fact's text when it is @uid's and still good at @now. */
static gboolean kept_get(const KeptFact *fact, uid_t uid, gint64 now, char **text)
{
        if (fact->until <= now || fact->uid != uid)
                return FALSE;
        *text = g_strdup(fact->text);
        return TRUE;
}

static void kept_set(KeptFact *fact, uid_t uid, gint64 now, const char *text)
{
        g_free(fact->text);
        *fact = (KeptFact){.until = now + KEPT_FACT_US, .uid = uid, .text = g_strdup(text)};
}

static char *user_name_lookup(uid_t uid)
{
        struct passwd pw, *found = NULL;
        char buf[4096];

        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
                return g_strdup(found->pw_name);
        return NULL;
}

/* The uid's slot among kept_names, else the one good for the shortest
 * time (an unused one first). Under kept_lock. */
static KeptFact *name_slot(uid_t uid)
{
        KeptFact *slot = &kept_names[0];

        for (guint i = 0; i < KEPT_USER_NAMES; i++) {
                KeptFact *f = &kept_names[i];
                if (f->until != 0 && f->uid == uid)
                        return f;
                if (f->until < slot->until)
                        slot = f;
        }
        return slot;
}

/* The user database may be a daemon (sssd, nslcd, systemd-userdbd) that
 * stalls, and ptagsd asks it on its main loop: names are looked up by a
 * thread of their own. A caller waits USER_NAME_WAIT_US at most, and not
 * at all while that thread has been stuck on an earlier lookup for longer:
 * the name is then unknown (target-user is left out), and kept once it
 * comes. At most USER_NAME_QUEUE_MAX uids wait their turn. */
#define USER_NAME_WAIT_US   (500 * 1000)
#define USER_NAME_QUEUE_MAX 64
/* While a name cannot be had at once, the last one the database gave for
 * the uid is told for up to a minute, rather than none. */
#define USER_NAME_STALE_US (60 * G_USEC_PER_SEC)

typedef struct {
        uid_t uid;
        gint64 asked; /* the asker's now: the name is kept from then on */
} NameWanted;

static pthread_cond_t names_cond; /* with kept_lock; on CLOCK_MONOTONIC */
static GQueue names_wanted;       /* NameWanted */
static gint64 names_busy_since;   /* when the lookup under way started; 0: none */
static pid_t names_thread_pid;    /* the process that started it (tests fork) */

static void names_cond_init(void)
{
        pthread_condattr_t attr;

        pthread_condattr_init(&attr);
        /* A wait counts on the monotonic clock: the wall clock set back
         * must not stretch it. */
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&names_cond, &attr);
        pthread_condattr_destroy(&attr);
}

static gpointer names_thread(gpointer unused)
{
        pthread_mutex_lock(&kept_lock);
        for (;;) {
                while (g_queue_is_empty(&names_wanted))
                        pthread_cond_wait(&names_cond, &kept_lock);
                g_autofree NameWanted *w = g_queue_pop_head(&names_wanted);
                names_busy_since = g_get_monotonic_time();
                pthread_mutex_unlock(&kept_lock);
                g_autofree char *name = user_name_lookup(w->uid);
                pthread_mutex_lock(&kept_lock);
                names_busy_since = 0;
                /* Good for a second from when it was asked, or, when the
                 * database took longer than that, from when it came. */
                gint64 came = g_get_monotonic_time();
                gint64 from = came >= w->asked + KEPT_FACT_US ? came : w->asked;
                kept_set(name_slot(w->uid), w->uid, from, name);
                pthread_cond_broadcast(&names_cond);
        }
        return NULL;
}

/* In a child forked by a process that had the thread (ptagsd does not fork;
 * tests do): the thread is gone, and its lock and condition may be in any
 * state. */
static void names_after_fork(void)
{
        pthread_mutex_init(&kept_lock, NULL);
        names_cond_init();
        g_queue_clear_full(&names_wanted, g_free);
        names_busy_since = 0;
        names_thread_pid = 0;
}

/* Starts the thread in this process if it does not run; FALSE when it
 * cannot (no thread to be had: the name is left out, and it is tried again
 * at the next name). Under kept_lock. */
static gboolean names_thread_runs(void)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        if (names_thread_pid == getpid())
                return TRUE;
        pthread_once(&once, names_cond_init);
        static gboolean atfork;
        if (!atfork)
                atfork = pthread_atfork(NULL, NULL, names_after_fork) == 0;
        /* Started on first use, long after the capabilities were dropped:
         * it holds none it should not. */
        GThread *thread = g_thread_try_new("ptagsd-names", names_thread, NULL, NULL);
        if (thread == NULL)
                return FALSE;
        g_thread_unref(thread);
        names_thread_pid = getpid();
        return TRUE;
}

/* A copy of the name kept for @uid into *@name, if it is good at @now
 * (or was, less than @stale microseconds before). Under kept_lock. */
static gboolean kept_name(uid_t uid, gint64 now, gint64 stale, char **name)
{
        for (guint i = 0; i < KEPT_USER_NAMES; i++)
                if (kept_names[i].until != 0 && kept_get(&kept_names[i], uid, now - stale, name))
                        return TRUE;
        return FALSE;
}

char *ptags_user_name(uid_t uid, gint64 now)
{
        char *name = NULL;

        pthread_mutex_lock(&kept_lock);
        if (kept_name(uid, now, 0, &name)) {
                pthread_mutex_unlock(&kept_lock);
                return name;
        }
        NameWanted *queued = NULL;
        for (GList *l = names_wanted.head; l != NULL && queued == NULL; l = l->next)
                if (((NameWanted *)l->data)->uid == uid)
                        queued = l->data;
        if (queued != NULL) {
                queued->asked = MAX(queued->asked, now);
        } else if (g_queue_get_length(&names_wanted) < USER_NAME_QUEUE_MAX) {
                queued = g_new(NameWanted, 1);
                *queued = (NameWanted){uid, now};
                g_queue_push_tail(&names_wanted, queued);
        }
        gint64 start = g_get_monotonic_time();
        /* No wait when the uid is not asked about (too many are), when no
         * thread can ask, or while the thread is stuck on an earlier
         * lookup: the name is then what was last known, or none. */
        gboolean wait = queued != NULL && names_thread_runs() &&
                        !(names_busy_since != 0 && start - names_busy_since > USER_NAME_WAIT_US);
        pthread_cond_broadcast(&names_cond);
        gboolean found = FALSE;
        if (wait) {
                struct timespec deadline;
                clock_gettime(CLOCK_MONOTONIC, &deadline);
                deadline.tv_nsec += (USER_NAME_WAIT_US % G_USEC_PER_SEC) * 1000;
                deadline.tv_sec +=
                        USER_NAME_WAIT_US / G_USEC_PER_SEC + deadline.tv_nsec / 1000000000;
                deadline.tv_nsec %= 1000000000;
                while (!(found = kept_name(uid, now, 0, &name)) &&
                       pthread_cond_timedwait(&names_cond, &kept_lock, &deadline) == 0)
                        ;
        }
        if (!found)
                kept_name(uid, now, USER_NAME_STALE_US, &name);
        pthread_mutex_unlock(&kept_lock);
        return name;
}

static char *pid1_cgroup(gint64 now)
{
        char *text = NULL;

        pthread_mutex_lock(&kept_lock);
        gboolean kept = kept_get(&kept_pid1, 0, now, &text);
        pthread_mutex_unlock(&kept_lock);
        if (kept)
                return text;
        text = read_proc_text(1, "cgroup");
        pthread_mutex_lock(&kept_lock);
        kept_set(&kept_pid1, 0, now, text);
        pthread_mutex_unlock(&kept_lock);
        return text;
}

char *ptags_status_comm(const char *status)
{
        /* The kernel escapes only '\n' and '\\' in it, each as a backslash
         * and a letter, so the name ends at the line's newline. */
        const char *name =
                g_str_has_prefix(status, "Name:\t") ? status : strstr(status, "\nName:\t");
        if (name == NULL)
                return NULL;
        name = strchr(name + 1, '\t') + 1;
        const char *end = strchr(name, '\n');
        if (end == NULL)
                return NULL;
        GString *comm = g_string_sized_new(end - name);
        for (const char *c = name; c < end; c++) {
                if (*c == '\\' && c + 1 < end && (c[1] == 'n' || c[1] == '\\'))
                        g_string_append_c(comm, *++c == 'n' ? '\n' : '\\');
                else
                        g_string_append_c(comm, *c);
        }
        return g_string_free(comm, FALSE);
}

/* @full: also look up the user name (a user-database query, which may
 * leave the machine), which a re-check does not need. */
static gboolean process_info_read(const PtagsTarget *t, PtagsProcessInfo *info, gboolean full,
                                  GError **error)
{
        int dir = open_proc_dir(t->pid);
        g_autofree char *status = dir >= 0 ? read_proc_text_at(dir, "status") : NULL;

        memset(info, 0, sizeof(*info));
        for (guint i = 0; i < G_N_ELEMENTS(info->uids); i++)
                info->uids[i] = (uid_t)-1;
        if (status != NULL) {
                const char *uid_line = strstr(status, "\nUid:");
                char *end = uid_line != NULL ? (char *)uid_line + 5 : NULL;
                for (guint i = 0; end != NULL && i < G_N_ELEMENTS(info->uids); i++)
                        info->uids[i] = (uid_t)strtoul(end, &end, 10);
                /* What /proc/PID/comm holds, one file fewer to read. */
                info->comm = ptags_status_comm(status);
                if (info->comm != NULL)
                        g_strchomp(info->comm);
        }
        if (dir >= 0) {
                char exe[PATH_MAX];
                ssize_t n = readlinkat(dir, "exe", exe, sizeof(exe));
                /* The link reads as a path in the target's mount namespace:
                 * told only when root made that namespace, and the path
                 * names the same file on the system. */
                if (n >= 0 && (size_t)n < sizeof(exe)) {
                        exe[n] = '\0';
                        struct stat mnt_ns;
                        if (mounts_are_roots(dir, &mnt_ns) && exe_is_the_systems(dir, &mnt_ns, exe))
                                info->exe = g_strdup(exe);
                }
                info->cgroup = read_proc_text_at(dir, "cgroup");
                close(dir);
        }
        /* As sd-login reads them, but from the cgroup text just read rather
         * than the file again: the system unit is the first unit below the
         * slices (user@UID.service for everything a user's manager runs),
         * the user unit the one below that manager. A user's unit named like
         * a system service thus stays a user unit. A re-check compares
         * them, as a rule sees them. */
        if (info->cgroup != NULL) {
                g_autofree char *pid1 = pid1_cgroup(g_get_monotonic_time());
                ptags_cgroup_units(info->cgroup, pid1, ptags_cgroup_tree(), &info->unit,
                                   &info->user_unit);
        }

        /* Everything above came from a pid; it only describes our target if the
         * target is still alive now. */
        if (status == NULL || info->comm == NULL || !ptags_target_alive(t)) {
                ptags_process_info_clear(info);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                            "process %d has exited", (int)t->pid);
                return FALSE;
        }
        if (full && info->uids[0] != (uid_t)-1)
                info->user = ptags_user_name(info->uids[0], g_get_monotonic_time());
        return TRUE;
}

gboolean ptags_target_has_capability(const PtagsTarget *t, guint cap)
{
        /* capget(2) on the pid answers from the kernel's own sets: no
         * /proc/PID/status to generate and parse. Like any pid, the answer
         * is the target's only if it still lives afterwards. */
        struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3,
                                                  .pid = t->pid};
        struct __user_cap_data_struct sets[_LINUX_CAPABILITY_U32S_3];

        if (cap >= 32 * _LINUX_CAPABILITY_U32S_3 || syscall(SYS_capget, &header, sets) < 0 ||
            !(sets[cap / 32].effective >> (cap % 32) & 1u))
                return FALSE;
        return in_our_user_namespace(t->pid) && ptags_target_alive(t);
}

gboolean ptags_process_info_read(const PtagsTarget *t, PtagsProcessInfo *info, GError **error)
{
        return process_info_read(t, info, TRUE, error);
}

/* The facts a rule may rely on: the uids (all four: a setuid() without an
 * exec changes no other fact), the program and the units. The user name
 * follows from the uid, so it is not looked up again. Not the command name,
 * which the process sets itself whenever it likes (so a rule cannot rely on
 * it), nor a move between cgroups of one unit: a process renaming or moving
 * itself in a loop would otherwise fail every change but root's to itself,
 * its revocation included. */
static gboolean process_info_equal(const PtagsProcessInfo *a, const PtagsProcessInfo *b)
{
        return memcmp(a->uids, b->uids, sizeof(a->uids)) == 0 && g_strcmp0(a->exe, b->exe) == 0 &&
               g_strcmp0(a->unit, b->unit) == 0 && g_strcmp0(a->user_unit, b->user_unit) == 0;
}

gboolean ptags_process_info_same(const PtagsTarget *t, const PtagsProcessInfo *seen, GError **error)
{
        PtagsProcessInfo now;

        if (!process_info_read(t, &now, FALSE, error))
                return FALSE;
        gboolean same = process_info_equal(seen, &now);
        ptags_process_info_clear(&now);
        return same;
}

void ptags_process_info_clear(PtagsProcessInfo *info)
{
        g_clear_pointer(&info->user, g_free);
        g_clear_pointer(&info->exe, g_free);
        g_clear_pointer(&info->comm, g_free);
        g_clear_pointer(&info->unit, g_free);
        g_clear_pointer(&info->user_unit, g_free);
        g_clear_pointer(&info->cgroup, g_free);
}

static PtagsPeer *peer_new(uid_t uid)
{
        PtagsPeer *peer = g_new0(PtagsPeer, 1);

        peer->ref_count = 1;
        peer->uid = uid;
        peer->budget_uid = ptags_budget_uid(uid);
        peer->target.pidfd = -1;
        return peer;
}

PtagsPeer *ptags_peer_new_unknown(const PtagsPeer *peer)
{
        PtagsPeer *copy = peer_new(peer->uid);

        copy->budget_uid = peer->budget_uid;
        copy->reported_pid = peer->reported_pid;
        copy->pid_namespace = peer->pid_namespace;
        return copy;
}

PtagsPeer *ptags_peer_ref(PtagsPeer *peer)
{
        g_atomic_int_inc(&peer->ref_count);
        return peer;
}

void ptags_peer_free(PtagsPeer *peer)
{
        if (peer == NULL || !g_atomic_int_dec_and_test(&peer->ref_count))
                return;
        ptags_target_clear(&peer->target);
        g_free(peer);
}

/* The numbers after "@field" in /proc/PID/status text; how many were read. */
static int status_numbers(const char *status, const char *field, int base, guint64 *out, int max)
{
        const char *line = strstr(status, field);
        int n = 0;

        if (line == NULL)
                return 0;
        const char *p = line + strlen(field);
        while (n < max) {
                char *end = NULL;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\n' || *p == '\0')
                        break;
                guint64 v = g_ascii_strtoull(p, &end, base);
                if (end == p)
                        break;
                out[n++] = v;
                p = end;
        }
        return n;
}

/* Real, effective, saved and filesystem uids: all @uid. */
static gboolean status_runs_as(const char *status, uid_t uid)
{
        guint64 ids[4];

        if (status_numbers(status, "\nUid:", 10, ids, 4) != 4)
                return FALSE;
        for (int i = 0; i < 4; i++)
                if (ids[i] != uid)
                        return FALSE;
        return TRUE;
}

/* No setgid gain: the same gid throughout (real, effective, saved, file
 * system), into @ids. */
static gboolean status_one_gid(const char *status, guint64 ids[4])
{
        if (status_numbers(status, "\nGid:", 10, ids, 4) != 4)
                return FALSE;
        for (int i = 1; i < 4; i++)
                if (ids[i] != ids[0])
                        return FALSE;
        return TRUE;
}

/* Whether @gid is one of the @n_gids the bus saw (any when it told none). */
static gboolean gid_seen(guint64 gid, const guint32 *gids, gsize n_gids)
{
        if (gids == NULL)
                return TRUE;
        for (gsize i = 0; i < n_gids; i++)
                if (gids[i] == gid)
                        return TRUE;
        return FALSE;
}

gboolean ptags_status_is_plain_process_of(const char *status, uid_t uid, const guint32 *gids,
                                          gsize n_gids)
{
        guint64 ids[4], cap = 0;

        if (!status_runs_as(status, uid) || !status_one_gid(status, ids) ||
            !gid_seen(ids[0], gids, n_gids))
                return FALSE;
        if (uid == 0)
                return TRUE; /* root holds every privilege anyway */
        /* No capability an ordinary uid does not have (file capabilities,
         * a root process that changed uid but kept some). */
        static const char *const sets[] = {"\nCapPrm:", "\nCapEff:", "\nCapAmb:"};
        for (size_t i = 0; i < G_N_ELEMENTS(sets); i++)
                if (status_numbers(status, sets[i], 16, &cap, 1) == 1 && cap != 0)
                        return FALSE;
        /* CapAmb is missing before Linux 4.3; the other two never are. */
        return strstr(status, "\nCapPrm:") != NULL && strstr(status, "\nCapEff:") != NULL;
}

/* A digest of the path of the program @pid runs, all zero when it cannot
 * be read. A program deleted (or upgraded) since it started reads as its
 * path and " (deleted)": that suffix is left out, so that a long-running
 * caller whose program was upgraded stays the same program. */
static void exe_digest(pid_t pid, guint8 digest[32])
{
        char path[48], exe[PATH_MAX];
        gsize len = 32;

        memset(digest, 0, 32);
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        ssize_t n = readlink(path, exe, sizeof(exe));
        if (n <= 0 || (size_t)n >= sizeof(exe))
                return;
        static const char deleted[] = " (deleted)";
        if ((size_t)n > sizeof(deleted) - 1 &&
            memcmp(exe + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
                n -= sizeof(deleted) - 1;
        g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
        g_checksum_update(sum, (const guchar *)exe, n);
        g_checksum_get_digest(sum, digest, &len);
}

/* Read through a pid: it describes the pinned process only if the caller
 * then finds that still running. */
static gboolean privilege_read(pid_t pid, PtagsPrivilege *out)
{
        char path[48];
        struct stat dir, status;
        struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3,
                                                  .pid = pid};
        struct __user_cap_data_struct sets[_LINUX_CAPABILITY_U32S_3];

        snprintf(path, sizeof(path), "/proc/%d", (int)pid);
        if (stat(path, &dir) < 0)
                return FALSE;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (stat(path, &status) < 0 || syscall(SYS_capget, &header, sets) < 0)
                return FALSE;
        out->euid = dir.st_uid;
        out->egid = dir.st_gid;
        out->status_owner = status.st_uid;
        exe_digest(pid, out->exe_digest);
        out->caps = 0;
        for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
                out->caps |= (guint64)(sets[i].effective | sets[i].permitted) << (32 * i);
        if (out->caps != 0 && !in_our_user_namespace(pid))
                out->caps = 0;
        return TRUE;
}

/* Whether a process that read as @then runs the same program as @now, with
 * no privilege it did not have then. */
static gboolean privilege_kept(const PtagsPrivilege *now, const PtagsPrivilege *then)
{
        return now->euid == then->euid && now->egid == then->egid &&
               now->status_owner == then->status_owner && (now->caps & ~then->caps) == 0 &&
               memcmp(now->exe_digest, then->exe_digest, 32) == 0;
}

gboolean ptags_peer_process_unchanged(const PtagsPeer *peer)
{
        PtagsPrivilege now;

        if (!peer->process_known)
                return FALSE;
        if (peer->uid == 0)
                return ptags_target_alive(&peer->target);
        return privilege_read(peer->target.pid, &now) && privilege_kept(&now, &peer->proven) &&
               ptags_target_alive(&peer->target);
}

gboolean ptags_peer_runs_as_proven(const PtagsPeer *peer, const PtagsPrivilege *then)
{
        if (!peer->process_known)
                return FALSE;
        return peer->uid == 0 || privilege_kept(&peer->proven, then);
}

/* Whether the process pinned for @peer counts as the connection's, reading
 * what it may do into peer->proven.
 *
 * The bus's ProcessFD (@by_bus) proves which process opened the connection,
 * not what it runs as now: a process that connected and then executed a
 * setuid or setgid program keeps its pidfd while a child of it uses the
 * connection. So it counts only while it runs as the connection's uid and
 * one gid throughout, whether it executed that program before ptagsd first
 * looked or after; its capabilities and dumpability now (file capabilities
 * of its own, which the bus does not tell from ones gained since) are kept
 * as what it may hold.
 *
 * Without a ProcessFD, the pid the bus reports is that of whoever called
 * connect(). That process may have exited while a child kept the
 * connection, and the pid may now belong to anyone. The pinned process
 * counts as the caller only if it could not have gained anything by the
 * swap: it runs as the bus's uid through and through, with no capability
 * or setuid/setgid gain, and is dumpable (the kernel shows root as the
 * owner of its /proc/PID/status otherwise). Within one uid this is no
 * boundary, and needs none: processes of one uid can already ptrace and
 * signal one another, so being mistaken for a sibling gives nothing the
 * attacker did not have. A process that is not dumpable is the one a uid
 * cannot ptrace, so it does not count. But tags tell processes of one uid
 * apart, and Yama or a sandbox may keep them from tracing each other: so
 * the process must also have started before the connection joined the bus
 * (bus-joins.c), which a later process that took the pid did not; the
 * caller checks that first, as the pid namespace read rests on it too. */
static gboolean peer_process_proven(PtagsPeer *peer, gboolean by_bus, const guint32 *gids,
                                    gsize n_gids)
{
        g_autofree char *status_path = g_strdup_printf("/proc/%d/status", (int)peer->target.pid);
        g_autofree char *status = NULL;

        if (!g_file_get_contents(status_path, &status, NULL, NULL))
                return FALSE;
        guint64 ids[4];
        gboolean ok = by_bus ? peer->uid == 0 || (status_runs_as(status, peer->uid) &&
                                                  status_one_gid(status, ids) &&
                                                  gid_seen(ids[0], gids, n_gids))
                             : ptags_status_is_plain_process_of(status, peer->uid, gids, n_gids);
        if (!ok || !privilege_read(peer->target.pid, &peer->proven))
                return FALSE;
        if (!by_bus && (peer->proven.euid != peer->uid || peer->proven.status_owner != peer->uid))
                return FALSE;
        return ptags_target_alive(&peer->target);
}

/* The pid namespace of the process pinned in @t, one that may have opened
 * the connection. No process leaves its pid namespace, so what is read
 * while the process still runs is its own for good. */
static PtagsPidNamespace peer_pid_namespace(const PtagsTarget *t)
{
        struct stat ns;
        char path[48];

        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)t->pid);
        if (stat(path, &ns) < 0 || !ptags_target_alive(t))
                return PTAGS_PID_NAMESPACE_UNKNOWN;
        return is_our_namespace(NS_PID, &ns) ? PTAGS_PID_NAMESPACE_OURS : PTAGS_PID_NAMESPACE_OTHER;
}

static void peer_forget_process(PtagsPeer *peer)
{
        ptags_target_clear(&peer->target);
        peer->process_known = FALSE;
}

/* The bus could not answer about @bus_name: the process behind it is unknown. */
static void lookup_failed(GTask *task, const char *bus_name, const GError *error)
{
        if (g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER))
                g_task_return_new_error(task, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                        "bus name %s has no owner", bus_name);
        else
                g_task_return_new_error(task, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                        "cannot identify the process behind %s: %s", bus_name,
                                        error->message);
}

static void credentials_done(GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr(GTask) task = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GUnixFDList) fds = NULL;
        g_autoptr(GVariant) reply = g_dbus_connection_call_with_unix_fd_list_finish(
                G_DBUS_CONNECTION(source), &fds, res, &error);
        const char *unique_name = g_task_get_task_data(task);

        if (reply == NULL) {
                lookup_failed(task, unique_name, error);
                return;
        }

        g_autoptr(GVariant) creds = g_variant_get_child_value(reply, 0);
        guint32 uid = 0, pid = 0;
        gint32 fd_index = -1;
        if (!g_variant_lookup(creds, "UnixUserID", "u", &uid)) {
                g_task_return_new_error(task, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                        "the bus does not know the user behind %s", unique_name);
                return;
        }

        g_autoptr(PtagsPeer) peer = peer_new(uid);
        if (g_variant_lookup(creds, "ProcessID", "u", &pid))
                peer->reported_pid = (pid_t)pid;
        /* The groups the connection had when it was made. */
        g_autoptr(GVariant) groups =
                g_variant_lookup_value(creds, "UnixGroupIDs", G_VARIANT_TYPE("au"));
        gsize n_gids = 0;
        const guint32 *gids = groups != NULL ? g_variant_get_fixed_array(groups, &n_gids, 4) : NULL;
        if (g_variant_lookup(creds, "ProcessFD", "h", &fd_index) && fds != NULL) {
                /* The bus vouches for this one: it is the connection's. */
                int fd = g_unix_fd_list_get(fds, fd_index, NULL);
                if (fd >= 0 && ptags_target_adopt_pidfd(&peer->target, fd, NULL)) {
                        peer->pid_namespace = peer_pid_namespace(&peer->target);
                        peer->process_known = peer_process_proven(peer, TRUE, gids, n_gids);
                }
        } else if (peer->reported_pid > 0 &&
                   ptags_target_pin_pid(&peer->target, peer->reported_pid, NULL) &&
                   /* Not one that started after the connection joined the
                    * bus: a later process that took the opener's pid. */
                   ptags_bus_joins_may_have_opened(unique_name,
                                                   ptags_lineage_start_time(peer->reported_pid))) {
                peer->pid_namespace = peer_pid_namespace(&peer->target);
                peer->process_known = peer_process_proven(peer, FALSE, gids, n_gids);
        }
        if (!peer->process_known) {
                g_debug("the process behind %s (pid %d) is not provably its own: "
                        "treating it as unknown",
                        unique_name, (int)peer->reported_pid);
                peer_forget_process(peer);
        }
        g_task_return_pointer(task, g_steal_pointer(&peer), (GDestroyNotify)ptags_peer_free);
}

GError *ptags_peer_unknown_error(const PtagsPeer *peer, const char *bus_name, const char *what)
{
        return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                           "%s: the process behind %s cannot be identified (the process that "
                           "opened the connection, pid %d, has exited or is not provably the "
                           "connection's own)",
                           what, bus_name, (int)peer->reported_pid);
}

void ptags_peer_lookup_async(GDBusConnection *connection, const char *unique_name,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data)
{
        GTask *task = g_task_new(connection, cancellable, callback, user_data);

        g_task_set_task_data(task, g_strdup(unique_name), g_free);
        g_dbus_connection_call_with_unix_fd_list(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "GetConnectionCredentials", g_variant_new("(s)", unique_name),
                G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, cancellable,
                credentials_done, task);
}

static void owner_done(GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr(GTask) task = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply =
                g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), res, &error);
        char *owner = NULL;

        if (reply == NULL) {
                lookup_failed(task, g_task_get_task_data(task), error);
                return;
        }
        g_variant_get(reply, "(s)", &owner);
        g_task_return_pointer(task, owner, g_free);
}

void ptags_peer_owner_async(GDBusConnection *connection, const char *bus_name,
                            GCancellable *cancellable, GAsyncReadyCallback callback,
                            gpointer user_data)
{
        GTask *task = g_task_new(connection, cancellable, callback, user_data);

        g_task_set_task_data(task, g_strdup(bus_name), g_free);
        g_dbus_connection_call(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "GetNameOwner",
                               g_variant_new("(s)", bus_name), G_VARIANT_TYPE("(s)"),
                               G_DBUS_CALL_FLAGS_NONE, -1, cancellable, owner_done, task);
}

char *ptags_peer_owner_finish(GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer(G_TASK(result), error);
}

PtagsPeer *ptags_peer_lookup_finish(GAsyncResult *result, GError **error)
{
        return g_task_propagate_pointer(G_TASK(result), error);
}
