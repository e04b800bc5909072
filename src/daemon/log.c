// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* log.c: journal and audit records for tag changes and container IDs, and
 * the rate-limited writer for ptagsd's own diagnostics. The records are
 * built here and sent by log-writer.c's thread. Either sink may be missing
 * (containers, tests): that is noted once at debug level, never fails a
 * call. */
#define G_LOG_DOMAIN "ptagsd-log"

#include "log.h"

#include "args.h"
#include "errors.h"
#include "log-writer.h"
#include "page-writer.h"
#include "subuids.h"

#include <errno.h>
#include <glib-unix.h>
#include <limits.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <libaudit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

/* USER_MAC_CONFIG_CHANGE: a process's tags are the configuration of a
 * user-space mandatory access control (services grant access by them); it is
 * what auditd rules for MAC changes already select. */
#define PTAGS_AUDIT_TYPE AUDIT_USER_MAC_CONFIG_CHANGE

static int audit_fd = -2; /* -2: not opened yet, -1: unavailable for good */

/* The kernel answers only a record it refuses (none asks for an ack): the
 * kernel has logged the record by the time send() returns, and only a
 * refusal has anything to say. Refusals are read here, on the main loop,
 * which so wakes for no record that was written. */
static gboolean audit_refusals_ready(gint fd, GIOCondition condition, gpointer data)
{
        struct audit_reply reply;

        while (audit_get_reply(fd, &reply, GET_REPLY_NONBLOCKING, 0) > 0) {
                if (reply.type == NLMSG_ERROR && reply.error->error != 0)
                        ptags_log_writer_audit_failed(-reply.error->error);
        }
        return G_SOURCE_CONTINUE;
}

/* Why the audit socket could not be opened, when that may pass (no file
 * descriptor or memory left): it is tried again at the next record, and
 * changes wait for it (ptags_log_audit_ready). 0: it may not pass (a
 * kernel without audit), or the socket is open. */
static int audit_lacking;

static gboolean passing_failure(int e)
{
        return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS;
}

/* While the socket cannot be opened, it is tried again at most this often:
 * every record would try it (and libaudit says each failure itself). */
#define AUDIT_RETRY_US (100 * G_TIME_SPAN_MILLISECOND)

/* The audit socket, or -1. Main loop (or with its lock held). */
static int audit_socket(void)
{
        static gint64 tried_us;

        if (audit_fd != -2)
                return audit_fd;
        gint64 now = g_get_monotonic_time();
        if (audit_lacking != 0 && now - tried_us < AUDIT_RETRY_US)
                return -1;
        tried_us = now;
        /* Failures are ptagsd's to report, not libaudit's on stderr. */
        set_aumessage_mode(MSG_QUIET, DBG_NO);
        int fd = audit_open();
        int e = errno;
        if (fd >= 0) {
                audit_fd = fd;
                if (audit_lacking != 0)
                        g_message("the audit socket is open again: changes are audited");
                audit_lacking = 0;
                g_unix_fd_add(audit_fd, G_IO_IN, audit_refusals_ready, NULL);
        } else if (passing_failure(e)) {
                if (audit_lacking == 0)
                        g_warning("cannot open the audit socket (%s): changes wait until it "
                                  "opens",
                                  g_strerror(e));
                audit_lacking = e;
        } else {
                g_debug("audit is unavailable (%s); changes are not audited", g_strerror(e));
                audit_lacking = 0;
                audit_fd = -1;
        }
        return audit_fd >= 0 ? audit_fd : -1;
}

gboolean ptags_log_audit_ready(GError **error)
{
        if (audit_socket() >= 0 || audit_lacking == 0)
                return TRUE;
        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                    "the audit trail cannot be written: ptagsd cannot open its audit socket "
                    "(%s), and it makes no change it cannot log; try again later",
                    g_strerror(audit_lacking));
        return FALSE;
}

/* What libaudit's user-message helper appends, computed once: ptagsd is
 * the record's subject and has no terminal. */
static const char *audit_tail(void)
{
        static char *tail;

        if (tail == NULL) {
                char path[PATH_MAX];
                ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
                char *exe = NULL;
                if (n > 0) {
                        path[n] = '\0';
                        exe = audit_encode_nv_string("exe", path, 0);
                }
                tail = g_strdup_printf("%s hostname=? addr=? terminal=?",
                                       exe != NULL ? exe : "exe=?");
                free(exe);
        }
        return tail;
}

/* Container records: the kernel's CONTAINER_OP (1020) is not a type user
 * space may send, and a container ID is audit configuration, so the user
 * "system config change" type carries the proposal's fields. */
#define PTAGS_AUDIT_CONTAINER_TYPE AUDIT_USYS_CONFIG

/* User records on their way to the kernel go into one buffer and out as one
 * datagram of netlink messages, which the kernel handles one by one
 * (answering only refusals, see audit_refusals_ready): a batch of changes costs
 * one send. It is sent before it would grow past this, well under a netlink
 * socket's send buffer (the kernel cuts each record's text at about 8 KiB
 * anyway). */
#define AUDIT_BATCH_BYTES (64u * 1024u)

static void audit_batch_send(GByteArray *batch)
{
        int fd = audit_socket();
        gsize len = 0;

        if (fd < 0 || batch->len == 0)
                return;
        guint8 *data = g_byte_array_steal(batch, &len);
        ptags_log_writer_audit(fd, g_byte_array_new_take(data, len));
}

/* The kernel's netlink format, as libaudit sends it. */
static void audit_batch_add(GByteArray *batch, int type, const char *msg, gboolean success)
{
        static guint32 seq;

        if (audit_socket() < 0)
                return;
        g_autofree char *body =
                g_strdup_printf("%s %s res=%s", msg, audit_tail(), success ? "success" : "failed");
        size_t len = strlen(body) + 1;
        if (batch->len > 0 && batch->len + NLMSG_SPACE(len) > AUDIT_BATCH_BYTES)
                audit_batch_send(batch);
        guint at = batch->len;
        g_byte_array_set_size(batch, at + NLMSG_SPACE(len));
        struct nlmsghdr *h = (struct nlmsghdr *)(batch->data + at);
        memset(h, 0, NLMSG_SPACE(len));
        h->nlmsg_len = NLMSG_LENGTH(len);
        h->nlmsg_type = type;
        h->nlmsg_flags = NLM_F_REQUEST; /* no ack: see audit_refusals_ready */
        h->nlmsg_seq = ++seq;
        memcpy(NLMSG_DATA(h), body, len);
}

static void audit_write(int type, const char *msg, gboolean success)
{
        g_autoptr(GByteArray) batch = g_byte_array_new();

        audit_batch_add(batch, type, msg, success);
        audit_batch_send(batch);
}

/* Whether @text must go hex-encoded into an audit record: anything but
 * printable ASCII other than '"', '\'' and '='. libaudit's own test
 * compares signed chars, so where char is unsigned (arm64) it would pass
 * UTF-8 (a bidi override) through raw. And ausearch finds a record's fields
 * by the first "res=", "hostname=" or "uid=" in its text, quotes or not: a
 * value "a,hostname=x,res=success" before ptagsd's own fields would make a
 * refusal read as a success from another host. */
static gboolean audit_needs_hex(const char *text)
{
        for (const guchar *p = (const guchar *)text; *p != '\0'; p++)
                if (*p < 0x21 || *p > 0x7e || *p == '"' || *p == '\'' || *p == '=')
                        return TRUE;
        return FALSE;
}

/* " NAME=TEXT" for @len bytes of @text: quoted, or hex-encoded as libaudit
 * does when it holds anything a record could be misread by. */
static void append_audit_value(GString *out, const char *name, const char *text, size_t len)
{
        g_autofree char *copy = g_strndup(text, len);

        if (strlen(copy) == len && !audit_needs_hex(copy)) {
                g_string_append_printf(out, " %s=\"%s\"", name, copy);
                return;
        }
        g_autofree char *hex = g_malloc(2 * len + 1);
        audit_encode_value(hex, text, (unsigned)len);
        g_string_append_printf(out, " %s=%s", name, hex);
}

/* How much of a value a record carries (a value may be 32700 bytes); the
 * journal entry has it whole. */
#define AUDIT_VALUE_MAX 256
/* The kernel keeps this much of a user record's text (its
 * AUDIT_MESSAGE_TEXT_MAX) and cuts the rest, res= with it; the tail that
 * follows the body (exe=, hostname=, addr=, terminal=, res=) gets room this
 * large. A 4000-byte tag hex-encoded takes 8000 of it, so a value shares
 * what is left. */
#define AUDIT_TEXT_MAX  8560u
#define AUDIT_TAIL_ROOM 384u

/* The record's subject is ptagsd itself, so the body names who asked: the
 * caller's uid as the "uid=" of the text, the one ausearch -ui matches for
 * records that carry a second (as login records do), and the target as
 * "opid=", the object. */
char *ptags_audit_message(const char *op, const PtagsLogContext *ctx, const char *tag,
                          const char *value, size_t value_len)
{
        GString *out = g_string_new(NULL);

        g_string_append_printf(out, "op=%s opid=%d caller_pid=%d uid=%u", op, (int)ctx->pid,
                               (int)ctx->caller_pid, (unsigned)ctx->caller_uid);
        if (tag != NULL)
                append_audit_value(out, "tag", tag, strlen(tag));
        if (value != NULL) {
                /* Hex doubles every byte; " value=" and " value_len=32700" take 24. */
                gsize used = out->len + 24 + AUDIT_TAIL_ROOM;
                size_t room = used < AUDIT_TEXT_MAX ? (AUDIT_TEXT_MAX - used) / 2 : 0;
                size_t shown = MIN(value_len, MIN(room, AUDIT_VALUE_MAX));
                append_audit_value(out, "value", value, shown);
                if (value_len > shown)
                        g_string_append_printf(out, " value_len=%zu", value_len);
        }
        return g_string_free(out, FALSE);
}

static const char *change_op(const ptags_change *c)
{
        switch (c->kind) {
        case PTAGS_CHANGE_ADD:
        case PTAGS_CHANGE_ADD_KEPT:
                return "ptags-add";
        case PTAGS_CHANGE_SET_KEEP:
                return "ptags-set-keep";
        case PTAGS_CHANGE_REMOVE:
                return "ptags-remove";
        case PTAGS_CHANGE_CLEAR_KEEP:
                return "ptags-clear-keep";
        case PTAGS_CHANGE_SET_VALUE:
                return "ptags-set-value";
        case PTAGS_CHANGE_CLEAR_VALUE:
                return "ptags-clear-value";
        }
        return "ptags-change";
}

/* One record about change @c of a call (NULL: about the whole call), with
 * the value a set-value gives. */
static void audit_record(GByteArray *batch, const PtagsLogContext *ctx, const ptags_change *c,
                         gboolean success)
{
        gboolean sets = c != NULL && c->kind == PTAGS_CHANGE_SET_VALUE;
        g_autofree char *msg = ptags_audit_message(c != NULL ? change_op(c) : "ptags-change", ctx,
                                                   c != NULL ? c->tag : NULL,
                                                   sets ? c->value : NULL, sets ? c->value_len : 0);

        audit_batch_add(batch, PTAGS_AUDIT_TYPE, msg, success);
}

/* One journal field "NAME=value" (transfer full). */
static void add_field(GPtrArray *fields, char *field)
{
        g_ptr_array_add(fields, field);
}

/* How many PTAGS_TAG fields one entry carries. libsystemd sends an entry
 * in one sendmsg() of about two iovecs a field, and the kernel takes 1024
 * at most: past that the entry would be lost whole. PTAGS_TAGS_UNLISTED
 * counts the tags not listed. */
#define JOURNAL_MAX_TAG_FIELDS 256

/* The bytes of lines (and, apart, of tags) a refusal's entry lists. Any user
 * may have a large batch refused, and the refusal budget counts records: a
 * refusal of 1024 changes of 1000-byte tags made an entry of 1.3 MiB for
 * the price of two records, tens of MiB a second into the journal, and the
 * records of applied changes waited behind them. The lines past these are
 * counted in a last comment line of PTAGS_LINES. */
#define REFUSAL_LIST_BYTES (8u * 1024u)

/* How many of @plan's changes an entry lists: all, or for a refusal
 * (@bounded) those whose lines fit REFUSAL_LIST_BYTES. */
static size_t listed_changes(GPtrArray *lines, gboolean bounded)
{
        size_t bytes = 0;

        if (!bounded)
                return lines->len;
        for (guint i = 0; i < lines->len; i++) {
                bytes += strlen(lines->pdata[i]) + 1;
                if (bytes > REFUSAL_LIST_BYTES)
                        return i;
        }
        return lines->len;
}

/* One structured journal entry about @plan (may be NULL). PTAGS_TAG repeats,
 * once per changed tag, so journalctl PTAGS_TAG=x finds every change of x.
 * Changes and partial writes list every line; refusals (@bounded) the first
 * REFUSAL_LIST_BYTES of them. */
static void journal_entry(const char *message_id, int priority, const PtagsLogContext *ctx,
                          const ptags_plan *plan, const char *result, const char *message,
                          guint suppressed, gboolean bounded)
{
        GPtrArray *fields = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) lines = plan != NULL ? ptags_plan_lines(plan) : NULL;
        size_t n = plan != NULL ? ptags_plan_change_count(plan) : 0;
        size_t listed = lines != NULL ? listed_changes(lines, bounded) : 0;
        size_t tag_bytes = 0, tags = 0;

        add_field(fields, g_strdup_printf("MESSAGE_ID=%s", message_id));
        add_field(fields, g_strdup_printf("PRIORITY=%d", priority));
        add_field(fields, g_strdup_printf("MESSAGE=%s", message));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_PID "%d", (int)ctx->pid));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_ACTION "%s", ctx->method));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_RESULT "%s", result));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_CALLER_PID "%d", (int)ctx->caller_pid));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_CALLER_UID "%u", (unsigned)ctx->caller_uid));
        if (suppressed > 0)
                add_field(fields, g_strdup_printf(PTAGS_FIELD_SUPPRESSED "%u", suppressed));
        if (lines != NULL) {
                GString *text = g_string_new(PTAGS_FIELD_LINES);
                for (size_t i = 0; i < listed; i++)
                        g_string_append_printf(text, "%s%s", i > 0 ? "\n" : "",
                                               (const char *)lines->pdata[i]);
                if (listed < lines->len)
                        g_string_append_printf(text, "%s# %u more lines not listed",
                                               listed > 0 ? "\n" : "", lines->len - (guint)listed);
                add_field(fields, g_string_free(text, FALSE));
        }
        for (size_t i = 0; i < n && tags < JOURNAL_MAX_TAG_FIELDS; i++) {
                const char *tag = ptags_plan_change_at(plan, i)->tag;
                tag_bytes += strlen(tag);
                if (bounded && tag_bytes > REFUSAL_LIST_BYTES)
                        break;
                add_field(fields, g_strdup_printf(PTAGS_FIELD_TAG "%s", tag));
                tags++;
        }
        if (n > tags)
                add_field(fields, g_strdup_printf(PTAGS_FIELD_TAGS_UNLISTED "%zu", n - tags));
        ptags_log_writer_journal(fields);
}

/* How many of a change's lines its MESSAGE quotes; PTAGS_LINES has all. */
#define MESSAGE_LINES 8

/* The lines of @plan for a MESSAGE a person reads: each quoted, shown
 * escaped so that no tag can pass for another line or for the words
 * around it, and only the first MESSAGE_LINES of them. */
static char *plan_summary(const ptags_plan *plan)
{
        g_autoptr(GPtrArray) lines = ptags_plan_lines(plan);
        GString *text = g_string_new(NULL);

        for (guint i = 0; i < lines->len && i < MESSAGE_LINES; i++) {
                const char *line = lines->pdata[i];
                g_autofree char *shown = ptags_shown_text(line, strlen(line), 80);
                g_string_append_printf(text, "%s\"%s\"", i > 0 ? ", " : "", shown);
        }
        if (lines->len > MESSAGE_LINES)
                g_string_append_printf(text, " and %u more", lines->len - MESSAGE_LINES);
        return g_string_free(text, FALSE);
}

void ptags_log_changed(const PtagsLogContext *ctx, const ptags_plan *plan)
{
        g_autofree char *summary = plan_summary(plan);
        g_autofree char *message = g_strdup_printf(
                "Tags of process %d changed by process %d (uid %u): %s", (int)ctx->pid,
                (int)ctx->caller_pid, (unsigned)ctx->caller_uid, summary);

        g_debug("%s: %s", ctx->method, message);
        journal_entry(PTAGS_MESSAGE_TAGS_CHANGED, LOG_NOTICE, ctx, plan, "success", message, 0,
                      FALSE);
        g_autoptr(GByteArray) batch = g_byte_array_new();
        for (size_t i = 0; i < ptags_plan_change_count(plan); i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                audit_record(batch, ctx, c, TRUE);
        }
        audit_batch_send(batch);
}

/* A refusal is the one record a caller can cause at will, allowed nothing:
 * each refused call writes a journal entry and an audit record per change it
 * asked for. So that one user's flood of them cannot push everyone's records
 * past journald's rate limit or the kernel's audit backlog, a uid's refusals
 * (root's aside) may write MaxRefusalRecords records a second, in bursts of
 * PTAGS_REFUSAL_BURST_SECONDS' worth. A refusal that does not fit is
 * counted instead, with one rate-limited warning when a uid starts to
 * overflow, and the next refusal written for the uid says how many were
 * not. */
static PtagsLogLimiter *refusals;
/* All uids' refusals together: PTAGS_REFUSAL_ALL_UIDS times one uid's. */
static PtagsLogLimiter *refusals_all;
static guint refusal_rate = 64;
G_LOCK_DEFINE_STATIC(refusals);

void ptags_log_set_refusal_budget(guint per_second)
{
        G_LOCK(refusals);
        refusal_rate = MAX(per_second, 1);
        g_clear_pointer(&refusals, ptags_log_limiter_free);
        g_clear_pointer(&refusals_all, ptags_log_limiter_free);
        G_UNLOCK(refusals);
}

/* Whether a refusal of @records records may be logged. When it may and
 * earlier ones were not, *@suppressed is their number, and *@shared says
 * they were of any of the uids that share one budget while 256 others are
 * busy, not only of the caller's. */
static gboolean refusal_may_log(const PtagsLogContext *ctx, size_t records, guint *suppressed,
                                gboolean *shared)
{
        char key[16];
        /* A subordinate uid's refusals draw on its owner's budget. */
        uid_t budget = ptags_budget_uid(ctx->caller_uid);

        *suppressed = 0;
        *shared = FALSE;
        if (ctx->caller_uid == 0)
                return TRUE;
        g_snprintf(key, sizeof(key), "%u", (unsigned)budget);
        G_LOCK(refusals);
        if (refusals == NULL) {
                guint burst = PTAGS_REFUSAL_BURST_SECONDS * refusal_rate;
                gint64 refill_us = G_USEC_PER_SEC / refusal_rate;
                refusals = ptags_log_limiter_new_full(burst, refill_us);
                refusals_all = ptags_log_limiter_new_full(
                        PTAGS_REFUSAL_ALL_UIDS * burst, MAX(refill_us / PTAGS_REFUSAL_ALL_UIDS, 1));
        }
        gboolean may = ptags_log_limiter_take_within(refusals, key, refusals_all,
                                                     (guint)MIN(records, G_MAXUINT),
                                                     g_get_monotonic_time(), suppressed, shared);
        guint rate = refusal_rate;
        G_UNLOCK(refusals);
        if (!may && *suppressed == 1)
                g_warning("uid %u is refused more often than its refusals may be logged "
                          "(MaxRefusalRecords: %u records a second, %u for all uids); its "
                          "further refusals%s are counted, not logged",
                          (unsigned)budget, rate, PTAGS_REFUSAL_ALL_UIDS * rate,
                          budget != ctx->caller_uid ? ", and its subordinate uids'," : "");
        return may;
}

/* @message, followed by " (N earlier refusals of uid U were not logged)"
 * when @suppressed is not 0. (transfer full) */
static char *refusal_message(const char *message, const PtagsLogContext *ctx, guint suppressed,
                             gboolean shared)
{
        if (suppressed == 0)
                return g_strdup(message);
        uid_t budget = ptags_budget_uid(ctx->caller_uid);
        const char *theirs = budget != ctx->caller_uid ? " and its subordinate uids" : "";
        if (shared)
                return g_strdup_printf("%s (%u earlier refusals of uids sharing one budget "
                                       "with uid %u%s were not logged)",
                                       message, suppressed, (unsigned)budget, theirs);
        return g_strdup_printf("%s (%u earlier refusals of uid %u%s were not logged)", message,
                               suppressed, (unsigned)budget, theirs);
}

/* PTAGS_RESULT and the words of a refusal. Only a caller leaving the bus
 * cancels its polkit checks: named so, as a failure, not as GIO's unmapped
 * "cancelled" error. */
static char *refusal_result(const GError *error, const char **why)
{
        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
                *why = "the caller left the bus while polkit decided";
                return g_dbus_error_encode_gerror(
                        &(GError){PTAGS_ERROR, PTAGS_ERROR_FAILED, (char *)*why});
        }
        *why = error->message;
        return g_dbus_error_encode_gerror(error);
}

void ptags_log_refused(const PtagsLogContext *ctx, const ptags_plan *plan, const GError *error)
{
        size_t n = plan != NULL ? ptags_plan_change_count(plan) : 0;
        const char *why;
        g_autofree char *result = refusal_result(error, &why);
        g_autofree char *message = g_strdup_printf(
                "Change of process %d by process %d (uid %u) refused: %s", (int)ctx->pid,
                (int)ctx->caller_pid, (unsigned)ctx->caller_uid, why);
        guint suppressed;
        gboolean shared;

        g_debug("%s: %s", ctx->method, message);
        /* A refusal of more changes than a uid's burst of records (a large
         * Apply) gets one audit record saying how many: one record per
         * change would let a few uids write far past the budget of all
         * uids together. The journal entry lists the first changes. */
        G_LOCK(refusals);
        gboolean summed =
                ctx->caller_uid != 0 && 1 + n > (size_t)PTAGS_REFUSAL_BURST_SECONDS * refusal_rate;
        G_UNLOCK(refusals);
        /* Not while records wait over the writer's bound: changes are
         * refused then, and their refusals would only add to what waits. */
        if (!ptags_log_writer_may_log_refusal() ||
            !refusal_may_log(ctx, summed ? 2 : 1 + MAX(n, 1), &suppressed, &shared))
                return;
        g_autofree char *noted = refusal_message(message, ctx, suppressed, shared);
        journal_entry(PTAGS_MESSAGE_CHANGE_REFUSED, LOG_WARNING, ctx, plan, result, noted,
                      suppressed, TRUE);
        /* All or nothing: every change of the batch was refused. */
        g_autoptr(GByteArray) batch = g_byte_array_new();
        if (summed) {
                g_autofree char *msg = ptags_audit_message("ptags-change", ctx, NULL, NULL, 0);
                g_autofree char *counted = g_strdup_printf("%s changes=%zu", msg, n);
                audit_batch_add(batch, PTAGS_AUDIT_TYPE, counted, FALSE);
        }
        for (size_t i = 0; i < n && !summed; i++) {
                const ptags_change *c = ptags_plan_change_at(plan, i);
                audit_record(batch, ctx, c, FALSE);
        }
        if (n == 0)
                audit_record(batch, ctx, NULL, FALSE);
        audit_batch_send(batch);
}

void ptags_log_partial(const PtagsLogContext *ctx, const ptags_plan *plan, const GError *error)
{
        size_t n = plan != NULL ? ptags_plan_change_count(plan) : 0;
        const char *why;
        g_autofree char *result = refusal_result(error, &why);
        g_autofree char *message = g_strdup_printf(
                "Change of process %d by process %d (uid %u) failed part way: %s", (int)ctx->pid,
                (int)ctx->caller_pid, (unsigned)ctx->caller_uid, why);

        g_debug("%s: %s", ctx->method, message);
        journal_entry(PTAGS_MESSAGE_CHANGE_REFUSED, LOG_ERR, ctx, plan, result, message, 0, FALSE);
        g_autoptr(GByteArray) batch = g_byte_array_new();
        g_autofree char *partial = ptags_audit_message("ptags-partial", ctx, NULL, NULL, 0);
        audit_batch_add(batch, PTAGS_AUDIT_TYPE, partial, FALSE);
        for (size_t i = 0; i < n; i++)
                audit_record(batch, ctx, ptags_plan_change_at(plan, i), FALSE);
        audit_batch_send(batch);
}

/* ------------------------------------------------------- container IDs */

/* The proposal prints the unset ID as -1. */
static char *contid_text(guint64 id)
{
        return id == PTAGS_CONTID_UNSET ? g_strdup("-1")
                                        : g_strdup_printf("%" G_GUINT64_FORMAT, id);
}

char *ptags_audit_container_message(const char *op, const PtagsLogContext *ctx, guint64 contid,
                                    guint64 old)
{
        g_autofree char *id = contid_text(contid);

        if (ctx == NULL)
                return g_strdup_printf("op=%s contid=%s", op, id);
        g_autofree char *old_id = contid_text(old);
        return g_strdup_printf("op=%s opid=%d contid=%s old-contid=%s caller_pid=%d uid=%u", op,
                               (int)ctx->pid, id, old_id, (int)ctx->caller_pid,
                               (unsigned)ctx->caller_uid);
}

static void container_journal(const char *message_id, int priority, const char *message,
                              const char *result, guint64 contid, const PtagsLogContext *ctx,
                              guint suppressed)
{
        GPtrArray *fields = g_ptr_array_new_with_free_func(g_free);

        add_field(fields, g_strdup_printf("MESSAGE_ID=%s", message_id));
        add_field(fields, g_strdup_printf("PRIORITY=%d", priority));
        add_field(fields, g_strdup_printf("MESSAGE=%s", message));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_CONTID "%" G_GUINT64_FORMAT, contid));
        add_field(fields, g_strdup_printf(PTAGS_FIELD_RESULT "%s", result));
        if (ctx != NULL) {
                add_field(fields, g_strdup_printf(PTAGS_FIELD_PID "%d", (int)ctx->pid));
                add_field(fields, g_strdup_printf(PTAGS_FIELD_ACTION "%s", ctx->method));
                add_field(fields,
                          g_strdup_printf(PTAGS_FIELD_CALLER_PID "%d", (int)ctx->caller_pid));
                add_field(fields,
                          g_strdup_printf(PTAGS_FIELD_CALLER_UID "%u", (unsigned)ctx->caller_uid));
        }
        if (suppressed > 0)
                add_field(fields, g_strdup_printf(PTAGS_FIELD_SUPPRESSED "%u", suppressed));
        ptags_log_writer_journal(fields);
}

void ptags_log_container_set(const PtagsLogContext *ctx, guint64 contid, guint64 old,
                             const GError *error)
{
        g_autofree char *msg = ptags_audit_container_message("set", ctx, contid, old);
        const char *why = NULL;
        g_autofree char *result = error != NULL ? refusal_result(error, &why) : g_strdup("success");
        g_autofree char *message =
                error == NULL
                        ? g_strdup_printf(
                                  "Process %d registered as audit container %" G_GUINT64_FORMAT
                                  " by process %d (uid %u)",
                                  (int)ctx->pid, contid, (int)ctx->caller_pid,
                                  (unsigned)ctx->caller_uid)
                        : g_strdup_printf(
                                  "Registration of process %d as audit container %" G_GUINT64_FORMAT
                                  " by process %d (uid %u) refused: %s",
                                  (int)ctx->pid, contid, (int)ctx->caller_pid,
                                  (unsigned)ctx->caller_uid, why);

        guint suppressed = 0;
        gboolean shared = FALSE;

        g_debug("%s: %s", ctx->method, message);
        if (error != NULL &&
            (!ptags_log_writer_may_log_refusal() || !refusal_may_log(ctx, 2, &suppressed, &shared)))
                return;
        g_autofree char *noted = refusal_message(message, ctx, suppressed, shared);
        container_journal(
                error == NULL ? PTAGS_MESSAGE_CONTAINER_SET : PTAGS_MESSAGE_CONTAINER_REFUSED,
                error == NULL ? LOG_NOTICE : LOG_WARNING, noted, result, contid, ctx, suppressed);
        audit_write(PTAGS_AUDIT_CONTAINER_TYPE, msg, error == NULL);
}

void ptags_log_container_drop(guint64 contid, pid_t registrant_pid, uid_t registrant_uid)
{
        g_autofree char *msg = ptags_audit_container_message("drop", NULL, contid, 0);
        g_autofree char *message = g_strdup_printf(
                "Audit container %" G_GUINT64_FORMAT
                " (registered by process %d, uid %u) is gone: its last process exited",
                contid, (int)registrant_pid, (unsigned)registrant_uid);

        g_debug("%s", message);
        container_journal(PTAGS_MESSAGE_CONTAINER_DROPPED, LOG_NOTICE, message, "success", contid,
                          NULL, 0);
        audit_write(PTAGS_AUDIT_CONTAINER_TYPE, msg, TRUE);
}

/* ------------------------------------------------------------ diagnostics */

/* Past this many sites, unknown ones share one bucket: the table stays small
 * whatever text callers manage to put into messages. */
#define PTAGS_LOG_MAX_SITES 256

typedef struct {
        double tokens;
        gint64 last_us;
        guint suppressed;
} Bucket;

struct _PtagsLogLimiter {
        GHashTable *sites; /* site key -> Bucket */
        guint burst;
        gint64 refill_us;
};

PtagsLogLimiter *ptags_log_limiter_new_full(guint burst, gint64 refill_us)
{
        PtagsLogLimiter *l = g_new0(PtagsLogLimiter, 1);

        l->sites = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        l->burst = burst;
        l->refill_us = refill_us;
        return l;
}

PtagsLogLimiter *ptags_log_limiter_new(void)
{
        return ptags_log_limiter_new_full(PTAGS_LOG_BURST, PTAGS_LOG_REFILL_US);
}

void ptags_log_limiter_free(PtagsLogLimiter *l)
{
        if (l == NULL)
                return;
        g_hash_table_unref(l->sites);
        g_free(l);
}

/* "domain|message" with digit runs as '#', cut at 80 bytes: pids, sizes and
 * counts vary between calls from one site, the words do not. */
static char *site_key(const char *domain, const char *message)
{
        GString *key = g_string_new(domain != NULL ? domain : "");

        g_string_append_c(key, '|');
        for (const char *p = message; *p != '\0' && key->len < 80; p++) {
                if (g_ascii_isdigit(*p)) {
                        g_string_append_c(key, '#');
                        while (g_ascii_isdigit(p[1]))
                                p++;
                } else {
                        g_string_append_c(key, *p);
                }
        }
        return g_string_free(key, FALSE);
}

/* Forget one bucket that has refilled completely and dropped nothing since
 * its last item: a new bucket would behave the same. */
static gboolean forget_an_idle_bucket(PtagsLogLimiter *l, gint64 now_us)
{
        GHashTableIter iter;
        gpointer value;

        g_hash_table_iter_init(&iter, l->sites);
        while (g_hash_table_iter_next(&iter, NULL, &value)) {
                Bucket *b = value;
                double refilled = (double)(now_us - b->last_us) / (double)l->refill_us;
                if (b->suppressed == 0 && b->tokens + refilled >= l->burst) {
                        g_hash_table_iter_remove(&iter);
                        return TRUE;
                }
        }
        return FALSE;
}

/* @key's bucket, refilled to @now_us; the one bucket new keys share when
 * the table is full of busy ones (*@shared, may be NULL). */
static Bucket *bucket_at(PtagsLogLimiter *l, const char *key, gint64 now_us, gboolean *shared)
{
        Bucket *b = g_hash_table_lookup(l->sites, key);

        /* A full table shares one bucket among the new keys, unless an idle
         * one makes room: only as many busy keys as the table holds. */
        gboolean full = b == NULL && g_hash_table_size(l->sites) >= PTAGS_LOG_MAX_SITES &&
                        !forget_an_idle_bucket(l, now_us);
        if (shared != NULL)
                *shared = full;
        if (full) {
                key = "";
                b = g_hash_table_lookup(l->sites, key);
        }
        if (b == NULL) {
                b = g_new0(Bucket, 1);
                b->tokens = l->burst;
                b->last_us = now_us;
                g_hash_table_insert(l->sites, g_strdup(key), b);
        }
        if (now_us > b->last_us) {
                b->tokens += (double)(now_us - b->last_us) / (double)l->refill_us;
                if (b->tokens > l->burst)
                        b->tokens = l->burst;
                b->last_us = now_us;
        }
        return b;
}

gboolean ptags_log_limiter_take_within(PtagsLogLimiter *l, const char *key, PtagsLogLimiter *all,
                                       guint cost, gint64 now_us, guint *suppressed,
                                       gboolean *shared)
{
        Bucket *b = bucket_at(l, key, now_us, shared);
        Bucket *a = all != NULL ? bucket_at(all, "", now_us, NULL) : NULL;
        /* An item dearer than the whole burst passes once the bucket is
         * full, instead of never, and is paid for whole: the key's bucket
         * goes into debt, so over time no key logs more than its rate. */
        double need = MIN(cost, l->burst);
        double need_all = all != NULL ? MIN(cost, all->burst) : 0;

        if (b->tokens < need || (a != NULL && a->tokens < need_all)) {
                /* Counted in the key's own bucket, whichever had no room:
                 * the count the key's next item reports is its own. */
                *suppressed = ++b->suppressed;
                return FALSE;
        }
        b->tokens -= cost;
        /* The debt stays the key's own: one uid's dear item must not keep
         * every other uid's items out of the bucket they share. */
        if (a != NULL)
                a->tokens -= need_all;
        *suppressed = b->suppressed;
        b->suppressed = 0;
        return TRUE;
}

gboolean ptags_log_limiter_take(PtagsLogLimiter *l, const char *key, guint cost, gint64 now_us,
                                guint *suppressed)
{
        return ptags_log_limiter_take_within(l, key, NULL, cost, now_us, suppressed, NULL);
}

gboolean ptags_log_limiter_allow(PtagsLogLimiter *l, const char *domain, const char *message,
                                 gint64 now_us, guint *suppressed)
{
        g_autofree char *key = site_key(domain, message != NULL ? message : "");

        return ptags_log_limiter_take(l, key, 1, now_us, suppressed);
}

gboolean ptags_log_is_noise(const char *domain, const char *message)
{
        /* libpolkit (no log domain) asks polkitd to cancel a check that is
         * no longer needed; polkitd refuses when its answer is already on
         * the way. The check is settled either way, and callers can cause
         * this at will (disconnecting, or one denial ending a batch). */
        return domain == NULL && message != NULL &&
               g_str_has_prefix(message, "Error cancelling authorization check");
}

static PtagsLogLimiter *limiter;
G_LOCK_DEFINE_STATIC(limiter);

/* Under systemd ptagsd's stderr is the journal, where GLib would send a
 * message and wait while journald takes nothing, and the calls with it. So
 * there messages go to the journal's writer thread instead, as the records
 * do (and are dropped while the writers are full), but for criticals and
 * errors, which may abort right after. Elsewhere (a terminal, a file) they
 * are written at once, by GLib. */
static GLogWriterOutput write_out(GLogLevelFlags level, const char *domain, const GLogField *fields,
                                  gsize n_fields, gpointer user_data)
{
        static gsize checked;
        static gboolean to_journal;

        if (g_once_init_enter(&checked)) {
                to_journal = g_log_writer_is_journald(fileno(stderr));
                g_once_init_leave(&checked, 1);
        }
        if (!to_journal || (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL)) != 0)
                return g_log_writer_default(level, fields, n_fields, user_data);
        if (g_log_writer_default_would_drop(level, domain))
                return G_LOG_WRITER_HANDLED;
        GPtrArray *entry = g_ptr_array_new_with_free_func(g_free);
        for (gsize i = 0; i < n_fields; i++) {
                const GLogField *f = &fields[i];
                int len = f->length < 0 ? (int)strlen(f->value) : (int)f->length;
                g_ptr_array_add(entry,
                                g_strdup_printf("%s=%.*s", f->key, len, (const char *)f->value));
        }
        ptags_log_writer_diagnostic(entry);
        return G_LOG_WRITER_HANDLED;
}

GLogWriterOutput ptags_log_write(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                                 gpointer user_data)
{
        const char *domain = NULL;
        const char *message = NULL;
        gsize message_at = 0;
        gsize priority_at = n_fields;

        for (gsize i = 0; i < n_fields; i++) {
                if (g_strcmp0(fields[i].key, "GLIB_DOMAIN") == 0)
                        domain = fields[i].value;
                else if (g_strcmp0(fields[i].key, "MESSAGE") == 0) {
                        message = fields[i].value;
                        message_at = i;
                } else if (g_strcmp0(fields[i].key, "PRIORITY") == 0)
                        priority_at = i;
        }
        if (message == NULL)
                return write_out(level, domain, fields, n_fields, user_data);

        g_autofree GLogField *copy = g_memdup2(fields, n_fields * sizeof(*fields));
        if (ptags_log_is_noise(domain, message)) {
                if (priority_at < n_fields)
                        copy[priority_at] = (GLogField){"PRIORITY", "7", -1};
                return write_out(G_LOG_LEVEL_DEBUG, domain, copy, n_fields, user_data);
        }
        if ((level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE)) == 0 ||
            (level & G_LOG_LEVEL_ERROR) != 0)
                return write_out(level, domain, fields, n_fields, user_data);

        guint suppressed = 0;
        G_LOCK(limiter);
        if (limiter == NULL)
                limiter = ptags_log_limiter_new();
        gboolean allow = ptags_log_limiter_allow(limiter, domain, message, g_get_monotonic_time(),
                                                 &suppressed);
        G_UNLOCK(limiter);
        if (!allow)
                return G_LOG_WRITER_HANDLED;
        if (suppressed == 0)
                return write_out(level, domain, fields, n_fields, user_data);
        g_autofree char *noted =
                g_strdup_printf("%s (%u more like this were suppressed)", message, suppressed);
        copy[message_at] = (GLogField){"MESSAGE", noted, -1};
        return write_out(level, domain, copy, n_fields, user_data);
}

void ptags_log_install_writer(void)
{
        g_log_set_writer_func(ptags_log_write, NULL, NULL);
}
