// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* log-writer.c: one thread sends every journal entry and audit record, in
 * the order they were queued; see log-writer.h. */
#define G_LOG_DOMAIN "ptagsd-log"

#include "log-writer.h"

#include "errors.h"

#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

typedef struct {
        GPtrArray *fields; /* a journal entry, or NULL */
        GByteArray *audit; /* a datagram of audit records, or NULL */
        int audit_fd;
        gsize bytes; /* what it holds, as counted against the bound */
} Record;

/* pthread's own, not GLib's: ThreadSanitizer sees what they order. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued_cond = PTHREAD_COND_INITIALIZER;  /* a record was queued */
static pthread_cond_t drained_cond = PTHREAD_COND_INITIALIZER; /* a record was sent */
static GQueue queue;                                           /* Record *, oldest first */
static gsize waiting_bytes; /* of queued records and the one being sent */
static guint waiting;       /* their number */
static GThread *thread;
static guint dropped; /* refusals not logged while full, not yet reported */
static gint audit_failure_noted;

void ptags_log_writer_audit_failed(int errnum)
{
        if (g_atomic_int_compare_and_exchange(&audit_failure_noted, 0, 1))
                g_debug("cannot write audit records: %s", g_strerror(errnum));
}

static void journal_send(GPtrArray *fields)
{
        static gint failure_noted;
        g_autofree struct iovec *iov = g_new(struct iovec, fields->len);

        for (guint i = 0; i < fields->len; i++)
                iov[i] = (struct iovec){fields->pdata[i], strlen(fields->pdata[i])};
        int r = sd_journal_sendv(iov, (int)fields->len);
        if (r < 0 && g_atomic_int_compare_and_exchange(&failure_noted, 0, 1))
                g_debug("cannot write to the journal: %s", g_strerror(-r));
}

static void audit_send(int fd, GByteArray *datagram)
{
        struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
        ssize_t n;

        do
                n = sendto(fd, datagram->data, datagram->len, 0, (struct sockaddr *)&kernel,
                           sizeof(kernel));
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)datagram->len)
                ptags_log_writer_audit_failed(n < 0 ? errno : EMSGSIZE);
}

static void record_free(Record *r)
{
        if (r->fields != NULL)
                g_ptr_array_unref(r->fields);
        if (r->audit != NULL)
                g_byte_array_unref(r->audit);
        g_free(r);
}

#define GATHER_US 1000

static gpointer writer_main(G_GNUC_UNUSED gpointer data)
{
        for (;;) {
                pthread_mutex_lock(&lock);
                if (g_queue_is_empty(&queue)) {
                        while (g_queue_is_empty(&queue))
                                pthread_cond_wait(&queued_cond, &lock);
                        /* Woken for a record: let more come first. Waking
                         * this thread costs about as much as a send, and
                         * while it sleeps here records are queued without
                         * waking it, so under load one wake-up serves many
                         * changes; a record waits GATHER_US longer. */
                        pthread_mutex_unlock(&lock);
                        g_usleep(GATHER_US);
                        pthread_mutex_lock(&lock);
                }
                Record *r = g_queue_pop_head(&queue);
                pthread_mutex_unlock(&lock);

                if (r->fields != NULL)
                        journal_send(r->fields);
                else
                        audit_send(r->audit_fd, r->audit);

                pthread_mutex_lock(&lock);
                waiting_bytes -= r->bytes;
                waiting--;
                guint unlogged = 0;
                if (dropped > 0 && waiting_bytes < PTAGS_LOG_BACKLOG_BYTES) {
                        unlogged = dropped;
                        dropped = 0;
                }
                pthread_cond_broadcast(&drained_cond);
                pthread_mutex_unlock(&lock);
                record_free(r);
                /* Said here, not where they were dropped: this thread may
                 * wait on the journal, the calls may not. */
                if (unlogged > 0)
                        g_warning("%u refusals were not logged while the journal or the audit "
                                  "trail took no records",
                                  unlogged);
        }
        return NULL;
}

static void push(Record *r)
{
        pthread_mutex_lock(&lock);
        /* Started at the first record; it lives as long as ptagsd, which
         * writes what waits before it exits, however it exits (but killed). */
        if (thread == NULL) {
                thread = g_thread_new("ptagsd-log", writer_main, NULL);
                atexit(ptags_log_writer_flush);
        }
        g_queue_push_tail(&queue, r);
        waiting_bytes += r->bytes;
        waiting++;
        pthread_cond_signal(&queued_cond);
        pthread_mutex_unlock(&lock);
}

void ptags_log_writer_journal(GPtrArray *fields)
{
        Record *r = g_new0(Record, 1);

        r->fields = fields;
        for (guint i = 0; i < fields->len; i++)
                r->bytes += strlen(fields->pdata[i]) + 1;
        push(r);
}

void ptags_log_writer_audit(int fd, GByteArray *datagram)
{
        Record *r = g_new0(Record, 1);

        r->audit = datagram;
        r->audit_fd = fd;
        r->bytes = datagram->len;
        push(r);
}

static gsize backlog(void)
{
        pthread_mutex_lock(&lock);
        gsize bytes = waiting_bytes;
        pthread_mutex_unlock(&lock);
        return bytes;
}

gboolean ptags_log_writer_may_log_refusal(void)
{
        pthread_mutex_lock(&lock);
        gboolean full = waiting_bytes >= PTAGS_LOG_BACKLOG_BYTES;
        if (full)
                dropped++;
        pthread_mutex_unlock(&lock);
        return !full;
}

gboolean ptags_log_writer_has_room(GError **error)
{
        gsize bytes = backlog();

        if (bytes < PTAGS_LOG_BACKLOG_BYTES)
                return TRUE;
        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                    "the journal or the audit trail is not taking records: %" G_GSIZE_FORMAT
                    " KiB of them wait to be written, and ptagsd makes no change it cannot "
                    "log; try again later",
                    bytes / 1024);
        return FALSE;
}

void ptags_log_writer_flush(void)
{
        pthread_mutex_lock(&lock);
        while (waiting > 0)
                pthread_cond_wait(&drained_cond, &lock);
        pthread_mutex_unlock(&lock);
}
