// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* log.h: the record of every tag change, container registration and refusal,
 * in the journal (structured, with MESSAGE_IDs) and in the audit trail. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "names.h"
#include "ptags-model.h"

/* Who asked for a change to which process. */
typedef struct {
        pid_t pid; /* target */
        pid_t caller_pid;
        uid_t caller_uid;
        const char *method; /* D-Bus method name */
} PtagsLogContext;

/* A change applied: one journal entry (PTAGS_LINES: the normalized lines,
 * one PTAGS_TAG per changed tag) and one audit record per changed tag. */
void ptags_log_changed(const PtagsLogContext *ctx, const ptags_plan *plan);

/* LimitExceeded while the audit socket cannot be opened for a reason that
 * may pass (no file descriptor or memory left): ptagsd makes no change it
 * cannot log. TRUE once it is open, and where the kernel has no audit. */
gboolean ptags_log_audit_ready(GError **error);

/* A change refused (authorization denied, or the apply failed): one journal
 * entry (PTAGS_RESULT: the D-Bus error name) and one audit record per change of @plan (may be NULL
 * when the refusal came before a plan existed); none when the caller's uid
 * has used up its refusal records, and then the next entry written for it
 * says in PTAGS_SUPPRESSED how many refusals were not logged. */
void ptags_log_refused(const PtagsLogContext *ctx, const ptags_plan *plan, const GError *error);

/* A change that failed after part of it was written, and whose undo
 * failed too (@error says so): the process holds part of @plan. Logged
 * like a refusal, but always (no refusal budget: the tags did change), at
 * error priority, with one audit record "op=ptags-partial" besides the
 * refused changes' records. */
void ptags_log_partial(const PtagsLogContext *ctx, const ptags_plan *plan, const GError *error);

/* The audit message body for one change ("op=... opid=TARGET caller_pid=...
 * uid=CALLER tag=..."), with the tag hex-encoded when it needs it; @tag may
 * be NULL. A @value (NULL: none) follows as value=, encoded the same way,
 * its first 256 bytes only (fewer after a long tag), and then value_len=
 * gives its length in bytes. (transfer full) */
char *ptags_audit_message(const char *op, const PtagsLogContext *ctx, const char *tag,
                          const char *value, size_t value_len);

/* A container registration attempt (@error NULL: it succeeded): one journal
 * entry and one audit record in the audit contid proposal's CONTAINER_OP
 * shape, "op=set opid=TARGET contid=ID old-contid=OLD" naming the caller,
 * with res= success or failed. @old is PTAGS_CONTID_UNSET when none or
 * unknown. A refused one draws on the caller uid's refusal budget, as in
 * ptags_log_refused. */
void ptags_log_container_set(const PtagsLogContext *ctx, guint64 contid, guint64 old,
                             const GError *error);

/* The last known process of container @contid has exited: "op=drop". */
void ptags_log_container_drop(guint64 contid, pid_t registrant_pid, uid_t registrant_uid);

/* The audit body of a container record, @ctx NULL for op=drop. (transfer full) */
char *ptags_audit_container_message(const char *op, const PtagsLogContext *ctx, guint64 contid,
                                    guint64 old);
/* Rate limiting of ptagsd's own diagnostics (warnings, criticals, messages):
 * one token bucket per message site, so a caller who can provoke a warning
 * cannot flood the journal. A site is the log domain plus the message with
 * its numbers blanked out. Each bucket holds PTAGS_LOG_BURST tokens and gains
 * one every PTAGS_LOG_REFILL_US; the first message let through after a
 * suppression says how many were dropped. */
#define PTAGS_LOG_BURST     10
#define PTAGS_LOG_REFILL_US (6 * (gint64)G_USEC_PER_SEC)

typedef struct _PtagsLogLimiter PtagsLogLimiter;

/* A limiter for diagnostics (PTAGS_LOG_BURST, PTAGS_LOG_REFILL_US). */
PtagsLogLimiter *ptags_log_limiter_new(void);
/* One whose buckets hold @burst tokens and gain one every @refill_us. */
PtagsLogLimiter *ptags_log_limiter_new_full(guint burst, gint64 refill_us);
void ptags_log_limiter_free(PtagsLogLimiter *l);

/* Whether a message of @domain (may be NULL) reading @message may be written
 * at @now_us (monotonic); when it may and earlier ones of its site were
 * dropped, *@suppressed is their number (else 0). */
gboolean ptags_log_limiter_allow(PtagsLogLimiter *l, const char *domain, const char *message,
                                 gint64 now_us, guint *suppressed);

/* The same for an item of bucket @key that costs @cost tokens (at most a
 * whole burst). When it may not be written, *@suppressed is the number
 * dropped since the last one written, this one included. */
gboolean ptags_log_limiter_take(PtagsLogLimiter *l, const char *key, guint cost, gint64 now_us,
                                guint *suppressed);

/* The same, drawing at once on @all's one bucket (every key's; may be
 * NULL): an item is written only when both have room, and is counted in
 * @key's bucket when not. *@shared (may be NULL) says whether @key shares
 * its bucket with other keys, as new keys do while the table is full. */
gboolean ptags_log_limiter_take_within(PtagsLogLimiter *l, const char *key, PtagsLogLimiter *all,
                                       guint cost, gint64 now_us, guint *suppressed,
                                       gboolean *shared);

/* Refusals are the records a caller can cause at will. Those of one uid other
 * than 0 draw on a bucket that gains @per_second records (a journal entry,
 * or an audit record) a second and holds PTAGS_REFUSAL_BURST_SECONDS times
 * that (the MaxRefusalRecords budget; 64 until this is called). */
#define PTAGS_REFUSAL_BURST_SECONDS 16
/* All uids' refusals together may write this many times one uid's budget:
 * many uids (a rootless container's range, say) cannot add up past it. */
#define PTAGS_REFUSAL_ALL_UIDS 4
void ptags_log_set_refusal_budget(guint per_second);

/* Messages other code logs as warnings that are no fault of ptagsd's (a
 * polkit check cancelled after polkitd answered it): logged at debug. */
gboolean ptags_log_is_noise(const char *domain, const char *message);

/* Install the process's log writer: noise demoted to debug, warnings and
 * above rate-limited, the rest to GLib's default writer. Call first in main(). */
void ptags_log_install_writer(void);

/* That writer (a GLogWriterFunc). Under systemd, where stderr is the
 * journal, it queues messages for the journal's writer thread (log-writer.h)
 * rather than wait on a journal that takes nothing. */
GLogWriterOutput ptags_log_write(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                                 gpointer user_data);
