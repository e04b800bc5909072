// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager.c: the org.ptags.Manager object and its read methods, which need
 * no authorization; changes are manager-change.c, containers
 * manager-container.c, and what every call shares is call.c. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "manager.h"

#include "args.h"
#include "bus-thread.h"
#include "call.h"
#include "config.h"
#include "errors.h"
#include "names.h"
#include "page-writer.h"

#include <string.h>

/* ------------------------------------------------------------------ reads
 *
 * Each handler checks its arguments at once, pins the target (a pid is
 * pinned as soon as the caller is known to number processes as ptagsd does,
 * which for a connection not seen before takes one lookup at the bus; not
 * when the turn comes, so a pid freed and reused while the call waits for
 * its turn is never read), then waits for its uid's turn (call_admit_read)
 * and reads. */

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

static void admit_read_step(Call *call)
{
        call_admit_read(call, read_step);
}

static void get_peer_tags_step(Call *call)
{
        call_lookup_peer(call, call->peer_name, peer_read_step);
}

/* A read call whose arguments passed their checks (@error NULL) and whose
 * query @pattern (NULL: none) parses; NULL when not (the call has then
 * been answered with the error). */
static Call *read_call_new(PtagsService *svc, GDBusMethodInvocation *inv, GError *error,
                           const char *pattern)
{
        gboolean kept_only = FALSE;
        char *body = NULL;

        if (error == NULL && pattern != NULL)
                ptags_query_pattern_parse(pattern, &kept_only, &body, &error);
        if (error != NULL) {
                ptags_bus_thread_call_done(g_dbus_method_invocation_get_message(inv));
                g_dbus_method_invocation_return_gerror(inv, error);
                g_error_free(error);
                return NULL;
        }
        Call *call = call_new(svc, inv);
        if (call == NULL) {
                g_free(body);
                return NULL;
        }
        call->kept_only = kept_only;
        call->pattern = body;
        return call;
}

static gboolean handle_get_tags(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                                PtagsService *svc)
{
        GError *error = NULL;
        Call *call = read_call_new(svc, inv, ptags_check_pid(pid, &error) ? NULL : error, NULL);

        if (call != NULL)
                call_pin_pid(call, pid, admit_read_step);
        return TRUE;
}

static gboolean handle_get_tags_fd(PtagsManager *object, GDBusMethodInvocation *inv,
                                   GUnixFDList *fds, GVariant *pidfd, PtagsService *svc)
{
        Call *call = call_new(svc, inv);
        GError *error = NULL;

        if (call == NULL)
                return TRUE;
        if (!call_adopt_fd(call, fds, pidfd, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        call_admit_read(call, read_step);
        return TRUE;
}

static gboolean handle_has_tag(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                               const char *pattern, PtagsService *svc)
{
        GError *error = NULL;
        Call *call = read_call_new(svc, inv, ptags_check_pid(pid, &error) ? NULL : error, pattern);

        if (call == NULL)
                return TRUE;
        call->want_bool = TRUE;
        call_pin_pid(call, pid, admit_read_step);
        return TRUE;
}

/* GetPeerTags and PeerHasTag (@pattern non-NULL). */
static void peer_read(PtagsService *svc, GDBusMethodInvocation *inv, const char *bus_name,
                      const char *pattern)
{
        GError *error = NULL;
        Call *call = read_call_new(svc, inv, ptags_check_bus_name(bus_name, &error) ? NULL : error,
                                   pattern);

        if (call == NULL)
                return;
        call->want_bool = pattern != NULL;
        call->peer_name = g_strdup(bus_name);
        call_admit_read(call, get_peer_tags_step);
}

static gboolean handle_get_peer_tags(PtagsManager *object, GDBusMethodInvocation *inv,
                                     const char *bus_name, PtagsService *svc)
{
        peer_read(svc, inv, bus_name, NULL);
        return TRUE;
}

static gboolean handle_peer_has_tag(PtagsManager *object, GDBusMethodInvocation *inv,
                                    const char *bus_name, const char *pattern, PtagsService *svc)
{
        peer_read(svc, inv, bus_name, pattern);
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
        /* Processes often share one tag list (the backend then passes the
         * same list id): its matching part is built once. id -> Matching. */
        GHashTable *by_set;
} FoundList;

/* The matching tags of @tags as a(sbs), or NULL when none match. Only the
 * matching tags: what the caller asked about, and a reply that grows with
 * the matches rather than with everything else the processes hold. */
static GVariant *matching_tags(FoundList *list, const ptags_set *tags, guint64 *bytes)
{
        size_t len = strlen(list->pattern);
        g_autoptr(GPtrArray) items = g_ptr_array_new();

        *bytes = 0;
        for (size_t i = 0; i < ptags_set_count(tags); i++) {
                const ptags_entry *e = ptags_set_at(tags, i);
                if ((list->kept_only && !e->keep) ||
                    !ptags_pattern_match(list->pattern, len, e->name, e->name_len))
                        continue;
                *bytes += e->name_len + e->value_len + PTAGS_WIRE_TAG_OVERHEAD;
                g_ptr_array_add(items, ptags_entry_to_variant(e));
        }
        if (items->len == 0)
                return NULL;
        return g_variant_ref_sink(g_variant_new_array(G_VARIANT_TYPE("(sbs)"),
                                                      (GVariant **)items->pdata, items->len));
}

/* The matching part of one tag list; tags NULL when nothing matches. */
typedef struct {
        GVariant *tags;
        guint64 bytes; /* their wire size, at most */
} Matching;

static void matching_free(gpointer p)
{
        Matching *m = p;

        if (m->tags != NULL)
                g_variant_unref(m->tags);
        g_free(m);
}

static void found_add(FoundList *list, pid_t pid, const Matching *m)
{
        if (m->tags == NULL)
                return;
        list->size += m->bytes + PTAGS_WIRE_PROCESS_OVERHEAD;
        if (list->size > PTAGS_MAX_MESSAGE_BYTES) {
                list->too_big = TRUE;
                return;
        }
        FoundProcess p = {pid, g_variant_ref(m->tags)};
        g_array_append_val(list->found, p);
}

static gboolean found_one(pid_t pid, const ptags_set *tags, guint64 list_id, void *user_data)
{
        FoundList *list = user_data;

        if (list->too_big)
                return FALSE;
        if (list_id == 0) {
                Matching own = {NULL, 0};
                own.tags = matching_tags(list, tags, &own.bytes);
                found_add(list, pid, &own);
                g_clear_pointer(&own.tags, g_variant_unref);
                return !list->too_big;
        }
        Matching *m = g_hash_table_lookup(list->by_set, &list_id);
        if (m == NULL) {
                m = g_new0(Matching, 1);
                m->tags = matching_tags(list, tags, &m->bytes);
                g_hash_table_insert(list->by_set, g_memdup2(&list_id, sizeof(list_id)), m);
        }
        found_add(list, pid, m);
        /* Once the reply is too big, nothing more is read or parsed. */
        return !list->too_big;
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
        g_autoptr(GHashTable) by_set =
                g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, matching_free);
        FoundList list = {found, call->kept_only, call->pattern, PTAGS_WIRE_HEADER_OVERHEAD,
                          FALSE, by_set};
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
        g_autofree GVariant **entries = g_new(GVariant *, found->len + 1);
        for (guint i = 0; i < found->len; i++) {
                FoundProcess *p = &g_array_index(found, FoundProcess, i);
                GVariant *fields[2] = {g_variant_new_uint32((guint32)p->pid), p->tags};
                entries[i] = g_variant_new_tuple(fields, 2);
        }
        GVariant *array = g_variant_new_array(G_VARIANT_TYPE("(ua(sbs))"), entries, found->len);
        call_return(call, g_variant_new_tuple(&array, 1));
}

static void admit_find_step(Call *call)
{
        call_admit_read(call, find_step);
}

static gboolean handle_find_tagged(PtagsManager *object, GDBusMethodInvocation *inv,
                                   const char *pattern, PtagsService *svc)
{
        Call *call = read_call_new(svc, inv, NULL, pattern);

        if (call == NULL)
                return TRUE;
        /* The reply is made of pids, which the caller must read as ptagsd does. */
        call->answers_pids = TRUE;
        call_lookup_peer(call, call->sender, admit_find_step);
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
        svc->in_progress = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        call_watch_start(svc);
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
                                              PTAGS_OBJECT_PATH, error)) {
                ptags_service_free(svc);
                return NULL;
        }
        svc->bus_thread = ptags_bus_thread_new(svc);
        return svc;
}

void ptags_service_free(PtagsService *svc)
{
        if (svc == NULL)
                return;
        ptags_bus_thread_free(svc->bus_thread);
        if (g_dbus_interface_skeleton_get_connection(G_DBUS_INTERFACE_SKELETON(svc->skeleton)))
                g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(svc->skeleton));
        g_clear_object(&svc->skeleton);
        ptags_manager_free_containers(svc);
        ptags_clients_free(svc->clients);
        ptags_byte_cache_free(svc->byte_cache);
        g_hash_table_unref(svc->reauthorizing);
        /* Calls still waiting for a lookup are left unanswered, as ptagsd stops. */
        g_clear_pointer(&svc->looking_up, g_hash_table_unref);
        g_clear_pointer(&svc->in_progress, g_hash_table_unref);
        call_watch_stop(svc);
        ptags_peer_cache_free(svc->peers);
        g_clear_object(&svc->connection);
        g_free(svc);
}
