// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* call.c: the machinery of one call in flight, shared by every handler:
 * pinning the target, learning the caller, fair turns per uid, the
 * re-authorization lock of a target, and the reply. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "call.h"

#include "bus-thread.h"

#include "args.h"
#include "errors.h"
#include "page-writer.h"

#include <string.h>

/* ------------------------------------------------------------------ calls */

Call *call_new(PtagsService *svc, GDBusMethodInvocation *invocation)
{
        const char *sender = g_dbus_method_invocation_get_sender(invocation);
        guint live = GPOINTER_TO_UINT(g_hash_table_lookup(svc->in_progress, sender));

        /* Counted from arrival, before anything is pinned or looked up: the
         * bus bounds only the calls that await a reply. */
        if (live >= svc->limits.connection_calls) {
                ptags_bus_thread_call_done(g_dbus_method_invocation_get_message(invocation));
                g_dbus_method_invocation_return_error(
                        invocation, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                        "connection %s already has %u calls in progress, the "
                        "MaxConnectionCalls limit; wait for their replies",
                        sender, live);
                return NULL;
        }
        g_hash_table_replace(svc->in_progress, g_strdup(sender), GUINT_TO_POINTER(live + 1));

        Call *call = g_new0(Call, 1);
        call->svc = svc;
        call->counted = TRUE;
        call->invocation = g_object_ref(invocation);
        call->message = g_object_ref(g_dbus_method_invocation_get_message(invocation));
        call->sender = sender;
        call->method = g_dbus_method_invocation_get_method_name(invocation);
        call->target.pidfd = -1;
        call->exec_mark = PTAGS_NO_EXEC_MARK;
        call->cancellable = g_cancellable_new();
        return call;
}

Call *call_new_in_bus_thread(PtagsService *svc, GDBusMessage *message)
{
        Call *call = g_new0(Call, 1);

        call->svc = svc;
        call->message = g_object_ref(message);
        call->sender = g_dbus_message_get_sender(message);
        call->method = g_dbus_message_get_member(message);
        call->in_bus_thread = TRUE;
        call->target.pidfd = -1;
        call->exec_mark = PTAGS_NO_EXEC_MARK;
        call->cancellable = g_cancellable_new();
        return call;
}

static void give_wait_slot(Call *call);

void call_free(Call *call)
{
        give_wait_slot(call);
        target_lock_release(call);
        call_end_turn(call);
        if (call->watched && call->svc->leaving != NULL) {
                GPtrArray *calls = g_hash_table_lookup(call->svc->leaving, call->sender);
                /* Emptied, the entry goes: its caller may have left the bus
                 * already, and then no NameOwnerChanged would remove it. */
                if (calls != NULL && g_ptr_array_remove_fast(calls, call) && calls->len == 0)
                        g_hash_table_remove(call->svc->leaving, call->sender);
        }
        if (call->counted && call->svc->in_progress != NULL) {
                guint live =
                        GPOINTER_TO_UINT(g_hash_table_lookup(call->svc->in_progress, call->sender));
                if (live > 1)
                        g_hash_table_replace(call->svc->in_progress, g_strdup(call->sender),
                                             GUINT_TO_POINTER(live - 1));
                else
                        g_hash_table_remove(call->svc->in_progress, call->sender);
        }
        g_clear_object(&call->invocation);
        g_clear_object(&call->message);
        g_clear_object(&call->cancellable);
        g_free(call->pattern);
        g_free(call->peer_name);
        g_free(call->arg);
        g_free(call->value);
        g_strfreev(call->lines);
        if (call->extra_free != NULL)
                call->extra_free(call->extra);
        ptags_peer_free(call->caller);
        ptags_target_clear(&call->target);
        ptags_set_free(call->current);
        ptags_plan_free(call->plan);
        ptags_process_info_clear(&call->checked_info);
        g_free(call->checked_rights);
        g_free(call);
}

/* Whether the caller wants a reply at all (bus-thread.c counts each one
 * sent against its unread budgets). */
static gboolean call_wants_reply(Call *call)
{
        return (g_dbus_message_get_flags(call->message) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED) ==
               0;
}

/* A call run in the bus thread has no invocation: its reply is sent as
 * GDBus would send the invocation's. */
static void call_send_reply(Call *call, GDBusMessage *reply)
{
        g_dbus_connection_send_message(call->svc->connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE,
                                       NULL, NULL);
        g_object_unref(reply);
}

void call_fail(Call *call, GError *error)
{
        g_debug("%s from %s failed: %s", call->method, call->sender, error->message);
        ptags_bus_thread_call_done(call->message);
        if (call->invocation != NULL) {
                g_dbus_method_invocation_return_gerror(call->invocation, error);
        } else if (call_wants_reply(call)) {
                g_autofree char *name = g_dbus_error_encode_gerror(error);
                call_send_reply(call, g_dbus_message_new_method_error_literal(call->message, name,
                                                                              error->message));
        }
        g_error_free(error);
        call_free(call);
}

void call_return(Call *call, GVariant *value)
{
        /* Sized here, by the main thread: GDBus's worker thread, which
         * counts (bus-thread.c), serializes and writes every message, then
         * finds the size of each part known. A FindTagged of 1000
         * processes was 2.5 Pings slower when the worker sized it. */
        if (value != NULL) {
                g_variant_ref_sink(value);
                (void)g_variant_get_size(value);
        }
        ptags_bus_thread_call_done(call->message);
        if (call->invocation != NULL) {
                g_dbus_method_invocation_return_value(call->invocation, value);
        } else if (call_wants_reply(call)) {
                GDBusMessage *reply = g_dbus_message_new_method_reply(call->message);
                g_dbus_message_set_body(reply, value);
                call_send_reply(call, reply);
        }
        if (value != NULL)
                g_variant_unref(value);
        call_free(call);
}

gboolean call_may_wait(Call *call)
{
        if (!call->in_bus_thread)
                return TRUE;
        /* bus-thread.c admits only calls that never wait: reaching here is
         * a bug, refused rather than continued outside the main loop. */
        g_critical("%s from %s would wait in the bus thread", call->method, call->sender);
        call_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                    "internal error: the call cannot wait here; try again"));
        return FALSE;
}

gboolean call_read_current(Call *call, GError **error)
{
        ptags_set_free(g_steal_pointer(&call->current));
        int r = ptags_backend_read(call->svc->backend, call->target.pidfd, call->target.pid,
                                   &call->current);
        if (r < 0) {
                g_propagate_error(
                        error, ptags_errno_error(r, "cannot read the tags of", call->target.pid));
                return FALSE;
        }
        return TRUE;
}

gboolean call_read_base(Call *call, GError **error)
{
        PtagsBackend *backend = call->svc->backend;
        int pidfd = call->target.pidfd;
        guint64 after;
        int r;

        for (int attempt = 0;; attempt++) {
                if ((r = ptags_backend_exec_mark(backend, pidfd, &call->exec_mark)) < 0)
                        break;
                if (!call_read_current(call, error))
                        return FALSE;
                if ((r = ptags_backend_exec_mark(backend, pidfd, &after)) < 0)
                        break;
                /* Marks that agree: no exec fell between them, so the tags
                 * read are those of the program the mark names. A process
                 * that keeps exec'ing keeps a mark older than its tags: its
                 * change is ordered before an exec it may not have had, and
                 * gets only what an exec would keep of it. */
                if (after == call->exec_mark || attempt == 2)
                        return TRUE;
        }
        g_propagate_error(error, ptags_errno_error(r, "cannot read the tags of", call->target.pid));
        return FALSE;
}

typedef struct {
        Call *call;
        CallStep next;
} PeerWait;

/* NotSupported for a caller in a pid namespace other than ptagsd's,
 * where the pid numbers of @call name other processes. */
static GError *pid_namespace_error(const Call *call)
{
        if (call->pid_arg == 0)
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                                   "the reply would list process ids of ptagsd's pid namespace, "
                                   "and the caller is in another one, where they name other "
                                   "processes");
        return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                           "argument pid (%u): the caller is in a pid namespace other than "
                           "ptagsd's, where this number names another process; name the "
                           "process by a pidfd (the methods ending in Fd), or as 0 for the "
                           "caller itself",
                           call->pid_arg);
}

/* A refusal once the caller is known, as the method logs its own. */
static void call_refuse(Call *call, GError *error)
{
        if (call->refuse != NULL)
                call->refuse(call, error);
        else
                call_fail(call, error);
}

/* @call->caller is known: continue with @next, or fail. */
static void peer_known(Call *call, CallStep next)
{
        GError *error = NULL;

        /* A caller whose namespace is unknown (its connection's opener is
         * gone) is served as before namespaces were asked about: reads
         * need no identity, and polkit judges changes by their target. */
        if ((call->pid_arg != 0 || call->answers_pids) &&
            call->caller->pid_namespace == PTAGS_PID_NAMESPACE_OTHER) {
                call_refuse(call, pid_namespace_error(call));
                return;
        }
        if (call->target_is_caller && !call->caller->process_known) {
                call_refuse(call,
                            ptags_peer_unknown_error(call->caller, call->sender,
                                                     "argument pid (0, the calling process)"));
                return;
        }
        if (call->target_is_caller &&
            !ptags_target_copy(&call->target, &call->caller->target, &error)) {
                call_refuse(call, error);
                return;
        }
        next(call);
}

/* One lookup of a bus name, and the calls waiting for it in arrival order. */
typedef struct {
        PtagsService *svc;
        char *name;
} Lookup;

static void peer_resolved(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Lookup *lookup = user_data;
        GError *error = NULL;
        g_autoptr(PtagsPeer) peer = ptags_peer_cache_lookup_finish(res, &error);
        gpointer key = NULL, waiting = NULL;

        g_hash_table_steal_extended(lookup->svc->looking_up, lookup->name, &key, &waiting);
        g_free(key);
        g_free(lookup->name);
        g_free(lookup);
        /* In the order they came: each continues as far as it can now (a
         * change up to its uid's queue), so none overtakes an earlier one. */
        for (PeerWait *wait; (wait = g_queue_pop_head(waiting)) != NULL; g_free(wait)) {
                if (peer == NULL) {
                        call_fail(wait->call, g_error_copy(error));
                        continue;
                }
                wait->call->caller = ptags_peer_ref(peer);
                peer_known(wait->call, wait->next);
        }
        g_queue_free(waiting);
        g_clear_error(&error);
}

/* A connection seen before whose process still runs as it did when proven
 * (or was never proven) is known at once, without waiting for another
 * dispatch. (transfer full) */
static PtagsPeer *known_peer(PtagsService *svc, const char *bus_name)
{
        PtagsPeer *cached = ptags_peer_cache_get(svc->peers, bus_name);
        if (cached != NULL && cached->process_known && !ptags_peer_process_unchanged(cached))
                g_clear_pointer(&cached, ptags_peer_free);
        return cached;
}

/* While a lookup of @bus_name runs, later calls wait behind it even when
 * its answer is already cached: a client's pipelined calls keep their
 * order. */
static GQueue *lookup_waiting(PtagsService *svc, const char *bus_name)
{
        return svc->looking_up ? g_hash_table_lookup(svc->looking_up, bus_name) : NULL;
}

PtagsPeer *call_known_peer(PtagsService *svc, const char *bus_name)
{
        return lookup_waiting(svc, bus_name) == NULL ? known_peer(svc, bus_name) : NULL;
}

void call_lookup_peer(Call *call, const char *bus_name, CallStep next)
{
        PtagsService *svc = call->svc;

        /* The bus thread takes a call only with its caller known then: the
         * same answer, which a lookup now could no longer give (the process
         * that connected may have exited meanwhile). */
        if (call->in_bus_thread && call->caller != NULL) {
                peer_known(call, next);
                return;
        }
        GQueue *waiting = lookup_waiting(svc, bus_name);
        PtagsPeer *cached = waiting == NULL ? known_peer(svc, bus_name) : NULL;
        if (cached != NULL) {
                call->caller = cached;
                peer_known(call, next);
                return;
        }
        if (!call_may_wait(call))
                return;

        PeerWait *wait = g_new0(PeerWait, 1);
        wait->call = call;
        wait->next = next;
        if (waiting != NULL) {
                g_queue_push_tail(waiting, wait);
                return;
        }
        if (svc->looking_up == NULL)
                svc->looking_up = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        waiting = g_queue_new();
        g_queue_push_tail(waiting, wait);
        g_hash_table_insert(svc->looking_up, g_strdup(bus_name), waiting);
        /* Shared by every waiting call, so no one call's cancellable. */
        Lookup *lookup = g_new0(Lookup, 1);
        lookup->svc = svc;
        lookup->name = g_strdup(bus_name);
        ptags_peer_cache_lookup_async(svc->peers, bus_name, NULL, peer_resolved, lookup);
}

/* The caller is known and numbers processes as ptagsd does: pin the
 * process its pid argument names. */
static void pin_named_pid(Call *call)
{
        GError *error = NULL;

        if (call->pid_arg != 0 &&
            (!ptags_check_pid(call->pid_arg, &error) ||
             !ptags_target_pin_pid(&call->target, (pid_t)call->pid_arg, &error))) {
                call_fail(call, error);
                return;
        }
        call->pin_next(call);
}

void call_pin_pid(Call *call, guint32 pid, CallStep next)
{
        call->target_is_caller = pid == 0;
        call->pid_arg = pid;
        call->pin_next = next;
        call_lookup_peer(call, call->sender, pin_named_pid);
}

gboolean call_adopt_fd(Call *call, GUnixFDList *fds, GVariant *handle, GError **error)
{
        gint32 index = g_variant_get_handle(handle);

        if (fds == NULL || index < 0 || index >= g_unix_fd_list_get_length(fds)) {
                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                            "argument pidfd: no file descriptor was passed");
                return FALSE;
        }
        /* A copy of the descriptor: it fails only when ptagsd is out of
         * descriptors, which is ptagsd's failure, named as such. */
        g_autoptr(GError) dup_error = NULL;
        int fd = g_unix_fd_list_get(fds, index, &dup_error);
        if (fd < 0) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_FAILED,
                            "argument pidfd: ptagsd cannot take the file descriptor: %s",
                            dup_error->message);
                return FALSE;
        }
        return ptags_target_adopt_pidfd(&call->target, fd, error);
}

/* ------------------------------------------------ admission of reads
 *
 * Every read parses whole tag lists and some replies are large, so reads
 * first learn the caller's uid, then wait in their uid's queue
 * (at most MaxExpensiveCalls per uid) and run in turn with other uids'
 * reads; each is refused when too many bytes of earlier replies to its
 * connection or uid are still unread. So a client that floods ptagsd or stops
 * reading delays nobody else, and what ptagsd has in flight stays bounded. */

/* ptagsd stops with the call still queued. */
static void turn_drop(gpointer data)
{
        call_fail(data, g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED, "ptagsd is stopping"));
}

static void read_run(gpointer data)
{
        Call *call = data;
        GError *error = NULL;

        if (!ptags_clients_check_unread(call->svc->clients, call->sender, call->read_uid, &error)) {
                call_fail(call, error);
                return;
        }
        call->read_next(call);
}

/* Queue @call in @uid's turn: @run(call) then, or LimitExceeded now. */
static void queue_turn(Call *call, uid_t uid, PtagsClientRunFunc run)
{
        GError *error = NULL;

        call->read_uid = uid;
        if (!call_may_wait(call))
                return;
        if (!ptags_clients_queue_expensive(call->svc->clients, uid, run, turn_drop, call, &error)) {
                call_fail(call, error);
                return;
        }
        call->holds_read_slot = TRUE;
}

static void read_uid_known(gpointer data, uid_t uid, const GError *lookup_error)
{
        Call *call = data;

        if (lookup_error != NULL) {
                call_fail(call, g_error_copy(lookup_error));
                return;
        }
        queue_turn(call, uid, read_run);
}

static void turn_run(gpointer data)
{
        Call *call = data;

        call->read_next(call);
}

void call_take_turn(Call *call, uid_t uid, CallStepFn next)
{
        call->read_next = next;
        queue_turn(call, uid, turn_run);
}

void call_end_turn(Call *call)
{
        if (call->holds_read_slot)
                ptags_clients_expensive_done(call->svc->clients, call->read_uid);
        call->holds_read_slot = FALSE;
}

void call_admit_read(Call *call, CallStepFn next)
{
        call->read_next = next;
        ptags_clients_get_uid(call->svc->clients, call->sender, read_uid_known, call);
}

/* -------------------------------------------------- re-authorization lock
 *
 * A call whose target changed during authorization re-plans and asks polkit
 * once more. Meanwhile, other calls on that target that went through polkit
 * wait before applying, or each would invalidate the next one's second check
 * and a burst of concurrent callers would mostly fail. Callers that need no
 * authorization (root) never wait: their change is immediate, and it is what
 * a re-authorizing call must notice. */

static gboolean resume_waiting(gpointer data);

void target_lock_take(Call *call)
{
        GHashTable *locks = call->svc->reauthorizing;
        gpointer key = GINT_TO_POINTER(call->target.pid);

        if (!call->holds_target_lock && !g_hash_table_contains(locks, key)) {
                g_hash_table_insert(locks, key, g_queue_new());
                call->holds_target_lock = TRUE;
        }
}

void target_lock_release(Call *call)
{
        GHashTable *locks = call->svc->reauthorizing;
        gpointer key = GINT_TO_POINTER(call->target.pid);
        GQueue *waiting = g_hash_table_lookup(locks, key);

        if (!call->holds_target_lock || waiting == NULL)
                return;
        call->holds_target_lock = FALSE;
        g_hash_table_steal(locks, key);
        /* Resume outside the caller's stack: it is freeing a call. */
        if (g_queue_is_empty(waiting))
                g_queue_free(waiting);
        else
                g_idle_add(resume_waiting, waiting);
}

static void give_wait_slot(Call *call)
{
        if (call->holds_wait_slot) {
                call->holds_wait_slot = FALSE;
                ptags_authority_give_slot(call->svc->authority, call->caller->budget_uid);
        }
}

static gboolean resume_waiting(gpointer data)
{
        GQueue *waiting = data;
        Call *call;

        while ((call = g_queue_pop_head(waiting)) != NULL) {
                give_wait_slot(call);
                call->resume(call);
        }
        g_queue_free(waiting);
        return G_SOURCE_REMOVE;
}

gboolean target_lock_wait(Call *call, CallStepFn resume, GError **error)
{
        GQueue *waiting =
                g_hash_table_lookup(call->svc->reauthorizing, GINT_TO_POINTER(call->target.pid));

        if (waiting == NULL || call->holds_target_lock || call->caller->uid == 0)
                return FALSE;
        /* A call waiting here waits for polkit too (for another call's
         * check), holding its message and plan: it takes one of its uid's
         * MaxPolkitCalls places, or that bound would not hold. */
        if (!ptags_authority_take_slot(call->svc->authority, call->caller->budget_uid, error))
                return TRUE;
        call->holds_wait_slot = TRUE;
        g_debug("%s: waiting for a re-authorization on process %d", call->method,
                (int)call->target.pid);
        call->resume = resume;
        g_queue_push_tail(waiting, call);
        return TRUE;
}

/* ------------------------------------------------- callers leaving the bus
 *
 * One subscription for the whole service (the same match rule the peer
 * cache and the client table use, so the bus is asked once) rather than
 * an AddMatch and RemoveMatch round trip per call that waits for polkit. */

static void caller_left(GDBusConnection *connection, const char *sender, const char *path,
                        const char *interface, const char *signal, GVariant *params,
                        gpointer user_data)
{
        PtagsService *svc = user_data;
        const char *name, *old_owner, *new_owner;
        gpointer key = NULL, value = NULL;

        g_variant_get(params, "(&s&s&s)", &name, &old_owner, &new_owner);
        if (name[0] != ':' || new_owner[0] != '\0' ||
            !g_hash_table_steal_extended(svc->leaving, name, &key, &value))
                return;
        g_autofree char *owned_key = key;
        g_autoptr(GPtrArray) calls = value;
        /* Cancelling may end a call (and free it) at once: cancel copies. */
        g_autoptr(GPtrArray) pending = g_ptr_array_new_with_free_func(g_object_unref);
        for (guint i = 0; i < calls->len; i++)
                g_ptr_array_add(pending, g_object_ref(((Call *)calls->pdata[i])->cancellable));
        g_debug("%s left the bus: cancelling %u pending authorizations", name, pending->len);
        for (guint i = 0; i < pending->len; i++)
                g_cancellable_cancel(pending->pdata[i]);
}

void call_cancel_if_caller_leaves(Call *call)
{
        const char *sender = call->sender;
        GPtrArray *calls;

        if (call->watched)
                return;
        calls = g_hash_table_lookup(call->svc->leaving, sender);
        if (calls == NULL) {
                calls = g_ptr_array_new();
                g_hash_table_insert(call->svc->leaving, g_strdup(sender), calls);
        }
        g_ptr_array_add(calls, call);
        call->watched = TRUE;
}

void call_watch_start(PtagsService *svc)
{
        svc->leaving = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                             (GDestroyNotify)g_ptr_array_unref);
        svc->leaving_watch = g_dbus_connection_signal_subscribe(
                svc->connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                "/org/freedesktop/DBus", NULL, G_DBUS_SIGNAL_FLAGS_NONE, caller_left, svc, NULL);
}

void call_watch_stop(PtagsService *svc)
{
        if (svc->leaving == NULL)
                return;
        g_dbus_connection_signal_unsubscribe(svc->connection, svc->leaving_watch);
        g_clear_pointer(&svc->leaving, g_hash_table_unref);
}
