// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf.c: loads, pins and upgrades the BPF backend's kernel programs
 * and reads/writes per-task records; the set table lives in ptags-bpf-sets.c. */
#include "ptags-bpf.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ptags-bpf-record.h"
#include "ptags-bpf-sets.h"
#include "ptags-bpf-private.h"
#include "ptags.skel.h"

static const char *const link_names[LINK_COUNT] = {"fork", "exec", "tasks"};

/* Per thread, like errno: ptagsd reads from GDBus's worker thread while its
 * main thread changes tags. */
static __thread char last_error[512];

int ptags_bpf_fail(ptags_bpf *b, int r, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(last_error, sizeof(last_error), fmt, ap);
        va_end(ap);
        return r;
}

const char *ptags_bpf_last_error(const ptags_bpf *b)
{
        return last_error;
}

const char *ptags_bpf_backend_name(const ptags_bpf *b)
{
        return b->lsm ? "bpf-lsm" : "bpf-tracepoint";
}

bool ptags_bpf_lsm_active(void)
{
        char buf[512];
        FILE *f = fopen("/sys/kernel/security/lsm", "re");
        if (!f)
                return false;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        for (char *tok = strtok(buf, ",\n"); tok; tok = strtok(NULL, ",\n"))
                if (strcmp(tok, "bpf") == 0)
                        return true;
        return false;
}

int ptags_bpf_probe(char *why, size_t why_size)
{
        if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
                snprintf(why, why_size, "the kernel has no BTF (/sys/kernel/btf/vmlinux)");
                return -ENOTSUP;
        }
        int r = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL);
        if (r < 0) {
                snprintf(why, why_size, "the BPF syscall is refused: %s", strerror(-r));
                return r;
        }
        if (r == 0) {
                snprintf(why, why_size, "the kernel has no BPF task storage (needs 5.13+)");
                return -ENOTSUP;
        }
        return 0;
}

/* The initial pid namespace's inode number on nsfs, fixed since Linux 3.8
 * (PROC_PID_INIT_INO, which the uapi headers do not export); the others
 * are allocated above it. */
#define PID_NS_INIT_INO 0xEFFFFFFCU

/* The programs name tasks by their pids in the initial pid namespace (the
 * iterators print those, the retag pass matches them), while a pidfd or
 * /proc gives ptagsd pids of its own namespace: anywhere else the two
 * differ, and writes to threads and listings would miss tasks or name
 * other ones. The inode number of our namespace tells reliably: asking
 * for its parent (NS_GET_PARENT) fails in every namespace alike, since
 * the kernel never hands out an ancestor of the caller's own namespace,
 * and the NSpid line of /proc/self/status has one entry whenever /proc
 * was mounted in our namespace, initial or not. */
static int check_initial_pid_ns(ptags_bpf *b)
{
        struct stat st;
        struct statfs fs;
        int fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return ptags_bpf_fail(b, -errno,
                                      "cannot check the pid namespace: /proc/self/ns/pid: %s",
                                      strerror(errno));
        bool initial = fstat(fd, &st) == 0 && fstatfs(fd, &fs) == 0 && fs.f_type == NSFS_MAGIC &&
                       st.st_ino == PID_NS_INIT_INO;
        close(fd);
        if (!initial)
                return ptags_bpf_fail(b, -ENOTSUP,
                                      "not in the initial pid namespace: the BPF programs see "
                                      "tasks by their pids there, which differ from the pids "
                                      "seen here; run ptagsd in the host's pid namespace");
        return 0;
}

/* bpffs is not mounted everywhere (containers, minimal systems); mount it, private to root. */
static int ensure_bpffs(ptags_bpf *b, const char *pin_dir)
{
        struct statfs st;
        if (strncmp(pin_dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT "/")) != 0)
                return 0;
        if (statfs(BPFFS_ROOT, &st) == 0 && st.f_type == BPF_FS_MAGIC)
                return 0;
        if (mount("bpf", BPFFS_ROOT, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
                return ptags_bpf_fail(b, -errno, "cannot mount bpffs on " BPFFS_ROOT ": %s",
                                      strerror(errno));
        return 0;
}

/* bpffs mounted without mode= lets every user create entries in its root,
 * so a pin directory found there may have been made by anyone before our
 * first start: its owner could remove our pins or hold the lock below
 * forever. It is trusted only when it is ours and no one else may write in
 * it. From then on everything goes through the open descriptor (libbpf
 * through /proc/self/fd/N), so a rename of the path cannot swap it. */
static int open_pin_dir(ptags_bpf *b)
{
        struct stat st, via_proc;
        if (mkdir(b->pin_dir, 0700) < 0 && errno != EEXIST)
                return ptags_bpf_fail(b, -errno, "cannot create %s: %s", b->pin_dir,
                                      strerror(errno));
        int fd = open(b->pin_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && (errno == ELOOP || errno == ENOTDIR))
                return ptags_bpf_fail(b, -ENOTDIR,
                                      "%s is not a directory (a symbolic link or another file): "
                                      "refusing to pin there",
                                      b->pin_dir);
        if (fd < 0)
                return ptags_bpf_fail(b, -errno, "cannot open %s: %s", b->pin_dir, strerror(errno));
        b->lock_fd = fd;
        if (fstat(fd, &st) < 0)
                return ptags_bpf_fail(b, -errno, "cannot stat %s: %s", b->pin_dir, strerror(errno));
        if (st.st_uid != geteuid())
                return ptags_bpf_fail(b, -EPERM,
                                      "%s is owned by uid %u, not by uid %u that ptagsd runs as: "
                                      "its owner could remove the pins; remove the directory "
                                      "(or choose another one)",
                                      b->pin_dir, (unsigned)st.st_uid, (unsigned)geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return ptags_bpf_fail(b, -EPERM,
                                      "%s is writable by group or others (mode %04o): they could "
                                      "remove the pins; remove the directory or make it 0700",
                                      b->pin_dir, (unsigned)(st.st_mode & 07777));
        snprintf(b->pin_base, sizeof(b->pin_base), "/proc/self/fd/%d", fd);
        if (stat(b->pin_base, &via_proc) < 0 || via_proc.st_dev != st.st_dev ||
            via_proc.st_ino != st.st_ino)
                return ptags_bpf_fail(b, -ENOENT,
                                      "%s does not lead to %s: /proc must be this process's",
                                      b->pin_base, b->pin_dir);
        return 0;
}

/* Two loaders on the same pins would hand out the same set ids for
 * different sets. The lock dies with its holder (SIGKILL included); a
 * successor started while the old one shuts down waits a little. */
static int lock_pins(ptags_bpf *b)
{
        for (int tries = 0; tries < 100; tries++) {
                if (flock(b->lock_fd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                if (errno != EWOULDBLOCK)
                        break;
                usleep(50000);
        }
        return ptags_bpf_fail(b, -EBUSY, "%s is in use by another ptagsd (or a test instance)",
                              b->pin_dir);
}

static char *path_join(const char *dir, const char *name, const char *suffix)
{
        size_t len = strlen(dir) + strlen(name) + strlen(suffix) + 2;
        char *p = malloc(len);
        if (p)
                snprintf(p, len, "%s/%s%s", dir, name, suffix);
        return p;
}

static const char *state_dir_default(void)
{
        const char *env = getenv("RUNTIME_DIRECTORY");
        /* systemd may list several directories separated by ':'; the
         * unit names only ours. */
        return env && *env && !strchr(env, ':') ? env : DEFAULT_STATE;
}

static bool same_dir(const char *a, const char *b)
{
        struct stat sa, sb;
        if (strcmp(a, b) == 0)
                return true;
        return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
}

/* The set table in /run/ptags belongs to the pins in /sys/fs/bpf/ptags.
 * An instance on other pins that used it would delete the system daemon's
 * table at its first start (new maps make an old table meaningless) or at
 * its uninstall, and then write the file as well: the system daemon's next
 * start would find its records without their sets. */
static int check_state_dir(const char *pin_dir, const char *state_dir)
{
        if (same_dir(pin_dir, DEFAULT_PIN_DIR) || !same_dir(state_dir, DEFAULT_STATE))
                return 0;
        return ptags_bpf_fail(NULL, -EINVAL,
                              "%s keeps the set table of the pins in " DEFAULT_PIN_DIR
                              "; the pins in %s need a state directory of their own "
                              "(RUNTIME_DIRECTORY)",
                              state_dir, pin_dir);
}

static int attach_hooks(ptags_bpf *b)
{
        struct bpf_program *fork_prog =
                b->lsm ? b->skel->progs.ptags_lsm_task_alloc : b->skel->progs.ptags_tp_fork;
        struct bpf_program *exec_prog =
                b->lsm ? b->skel->progs.ptags_lsm_exec : b->skel->progs.ptags_tp_exec;

        b->links[LINK_FORK] = bpf_program__attach(fork_prog);
        if (!b->links[LINK_FORK])
                return ptags_bpf_fail(b, -errno, "cannot attach the fork hook: %s",
                                      strerror(errno));
        b->links[LINK_EXEC] = bpf_program__attach(exec_prog);
        if (!b->links[LINK_EXEC])
                return ptags_bpf_fail(b, -errno, "cannot attach the exec hook: %s",
                                      strerror(errno));
        return 0;
}

static void destroy_links(ptags_bpf *b, int first, int last)
{
        for (int i = first; i <= last; i++) {
                bpf_link__destroy(b->links[i]);
                b->links[i] = NULL;
        }
}

int ptags_bpf_detach(ptags_bpf *b)
{
        if (!b->transient)
                return ptags_bpf_fail(b, -EPERM, "only a transient instance can be detached");
        destroy_links(b, LINK_FORK, LINK_EXEC);
        return 0;
}

int ptags_bpf_attach(ptags_bpf *b)
{
        if (!b->transient)
                return ptags_bpf_fail(b, -EPERM, "only a transient instance can be reattached");
        if (b->links[LINK_FORK])
                return 0;
        int r = attach_hooks(b);
        if (r < 0)
                destroy_links(b, LINK_FORK, LINK_EXEC);
        return r;
}

/* Upgrade without a gap: pin each new link beside the old one (bpffs
 * refuses names with a dot, hence "-new"), then let
 * the rename drop the old pin, so one of the two is attached at every
 * moment. Both running together is harmless: copying a record twice gives
 * the same record, and exec_kept maps every kept set to itself. */
static int pin_links(ptags_bpf *b)
{
        for (int i = 0; i < LINK_COUNT; i++) {
                char fresh[32];
                snprintf(fresh, sizeof(fresh), "%s-new", link_names[i]);
                char *path = path_join(b->pin_base, fresh, "");
                int r = 0;
                if (!path) {
                        r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
                } else {
                        unlinkat(b->lock_fd, fresh, 0);
                        r = bpf_link__pin(b->links[i], path);
                        if (r < 0)
                                r = ptags_bpf_fail(b, r, "cannot pin %s/%s: %s", b->pin_dir, fresh,
                                                   strerror(-r));
                        else if (renameat(b->lock_fd, fresh, b->lock_fd, link_names[i]) < 0)
                                r = ptags_bpf_fail(b, -errno, "cannot replace %s/%s: %s",
                                                   b->pin_dir, link_names[i], strerror(errno));
                }
                free(path);
                if (r < 0)
                        return r;
        }
        return 0;
}

int ptags_bpf_exec_map_put(ptags_bpf *b, uint64_t id, uint64_t kept_id)
{
        int r = bpf_map__update_elem(b->skel->maps.exec_kept, &id, sizeof(id), &kept_id,
                                     sizeof(kept_id), BPF_ANY);
        if (r < 0)
                return ptags_bpf_fail(b, r, "cannot fill the exec map: %s", strerror(-r));
        return 0;
}

static int load(ptags_bpf *b, bool lsm)
{
        b->skel = ptags_skel__open();
        if (!b->skel)
                return ptags_bpf_fail(b, -errno, "cannot open the BPF object: %s", strerror(errno));
        bpf_program__set_autoload(b->skel->progs.ptags_lsm_task_alloc, lsm);
        bpf_program__set_autoload(b->skel->progs.ptags_lsm_exec, lsm);
        bpf_program__set_autoload(b->skel->progs.ptags_tp_fork, !lsm);
        bpf_program__set_autoload(b->skel->progs.ptags_tp_exec, !lsm);
        if (!b->transient) {
                struct bpf_map *maps[] = {b->skel->maps.task_records, b->skel->maps.exec_kept};
                for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
                        char *p = path_join(b->pin_base, bpf_map__name(maps[i]), "");
                        int r = p ? bpf_map__set_pin_path(maps[i], p) : -ENOMEM;
                        free(p);
                        if (r < 0)
                                return ptags_bpf_fail(b, r, "cannot set a pin path: %s",
                                                      strerror(-r));
                }
        }
        int r = ptags_skel__load(b->skel);
        if (r < 0) {
                ptags_skel__destroy(b->skel);
                b->skel = NULL;
                return ptags_bpf_fail(b, r, "cannot load the %s programs: %s",
                                      lsm ? "LSM" : "tracepoint", strerror(-r));
        }
        b->lsm = lsm;
        return 0;
}

#define RESET_HINT                                                                                 \
        "to start over, losing every tag and audit container ID, stop ptagsd and run " LIBEXECDIR  \
        "/ptagsd --remove-state"

/* The set table is gone (deleted, or a state directory other than the last
 * run's), emptied, or older than the pinned records (a backup put back):
 * a record holding an id the table lacks would name whatever set gets that
 * id next, another process's tags and rights included. So every set id a
 * live task holds must be listed or below the table's next id; otherwise
 * refuse, rather than drop every record and the tags and container IDs with
 * them unasked. An id below the next one that the table lacks was dropped
 * by a collection while a slow fork was copying it (README.md): it is never
 * given out again, and its holder reads as an error. */
static int check_held_sets_listed(ptags_bpf *b, const char *state)
{
        ptags_bpf_task *tasks = NULL;
        size_t n = 0, holders = 0;
        uint64_t example = 0;
        int r = ptags_bpf_list_tasks_unpinned(b, &tasks, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                uint64_t id = tasks[i].set_id;
                if (id != PTAGS_SET_EMPTY && id >= b->sets.next_id &&
                    ptags_bpf_sets_by_id(&b->sets, id) == NULL) {
                        holders++;
                        example = id;
                }
        }
        free(tasks);
        if (holders > 0)
                return ptags_bpf_fail(b, -ENOENT,
                                      "the set table %s %s, but %zu tasks hold set ids it does "
                                      "not list (%llu among them; pinned in %s): it would give "
                                      "those ids to other sets; put back the table as ptagsd "
                                      "left it, or " RESET_HINT,
                                      b->sets.path, state, holders, (unsigned long long)example,
                                      b->pin_dir);
        return 0;
}

static int open_state(ptags_bpf *b, const ptags_bpf_options *o, bool maps_existed)
{
        char *path = NULL;
        int r;
        if (!b->transient) {
                const char *dir = o->state_dir ? o->state_dir : state_dir_default();
                if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                        return ptags_bpf_fail(b, -errno, "cannot create %s: %s", dir,
                                              strerror(errno));
                path = path_join(dir, SETS_FILE, "");
                if (!path)
                        return ptags_bpf_fail(b, -ENOMEM, "out of memory");
        }
        r = ptags_bpf_sets_init(&b->sets, path);
        free(path);
        if (r < 0)
                return ptags_bpf_fail(b, r, "out of memory");
        if (!maps_existed) {
                /* New maps (first start or after a reboot): no task refers
                 * to any old id, so an old table is meaningless. */
                r = ptags_bpf_sets_forget(&b->sets);
                return r < 0 ? ptags_bpf_fail(b, r, "cannot remove the old set table: %s",
                                              strerror(-r))
                             : 0;
        }
        /* A missing table is checked before it is made anew, and then
         * holds nothing to check again. */
        bool missing = b->sets.path && access(b->sets.path, F_OK) < 0 && errno == ENOENT;
        if (missing) {
                r = check_held_sets_listed(b, "is missing");
                if (r < 0)
                        return r;
        }
        r = ptags_bpf_sets_load(&b->sets, last_error, sizeof(last_error));
        if (r < 0 && r != -ENOMEM) {
                size_t len = strlen(last_error);
                snprintf(last_error + len, sizeof(last_error) - len, "; %s", RESET_HINT);
        }
        if (r < 0)
                return r;
        /* Emptied or cut before its first set (a truncated file reads as an
         * empty table) is the same as missing. */
        r = missing ? 0
                    : check_held_sets_listed(b, b->sets.first == NULL ? "lists no set"
                                                                      : "lacks sets tasks hold");
        if (r < 0)
                return r;
        /* A daemon killed between journalling a set and filling the exec
         * map left a hole; refilling is idempotent. */
        for (ptags_bpf_set_entry *e = b->sets.first; e; e = e->next) {
                r = ptags_bpf_exec_map_put(b, e->id, e->kept_id);
                if (r < 0)
                        return r;
        }
        return 0;
}

int ptags_bpf_open(const ptags_bpf_options *opts, ptags_bpf **out, char *err, size_t err_size)
{
        ptags_bpf_options defaults = {0};
        const ptags_bpf_options *o = opts ? opts : &defaults;
        ptags_bpf *b = calloc(1, sizeof(*b));
        bool maps_existed = false;
        int r;

        if (!b) {
                snprintf(err, err_size, "out of memory");
                return -ENOMEM;
        }
        pthread_mutex_init(&b->lock, NULL);
        b->lock_fd = -1;
        b->transient = o->transient;
        b->per_process_iter = true;
        b->pidfd_info = true;
        b->nlink_threads = ptags_bpf_nlink_counts_threads();
        /* Write tokens start at random, so no mark an earlier daemon left in
         * a record can be mistaken for one of ours. */
        if (getrandom(&b->write_token, sizeof(b->write_token), 0) != sizeof(b->write_token))
                b->write_token = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
        b->pin_dir = strdup(o->pin_dir ? o->pin_dir : DEFAULT_PIN_DIR);
        if (!b->pin_dir) {
                r = ptags_bpf_fail(b, -ENOMEM, "out of memory");
                goto error;
        }
        r = ptags_bpf_probe(last_error, sizeof(last_error));
        if (r < 0)
                goto error;
        r = check_initial_pid_ns(b);
        if (r < 0)
                goto error;
        if (!b->transient) {
                r = check_state_dir(b->pin_dir, o->state_dir ? o->state_dir : state_dir_default());
                if (r < 0)
                        goto error;
                r = ensure_bpffs(b, b->pin_dir);
                if (r < 0)
                        goto error;
                r = open_pin_dir(b);
                if (r < 0)
                        goto error;
                r = lock_pins(b);
                if (r < 0)
                        goto error;
                maps_existed = faccessat(b->lock_fd, "task_records", F_OK, 0) == 0;
        }

        bool lsm_active = ptags_bpf_lsm_active();
        if (o->mode == PTAGS_BPF_MODE_LSM && !lsm_active) {
                r = ptags_bpf_fail(
                        b, -ENOTSUP,
                        "the bpf LSM is not active (not in /sys/kernel/security/lsm): LSM "
                        "programs would load but never run");
                goto error;
        }
        if (o->mode != PTAGS_BPF_MODE_TRACEPOINT && lsm_active) {
                r = load(b, true);
                if (r < 0 && o->mode == PTAGS_BPF_MODE_AUTO)
                        r = load(b, false);
        } else {
                r = load(b, false);
        }
        if (r < 0)
                goto error;

        /* Before the state: reopening it walks the tasks. */
        b->links[LINK_TASKS] = bpf_program__attach_iter(b->skel->progs.ptags_iter_dump, NULL);
        b->retag_link = bpf_program__attach_iter(b->skel->progs.ptags_iter_retag, NULL);
        b->find_link = bpf_program__attach_iter(b->skel->progs.ptags_iter_find, NULL);
        if (!b->links[LINK_TASKS] || !b->retag_link || !b->find_link) {
                r = ptags_bpf_fail(b, -errno, "cannot create the task iterators: %s",
                                   strerror(errno));
                goto error;
        }
        r = open_state(b, o, maps_existed);
        if (r < 0)
                goto error;
        r = attach_hooks(b);
        if (r < 0)
                goto error;
        if (!b->transient) {
                r = pin_links(b);
                if (r < 0)
                        goto error;
        }
        *out = b;
        return 0;

error:
        snprintf(err, err_size, "%s", last_error);
        ptags_bpf_close(b);
        return r;
}

void ptags_bpf_close(ptags_bpf *b)
{
        if (!b)
                return;
        /* Closing a pinned link's fd leaves it attached: the programs keep
         * running while no daemon is there (restart, upgrade). */
        destroy_links(b, 0, LINK_COUNT - 1);
        bpf_link__destroy(b->retag_link);
        bpf_link__destroy(b->find_link);
        ptags_skel__destroy(b->skel);
        ptags_bpf_sets_clear(&b->sets);
        free(b->pin_dir);
        if (b->lock_fd >= 0)
                close(b->lock_fd);
        pthread_mutex_destroy(&b->lock);
        free(b);
}

int ptags_bpf_uninstall(const char *pin_dir, const char *state_dir)
{
        const char *dir = pin_dir ? pin_dir : DEFAULT_PIN_DIR;
        if (!state_dir)
                state_dir = state_dir_default();
        int r = check_state_dir(dir, state_dir);
        if (r < 0)
                return r;
        /* Never pull the state from under a running owner: it holds the
         * directory's lock (see lock_pins). */
        int lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (lock_fd < 0 && errno != ENOENT)
                return -errno;
        if (lock_fd >= 0 && flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
                int saved = errno == EWOULDBLOCK ? -EBUSY : -errno;
                close(lock_fd);
                return saved;
        }
        const char *names[] = {"fork",     "exec",      "tasks",        "fork-new",
                               "exec-new", "tasks-new", "task_records", "exec_kept"};
        for (size_t i = 0; lock_fd >= 0 && i < sizeof(names) / sizeof(names[0]); i++)
                if (unlinkat(lock_fd, names[i], 0) < 0 && errno != ENOENT && r == 0)
                        r = -errno;
        if (rmdir(dir) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        char *sets = path_join(state_dir, SETS_FILE, "");
        if (!sets) {
                r = -ENOMEM;
                goto out;
        }
        if (unlink(sets) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        free(sets);
        /* What a compaction killed before its rename leaves behind. */
        sets = path_join(state_dir, SETS_FILE, ".tmp");
        if (!sets) {
                r = -ENOMEM;
                goto out;
        }
        if (unlink(sets) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        free(sets);
out:
        if (lock_fd >= 0)
                close(lock_fd);
        return r;
}

/* ------------------------------------------------------------ records */

int ptags_bpf_get_record_pidfd(ptags_bpf *b, int pidfd, ptags_bpf_record *out)
{
        struct ptags_task_record rec = {0};
        int r = bpf_map__lookup_elem(b->skel->maps.task_records, &pidfd, sizeof(pidfd), &rec,
                                     sizeof(rec), BPF_F_LOCK);
        if (r == -ENOENT || (r == 0 && !(rec.flags & PTAGS_RECORD_VALID))) {
                *out = (ptags_bpf_record){
                        .valid = false, .set_id = PTAGS_SET_EMPTY, .contid = PTAGS_CONTID_UNSET};
                return 0;
        }
        if (r < 0)
                return ptags_bpf_fail(b, r, "cannot read a task record: %s", strerror(-r));
        *out = (ptags_bpf_record){.valid = true, .set_id = rec.set_id, .contid = rec.contid};
        return 0;
}

/* A pidfd of the process @pid belongs to; a thread id is mapped to its
 * thread group first, since a pidfd names a leader before 6.9. */
static int pidfd_for(pid_t pid)
{
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd >= 0 || errno != EINVAL)
                return fd < 0 ? -errno : fd;
        char path[64], line[128];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -ESRCH;
        int tgid = -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Tgid: %d", &tgid) == 1)
                        break;
        fclose(f);
        if (tgid <= 0)
                return -ESRCH;
        fd = (int)syscall(SYS_pidfd_open, tgid, 0);
        return fd < 0 ? -errno : fd;
}

int ptags_bpf_get_record(ptags_bpf *b, pid_t pid, ptags_bpf_record *out)
{
        int fd = pidfd_for(pid);
        if (fd < 0)
                return ptags_bpf_fail(b, fd, "no process %d: %s", (int)pid, strerror(-fd));
        int r = ptags_bpf_get_record_pidfd(b, fd, out);
        close(fd);
        return r;
}

/* The contents of set @id, or NULL: the text is copied under the lock and
 * parsed after it, so a reader of a large set (the main loop's) never holds
 * the bus thread's small reads and every write back for the parse. When
 * @too_big is given, a set over @max_bytes is not copied (NULL, *too_big). */
static ptags_set *set_contents(ptags_bpf *b, uint64_t id, size_t max_bytes, bool *too_big)
{
        if (id == PTAGS_SET_EMPTY)
                return ptags_set_new();
        pthread_mutex_lock(&b->lock);
        ptags_bpf_set_entry *e = ptags_bpf_sets_by_id(&b->sets, id);
        bool over = e != NULL && e->len > max_bytes;
        size_t len = e != NULL && !over ? e->len : 0;
        char *text = e != NULL && !over ? malloc(len ? len : 1) : NULL;
        if (text)
                memcpy(text, e->text, len);
        pthread_mutex_unlock(&b->lock);
        if (too_big)
                *too_big = over;
        ptags_set *s = NULL;
        if (text && ptags_set_parse(text, len, &s, NULL) != PTAGS_OK)
                s = NULL;
        free(text);
        return s;
}

ptags_set *ptags_bpf_set_contents(ptags_bpf *b, uint64_t id)
{
        return set_contents(b, id, SIZE_MAX, NULL);
}

int ptags_bpf_tags_of_record_max(ptags_bpf *b, const ptags_bpf_record *rec, size_t max_bytes,
                                 ptags_set **out)
{
        bool too_big = false;
        ptags_set *s = set_contents(b, rec->set_id, max_bytes, &too_big);
        if (too_big)
                return ptags_bpf_fail(b, -E2BIG, "set %" PRIu64 " takes more than %zu bytes",
                                      rec->set_id, max_bytes);
        if (!s)
                return ptags_bpf_fail(
                        b, -EIO, "task record names set %" PRIu64 ", which is not in the table",
                        rec->set_id);
        *out = s;
        return 0;
}

int ptags_bpf_tags_of_record(ptags_bpf *b, const ptags_bpf_record *rec, ptags_set **out)
{
        ptags_set *s = ptags_bpf_set_contents(b, rec->set_id);
        if (!s)
                return ptags_bpf_fail(
                        b, -EIO, "task record names set %" PRIu64 ", which is not in the table",
                        rec->set_id);
        *out = s;
        return 0;
}

int ptags_bpf_read_tags(ptags_bpf *b, pid_t pid, ptags_set **out)
{
        ptags_bpf_record rec;
        int r = ptags_bpf_get_record(b, pid, &rec);
        return r < 0 ? r : ptags_bpf_tags_of_record(b, &rec, out);
}
