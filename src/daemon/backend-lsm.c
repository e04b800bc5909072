// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* backend-lsm.c: the ptags-lsm backend: tags live in the kernel's
 * /proc/PID/attr/ptags files of a kernel carrying the ptags LSM, container
 * IDs in /proc/PID/audit_containerid of a kernel carrying audit contid. */
#define G_LOG_DOMAIN "ptagsd-lsm"

#include "backend.h"
#include "errors.h"
#include "lineage.h"
#include "log.h"
#include "lsm-intent.h"
#include "page-writer.h"
#include "target.h"

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
        PtagsBackend parent;
        char *proc_root;      /* where attr/ptags files live: "/proc" or a test fixture */
        char *intent_path;    /* the crash journal of multi-page changes */
        int state_lock;       /* the runtime directory, flock()ed while we run */
        gboolean ascii_only;  /* the kernel refuses lines with bytes past 0x7f */
        guint rights_missing; /* a bit per daemon right it found gone and could not give back */
} BackendLsm;

/* The daemon's own rights: add, remove and set any tag (rights tags too) of
 * any process, so it never needs CAP_MAC_ADMIN once started. */
static const char daemon_rights[] = "+ptags:add\n+ptags:sub\n+ptags:set\n+ptags:others\n"
                                    "+ptags:ptags:add\n+ptags:ptags:sub\n+ptags:ptags:set\n"
                                    "+ptags:ptags:others\n";

static char *attr_path(BackendLsm *self, pid_t pid)
{
        return g_strdup_printf("%s/%d/attr/ptags", self->proc_root, (int)pid);
}

/* -1 (no pidfd: lsm_find, ptagsd itself) is taken as running. */
static gboolean pidfd_running(int pidfd)
{
        return pidfd < 0 || ptags_pidfd_running(pidfd);
}

/* The first read's buffer: room for a few hundred tags; larger lists
 * take another read per quadrupling, up to the largest list the kernel can
 * hold (4000 tags of 4000 bytes with values of 32700). */
#define SNAPSHOT_FIRST (64u * 1024u)
#define SNAPSHOT_MAX   (256u * 1024u * 1024u)

/* The whole text of the open attr file @fd, from one read(2): the kernel
 * builds the text anew for every read, so a file read in pieces may join
 * the start of one list to the rest of another, and show tags (rights tags
 * too) the process never held, or a container ID it never carried. So it
 * is read from offset 0 in one go, into a buffer grown until the text
 * fits. */
static int read_all(int fd, GByteArray *out)
{
        for (gsize cap = SNAPSHOT_FIRST;; cap *= 4) {
                g_byte_array_set_size(out, (guint)cap);
                ssize_t r;
                do
                        r = pread(fd, out->data, cap, 0);
                while (r < 0 && errno == EINTR);
                if (r < 0) {
                        int saved = errno;
                        g_byte_array_set_size(out, 0);
                        return -saved;
                }
                if ((gsize)r < cap) {
                        g_byte_array_set_size(out, (guint)r);
                        return 0;
                }
                if (cap >= SNAPSHOT_MAX) {
                        g_byte_array_set_size(out, 0);
                        return -EFBIG;
                }
        }
}

static int lsm_read(PtagsBackend *b, int pidfd, pid_t pid, ptags_set **out)
{
        BackendLsm *self = (BackendLsm *)b;
        g_autofree char *path = attr_path(self, pid);
        g_autoptr(GByteArray) buf = g_byte_array_new();

        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        int r = read_all(fd, buf);
        close(fd);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        /* The file was opened by pid: it is our target's only if the target
         * is still running after the read. */
        if (!pidfd_running(pidfd))
                return -ESRCH;
        size_t bad = 0;
        ptags_result pr = ptags_set_parse((const char *)buf->data, buf->len, out, &bad);
        if (pr != PTAGS_OK) {
                g_warning("%s: unparsable at byte %zu: %s", path, bad, ptags_result_message(pr));
                return pr == PTAGS_E_NOMEM ? -ENOMEM : -EIO;
        }
        return 0;
}

typedef struct {
        const char *path;
        int pidfd;
} WriteTarget;

/* attr files take each write at offset 0, so every page is its own open. */
static ssize_t write_page(const char *buf, size_t len, void *user_data)
{
        WriteTarget *t = user_data;

        int fd = open(t->path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        /* An open /proc file stays bound to the process it was opened for.
         * Opened by pid, it is our target's if the target is still running
         * after the open: a pid is reused only once its process is reaped. */
        if (!pidfd_running(t->pidfd)) {
                close(fd);
                return -ESRCH;
        }
        ssize_t r;
        do
                r = write(fd, buf, len);
        while (r < 0 && errno == EINTR);
        int saved = errno;
        close(fd);
        return r < 0 ? -saved : r;
}

/* A change that fits one page is one write, which the kernel applies whole
 * or stops at a failing line that the undo reverts. Longer ones are several
 * writes: the tags before are noted first (lsm-intent.h), so a ptagsd
 * killed between two pages puts them back at its next start. */
static gboolean plan_needs_pages(const ptags_plan *plan)
{
        return ptags_plan_write_bytes(plan, PTAGS_WRITE_MAX) > PTAGS_WRITE_MAX;
}

/* Whether another writer took away any of the rights tags ptagsd gave
 * itself at start: the kernel then refuses ptagsd's writes (EPERM), which it
 * never does otherwise. ptagsd gives back what the rights it still holds
 * allow (ptags:ptags:add covers them all), one line at a time; without
 * them, and without CAP_MAC_ADMIN since its start, it cannot. */
static gboolean daemon_rights_lost(BackendLsm *self)
{
        g_autofree char *path = attr_path(self, getpid());
        g_auto(GStrv) rights = g_strsplit(daemon_rights, "\n", -1);
        ptags_set *own = NULL;
        guint lost = 0, missing = 0;

        if (lsm_read(&self->parent, -1, getpid(), &own) < 0)
                return FALSE;
        for (guint i = 0; rights[i] != NULL && rights[i][0] == '+'; i++) {
                if (ptags_set_find(own, rights[i] + 1, strlen(rights[i] + 1)) != NULL)
                        continue;
                lost++;
                g_autofree char *line = g_strconcat(rights[i], "\n", NULL);
                WriteTarget t = {path, -1};
                if (write_page(line, strlen(line), &t) != (ssize_t)strlen(line))
                        missing |= 1u << i;
        }
        ptags_set_free(own);
        /* Rights it could not give back are told once, not once per refused
         * call: every change would log them again. */
        if (lost > 0 && (missing == 0 || missing != self->rights_missing)) {
                if (missing == 0)
                        g_warning("another writer took %u of ptagsd's own rights tags away; "
                                  "ptagsd gave them back, and the change that found them gone "
                                  "was refused",
                                  lost);
                else
                        g_warning("another writer took %u of ptagsd's own rights tags away, and "
                                  "ptagsd could give back only %u: changes fail until ptagsd is "
                                  "restarted",
                                  lost, lost - (guint)__builtin_popcount(missing));
        }
        self->rights_missing = missing;
        return lost > 0;
}

/* The index of the first change of @plan whose line holds a byte past
 * 0x7f, or -1. */
static gssize first_non_ascii(const ptags_plan *plan)
{
        g_autoptr(GPtrArray) lines = ptags_plan_lines(plan);

        for (guint i = 0; i < lines->len; i++)
                for (const unsigned char *c = lines->pdata[i]; *c != '\0'; c++)
                        if (*c > 0x7f)
                                return (gssize)i;
        return -1;
}

/* @exec_mark is not needed: the kernel applies each line to the set the
 * process holds when the line is written, and filters at exec itself. */
static int lsm_apply(PtagsBackend *b, int pidfd, pid_t pid, const ptags_plan *plan,
                     G_GNUC_UNUSED guint64 exec_mark, PtagsApplyFailure *failure)
{
        BackendLsm *self = (BackendLsm *)b;
        g_autofree char *path = attr_path(self, pid);
        WriteTarget t = {path, pidfd};
        gboolean journalled = FALSE;

        /* The kernel would refuse such a line midway, after those before
         * it, and the undo may not take all of them back: refuse it first. */
        failure->refused = self->ascii_only ? first_non_ascii(plan) : -1;
        if (failure->refused >= 0)
                return -EINVAL;

        if (plan_needs_pages(plan)) {
                ptags_set *before = NULL;
                guint64 start = ptags_lineage_start_time(pid);
                int r = lsm_read(b, pidfd, pid, &before);
                if (r == 0 && start == 0)
                        r = -ESRCH;
                if (r == 0)
                        r = ptags_intent_write(self->intent_path, pid, start, before);
                ptags_set_free(before);
                if (r < 0)
                        return r;
                journalled = TRUE;
        }
        int r = ptags_plan_write(plan, PTAGS_WRITE_MAX, write_page, &t, &failure->refused,
                                 &failure->partial);
        /* A process that exited midway holds nothing any more. */
        if (r == -ESRCH && !pidfd_running(pidfd))
                failure->partial = FALSE;
        if (r == -EPERM)
                failure->lost_rights = daemon_rights_lost(self);
        if (failure->partial)
                g_warning("process %d holds part of a change: writing it failed (%s), as "
                          "another writer or an exec changed its tags meanwhile, and the undo "
                          "could not take all of it back",
                          (int)pid, g_strerror(-r));
        else if (r < 0)
                g_debug("writing %s failed: %s", path, g_strerror(-r));
        /* Done, undone, or past undoing: the note is only for a ptagsd
         * killed midway. Kept after a failed undo, the next start would put
         * back the tags from before this change, and so silently undo every
         * change acknowledged since. */
        if (journalled)
                unlink(self->intent_path);
        if (r < 0 && !ptags_errno_is_verdict(-r))
                failure->refused = -1;
        return r;
}

/* The restore of @pid's tags from @now, the @lines written, as a change
 * made by ptagsd itself (its pid, uid 0; PTAGS_ACTION "Restore"): a
 * journal entry and audit records, as for any change. */
static void log_restored(pid_t pid, const ptags_set *now, GPtrArray *lines)
{
        ptags_plan *plan = NULL;

        if (lines->len == 0 || ptags_plan_build(now, (const char *const *)lines->pdata, NULL,
                                                lines->len, &plan, NULL) != PTAGS_OK)
                return;
        PtagsLogContext ctx = {pid, getpid(), 0, "Restore"};
        ptags_log_changed(&ctx, plan);
        ptags_plan_free(plan);
}

/* A multi-page change a killed ptagsd left midway: put the process's tags
 * back as they were before it, one line per write so that each line stands
 * alone; but for the tags an exec since may have dropped
 * (ptags_restore_target). Changes made by others since are lost with it. */
static void lsm_recover(BackendLsm *self)
{
        pid_t pid = 0;
        guint64 start = 0;
        ptags_set *before = NULL, *now = NULL;
        int r = ptags_intent_read(self->intent_path, &pid, &start, &before);

        if (r == -ENOENT)
                return;
        int pidfd = r == 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
        if (r < 0) {
                g_warning("%s: unreadable, ignored", self->intent_path);
        } else if (pidfd < 0 || ptags_lineage_start_time(pid) != start) {
                g_debug("process %d of an interrupted change is gone", (int)pid);
        } else if (lsm_read(&self->parent, pidfd, pid, &now) == 0) {
                g_autofree char *path = attr_path(self, pid);
                WriteTarget t = {path, pidfd};
                ptags_set *want = ptags_restore_target(now, before);
                g_autoptr(GPtrArray) lines = ptags_restore_lines(now, want);
                g_autoptr(GPtrArray) written = g_ptr_array_new();
                for (guint i = 0; i < lines->len; i++) {
                        g_autofree char *line = g_strconcat(lines->pdata[i], "\n", NULL);
                        if (write_page(line, strlen(line), &t) >= 0)
                                g_ptr_array_add(written, lines->pdata[i]);
                }
                guint failed = lines->len - written->len;
                if (failed > 0)
                        g_warning("process %d: %u of the %u lines that restore its tags as they "
                                  "were before a change interrupted by ptagsd's exit failed",
                                  (int)pid, failed, lines->len);
                else
                        g_message("process %d: restored its tags as they were before a change "
                                  "interrupted by ptagsd's exit (%u lines)%s",
                                  (int)pid, lines->len,
                                  ptags_set_equal(want, before)
                                          ? ""
                                          : "; tags without the keep flag are not given back, "
                                            "as it may have executed a program since");
                log_restored(pid, now, written);
                ptags_set_free(want);
        }
        if (pidfd >= 0)
                close(pidfd);
        ptags_set_free(before);
        ptags_set_free(now);
        unlink(self->intent_path);
}

static int lsm_find(PtagsBackend *b, const char *pattern, size_t len, PtagsFoundFunc cb,
                    void *user_data)
{
        /* Processes are listed from the real /proc; their tags come from the
         * backend's files (which a test fixture may serve elsewhere). */
        DIR *dir = opendir("/proc");

        if (dir == NULL)
                return -errno;
        struct dirent *de;
        while ((de = readdir(dir)) != NULL) {
                char *end = NULL;
                long pid = strtol(de->d_name, &end, 10);
                if (end == de->d_name || *end != '\0' || pid <= 0)
                        continue;
                /* Pinned first, and read as every read is: the tags are
                 * this process's only if it still runs afterwards, which a
                 * zombie (whose tags the kernel still shows) does not, nor
                 * a process whose pid was taken again meanwhile. */
                int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
                if (pidfd < 0)
                        continue; /* exited meanwhile */
                ptags_set *tags = NULL;
                int r = lsm_read(b, pidfd, (pid_t)pid, &tags);
                close(pidfd);
                if (r != 0)
                        continue; /* exited meanwhile, or unreadable: not a holder */
                gboolean more = !ptags_set_matches(tags, pattern, len, false) ||
                                cb((pid_t)pid, tags, 0, user_data);
                ptags_set_free(tags);
                if (!more)
                        break;
        }
        closedir(dir);
        return 0;
}

/* ------------------------------------------------------- container IDs */

static char *contid_path(BackendLsm *self, pid_t pid)
{
        return g_strdup_printf("%s/%d/audit_containerid", self->proc_root, (int)pid);
}

/* A missing file of a live process means a kernel without audit contid. */
static int contid_open_errno(int saved, int pidfd)
{
        if (saved == ENOENT)
                return pidfd >= 0 && pidfd_running(pidfd) ? -EOPNOTSUPP : -ESRCH;
        return -saved;
}

static int lsm_read_contid(PtagsBackend *b, int pidfd, pid_t pid, guint64 *out)
{
        BackendLsm *self = (BackendLsm *)b;
        g_autofree char *path = contid_path(self, pid);
        g_autoptr(GByteArray) buf = g_byte_array_new();

        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return contid_open_errno(errno, pidfd);
        int r = read_all(fd, buf);
        close(fd);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        if (!pidfd_running(pidfd))
                return -ESRCH;
        uint64_t v;
        if (!ptags_contid_parse((const char *)buf->data, buf->len, &v)) {
                g_warning("%s: not a container ID", path);
                return -EIO;
        }
        *out = v;
        return 0;
}

static int lsm_write_contid(PtagsBackend *b, int pidfd, pid_t pid, guint64 contid)
{
        BackendLsm *self = (BackendLsm *)b;
        g_autofree char *path = contid_path(self, pid);
        char text[24];
        int len = g_snprintf(text, sizeof(text), "%" G_GUINT64_FORMAT, contid);

        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return contid_open_errno(errno, pidfd);
        /* Bound to the target only if it still runs after the open (a pid
         * is reused only once its process is reaped). */
        if (!pidfd_running(pidfd)) {
                close(fd);
                return -ESRCH;
        }
        ssize_t r;
        do
                r = write(fd, text, (size_t)len);
        while (r < 0 && errno == EINTR);
        int saved = errno;
        close(fd);
        if (r < 0)
                return -saved;
        return r == len ? 0 : -EIO;
}

static int lsm_list_contids(PtagsBackend *b, PtagsContidFunc cb, void *user_data)
{
        /* One read per live process, like lsm_find: the service calls this
         * only when a container may have lost its last known member. */
        DIR *dir = opendir("/proc");

        if (dir == NULL)
                return -errno;
        struct dirent *de;
        while ((de = readdir(dir)) != NULL) {
                char *end = NULL;
                long pid = strtol(de->d_name, &end, 10);
                if (end == de->d_name || *end != '\0' || pid <= 0)
                        continue;
                guint64 contid = PTAGS_CONTID_UNSET;
                int e = lsm_read_contid(b, -1, (pid_t)pid, &contid);
                if (e == -ESRCH || (e == 0 && contid == PTAGS_CONTID_UNSET))
                        continue; /* exited meanwhile, or carries none */
                /* A read that failed says nothing of the ID: the process is
                 * reported as possibly carrying any, never as carrying none. */
                cb((pid_t)pid, e == 0 ? contid : PTAGS_CONTID_UNSET, user_data);
        }
        closedir(dir);
        return 0;
}

static void lsm_free(PtagsBackend *b)
{
        BackendLsm *self = (BackendLsm *)b;

        g_free(self->proc_root);
        g_free(self->intent_path);
        if (self->state_lock >= 0)
                close(self->state_lock);
        g_free(self);
}

static const PtagsBackendOps lsm_ops = {
        .name = "ptags-lsm",
        .max_line = PTAGS_WRITE_MAX - 1,
        /* CAP_MAC_ADMIN gave ptagsd its rights tags (grant_daemon_rights),
         * which carry it from then on. Kept, it would make every writer of
         * ptagsd's own file unrestricted on the 2016 kernel, which looks at
         * the target's capability rather than the writer's: any user could
         * take ptagsd's rights away. The tag files need no capability. */
        .capabilities = 0,
        /* /proc/PID/audit_containerid: writing it needs CAP_AUDIT_CONTROL,
         * and opening it for another user's process (mode 0600, owned by
         * the process's uid) CAP_DAC_OVERRIDE. */
        .contid_capabilities = 1ull << CAP_AUDIT_CONTROL | 1ull << CAP_DAC_OVERRIDE,
        .read = lsm_read,
        .apply = lsm_apply,
        .find = lsm_find,
        .free = lsm_free,
        .read_contid = lsm_read_contid,
        .write_contid = lsm_write_contid,
        .list_contids = lsm_list_contids,
};

static gboolean grant_daemon_rights(BackendLsm *self, GError **error)
{
        /* Our real pid, never "self": under a fixture proc root "self" would
         * not name us. */
        g_autofree char *path = attr_path(self, getpid());
        WriteTarget t = {path, -1};
        size_t len = strlen(daemon_rights);

        ssize_t r = write_page(daemon_rights, len, &t);
        if (r == (ssize_t)len)
                return TRUE;
        if (r == -EACCES)
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                            "%s: the kernel refuses attr writes (no ptags LSM?)", path);
        else
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "%s: cannot give ptagsd its rights tags: %s", path,
                            r < 0 ? g_strerror((int)-r) : "short write");
        return FALSE;
}

/* Whether the kernel refuses lines holding a byte past 0x7f, as the 2016
 * code does where char is signed (x86-64), though ptags(7) allows them.
 * Two queries in ptagsd's own file, which need no right and change
 * nothing: one of an ordinary ASCII tag finds no match (ENOENT), and the
 * same tag with a non-ASCII byte is then either no match too or invalid
 * (EINVAL). A kernel answering the first otherwise is not judged. */
static gboolean kernel_is_ascii_only(BackendLsm *self)
{
        g_autofree char *path = attr_path(self, getpid());
        WriteTarget t = {path, -1};
        static const char ascii[] = "?ptagsd-probe:e\n";
        static const char other[] = "?ptagsd-probe:\xc3\xa9\n";

        return write_page(ascii, sizeof(ascii) - 1, &t) == -ENOENT &&
               write_page(other, sizeof(other) - 1, &t) == -EINVAL;
}

/* The runtime directory (crash note, container registry) belongs to one
 * ptagsd at a time: a second one, started by hand beside the service,
 * would otherwise act on the running one's crash note and registry before
 * it finds the bus name taken. The lock dies with its holder (SIGKILL
 * included); a successor started while the old one shuts down waits a
 * little. The descriptor, or -1 with @error set. */
static int lock_runtime_directory(GError **error)
{
        g_autofree char *dir = ptags_runtime_path("");
        int fd = -1;

        if (g_mkdir_with_parents(dir, 0700) == 0)
                fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED, "%s: %s", dir,
                            g_strerror(errno));
                return -1;
        }
        int e = EWOULDBLOCK;
        for (int tries = 0; tries < 100 && e == EWOULDBLOCK; tries++) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return fd;
                e = errno;
                if (e == EWOULDBLOCK)
                        g_usleep(50000);
        }
        if (e == EWOULDBLOCK)
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "%s is in use by another ptagsd", dir);
        else
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED, "%s: %s", dir, g_strerror(e));
        close(fd);
        return -1;
}

PtagsBackend *ptags_backend_lsm_new(const char *proc_root, GError **error)
{
        g_autofree BackendLsm *self = g_new0(BackendLsm, 1);

        self->parent.ops = &lsm_ops;
        self->proc_root = g_strdup(proc_root != NULL ? proc_root : "/proc");
        g_autofree char *own = attr_path(self, getpid());
        if (access(own, F_OK) != 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                            "%s does not exist: this kernel has no ptags provider", own);
                g_free(self->proc_root);
                return NULL;
        }
        self->ascii_only = kernel_is_ascii_only(self);
        if (self->ascii_only)
                g_message("this kernel refuses tags and values with bytes past 0x7f: changes "
                          "holding them are refused as not supported, before anything is written");
        self->state_lock = lock_runtime_directory(error);
        if (self->state_lock < 0 || !grant_daemon_rights(self, error)) {
                if (self->state_lock >= 0)
                        close(self->state_lock);
                g_free(self->proc_root);
                return NULL;
        }
        self->intent_path = ptags_runtime_path("lsm-intent");
        lsm_recover(self);
        return (PtagsBackend *)g_steal_pointer(&self);
}
