// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* log-writer.h: the thread that hands journal entries and audit records to
 * journald and the kernel. Both sends can block: journald's socket while it
 * takes nothing in, the kernel's audit socket while its backlog is full. Sent
 * here, they stall neither the main loop nor GDBus's worker thread, so reads
 * go on meanwhile. What waits is bounded: a change is refused while
 * PTAGS_LOG_BACKLOG_BYTES or more wait (so at most that and one change's
 * records wait), as ptagsd makes no change it cannot log. Records still
 * waiting when ptagsd is killed, or 5 s after it began to exit, are lost. */
#pragma once

#include <glib.h>

#define PTAGS_LOG_BACKLOG_BYTES (2u * 1024u * 1024u)

/* Queue one journal entry: @fields are its "NAME=value" strings (transfer
 * full; every field one string, so any byte but '\n' in NAME is allowed). */
void ptags_log_writer_journal(GPtrArray *fields);

/* Queue one of ptagsd's own messages for the journal, as GLib's fields
 * "NAME=value" (transfer full): dropped while the bound is reached. */
void ptags_log_writer_diagnostic(GPtrArray *fields);

/* Queue one datagram of audit netlink messages for the socket @fd (transfer
 * full). */
void ptags_log_writer_audit(int fd, GByteArray *datagram);

/* Whether a change may be made now: FALSE, with LimitExceeded in @error,
 * while PTAGS_LOG_BACKLOG_BYTES or more of records wait to be sent. */
gboolean ptags_log_writer_has_room(GError **error);

/* Whether a refusal may be logged: not while half the bound or more waits
 * (the rest is kept for applied changes), when it is counted instead and
 * the count reported by a warning once records are written again. */
gboolean ptags_log_writer_may_log_refusal(void);

/* Wait until every record queued so far has been sent (or refused by its
 * sink). At exit ptagsd waits so, for at most 5 s. */
void ptags_log_writer_flush(void);

/* While held, records wait and no writer thread starts: ptagsd holds them
 * while it starts, so that every thread it has is made after it dropped the
 * capabilities its backend does not need (credentials are per thread).
 * Releasing starts the writers of the records that wait. */
void ptags_log_writer_hold(gboolean hold);

/* A failing audit sink is noted once, at debug level, wherever it shows. */
void ptags_log_writer_audit_failed(int errnum);
