// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager.c: the org.ptags.Manager object, its read methods (no authorization)
 * and the plumbing every call shares; the change pipeline is manager-change.c. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "manager.h"

#include "config.h"
#include "errors.h"
#include "log.h"
#include "page-writer.h"
#include "manager-private.h"

#include <errno.h>
#include <string.h>

/* Long lines are shortened in messages so errors stay readable. */
#define LABEL_MAX_CHARS 64

GVariant *ptags_set_to_variant(const ptags_set *set)
{
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a(sbs)"));
        for (size_t i = 0; set != NULL && i < ptags_set_count(set); i++) {
                const ptags_entry *e = ptags_set_at(set, i);
                g_variant_builder_add(&b, "(sbs)", e->name, (gboolean)e->keep, e->value);
        }
        return g_variant_builder_end(&b);
}

char *ptags_shorten(const char *text)
{
        GString *out = g_string_new(NULL);
        glong chars = 0;

        /* Control bytes are shown escaped so a message stays on one line. */
        for (const char *p = text; *p != '\0' && chars < LABEL_MAX_CHARS;
             p = g_utf8_next_char(p), chars++) {
                guchar c = (guchar)*p;
                if (c == '\n')
                        g_string_append(out, "\\n");
                else if (c < 0x20 || c == 0x7f)
                        g_string_append_printf(out, "\\x%02x", c);
                else
                        g_string_append_len(out, p, g_utf8_next_char(p) - p);
        }
        if (g_utf8_strlen(text, -1) > LABEL_MAX_CHARS)
                g_string_append(out, "...");
        return g_string_free(out, FALSE);
}

char *ptags_line_label(size_t index, const char *line)
{
        g_autofree char *text = ptags_shorten(line);

        return g_strdup_printf("line %zu (\"%s\")", index + 1, text);
}

gboolean ptags_lines_check_limits(const char *const *lines, GError **error)
{
        size_t n = 0, total = 0;

        for (; lines[n] != NULL; n++)
                total += strlen(lines[n]) + 1;
        if (n > PTAGS_APPLY_MAX_LINES) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND,
                            "argument lines: %zu lines, at most %u are allowed", n,
                            PTAGS_APPLY_MAX_LINES);
                return FALSE;
        }
        if (total > PTAGS_APPLY_MAX_BYTES) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND,
                            "argument lines: %zu bytes, at most %u are allowed", total,
                            PTAGS_APPLY_MAX_BYTES);
                return FALSE;
        }
        return TRUE;
}

gboolean ptags_lines_validate(const char *const *lines, GError **error)
{
        if (!ptags_lines_check_limits(lines, error))
                return FALSE;
        /* The label (an escaped copy of the line) is made only for the line
         * that fails, not for each of up to 4096 good ones. */
        for (size_t i = 0; lines[i] != NULL; i++) {
                if (strchr(lines[i], '\n') != NULL) {
                        g_autofree char *label = ptags_line_label(i, lines[i]);
                        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND,
                                    "%s: contains a newline; give one command per line", label);
                        return FALSE;
                }
                ptags_cmd cmd;
                ptags_result r = ptags_cmd_parse(lines[i], strlen(lines[i]), &cmd);
                if (r != PTAGS_OK) {
                        g_autofree char *label = ptags_line_label(i, lines[i]);
                        g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r), "%s: %s", label,
                                    ptags_result_message(r));
                        return FALSE;
                }
        }
        return TRUE;
}

/* ------------------------------------------------------------------ calls */

Call *call_new(PtagsService *svc, GDBusMethodInvocation *invocation)
{
        Call *call = g_new0(Call, 1);

        call->svc = svc;
        call->invocation = g_object_ref(invocation);
        call->method = g_dbus_method_invocation_get_method_name(invocation);
        call->target.pidfd = -1;
        call->cancellable = g_cancellable_new();
        return call;
}

void call_free(Call *call)
{
        target_lock_release(call);
        call_end_turn(call);
        if (call->owner_watch != 0)
                g_dbus_connection_signal_unsubscribe(call->svc->connection, call->owner_watch);
        g_clear_object(&call->invocation);
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
        g_free(call);
}

/* Count a reply of about @bytes (framing included) against the unread
 * budgets of the caller's connection, when anything is sent at all. */
static void call_count_reply(Call *call, gsize bytes)
{
        GDBusMessage *msg = g_dbus_method_invocation_get_message(call->invocation);

        if (!call->counts_replies ||
            (g_dbus_message_get_flags(msg) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED) != 0)
                return;
        ptags_clients_sent(call->svc->clients,
                           g_dbus_method_invocation_get_sender(call->invocation),
                           bytes + PTAGS_WIRE_HEADER_OVERHEAD);
}

void call_fail(Call *call, GError *error)
{
        g_debug("%s from %s failed: %s", call->method,
                g_dbus_method_invocation_get_sender(call->invocation), error->message);
        call_count_reply(call, strlen(error->message));
        g_dbus_method_invocation_return_gerror(call->invocation, error);
        g_error_free(error);
        call_free(call);
}

void call_return(Call *call, GVariant *value)
{
        if (value != NULL)
                g_variant_ref_sink(value);
        call_count_reply(call, value != NULL ? g_variant_get_size(value) : 0);
        g_dbus_method_invocation_return_value(call->invocation, value);
        if (value != NULL)
                g_variant_unref(value);
        call_free(call);
}

GError *ptags_errno_error(int neg_errno, const char *what, pid_t pid)
{
        int e = -neg_errno;

        if (e == EACCES)
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                                   "%s process %d: the kernel refuses the write (a mainline "
                                   "kernel without the ptags LSM?)",
                                   what, (int)pid);
        return g_error_new(PTAGS_ERROR, ptags_error_from_errno(e), "%s process %d: %s", what,
                           (int)pid, g_strerror(e));
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

typedef struct {
        Call *call;
        CallStep next;
} PeerWait;

static void peer_resolved(GObject *source, GAsyncResult *res, gpointer user_data)
{
        PeerWait *wait = user_data;
        Call *call = wait->call;
        CallStep next = wait->next;
        GError *error = NULL;

        g_free(wait);
        call->caller = ptags_peer_cache_lookup_finish(res, &error);
        if (call->caller == NULL) {
                call_fail(call, error);
                return;
        }
        if (call->target_is_caller && !call->caller->process_known) {
                call_fail(call, ptags_peer_unknown_error(
                                        call->caller,
                                        g_dbus_method_invocation_get_sender(call->invocation),
                                        "argument pid (0, the calling process)"));
                return;
        }
        if (call->target_is_caller &&
            !ptags_target_copy(&call->target, &call->caller->target, &error)) {
                call_fail(call, error);
                return;
        }
        next(call);
}

void call_lookup_peer(Call *call, const char *bus_name, CallStep next)
{
        PeerWait *wait = g_new0(PeerWait, 1);

        wait->call = call;
        wait->next = next;
        ptags_peer_cache_lookup_async(call->svc->peers, bus_name, call->cancellable, peer_resolved,
                                      wait);
}

void call_pin_pid(Call *call, guint32 pid, CallStep next)
{
        GError *error = NULL;

        if (pid == 0) {
                call->target_is_caller = TRUE;
                call_lookup_peer(call, g_dbus_method_invocation_get_sender(call->invocation), next);
                return;
        }
        if (pid > G_MAXINT) {
                call_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                            "argument pid: %u is not a process id", pid));
                return;
        }
        if (!ptags_target_pin_pid(&call->target, (pid_t)pid, &error)) {
                call_fail(call, error);
                return;
        }
        next(call);
}

gboolean call_adopt_fd(Call *call, GUnixFDList *fds, GVariant *handle, GError **error)
{
        gint32 index = g_variant_get_handle(handle);

        if (fds == NULL || index < 0 || index >= g_unix_fd_list_get_length(fds)) {
                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                            "argument pidfd: no file descriptor was passed");
                return FALSE;
        }
        int fd = g_unix_fd_list_get(fds, index, error);
        if (fd < 0)
                return FALSE;
        return ptags_target_adopt_pidfd(&call->target, fd, error);
}

/* ------------------------------------------------------------------ reads */

static void read_step(Call *call)
{
        GError *error = NULL;

        if (!call_read_current(call, &error)) {
                call_fail(call, error);
                return;
        }
        if (call->want_bool) {
                call_return(call,
                            g_variant_new("(b)", ptags_set_matches(call->current, call->pattern,
                                                                   strlen(call->pattern),
                                                                   call->kept_only)));
                return;
        }
        /* State written around ptagsd may be too big for one message: refuse
         * it by name rather than be disconnected by the bus. */
        guint64 size = ptags_set_wire_bound(call->current) + PTAGS_WIRE_HEADER_OVERHEAD;
        if (size > PTAGS_MAX_MESSAGE_BYTES) {
                call_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                                            "the tags of process %d take %" G_GUINT64_FORMAT
                                            " bytes, over the MaxMessageBytes limit of %u of "
                                            "one reply; query them with HasTag",
                                            (int)call->target.pid, size, PTAGS_MAX_MESSAGE_BYTES));
                return;
        }
        call_return(call, g_variant_new("(@a(sbs))", ptags_set_to_variant(call->current)));
}

/* Peer reads: the looked-up peer becomes the target. */
static void peer_read_step(Call *call)
{
        if (!call->caller->process_known) {
                call_fail(call, ptags_peer_unknown_error(call->caller, call->peer_name,
                                                         "argument bus_name"));
                return;
        }
        GError *error = NULL;

        /* The peer may be shared with the cache and other calls: a copy. */
        if (!ptags_target_copy(&call->target, &call->caller->target, &error)) {
                call_fail(call, error);
                return;
        }
        read_step(call);
}

/* Split "@PATTERN" and validate it (TAG, PREFIX:* or empty). */
static gboolean call_set_query_pattern(Call *call, const char *pattern, GError **error)
{
        call->kept_only = pattern[0] == '@';
        call->pattern = g_strdup(pattern + (call->kept_only ? 1 : 0));
        ptags_result r = ptags_pattern_validate(call->pattern, strlen(call->pattern), true);
        if (r != PTAGS_OK) {
                g_autofree char *text = ptags_shorten(pattern);
                g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r),
                            "argument pattern (\"%s\"): %s", text, ptags_result_message(r));
                return FALSE;
        }
        return TRUE;
}

/* A call answering "does it hold @pattern?"; NULL when @pattern is invalid
 * (the call has then been answered with the error). */
static Call *yes_no_call_new(PtagsService *svc, GDBusMethodInvocation *inv, const char *pattern)
{
        Call *call = call_new(svc, inv);
        GError *error = NULL;

        call->want_bool = TRUE;
        if (!call_set_query_pattern(call, pattern, &error)) {
                call_fail(call, error);
                return NULL;
        }
        return call;
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

        if (!ptags_clients_check_unread(call->svc->clients,
                                        g_dbus_method_invocation_get_sender(call->invocation),
                                        call->read_uid, &error)) {
                call_fail(call, error);
                return;
        }
        call->read_next(call);
}

static void read_uid_known(gpointer data, uid_t uid, const GError *lookup_error)
{
        Call *call = data;
        GError *error = NULL;

        if (lookup_error != NULL) {
                call_fail(call, g_error_copy(lookup_error));
                return;
        }
        call->read_uid = uid;
        call->counts_replies = TRUE;
        if (!ptags_clients_queue_expensive(call->svc->clients, uid, read_run, turn_drop, call,
                                           &error)) {
                call_fail(call, error);
                return;
        }
        call->holds_read_slot = TRUE;
}

static void turn_run(gpointer data)
{
        Call *call = data;

        call->read_next(call);
}

void call_take_turn(Call *call, uid_t uid, CallStepFn next)
{
        GError *error = NULL;

        call->read_uid = uid;
        call->read_next = next;
        if (!ptags_clients_queue_expensive(call->svc->clients, uid, turn_run, turn_drop, call,
                                           &error)) {
                call_fail(call, error);
                return;
        }
        call->holds_read_slot = TRUE;
}

void call_end_turn(Call *call)
{
        if (call->holds_read_slot)
                ptags_clients_expensive_done(call->svc->clients, call->read_uid);
        call->holds_read_slot = FALSE;
}

static void read_admit(Call *call, CallStepFn next)
{
        call->read_next = next;
        ptags_clients_get_uid(call->svc->clients,
                              g_dbus_method_invocation_get_sender(call->invocation), read_uid_known,
                              call);
}

/* The target is pinned on arrival, not when the turn comes, so a pid that
 * is freed and reused while the call waits is never read. */
static void admit_read_step(Call *call)
{
        read_admit(call, read_step);
}

static gboolean handle_get_tags(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                                PtagsService *svc)
{
        Call *call = call_new(svc, inv);

        call_pin_pid(call, pid, admit_read_step);
        return TRUE;
}

static gboolean handle_get_tags_fd(PtagsManager *object, GDBusMethodInvocation *inv,
                                   GUnixFDList *fds, GVariant *pidfd, PtagsService *svc)
{
        Call *call = call_new(svc, inv);
        GError *error = NULL;

        if (!call_adopt_fd(call, fds, pidfd, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        read_admit(call, read_step);
        return TRUE;
}

static gboolean handle_has_tag(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                               const char *pattern, PtagsService *svc)
{
        Call *call = yes_no_call_new(svc, inv, pattern);

        if (call != NULL)
                call_pin_pid(call, pid, admit_read_step);
        return TRUE;
}

static gboolean check_bus_name(Call *call, const char *bus_name)
{
        if (g_dbus_is_name(bus_name))
                return TRUE;
        call_fail(call, g_error_new(G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                    "argument bus_name: \"%s\" is not a bus name", bus_name));
        return FALSE;
}

static void get_peer_tags_step(Call *call)
{
        call_lookup_peer(call, call->peer_name, peer_read_step);
}

static gboolean handle_get_peer_tags(PtagsManager *object, GDBusMethodInvocation *inv,
                                     const char *bus_name, PtagsService *svc)
{
        Call *call = call_new(svc, inv);

        if (check_bus_name(call, bus_name)) {
                call->peer_name = g_strdup(bus_name);
                read_admit(call, get_peer_tags_step);
        }
        return TRUE;
}

static gboolean handle_peer_has_tag(PtagsManager *object, GDBusMethodInvocation *inv,
                                    const char *bus_name, const char *pattern, PtagsService *svc)
{
        Call *call = yes_no_call_new(svc, inv, pattern);

        if (call != NULL && check_bus_name(call, bus_name)) {
                call->peer_name = g_strdup(bus_name);
                read_admit(call, get_peer_tags_step);
        }
        return TRUE;
}

typedef struct {
        pid_t pid;
        GVariant *tags; /* a(sbs): the matching tags only */
} FoundProcess;

typedef struct {
        GArray *found; /* FoundProcess */
        gboolean kept_only;
        const char *pattern;
        guint64 size;     /* the reply's wire size so far, at most */
        gboolean too_big; /* over PTAGS_MAX_MESSAGE_BYTES: collect no more */
} FoundList;

static void found_one(pid_t pid, const ptags_set *tags, void *user_data)
{
        FoundList *list = user_data;
        size_t len = strlen(list->pattern);
        GVariantBuilder b;
        gboolean any = FALSE;

        if (list->too_big)
                return;
        /* Only the matching tags: what the caller asked about, and a reply
         * that grows with the matches rather than with everything else the
         * processes hold. */
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(sbs)"));
        for (size_t i = 0; i < ptags_set_count(tags); i++) {
                const ptags_entry *e = ptags_set_at(tags, i);
                if ((list->kept_only && !e->keep) ||
                    !ptags_pattern_match(list->pattern, len, e->name, e->name_len))
                        continue;
                list->size += e->name_len + e->value_len + PTAGS_WIRE_TAG_OVERHEAD;
                if (list->size > PTAGS_MAX_MESSAGE_BYTES) {
                        list->too_big = TRUE;
                        g_variant_builder_clear(&b);
                        return;
                }
                g_variant_builder_add(&b, "(sbs)", e->name, (gboolean)e->keep, e->value);
                any = TRUE;
        }
        if (!any) {
                g_variant_builder_clear(&b);
                return;
        }
        list->size += PTAGS_WIRE_PROCESS_OVERHEAD;
        FoundProcess p = {pid, g_variant_ref_sink(g_variant_builder_end(&b))};
        g_array_append_val(list->found, p);
}

static gint found_by_pid(gconstpointer a, gconstpointer b)
{
        pid_t pa = ((const FoundProcess *)a)->pid, pb = ((const FoundProcess *)b)->pid;

        return pa < pb ? -1 : pa > pb;
}

static void found_clear(gpointer p)
{
        g_variant_unref(((FoundProcess *)p)->tags);
}

static void find_step(Call *call)
{
        PtagsService *svc = call->svc;
        g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(FoundProcess));
        g_array_set_clear_func(found, found_clear);
        FoundList list = {found, call->kept_only, call->pattern, PTAGS_WIRE_HEADER_OVERHEAD, FALSE};
        int r = svc->backend->ops->find(svc->backend, call->pattern, strlen(call->pattern),
                                        found_one, &list);
        if (r < 0) {
                call_fail(call, g_error_new(PTAGS_ERROR, ptags_error_from_errno(-r),
                                            "cannot list tagged processes: %s", g_strerror(-r)));
                return;
        }
        if (list.too_big) {
                g_autofree char *text = ptags_shorten(call->pattern);
                call_fail(call,
                          g_error_new(PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                                      "argument pattern (\"%s%s\"): the matching tags take "
                                      "more than the MaxMessageBytes limit of %u of one "
                                      "reply; use a narrower pattern",
                                      call->kept_only ? "@" : "", text, PTAGS_MAX_MESSAGE_BYTES));
                return;
        }
        /* Sorted by pid, whatever order the backend found them in. */
        g_array_sort(found, found_by_pid);
        GVariantBuilder b;
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(ua(sbs))"));
        for (guint i = 0; i < found->len; i++) {
                FoundProcess *p = &g_array_index(found, FoundProcess, i);
                g_variant_builder_add(&b, "(u@a(sbs))", (guint32)p->pid, p->tags);
        }
        call_return(call, g_variant_new("(@a(ua(sbs)))", g_variant_builder_end(&b)));
}

static gboolean handle_find_tagged(PtagsManager *object, GDBusMethodInvocation *inv,
                                   const char *pattern, PtagsService *svc)
{
        Call *call = call_new(svc, inv);
        GError *error = NULL;

        if (!call_set_query_pattern(call, pattern, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        read_admit(call, find_step);
        return TRUE;
}

/* ---------------------------------------------------------------- service */

static const char *const features[] = {"tags",      "atomic-apply", "pidfd", "find-tagged",
                                       "peer-tags", "limits",       NULL};

PtagsService *ptags_service_new(GDBusConnection *connection, PtagsBackend *backend,
                                PtagsAuthority *authority, const PtagsLimits *limits,
                                GError **error)
{
        PtagsService *svc = g_new0(PtagsService, 1);
        gsize n_limits;
        const PtagsLimitInfo *infos = ptags_limit_infos(&n_limits);

        svc->connection = g_object_ref(connection);
        svc->limits = *limits;
        svc->clients = ptags_clients_new(connection, &svc->limits);
        svc->byte_cache = ptags_byte_cache_new();
        svc->backend = backend;
        svc->authority = authority;
        svc->reauthorizing = g_hash_table_new(g_direct_hash, g_direct_equal);
        svc->peers = ptags_peer_cache_new(connection);
        svc->skeleton = ptags_manager_skeleton_new();
        ptags_manager_set_version(svc->skeleton, PACKAGE_VERSION);
        ptags_manager_set_backend(svc->skeleton, backend->ops->name);
        ptags_manager_set_features(svc->skeleton, features);
        ptags_manager_set_max_tags(svc->skeleton, PTAGS_MAX_TAGS);
        ptags_manager_set_max_tag_length(svc->skeleton, PTAGS_MAX_TAG_LEN);
        ptags_manager_set_max_value_length(svc->skeleton, PTAGS_MAX_VALUE_LEN);
        ptags_manager_set_max_message_bytes(svc->skeleton, PTAGS_MAX_MESSAGE_BYTES);
        /* Each budget's property is named like its option. */
        for (gsize i = 0; i < n_limits; i++)
                g_object_set(svc->skeleton, infos[i].option, ptags_limit_get(limits, &infos[i]),
                             NULL);

        g_signal_connect(svc->skeleton, "handle-get-tags", G_CALLBACK(handle_get_tags), svc);
        g_signal_connect(svc->skeleton, "handle-get-tags-fd", G_CALLBACK(handle_get_tags_fd), svc);
        g_signal_connect(svc->skeleton, "handle-has-tag", G_CALLBACK(handle_has_tag), svc);
        g_signal_connect(svc->skeleton, "handle-get-peer-tags", G_CALLBACK(handle_get_peer_tags),
                         svc);
        g_signal_connect(svc->skeleton, "handle-peer-has-tag", G_CALLBACK(handle_peer_has_tag),
                         svc);
        g_signal_connect(svc->skeleton, "handle-find-tagged", G_CALLBACK(handle_find_tagged), svc);
        ptags_manager_connect_changes(svc);
        ptags_manager_connect_containers(svc);

        if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(svc->skeleton), connection,
                                              "/org/ptags/Manager", error)) {
                ptags_service_free(svc);
                return NULL;
        }
        return svc;
}

void ptags_service_free(PtagsService *svc)
{
        if (svc == NULL)
                return;
        if (g_dbus_interface_skeleton_get_connection(G_DBUS_INTERFACE_SKELETON(svc->skeleton)))
                g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(svc->skeleton));
        g_clear_object(&svc->skeleton);
        ptags_manager_free_containers(svc);
        ptags_clients_free(svc->clients);
        ptags_byte_cache_free(svc->byte_cache);
        g_hash_table_unref(svc->reauthorizing);
        ptags_peer_cache_free(svc->peers);
        g_clear_object(&svc->connection);
        g_free(svc);
}
