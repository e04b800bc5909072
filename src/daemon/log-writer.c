// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* log-writer.c: a thread per sink, the journal's and the audit trail's,
 * each sending its records in the order they were queued, so that either
 * sink may stall without holding up the other's records; see
 * log-writer.h. */
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
#include <time.h>
#include <unistd.h>

typedef struct {
        GPtrArray *fields; /* a journal entry, or NULL */
        GByteArray *audit; /* a datagram of audit records, or NULL */
        int audit_fd;
        gsize bytes; /* what it holds, as counted against the bound */
} Record;

typedef struct {
        const char *name; /* as errors say it */
        const char *thread_name;
        pthread_cond_t queued; /* a record was queued */
        GQueue queue;          /* Record *, oldest first */
        gsize bytes;           /* of its queued records and the one being sent */
        GThread *thread;
} Sink;

/* pthread's own, not GLib's: ThreadSanitizer sees what they order. One lock
 * for both sinks: it is held only to queue and to count. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drained_cond = PTHREAD_COND_INITIALIZER; /* a record was sent */
static Sink journal_sink = {
        "the journal", "ptagsd-journal", PTHREAD_COND_INITIALIZER, G_QUEUE_INIT, 0, NULL};
static Sink audit_sink = {
        "the audit trail", "ptagsd-audit", PTHREAD_COND_INITIALIZER, G_QUEUE_INIT, 0, NULL};
static guint waiting; /* both sinks' records' number */
static gboolean held; /* no writer thread starts: see ptags_log_writer_hold() */
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

/* Bytes waiting in both sinks; with the lock held. */
static gsize waiting_bytes(void)
{
        return journal_sink.bytes + audit_sink.bytes;
}

static gboolean full(void)
{
        return waiting_bytes() >= PTAGS_LOG_BACKLOG_BYTES;
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

static gpointer writer_main(gpointer data)
{
        Sink *sink = data;

        for (;;) {
                pthread_mutex_lock(&lock);
                if (g_queue_is_empty(&sink->queue)) {
                        while (g_queue_is_empty(&sink->queue))
                                pthread_cond_wait(&sink->queued, &lock);
                        /* Woken for a record: let more come first. Waking
                         * this thread costs about as much as a send, and
                         * while it sleeps here records are queued without
                         * waking it, so under load one wake-up serves many
                         * changes; a record waits GATHER_US longer. */
                        pthread_mutex_unlock(&lock);
                        g_usleep(GATHER_US);
                        pthread_mutex_lock(&lock);
                }
                Record *r = g_queue_pop_head(&sink->queue);
                pthread_mutex_unlock(&lock);

                if (r->fields != NULL)
                        journal_send(r->fields);
                else
                        audit_send(r->audit_fd, r->audit);

                pthread_mutex_lock(&lock);
                sink->bytes -= r->bytes;
                waiting--;
                /* Said here, not where they were dropped: a warning goes to
                 * the journal (ptagsd's stderr under systemd) and may wait
                 * on it, which the calls may not. And said by the journal's
                 * own writer only, which the audit trail's may not either. */
                guint unlogged = 0;
                if (sink == &journal_sink && dropped > 0 && !full()) {
                        unlogged = dropped;
                        dropped = 0;
                }
                pthread_cond_broadcast(&drained_cond);
                pthread_mutex_unlock(&lock);
                record_free(r);
                if (unlogged > 0)
                        g_warning("%u refusals were not logged while the journal or the audit "
                                  "trail took no records",
                                  unlogged);
        }
        return NULL;
}

static void flush_at_exit(void);

/* With the lock held. */
static void start_writer(Sink *sink)
{
        if (sink->thread == NULL && !held && !g_queue_is_empty(&sink->queue))
                sink->thread = g_thread_new(sink->thread_name, writer_main, sink);
}

void ptags_log_writer_hold(gboolean hold)
{
        pthread_mutex_lock(&lock);
        held = hold;
        start_writer(&journal_sink);
        start_writer(&audit_sink);
        pthread_mutex_unlock(&lock);
}

static void push(Sink *sink, Record *r)
{
        static gboolean at_exit;

        pthread_mutex_lock(&lock);
        if (!at_exit) {
                at_exit = TRUE;
                atexit(flush_at_exit);
        }
        g_queue_push_tail(&sink->queue, r);
        sink->bytes += r->bytes;
        waiting++;
        /* Started at its first record; it lives as long as ptagsd, which
         * writes what waits before it exits, however it exits (but killed). */
        start_writer(sink);
        pthread_cond_signal(&sink->queued);
        pthread_mutex_unlock(&lock);
}

void ptags_log_writer_journal(GPtrArray *fields)
{
        Record *r = g_new0(Record, 1);

        r->fields = fields;
        for (guint i = 0; i < fields->len; i++)
                r->bytes += strlen(fields->pdata[i]) + 1;
        push(&journal_sink, r);
}

void ptags_log_writer_diagnostic(GPtrArray *fields)
{
        pthread_mutex_lock(&lock);
        gboolean drop = full();
        pthread_mutex_unlock(&lock);
        if (drop) {
                g_ptr_array_unref(fields);
                return;
        }
        ptags_log_writer_journal(fields);
}

void ptags_log_writer_audit(int fd, GByteArray *datagram)
{
        Record *r = g_new0(Record, 1);

        r->audit = datagram;
        r->audit_fd = fd;
        r->bytes = datagram->len;
        push(&audit_sink, r);
}

/* Refusals may fill half the backlog at most: whoever has calls refused
 * (anyone) must not fill the room applied changes need, or a flood of
 * refusals would have every change refused, root's included. */
gboolean ptags_log_writer_may_log_refusal(void)
{
        pthread_mutex_lock(&lock);
        gboolean drop = waiting_bytes() >= PTAGS_LOG_BACKLOG_BYTES / 2;
        if (drop)
                dropped++;
        pthread_mutex_unlock(&lock);
        return !drop;
}

gboolean ptags_log_writer_has_room(GError **error)
{
        pthread_mutex_lock(&lock);
        gsize bytes = waiting_bytes();
        const Sink *behind = journal_sink.bytes >= audit_sink.bytes ? &journal_sink : &audit_sink;
        pthread_mutex_unlock(&lock);

        if (bytes < PTAGS_LOG_BACKLOG_BYTES)
                return TRUE;
        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                    "%s is not taking records: %" G_GSIZE_FORMAT
                    " KiB of them wait to be written, and ptagsd makes no change it cannot "
                    "log; try again later",
                    behind->name, bytes / 1024);
        return FALSE;
}

void ptags_log_writer_flush(void)
{
        pthread_mutex_lock(&lock);
        while (waiting > 0)
                pthread_cond_wait(&drained_cond, &lock);
        pthread_mutex_unlock(&lock);
}

/* How long ptagsd waits at exit for a sink that takes nothing, well within
 * systemd's stop timeout (90 s by default), which would kill it. */
#define EXIT_WAIT_SECONDS 5

static void flush_at_exit(void)
{
        struct timespec deadline;

        ptags_log_writer_hold(FALSE); /* an exit while starting writes them too */
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += EXIT_WAIT_SECONDS;
        pthread_mutex_lock(&lock);
        int r = 0;
        while (waiting > 0 && r != ETIMEDOUT)
                r = pthread_cond_timedwait(&drained_cond, &lock, &deadline);
        guint lost = waiting;
        gsize lost_bytes = waiting_bytes();
        pthread_mutex_unlock(&lock);
        if (lost == 0)
                return;
        /* Not through GLib: under systemd it would send this to the journal
         * that took nothing, and wait on it. Written to stderr without
         * waiting (the journal's stream under systemd), or not at all. */
        g_autofree char *text = g_strdup_printf(
                "ptagsd: exiting with %u records (%" G_GSIZE_FORMAT " KiB) not written: the "
                "journal or the audit trail took nothing for %d s\n",
                lost, lost_bytes / 1024, EXIT_WAIT_SECONDS);
        size_t len = strlen(text);
        if (send(STDERR_FILENO, text, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == ENOTSOCK) {
                ssize_t ignored = write(STDERR_FILENO, text, len);
                (void)ignored;
        }
}
