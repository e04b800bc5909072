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
/* True while the pinned process has not exited. */
gboolean ptags_target_alive(const PtagsTarget *t);
void ptags_target_clear(PtagsTarget *t);

/* The "Pid:" field of a pidfd's fdinfo text: >0, 0 (other namespace), -1
 * (exited) or -2 when the text has no such field (not a pidfd). */
int ptags_fdinfo_parse_pid(const char *fdinfo);

/* What polkit rules and logs see of a process, read from the real /proc. */
typedef struct {
        uid_t uid;  /* real uid */
        char *user; /* NULL when the uid has no name */
        char *exe;  /* NULL for kernel threads or unreadable links */
        char *comm;
        char *unit;      /* system unit (sd_pid_get_unit), NULL when none */
        char *user_unit; /* unit of a user's manager (sd_pid_get_user_unit), or NULL */
} PtagsProcessInfo;

/* Fill @info for the pinned target; fails with NoSuchProcess if the process
 * exited while being read (so nothing read belongs to a reused pid). */
gboolean ptags_process_info_read(const PtagsTarget *t, PtagsProcessInfo *info, GError **error);
void ptags_process_info_clear(PtagsProcessInfo *info);

/* True when the "CapEff:" mask in the text of /proc/PID/status has
 * capability number @cap. */
gboolean ptags_status_has_capability(const char *status, guint cap);
/* True when the pinned process has effective capability @cap now (false
 * when it exited or the status cannot be read). */
gboolean ptags_target_has_capability(const PtagsTarget *t, guint cap);

/* The process behind a bus connection. */
typedef struct {
        PtagsTarget target;
        uid_t uid;
} PtagsPeer;

/* Resolve @bus_name on @connection through GetConnectionCredentials
 * (ProcessFD when the bus offers it, else pidfd_open on ProcessID).
 * NameHasNoOwner becomes NoSuchProcess. */
void ptags_peer_lookup_async(GDBusConnection *connection, const char *bus_name,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data);
/* (transfer full: ptags_peer_free) */
PtagsPeer *ptags_peer_lookup_finish(GAsyncResult *result, GError **error);
void ptags_peer_free(PtagsPeer *peer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtagsPeer, ptags_peer_free)
