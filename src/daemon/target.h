// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* target.h: pinning processes with pidfds and reading what polkit and the
 * logs need to know about them, always from the real /proc. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

/* A pinned process: the pidfd keeps the pid from being reused under us. */
typedef struct {
        pid_t pid;
        int pidfd; /* owned, -1 when unset */
} PtagsTarget;

/* Pin @pid with pidfd_open; NoSuchProcess when it does not exist. */
gboolean ptags_target_pin_pid(PtagsTarget *t, pid_t pid, GError **error);
/* Take ownership of @pidfd (a pidfd received from a client) and derive its pid
 * from /proc/self/fdinfo. NoSuchProcess when the process has exited or lives
 * in another pid namespace; InvalidArgs when @pidfd is not a pidfd. @pidfd is
 * closed on failure. */
gboolean ptags_target_adopt_pidfd(PtagsTarget *t, int pidfd, GError **error);
/* Duplicate @src into @dst (both pinned afterwards). */
gboolean ptags_target_copy(PtagsTarget *dst, const PtagsTarget *src, GError **error);
/* True while the process of @pidfd has not exited (a zombie has exited);
 * FALSE for -1. */
gboolean ptags_pidfd_running(int pidfd);
/* True while the pinned process has not exited. */
gboolean ptags_target_alive(const PtagsTarget *t);
void ptags_target_clear(PtagsTarget *t);

/* The "Pid:" field of a pidfd's fdinfo text: >0, 0 (other namespace), -1
 * (exited) or -2 when the text has no such field (not a pidfd). */
int ptags_fdinfo_parse_pid(const char *fdinfo);

/* What polkit rules and logs see of a process, read from the real /proc. */
typedef struct {
        uid_t uids[4]; /* real (the one polkit is told), effective, saved, file system */
        char *user;    /* NULL when the uid has no name */
        char *exe;     /* NULL unless read in a mount namespace of root's */
        char *comm;
        char *unit;      /* system unit (as sd_pid_get_unit), NULL when none */
        char *user_unit; /* unit of a user's manager (as sd_pid_get_user_unit), or NULL */
        char *cgroup;    /* the text of /proc/PID/cgroup, which the units are read from */
} PtagsProcessInfo;

/* Fill @info for the pinned target; fails with NoSuchProcess if the process
 * exited while being read (so nothing read belongs to a reused pid). */
gboolean ptags_process_info_read(const PtagsTarget *t, PtagsProcessInfo *info, GError **error);
void ptags_process_info_clear(PtagsProcessInfo *info);
/* Reads the pinned target again: TRUE when it is still what @seen
 * describes to a polkit rule (the same uids, exe and units; its command
 * name is its own to change); FALSE when it changed, or with @error set
 * when it exited. */
gboolean ptags_process_info_same(const PtagsTarget *t, const PtagsProcessInfo *seen,
                                 GError **error);

/* The name of @uid in the user database, or NULL when it has none, as
 * asked at most a second before @now (g_get_monotonic_time()): answers are
 * kept that long, for a few uids. (transfer full) */
char *ptags_user_name(uid_t uid, gint64 now);

/* The process name in the text of /proc/PID/status, unescaped: what
 * /proc/PID/comm holds, less its newline; NULL without a "Name:" line.
 * (transfer full) */
char *ptags_status_comm(const char *status);

/* True when the pinned process has effective capability @cap now (false
 * when it exited, when it is in a user namespace other than ptagsd's, or for
 * a number no capability set has). */
gboolean ptags_target_has_capability(const PtagsTarget *t, guint cap);

/* True when the text of /proc/PID/status shows a process running as @uid
 * through and through (real, effective, saved, fs), with one gid (among
 * @gids when not NULL) and, unless @uid is 0, no capability at all. */
gboolean ptags_status_is_plain_process_of(const char *status, uid_t uid, const guint32 *gids,
                                          gsize n_gids);

/* What a process may do beyond its uid's rights, as the kernel shows it
 * without a file to parse: the owner and group of /proc/PID (its effective
 * ids), the owner of /proc/PID/status (root once the process is not
 * dumpable: after a setuid, setgid or file-capability exec, or by choice)
 * and its effective and permitted capabilities (none outside ptagsd's user
 * namespace). */
typedef struct {
        uid_t euid;
        gid_t egid;
        uid_t status_owner;
        guint64 caps;
        /* The program it runs: a SHA-256 of /proc/PID/exe's path (all
         * zero when it cannot be read), which an exec of another program
         * changes. The path, not the file: reading it never reaches the
         * file system, which may be a stalled FUSE or NFS mount. */
        guint8 exe_digest[32];
} PtagsPrivilege;

typedef enum {
        PTAGS_PID_NAMESPACE_UNKNOWN = 0,
        PTAGS_PID_NAMESPACE_OURS,
        PTAGS_PID_NAMESPACE_OTHER,
} PtagsPidNamespace;

/* The caller behind a bus connection. Its uid always comes from the bus; its
 * process only when proven to be the connection's (the bus's ProcessFD, or
 * a plain process of that uid at the reported pid): otherwise process_known
 * is FALSE, target is unset, and the caller is not "self", holds no rights
 * through its tags and cannot be named by pid 0. */
typedef struct {
        PtagsTarget target;
        uid_t uid;
        /* Whose per-uid budgets its calls draw on (subuids.h), fixed when
         * the peer is learned: what a call takes is given back to it. */
        uid_t budget_uid;
        pid_t reported_pid; /* what the bus said, for messages and logs only */
        gboolean process_known;
        PtagsPrivilege proven; /* the process's when it was proven */
        /* How the connection's process numbers processes: in ptagsd's pid
         * namespace, in another (where every pid means another process
         * than to ptagsd), or unknown when the process that opened the
         * connection is gone. Known even for a process not proven to be
         * the caller (one that executed a setuid program, say): its
         * namespace is no privilege. */
        PtagsPidNamespace pid_namespace;
        gint ref_count;
} PtagsPeer;

/* TRUE while the proven process of @peer runs the program it ran when it
 * was proven, with no privilege it did not have then. A connection's
 * process may execute another program (a setuid one, or one a polkit rule
 * trusts by its target-exe) while a child of it keeps using the
 * connection: from then on its capabilities, its tags, its program and its
 * being "self" are not the caller's, so the peer is to be treated as
 * unknown (ptags_peer_new_unknown). An exec of the same file is not seen.
 * Always TRUE for uid 0, which holds every right through the bus anyway. */
gboolean ptags_peer_process_unchanged(const PtagsPeer *peer);
/* The same check for a peer proven afresh (@peer, just looked up) against
 * what its process read as when proven before (@then): TRUE when it runs
 * the same program with no privilege it lacked then (always for uid 0). */
gboolean ptags_peer_runs_as_proven(const PtagsPeer *peer, const PtagsPrivilege *then);

/* A new peer like @peer, but whose process is unknown. (transfer full) */
PtagsPeer *ptags_peer_new_unknown(const PtagsPeer *peer);
PtagsPeer *ptags_peer_ref(PtagsPeer *peer);

/* NoSuchProcess explaining that the process behind @bus_name is unknown;
 * @what says what needed it. (transfer full) */
GError *ptags_peer_unknown_error(const PtagsPeer *peer, const char *bus_name, const char *what);

/* Resolve the connection @unique_name on @connection through
 * GetConnectionCredentials (ProcessFD when the bus offers it, else
 * pidfd_open on ProcessID and the checks above), from scratch: what was
 * learned of the connection before is peer-cache.c's to weigh.
 * NameHasNoOwner becomes NoSuchProcess; an unknown process is not an error
 * here (see process_known). */
void ptags_peer_lookup_async(GDBusConnection *connection, const char *unique_name,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data);
/* (transfer full: ptags_peer_free) */
PtagsPeer *ptags_peer_lookup_finish(GAsyncResult *result, GError **error);

/* The unique name of the connection owning the well-known @bus_name now
 * (GetNameOwner); NoSuchProcess when it has none or the bus cannot say. */
void ptags_peer_owner_async(GDBusConnection *connection, const char *bus_name,
                            GCancellable *cancellable, GAsyncReadyCallback callback,
                            gpointer user_data);
/* (transfer full: g_free) */
char *ptags_peer_owner_finish(GAsyncResult *result, GError **error);
/* Drops a reference. */
void ptags_peer_free(PtagsPeer *peer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtagsPeer, ptags_peer_free)
