// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager-container.c: the audit container-ID methods and signals: register
 * (kernel rules in the kernel's order, decided by the model), read, list. */
#define G_LOG_DOMAIN "ptagsd-container"

#include "authority.h"
#include "errors.h"
#include "lineage.h"
#include "log.h"
#include "log-writer.h"
#include "args.h"
#include "call.h"
#include "registry.h"
#include "subuids.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NAME_MAX_BYTES 256

static guint max_per_uid = PTAGS_CONTAINERS_PER_UID_DEFAULT;

void ptags_containers_set_max_per_uid(guint max)
{
        max_per_uid = max;
}

typedef struct {
        guint64 contid;
        gboolean has_uuid;
        guint8 uuid[16];
        char *name;
        GVariant *info; /* a{sv}, parsed once the caller is known */
        guint64 old;    /* the target's ID before, for the audit record */
        /* What polkit was told about the target, to notice an exec or a
         * change of uid, name or unit before the write; reauthorized once
         * at most. */
        PtagsProcessInfo seen;
        guint64 seen_mark; /* the backend's exec mark then (bpf) */
        gboolean reauthorized;
        CallStep read_start; /* a read's first step once admitted */
        /* GetContainer: the container polkit was asked about (none: 0
         * and -1). */
        gint64 judged_registered_us;
        pid_t judged_leader;
} ContainerArgs;

static void container_args_free(gpointer p)
{
        ContainerArgs *a = p;

        g_free(a->name);
        ptags_process_info_clear(&a->seen);
        if (a->info != NULL)
                g_variant_unref(a->info);
        g_free(a);
}

static ContainerArgs *args_of(Call *call)
{
        if (call->extra == NULL) {
                ContainerArgs *a = g_new0(ContainerArgs, 1);
                a->old = PTAGS_CONTID_UNSET;
                call->extra = a;
                call->extra_free = container_args_free;
        }
        return call->extra;
}

static void log_context(Call *call, PtagsLogContext *ctx)
{
        /* The pid named, before it is pinned; -1 when the caller numbers
         * processes otherwise than ptagsd (another pid namespace). */
        gboolean other =
                call->caller != NULL && call->caller->pid_namespace == PTAGS_PID_NAMESPACE_OTHER;
        ctx->pid = call->target.pid != 0 ? call->target.pid : other ? -1 : (pid_t)call->pid_arg;
        ctx->caller_pid = call->caller ? call->caller->target.pid : 0;
        ctx->caller_uid = call->caller ? call->caller->uid : (uid_t)-1;
        ctx->method = call->method;
}

/* Every refused registration is logged (queued for the writer thread
 * before the reply), but while the log writer is full. */
static void register_fail(Call *call, GError *error)
{
        PtagsLogContext ctx;
        ContainerArgs *a = args_of(call);

        log_context(call, &ctx);
        ptags_log_container_set(&ctx, a->contid, a->old, error);
        call_fail(call, error);
}

static gboolean parse_info(ContainerArgs *a, GVariant *info, GError **error)
{
        GVariantIter it;
        const char *key;
        GVariant *next;

        /* Each value is owned here, so a refusal that returns from the
         * middle of the loop still drops it (g_variant_iter_loop() would
         * keep it, and with it the part of the message that holds it). */
        g_variant_iter_init(&it, info);
        while (g_variant_iter_next(&it, "{&sv}", &key, &next)) {
                g_autoptr(GVariant) value = next;
                if (g_str_equal(key, "uuid") && g_variant_is_of_type(value, G_VARIANT_TYPE("ay"))) {
                        gsize n = 0;
                        const guint8 *bytes = g_variant_get_fixed_array(value, &n, 1);
                        if (n != sizeof(a->uuid)) {
                                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                            "argument info: uuid has %zu bytes, not 16", n);
                                return FALSE;
                        }
                        memcpy(a->uuid, bytes, n);
                        a->has_uuid = TRUE;
                } else if (g_str_equal(key, "name") &&
                           g_variant_is_of_type(value, G_VARIANT_TYPE_STRING)) {
                        const char *name = g_variant_get_string(value, NULL);
                        /* The bus gives valid UTF-8. Every control
                         * character (Cc): C1's U+009B is a terminal's CSI
                         * as ESC [ is, and the name reaches signals,
                         * polkit details and other programs' output. */
                        gboolean control = FALSE;
                        for (const char *p = name; *p != '\0'; p = g_utf8_next_char(p))
                                control |= g_unichar_iscntrl(g_utf8_get_char(p));
                        if (strlen(name) > NAME_MAX_BYTES || control) {
                                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                            "argument info: name must be at most %d bytes "
                                            "without control characters",
                                            NAME_MAX_BYTES);
                                return FALSE;
                        }
                        /* Nor noncharacters: sd-bus refuses every message
                         * holding one, and the name rides along in
                         * ListContainers, GetContainer and the signal. */
                        gunichar nonchar = ptags_noncharacter_in(name, strlen(name));
                        if (nonchar != 0) {
                                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                            "argument info: name holds U+%04X, a Unicode "
                                            "noncharacter, which D-Bus clients built on sd-bus "
                                            "could not receive",
                                            nonchar);
                                return FALSE;
                        }
                        g_free(a->name);
                        a->name = g_strdup(name);
                } else {
                        /* The key is the caller's: shortened and escaped,
                         * quotes too, as it reaches the journal's line. */
                        g_autofree char *shown = ptags_shown_text(key, strlen(key), 80);
                        g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                    "argument info: unknown key \"%s\" or wrong type (expected "
                                    "uuid ay, name s)",
                                    shown);
                        return FALSE;
                }
        }
        return TRUE;
}

/* ---------------------------------------------------------- process facts */

/* @t's container ID, or unset when it cannot be read: for what only
 * describes a call (its log) or only ever gives the ID (settling). */
static guint64 contid_of(PtagsService *svc, const PtagsTarget *t)
{
        guint64 id = PTAGS_CONTID_UNSET;

        if (svc->backend->ops->read_contid(svc->backend, t->pidfd, t->pid, &id) < 0)
                return PTAGS_CONTID_UNSET;
        return id;
}

/* @t's container ID for a decision: a read that fails is an error, never
 * "unset", which would let a process that has an ID be given another. An
 * exited process reads as unset; the caller checks that it still runs. */
static gboolean contid_for_decision(PtagsService *svc, const PtagsTarget *t, guint64 *id,
                                    GError **error)
{
        int r = svc->backend->ops->read_contid(svc->backend, t->pidfd, t->pid, id);
        if (r == -ESRCH)
                *id = PTAGS_CONTID_UNSET;
        else if (r < 0) {
                g_propagate_error(error,
                                  ptags_errno_error(r, "cannot read the container ID of", t->pid));
                return FALSE;
        }
        return TRUE;
}

/* The kernel checks that the target has no children and one thread and
 * writes its ID under its own locks; ptagsd checks, then writes. A thread
 * started in between gets the ID from the write, which reaches every
 * thread, but a child forked in between copied the target's ID from before
 * and would escape the container. So after the write, every descendant is
 * given the ID it would have inherited had it been forked after the write:
 * the state the kernel allows, whichever way the race went. Passes repeat
 * while they find such a descendant (it may have forked meanwhile). */
#define SETTLE_PASSES      16
#define SETTLE_DESCENDANTS 4096

static gboolean settle_descendants(PtagsService *svc, const PtagsTarget *target, guint64 contid)
{
        for (int pass = 0; pass < SETTLE_PASSES; pass++) {
                gboolean complete = FALSE;
                g_autoptr(GArray) kids =
                        ptags_lineage_descendants(target->pid, SETTLE_DESCENDANTS, &complete);
                guint settled = 0;
                for (guint i = 0; i < kids->len; i++) {
                        const PtagsLineageChild *kid = &g_array_index(kids, PtagsLineageChild, i);
                        PtagsTarget t;
                        if (!ptags_target_pin_pid(&t, kid->pid, NULL))
                                continue; /* exited */
                        /* Read by pid: a pid freed and reused since the
                         * listing is someone else's (another parent), never
                         * written. One read, however deep the tree. */
                        if (ptags_lineage_parent(kid->pid) == kid->parent &&
                            ptags_target_alive(&t) && ptags_target_alive(target) &&
                            contid_of(svc, &t) != contid &&
                            svc->backend->ops->write_contid(svc->backend, t.pidfd, kid->pid,
                                                            contid) == 0)
                                settled++;
                        ptags_target_clear(&t);
                }
                if (!complete)
                        return FALSE;
                if (settled == 0)
                        return TRUE;
                g_debug("gave audit container ID %" G_GUINT64_FORMAT " to %u processes forked "
                        "by process %d during its registration",
                        contid, settled, (int)target->pid);
        }
        return FALSE;
}

/* The model's verdict as the named error. (transfer full) */
static GError *rule_error(int e, const ptags_contid_facts *f, pid_t pid, guint64 contid)
{
        switch (e) {
        case ESRCH:
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                   "process %d has exited", (int)pid);
        case EINVAL:
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_INVALID_CONTAINER_ID,
                                   "argument contid: %" G_GUINT64_FORMAT
                                   " means unset and cannot be registered",
                                   contid);
        case EPERM:
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                   "registering containers is not authorized");
        case EBUSY:
                if (f->target_has_children)
                        return g_error_new(PTAGS_ERROR, PTAGS_ERROR_TARGET_BUSY,
                                           "process %d has children", (int)pid);
                if (f->target_threads > 1)
                        return g_error_new(PTAGS_ERROR, PTAGS_ERROR_TARGET_BUSY,
                                           "process %d has %u threads, not one", (int)pid,
                                           f->target_threads);
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_TARGET_BUSY,
                                   "process %d started a child or a thread", (int)pid);
        case EXDEV:
                return f->target_is_writer
                               ? g_error_new(PTAGS_ERROR, PTAGS_ERROR_SELF_TARGET,
                                             "process %d is the caller itself", (int)pid)
                               : g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_DESCENDANT,
                                             "process %d is not a descendant of the caller",
                                             (int)pid);
        case EEXIST:
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_ALREADY_REGISTERED,
                                   "process %d already has container ID %" G_GUINT64_FORMAT,
                                   (int)pid, f->target_current);
        case ENOTUNIQ:
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_CONTAINER_ID_IN_USE,
                                   "argument contid: %" G_GUINT64_FORMAT
                                   " is in use by a container registered by another process",
                                   contid);
        }
        return g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED, "unexpected verdict %s", g_strerror(e));
}

/* ---------------------------------------------------------- registration */

static void register_commit(Call *call)
{
        PtagsService *svc = call->svc;
        ContainerArgs *a = args_of(call);
        PtagsPeer *caller = call->caller;
        pid_t pid = call->target.pid;
        GError *error = NULL;

        /* The descendant and self rules and the registrant's identity need
         * the caller's own process, proven to be the connection's. */
        if (!caller->process_known) {
                register_fail(call, ptags_peer_unknown_error(caller, call->sender,
                                                             "registering a container"));
                return;
        }

        PtagsContainer *existing = ptags_registry_lookup(svc->registry, a->contid);
        guint64 writer_current;
        if (!contid_for_decision(svc, &call->target, &a->old, &error) ||
            !contid_for_decision(svc, &caller->target, &writer_current, &error)) {
                register_fail(call, error);
                return;
        }
        /* None read means the status could not be read: never "one". */
        guint threads = ptags_lineage_threads(pid);
        if (threads == 0 && ptags_target_alive(&call->target)) {
                register_fail(call,
                              g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                          "cannot count the threads of process %d", (int)pid));
                return;
        }
        ptags_contid_facts f = {
                .target_exists = ptags_target_alive(&call->target),
                .value_ok = TRUE,
                .requested = a->contid,
                /* ptagsd holds CAP_AUDIT_CONTROL; polkit stood for the
                 * caller's right at this point of the kernel's order. */
                .writer_cap_audit_control = TRUE,
                .target_has_children = ptags_lineage_has_children(pid),
                .target_threads = threads,
                .target_is_writer = caller->target.pid == pid,
                .target_is_descendant = ptags_lineage_is_descendant(pid, caller->target.pid),
                .writer_is_root_exempt = caller->uid == 0,
                .target_current = a->old,
                .writer_current = writer_current,
                .requested_in_use = existing != NULL,
                .requested_owned_by_writer =
                        existing != NULL && existing->owner_pid == caller->target.pid &&
                        existing->owner_start == ptags_lineage_start_time(caller->target.pid),
        };
        /* Everything above was read by pid: it holds only if both live. */
        if (!ptags_target_alive(&call->target))
                f.target_exists = FALSE;
        if (!ptags_target_alive(&caller->target)) {
                register_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                                                "the caller's process exited"));
                return;
        }
        bool nesting = false;
        int e = ptags_contid_decide(&f, &nesting);
        if (e != 0) {
                register_fail(call, rule_error(e, &f, pid, a->contid));
                return;
        }
        /* Counted afresh, as the registry's owners are mapped: nothing taken
         * here is given back later. */
        uid_t budget = ptags_budget_uid(caller->uid);
        guint held = ptags_registry_count_for_budget(svc->registry, budget);
        if (existing == NULL && held >= max_per_uid) {
                register_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                                                "uid %u (its subordinate uids included) "
                                                "already holds %u live containers, the "
                                                "limit MaxContainersPerUid",
                                                (unsigned)budget, held));
                return;
        }
        if (!ptags_log_audit_ready(&error) || !ptags_log_writer_has_room(&error)) {
                register_fail(call, error);
                return;
        }
        g_autoptr(GArray) namespaces = NULL;
        if (existing == NULL &&
            (namespaces = ptags_namespaces_read(&call->target, &error)) == NULL) {
                register_fail(call, error);
                return;
        }
        /* Recorded first: the kernel's ID is write-once, so it must never
         * exist without its registry entry. */
        PtagsContainer *c = existing;
        if (c == NULL) {
                c = ptags_registry_add(svc->registry, a->contid,
                                       nesting ? a->old : PTAGS_CONTID_UNSET, &call->target,
                                       caller->uid, &caller->target, a->has_uuid ? a->uuid : NULL,
                                       a->name, namespaces, &error);
                if (c == NULL) {
                        register_fail(call, error);
                        return;
                }
        }
        int r = svc->backend->ops->write_contid(svc->backend, call->target.pidfd, pid, a->contid);
        if (r < 0) {
                if (existing == NULL)
                        ptags_registry_forget(svc->registry, a->contid);
                /* The kernel's own verdicts keep their rule's name. */
                register_fail(
                        call,
                        r == -EINVAL || r == -EBUSY || r == -EXDEV || r == -EEXIST || r == -ENOTUNIQ
                                ? rule_error(-r, &f, pid, a->contid)
                                : ptags_errno_error(r, "cannot set the container ID of", pid));
                return;
        }
        if (!settle_descendants(svc, &call->target, a->contid))
                g_warning("process %d kept forking during its registration as audit container "
                          "%" G_GUINT64_FORMAT ": some of its descendants may lack the ID",
                          (int)pid, a->contid);
        ptags_registry_watch(c, &call->target);
        PtagsLogContext ctx;
        log_context(call, &ctx);
        ptags_log_container_set(&ctx, a->contid, a->old, NULL);
        ptags_manager_emit_container_registered(svc->skeleton, a->contid, (guint32)pid,
                                                ptags_container_to_variant(c));
        call_return(call, NULL);
}

static void register_start(Call *call);

static void register_authorized(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Call *call = user_data;
        ContainerArgs *a = args_of(call);
        GError *error = NULL;

        if (!ptags_authority_check_all_finish(res, &error)) {
                register_fail(call, error);
                return;
        }
        guint64 mark = a->seen_mark;
        int r = ptags_backend_exec_mark(call->svc->backend, call->target.pidfd, &mark);
        gboolean same = r == 0 && ptags_process_info_same(&call->target, &a->seen, &error);
        if (r < 0)
                error = ptags_errno_error(r, "cannot read the program run by", call->target.pid);
        if (error != NULL) {
                register_fail(call, error);
                return;
        }
        if (!same || mark != a->seen_mark) {
                /* Polkit answered about another program or user (an exec
                 * of the same program is another one too). */
                if (a->reauthorized) {
                        register_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_FAILED,
                                                        "process %d kept changing during "
                                                        "authorization; try again",
                                                        (int)call->target.pid));
                        return;
                }
                a->reauthorized = TRUE;
                register_start(call);
                return;
        }
        register_commit(call);
}

static PolkitDetails *target_details(const PtagsTarget *t, const PtagsProcessInfo *info,
                                     gboolean self)
{
        PolkitDetails *d = polkit_details_new();
        ptags_authority_insert_target(d, t->pid, info, self);
        return d;
}

/* One polkit check of @action; @done gets the call back. */
/* @label names what is asked about in errors and logs. */
static void authorize_one(Call *call, const char *action, PolkitDetails *details, const char *label,
                          gboolean allow_interaction, GAsyncReadyCallback done)
{
        g_autoptr(GPtrArray) checks =
                g_ptr_array_new_with_free_func((GDestroyNotify)ptags_check_free);
        GDBusMessage *msg = call->message;
        gboolean interactive =
                allow_interaction && (g_dbus_message_get_flags(msg) &
                                      G_DBUS_MESSAGE_FLAGS_ALLOW_INTERACTIVE_AUTHORIZATION) != 0;
        const char *sender = call->sender;

        /* A read leaves its uid's turn while polkit decides, as a change does. */
        call_end_turn(call);
        /* A caller that leaves the bus cancels its pending checks. */
        call_cancel_if_caller_leaves(call);

        g_ptr_array_add(checks, ptags_check_new(action, details, label));
        ptags_authority_check_all_async(call->svc->authority, sender, call->caller->budget_uid,
                                        checks, interactive, call->cancellable, done, call);
}

/* Caller known, target pinned: the kernel's first two rules, then polkit
 * where the kernel checks CAP_AUDIT_CONTROL, then the rest. */
static void register_start(Call *call)
{
        ContainerArgs *a = args_of(call);
        GError *error = NULL;

        /* Parsed here, once the caller is known, so a refusal names it. */
        if (a->info != NULL) {
                gboolean ok = parse_info(a, a->info, &error);
                g_clear_pointer(&a->info, g_variant_unref);
                if (!ok) {
                        register_fail(call, error);
                        return;
                }
        }
        if (call->target.pidfd < 0 &&
            !ptags_target_pin_pid(&call->target, (pid_t)call->pid_arg, &error)) {
                register_fail(call, error);
                return;
        }
        if (!ptags_target_alive(&call->target)) {
                register_fail(call, rule_error(ESRCH, NULL, call->target.pid, a->contid));
                return;
        }
        a->old = contid_of(call->svc, &call->target);
        if (a->contid == PTAGS_CONTID_UNSET) {
                register_fail(call, rule_error(EINVAL, NULL, call->target.pid, a->contid));
                return;
        }
        /* Known before polkit is asked, so nobody is prompted for a call
         * that cannot succeed (register_commit looks again). */
        if (!call->caller->process_known) {
                register_fail(call, ptags_peer_unknown_error(call->caller, call->sender,
                                                             "registering a container"));
                return;
        }
        if (call->caller->uid == 0) {
                register_commit(call); /* polkit always authorizes root */
                return;
        }
        PtagsProcessInfo info;
        guint64 mark;
        int r = ptags_backend_exec_mark(call->svc->backend, call->target.pidfd, &mark);
        if (r < 0) {
                register_fail(call, ptags_errno_error(r, "cannot read the program run by",
                                                      call->target.pid));
                return;
        }
        if (!ptags_process_info_read(&call->target, &info, &error)) {
                register_fail(call, error);
                return;
        }
        PolkitDetails *d =
                target_details(&call->target, &info, call->caller->target.pid == call->target.pid);
        ptags_process_info_clear(&a->seen);
        a->seen = info; /* kept for the re-check */
        a->seen_mark = mark;
        g_autofree char *id = g_strdup_printf("%" G_GUINT64_FORMAT, a->contid);
        polkit_details_insert(d, "contid", id);
        polkit_details_insert(d, "container-name", a->name ? a->name : "");
        g_autofree char *label =
                g_strdup_printf("container %s of process %d", id, (int)call->target.pid);
        authorize_one(call, PTAGS_ACTION_CONTAINER_REGISTER, d, label, TRUE, register_authorized);
}

static gboolean not_supported(Call *call)
{
        if (call->svc->registry != NULL)
                return FALSE;
        call_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                                    "audit container IDs are not available with the %s backend "
                                    "on this kernel",
                                    call->svc->backend->ops->name));
        return TRUE;
}

/* The most @info may take: a 16-byte uuid and a name of NAME_MAX_BYTES,
 * framed (GVariant's serialized size, about what the message spends). */
#define INFO_MAX_BYTES 512

/* @info's shape, checked before the call waits for anything: the bus lets
 * an a{sv} repeat a key up to 32 MiB, and the call would hold that message
 * while polkit decides. Its values are checked once the caller is known
 * (parse_info), so a refusal there is logged naming the caller. */
static gboolean info_shape_ok(GVariant *info, GError **error)
{
        gsize size = g_variant_get_size(info), n = g_variant_n_children(info);

        if (size > INFO_MAX_BYTES || n > 2) {
                g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                            "argument info: %zu entries in %zu bytes; it holds at most a uuid "
                            "(16 bytes) and a name (%d bytes)",
                            n, size, NAME_MAX_BYTES);
                return FALSE;
        }
        if (n == 2) {
                const char *first = NULL, *second = NULL;
                g_variant_get_child(info, 0, "{&sv}", &first, NULL);
                g_variant_get_child(info, 1, "{&sv}", &second, NULL);
                if (g_str_equal(first, second)) {
                        g_autofree char *shown = ptags_shorten(first);
                        g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                                    "argument info: key \"%s\" given twice", shown);
                        return FALSE;
                }
        }
        return TRUE;
}

static Call *register_call_new(PtagsService *svc, GDBusMethodInvocation *inv, guint64 contid,
                               GVariant *info)
{
        Call *call = call_new(svc, inv);
        GError *error = NULL;

        if (call == NULL)
                return NULL;
        ContainerArgs *a = args_of(call);
        a->contid = contid;
        if (not_supported(call))
                return NULL;
        /* Every refusal once the caller is known is logged. */
        call->refuse = register_fail;
        if (!info_shape_ok(info, &error)) {
                call_fail(call, error);
                return NULL;
        }
        a->info = g_variant_ref(info);
        return call;
}

static gboolean handle_register(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                                guint64 contid, GVariant *info, PtagsService *svc)
{
        Call *call = register_call_new(svc, inv, contid, info);

        if (call == NULL)
                return TRUE;
        call->pid_arg = pid;
        GError *error = NULL;
        if (!ptags_check_pid(pid, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        /* The caller first, so every refusal after this names it. */
        call->target_is_caller = pid == 0;
        call_lookup_peer(call, g_dbus_method_invocation_get_sender(inv), register_start);
        return TRUE;
}

static gboolean handle_register_fd(PtagsManager *object, GDBusMethodInvocation *inv,
                                   GUnixFDList *fds, GVariant *pidfd, guint64 contid,
                                   GVariant *info, PtagsService *svc)
{
        Call *call = register_call_new(svc, inv, contid, info);
        GError *error = NULL;

        if (call == NULL)
                return TRUE;
        if (!call_adopt_fd(call, fds, pidfd, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        call_lookup_peer(call, g_dbus_method_invocation_get_sender(inv), register_start);
        return TRUE;
}

/* ---------------------------------------------------------- reads */

static void get_id_reply(Call *call)
{
        guint64 id = PTAGS_CONTID_UNSET;
        int r = call->svc->backend->ops->read_contid(call->svc->backend, call->target.pidfd,
                                                     call->target.pid, &id);

        if (r < 0) {
                call_fail(call, ptags_errno_error(r, "cannot read the container ID of",
                                                  call->target.pid));
                return;
        }
        call_return(call, g_variant_new("(t)", id));
}

static void get_id_authorized(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Call *call = user_data;
        GError *error = NULL;

        if (!ptags_authority_check_all_finish(res, &error)) {
                call_fail(call, error);
                return;
        }
        /* polkit judged the program, uid and unit it was told of: a target
         * that executed another (a setuid one, say) or moved meanwhile is
         * not the one allowed. */
        if (!ptags_process_info_same(&call->target, &args_of(call)->seen, &error)) {
                call_fail(call, error != NULL ? error
                                              : g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                                            "process %d changed (its program, user "
                                                            "or unit) while polkit was asked about "
                                                            "it; ask again",
                                                            (int)call->target.pid));
                return;
        }
        get_id_reply(call);
}

static void get_id_start(Call *call)
{
        GError *error = NULL;
        PtagsProcessInfo info;

        if (call->target.pidfd < 0 &&
            !ptags_target_pin_pid(&call->target, (pid_t)call->pid_arg, &error)) {
                call_fail(call, error);
                return;
        }
        if (!ptags_process_info_read(&call->target, &info, &error)) {
                call_fail(call, error);
                return;
        }
        /* One's own processes are free to read, like the kernel's
         * same-uid /proc access: every uid of the process (real,
         * effective, saved, file system) is the caller's. Others' need
         * inspect, a setuid program the caller started too. */
        gboolean own = TRUE;
        for (gsize i = 0; i < G_N_ELEMENTS(info.uids); i++)
                own = own && info.uids[i] == call->caller->uid;
        if (call->caller->uid == 0 || own) {
                ptags_process_info_clear(&info);
                get_id_reply(call);
                return;
        }
        PolkitDetails *d =
                target_details(&call->target, &info, call->caller->target.pid == call->target.pid);
        args_of(call)->seen = info;
        g_autofree char *label =
                g_strdup_printf("the container ID of process %d", (int)call->target.pid);
        authorize_one(call, PTAGS_ACTION_CONTAINER_INSPECT, d, label, TRUE, get_id_authorized);
}

/* The reads of containers take turns with the other reads of their caller's
 * uid and count their replies against the unread budgets, as the reads of
 * tags do. */
static void read_admitted(Call *call)
{
        call_lookup_peer(call, call->sender, args_of(call)->read_start);
}

static void admit_read(Call *call, CallStep start)
{
        args_of(call)->read_start = start;
        call_admit_read(call, read_admitted);
}

static gboolean handle_get_id(PtagsManager *object, GDBusMethodInvocation *inv, guint32 pid,
                              PtagsService *svc)
{
        Call *call = call_new(svc, inv);

        if (call == NULL || not_supported(call))
                return TRUE;
        call->pid_arg = pid;
        GError *error = NULL;
        if (!ptags_check_pid(pid, &error)) {
                call_fail(call, error);
                return TRUE;
        }
        call->target_is_caller = pid == 0;
        admit_read(call, get_id_start);
        return TRUE;
}

/* Which container @c (NULL: none) is, to tell it from a later one of the
 * same ID. */
static void judge(ContainerArgs *a, const PtagsContainer *c)
{
        a->judged_registered_us = c != NULL ? c->registered_us : 0;
        a->judged_leader = c != NULL ? c->leader : -1;
}

static void get_container_reply(Call *call)
{
        ContainerArgs *a = args_of(call);
        PtagsContainer *c = ptags_registry_lookup(call->svc->registry, a->contid);

        /* It may have ended while polkit was asked, and its ID may have
         * been registered again since: polkit judged the one before. */
        if (c == NULL || c->registered_us != a->judged_registered_us ||
            c->leader != a->judged_leader) {
                call_fail(call,
                          g_error_new(
                                  PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_CONTAINER,
                                  a->judged_leader == -1
                                          ? "argument contid: no live container %" G_GUINT64_FORMAT
                                          : "argument contid: container %" G_GUINT64_FORMAT
                                            " ended while polkit was asked about it",
                                  a->contid));
                return;
        }
        call_return(call, g_variant_new("(@a{sv})", ptags_container_to_variant(c)));
}

static void get_container_authorized(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Call *call = user_data;
        GError *error = NULL;

        if (!ptags_authority_check_all_finish(res, &error)) {
                call_fail(call, error);
                return;
        }
        get_container_reply(call);
}

static PolkitDetails *container_details(const char *contid, const char *name)
{
        PolkitDetails *d = polkit_details_new();

        polkit_details_insert(d, "contid", contid);
        polkit_details_insert(d, "container-name", name ? name : "");
        return d;
}

static void get_container_start(Call *call)
{
        PtagsContainer *c = ptags_registry_lookup(call->svc->registry, args_of(call)->contid);

        judge(args_of(call), c);
        if (call->caller->uid == 0 || (c != NULL && c->owner_uid == call->caller->uid)) {
                get_container_reply(call);
                return;
        }
        /* An ID no live container has is asked about like another's, so
         * that only a caller who may inspect others' containers learns
         * which IDs are in use. */
        g_autofree char *id = g_strdup_printf("%" G_GUINT64_FORMAT, args_of(call)->contid);
        g_autofree char *label = g_strdup_printf("container %s", id);
        authorize_one(call, PTAGS_ACTION_CONTAINER_INSPECT,
                      container_details(id, c != NULL ? c->name : NULL), label, TRUE,
                      get_container_authorized);
}

static gboolean handle_get_container(PtagsManager *object, GDBusMethodInvocation *inv,
                                     guint64 contid, PtagsService *svc)
{
        Call *call = call_new(svc, inv);

        if (call == NULL || not_supported(call))
                return TRUE;
        args_of(call)->contid = contid;
        admit_read(call, get_container_start);
        return TRUE;
}

static void list_reply(Call *call, gboolean all)
{
        g_autoptr(GPtrArray) list = ptags_registry_list(call->svc->registry);
        GVariantBuilder b;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a(ta{sv})"));
        for (guint i = 0; i < list->len; i++) {
                PtagsContainer *c = list->pdata[i];
                if (all || c->owner_uid == call->caller->uid)
                        g_variant_builder_add(&b, "(t@a{sv})", c->contid,
                                              ptags_container_to_variant(c));
        }
        GVariant *reply =
                g_variant_ref_sink(g_variant_new("(@a(ta{sv}))", g_variant_builder_end(&b)));
        gsize size = g_variant_get_size(reply) + PTAGS_WIRE_HEADER_OVERHEAD;
        if (size > PTAGS_MAX_MESSAGE_BYTES) {
                g_variant_unref(reply);
                call_fail(call, g_error_new(PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                                            "the list of containers would take %" G_GSIZE_FORMAT
                                            " bytes, more than the MaxMessageBytes limit of %u "
                                            "of one reply; read them one by one with "
                                            "GetContainer",
                                            size, PTAGS_MAX_MESSAGE_BYTES));
                return;
        }
        call_return(call, reply);
        g_variant_unref(reply);
}

static void list_authorized(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Call *call = user_data;
        g_autoptr(GError) error = NULL;
        gboolean all = ptags_authority_check_all_finish(res, &error);

        /* Only polkit's "no" narrows the list to the caller's own. A caller
         * that left gets nothing, and one whose check polkit did not answer
         * (a budget, polkit failing or too slow) gets that error: a
         * narrowed list would be a wrong answer. */
        if (!all && !ptags_authority_denied(res)) {
                call_fail(call, g_steal_pointer(&error));
                return;
        }
        list_reply(call, all);
}

static void list_start(Call *call)
{
        g_autoptr(GPtrArray) list = ptags_registry_list(call->svc->registry);
        gboolean others = FALSE;

        for (guint i = 0; i < list->len && !others; i++)
                others = ((PtagsContainer *)list->pdata[i])->owner_uid != call->caller->uid;
        if (call->caller->uid == 0 || !others) {
                list_reply(call, TRUE);
                return;
        }
        authorize_one(call, PTAGS_ACTION_CONTAINER_INSPECT, container_details("*", NULL),
                      "other users' containers", FALSE, list_authorized);
}

static gboolean handle_list(PtagsManager *object, GDBusMethodInvocation *inv, PtagsService *svc)
{
        Call *call = call_new(svc, inv);

        if (call == NULL || not_supported(call))
                return TRUE;
        admit_read(call, list_start);
        return TRUE;
}

/* ---------------------------------------------------------- service */

static void container_gone(const PtagsContainer *c, void *user_data)
{
        PtagsService *svc = user_data;

        ptags_log_container_drop(c->contid, c->owner_pid, c->owner_uid);
        /* A signal sent before the name is owned reaches no one who
         * listens to org.ptags.Manager. */
        if (svc->removed_before_serving != NULL)
                g_array_append_val(svc->removed_before_serving, c->contid);
        else
                ptags_manager_emit_container_removed(svc->skeleton, c->contid);
}

void ptags_manager_serving(PtagsService *svc)
{
        g_autoptr(GArray) removed = g_steal_pointer(&svc->removed_before_serving);

        for (guint i = 0; removed != NULL && i < removed->len; i++)
                ptags_manager_emit_container_removed(svc->skeleton,
                                                     g_array_index(removed, guint64, i));
}

void ptags_manager_connect_containers(PtagsService *svc)
{
        ptags_manager_set_max_containers_per_uid(svc->skeleton, max_per_uid);
        g_signal_connect(svc->skeleton, "handle-register-container", G_CALLBACK(handle_register),
                         svc);
        g_signal_connect(svc->skeleton, "handle-register-container-fd",
                         G_CALLBACK(handle_register_fd), svc);
        g_signal_connect(svc->skeleton, "handle-get-container-id", G_CALLBACK(handle_get_id), svc);
        g_signal_connect(svc->skeleton, "handle-get-container", G_CALLBACK(handle_get_container),
                         svc);
        g_signal_connect(svc->skeleton, "handle-list-containers", G_CALLBACK(handle_list), svc);
        if (!ptags_backend_contids_available(svc->backend))
                return;
        g_auto(GStrv) features = ptags_manager_dup_features(svc->skeleton);
        guint n = features != NULL ? g_strv_length(features) : 0;
        features = g_renew(char *, features, n + 2);
        features[n] = g_strdup("containers");
        features[n + 1] = NULL;
        ptags_manager_set_features(svc->skeleton, (const char *const *)features);
        g_autofree char *path = ptags_registry_default_path();
        svc->registry = ptags_registry_new(svc->backend, path, container_gone, svc);
        svc->removed_before_serving = g_array_new(FALSE, FALSE, sizeof(guint64));
        ptags_registry_load(svc->registry);
}

void ptags_manager_free_containers(PtagsService *svc)
{
        g_clear_pointer(&svc->registry, ptags_registry_free);
        g_clear_pointer(&svc->removed_before_serving, g_array_unref);
}
