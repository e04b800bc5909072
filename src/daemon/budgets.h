// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* budgets.h: ptagsd's budgets (bytes per process and per user, polkit changes
 * per call, reads and unread replies per client) and the size bound of every
 * message it sends; each budget is a daemon option and a D-Bus property. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "backend.h"
#include "ptags-model.h"

/* No message ptagsd sends is bigger (dbus-daemon's own limit is 32 MiB):
 * replies and signals that would be are refused with LimitExceeded. */
#define PTAGS_MAX_MESSAGE_BYTES (4u * 1024u * 1024u)

/* What the wire form of a message may add to its tags and values: at most 24
 * bytes of lengths, flags and padding per (sbs) entry, 24 per (ua(sbs))
 * entry, and the header with its names. */
#define PTAGS_WIRE_TAG_OVERHEAD     24u
#define PTAGS_WIRE_PROCESS_OVERHEAD 24u
#define PTAGS_WIRE_HEADER_OVERHEAD  1024u

typedef struct {
        guint process_bytes;      /* MaxProcessBytes */
        guint user_bytes;         /* MaxUserBytes: one uid other than 0 */
        guint root_bytes;         /* MaxRootBytes: uid 0 */
        guint polkit_changes;     /* MaxPolkitChanges: in one call */
        guint polkit_calls;       /* MaxPolkitCalls: waiting for polkit, one uid other than 0 */
        guint unread_reply_bytes; /* MaxUnreadReplyBytes: one connection */
        guint user_unread_reply_bytes; /* MaxUserUnreadReplyBytes: one uid other than 0 */
        guint expensive_calls;         /* MaxExpensiveCalls: queued or running, one uid */
        guint connection_calls;        /* MaxConnectionCalls: in progress, one connection */
        guint refusal_records;         /* MaxRefusalRecords: a second, one uid other than 0 */
} PtagsLimits;

/* One budget: its option, property, default and accepted range. */
typedef struct {
        const char *option;   /* without "--" */
        const char *property; /* the D-Bus property */
        gsize offset;         /* of its guint in PtagsLimits */
        guint min, max, fallback;
        const char *help; /* what it bounds; --help adds the numbers */
} PtagsLimitInfo;

/* Every budget, in the order of the options. (transfer none, static) */
const PtagsLimitInfo *ptags_limit_infos(gsize *n);

void ptags_limits_init(PtagsLimits *l);
/* The value of @info's budget in @l. */
guint ptags_limit_get(const PtagsLimits *l, const PtagsLimitInfo *info);
/* Set @info's budget to @value, or fail naming the option and its range. */
gboolean ptags_limit_set(PtagsLimits *l, const PtagsLimitInfo *info, gint64 value, GError **error);

/* Bytes @s holds under the budgets: its names and values. */
guint64 ptags_set_bytes(const ptags_set *s);
/* At least the wire size of @s as "a(sbs)". */
guint64 ptags_set_wire_bound(const ptags_set *s);

/* The uid @pid is charged to: the owner of /proc/PID, its effective uid
 * (dumpable or not: the kernel keeps the directory's owner for ps), or
 * (uid_t)-1 when it is gone. */
uid_t ptags_pid_uid(pid_t pid);
/* The budget for the bytes of all processes of @uid. */
guint ptags_limits_for_uid(const PtagsLimits *l, uid_t uid, const char **property);
/* What the per-uid sums remember of each process: its owner and its bytes
 * as last read, keyed by pid and the inode of its /proc directory (a new
 * process under a reused pid gets a new one), so a walk reads only
 * processes it has not seen; memory is bounded by the processes alive.
 * (transfer full: ptags_byte_cache_free) */
typedef struct _PtagsByteCache PtagsByteCache;
PtagsByteCache *ptags_byte_cache_new(void);
void ptags_byte_cache_free(PtagsByteCache *cache);
/* Remember that @pid will hold @bytes once a change is applied (an
 * over-estimate if the change then fails, which a fresh sum corrects). */
void ptags_byte_cache_expect(PtagsByteCache *cache, pid_t pid, uid_t uid, guint64 bytes);
/* Remember that @pid now holds @bytes, a change having been applied: a list
 * that shrank counts less at once, not only from the next walk. */
void ptags_byte_cache_applied(PtagsByteCache *cache, pid_t pid, guint64 bytes);

/* Sum into *@out the bytes of every live process except @except whose uid
 * draws on the budgets @uid draws on (subuids.h: @uid's own, or its
 * range's owner's), as @backend reports them; @fresh reads @uid's again instead of trusting
 * @cache (which exec, shrinking a list behind ptagsd, leaves high). One
 * walk of the processes answers for every uid, and walks take at most a
 * tenth of the time: until the next may start, the last walk's sums
 * answer, fresh or not, for uids it found no process of too. 0 or -errno. */
int ptags_user_bytes(PtagsBackend *backend, PtagsByteCache *cache, uid_t uid, pid_t except,
                     gboolean fresh, guint64 *out);
