// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* authority.c: the one place ptagsd decides who may change what: the
 * change-kind -> polkit action table, the details, and async polkit checks. */
#define G_LOG_DOMAIN "ptagsd-authority"

#include "authority.h"

#include "args.h"
#include "errors.h"

#include <string.h>

/* Unknown kinds fall through to NULL: deny by default. */
static const struct {
        ptags_change_kind kind;
        const char *action_id;
} action_table[] = {
        {PTAGS_CHANGE_ADD, PTAGS_ACTION_TAG_ADD},
        {PTAGS_CHANGE_ADD_KEPT, PTAGS_ACTION_TAG_ADD},
        {PTAGS_CHANGE_SET_KEEP, PTAGS_ACTION_TAG_ADD},
        {PTAGS_CHANGE_REMOVE, PTAGS_ACTION_TAG_REMOVE},
        {PTAGS_CHANGE_CLEAR_KEEP, PTAGS_ACTION_TAG_REMOVE},
        {PTAGS_CHANGE_SET_VALUE, PTAGS_ACTION_TAG_SET_VALUE},
        {PTAGS_CHANGE_CLEAR_VALUE, PTAGS_ACTION_TAG_SET_VALUE},
};

const char *ptags_authority_action_for_change(const ptags_change *c)
{
        for (size_t i = 0; i < G_N_ELEMENTS(action_table); i++) {
                if (action_table[i].kind != c->kind)
                        continue;
                if (ptags_tag_is_rights(c->tag, c->tag_len))
                        return PTAGS_ACTION_RIGHTS_CHANGE;
                return action_table[i].action_id;
        }
        return NULL;
}

/* The keep flag the tag has once the change is made. */
static gboolean keep_after(const ptags_change *c)
{
        switch (c->kind) {
        case PTAGS_CHANGE_ADD_KEPT:
        case PTAGS_CHANGE_SET_KEEP:
                return TRUE;
        case PTAGS_CHANGE_ADD:
        case PTAGS_CHANGE_REMOVE:
        case PTAGS_CHANGE_CLEAR_KEEP:
                return FALSE;
        case PTAGS_CHANGE_SET_VALUE:
        case PTAGS_CHANGE_CLEAR_VALUE:
                return c->old_keep;
        }
        return FALSE;
}

/* Text read from the target (its comm, its program's path, a user name from
 * the user database) may be any bytes; polkit carries details as D-Bus
 * strings, which must be UTF-8. Text that is not counts as unknown. */
static const char *utf8_or_empty(const char *text)
{
        return text != NULL && g_utf8_validate(text, -1, NULL) ? text : "";
}

/* How many characters of a tag, value or comm a prompt shows. */
#define SHOWN_CHARS 80

static void insert_shown(PolkitDetails *d, const char *key, const char *text, gsize len)
{
        g_autofree char *shown = ptags_shown_text(text, len, SHOWN_CHARS);
        polkit_details_insert(d, key, shown);
}

static void insert_read_text(PolkitDetails *d, const char *key, const char *text)
{
        if (*utf8_or_empty(text) != '\0')
                polkit_details_insert(d, key, text);
}

void ptags_authority_insert_target(PolkitDetails *d, pid_t pid, const PtagsProcessInfo *target,
                                   gboolean self)
{
        g_autofree char *pid_text = g_strdup_printf("%d", (int)pid);
        g_autofree char *uid = g_strdup_printf("%u", (unsigned)target->uids[0]);
        const char *comm = utf8_or_empty(target->comm);

        polkit_details_insert(d, "pid", pid_text);
        polkit_details_insert(d, "target-uid", uid);
        insert_read_text(d, "target-user", target->user);
        insert_read_text(d, "target-exe", target->exe);
        polkit_details_insert(d, "target-comm", comm);
        insert_shown(d, "shown-target-comm", comm, strlen(comm));
        insert_read_text(d, "target-unit", target->unit);
        insert_read_text(d, "target-user-unit", target->user_unit);
        polkit_details_insert(d, "self", self ? "true" : "false");
}

PolkitDetails *ptags_authority_details(const PtagsCheckFacts *f)
{
        PolkitDetails *d = polkit_details_new();
        const ptags_change *c = f->change;
        const char *colon = memchr(c->tag, ':', c->tag_len);
        g_autofree char *prefix = g_strndup(c->tag, colon ? (gsize)(colon - c->tag) : c->tag_len);
        g_autofree char *value = g_strndup(c->value, c->value_len);

        polkit_details_insert(d, "tag", c->tag);
        insert_shown(d, "shown-tag", c->tag, c->tag_len);
        polkit_details_insert(d, "prefix", prefix);
        polkit_details_insert(d, "value", value);
        insert_shown(d, "shown-value", c->value, c->value_len);
        polkit_details_insert(d, "keep", keep_after(c) ? "true" : "false");
        ptags_authority_insert_target(d, f->pid, f->target, f->self);
        polkit_details_insert(d, "caller-holds-right", f->caller_holds_right ? "true" : "false");
        return d;
}

PtagsCheck *ptags_check_new(const char *action_id, PolkitDetails *details, const char *label)
{
        PtagsCheck *check = g_new0(PtagsCheck, 1);

        check->action_id = action_id;
        check->details = details;
        check->label = g_strdup(label);
        return check;
}

PtagsCheck *ptags_check_new_for_change(const PtagsCheckFacts *facts)
{
        /* Errors and logs name the tag as polkit's prompt shows it (a tag
         * may be 4000 bytes long, and hold quotes that would end the quote
         * around it). Copied, it outlives a plan rebuilt meanwhile. */
        const char *tag = facts->change->tag;
        g_autofree char *shown = ptags_shown_text(tag, strlen(tag), SHOWN_CHARS);
        g_autofree char *label = g_strdup_printf("tag \"%s\"", shown);
        PtagsCheck *check =
                ptags_check_new(ptags_authority_action_for_change(facts->change), NULL, label);

        check->facts = *facts;
        return check;
}

/* The details polkit is sent for @check. A change's are built only now:
 * with 1024 changes in each of a user's 32 waiting calls, building them all
 * up front held about 1.5 KB each. Only called while the batch is
 * undecided, when its call (which the facts point into) still waits. */
static PolkitDetails *check_details(const PtagsCheck *check)
{
        if (check->details != NULL)
                return g_object_ref(check->details);
        return ptags_authority_details(&check->facts);
}

void ptags_check_free(PtagsCheck *check)
{
        if (check == NULL)
                return;
        g_clear_object(&check->details);
        g_free(check->label);
        g_free(check);
}

/* The bus limits how many replies one connection may await (dbus-daemon:
 * 128 by default), so ptagsd never asks polkit everything at once. Checks
 * that wait (say, for password dialogs) hold their slot, so slots are shared:
 * batches take turns, one batch holds at most 8 and one user at most 16, so
 * one user's flood leaves room for others (7 users would be needed to fill
 * every slot, which leaves room below the bus limit for ptagsd's other calls). */
#define MAX_CHECKS_IN_FLIGHT 112
#define MAX_CHECKS_PER_USER  16
#define MAX_CHECKS_PER_BATCH 8

struct _PtagsAuthority {
        guint timeout_seconds;
        guint max_batches_per_user; /* MaxPolkitCalls */
        /* Kept for the daemon's life: polkit drops its authority singleton
         * with the last reference, and building it again costs every check
         * a service start, name lookups, match rules and a proxy setup. It
         * follows polkitd restarts by itself. */
        PolkitAuthority *polkit;
        guint in_flight;
        GQueue batches;               /* Batch: those with waiting checks, in turn order */
        GHashTable *per_user;         /* uid -> checks in flight (GUINT_TO_POINTER both) */
        GHashTable *batches_per_user; /* uid -> batches not decided yet (likewise) */
};

PtagsAuthority *ptags_authority_new(guint timeout_seconds, guint max_batches_per_user)
{
        PtagsAuthority *a = g_new0(PtagsAuthority, 1);

        a->timeout_seconds = timeout_seconds;
        a->max_batches_per_user = max_batches_per_user;
        a->per_user = g_hash_table_new(g_direct_hash, g_direct_equal);
        a->batches_per_user = g_hash_table_new(g_direct_hash, g_direct_equal);
        return a;
}

void ptags_authority_free(PtagsAuthority *a)
{
        g_clear_object(&a->polkit);
        g_hash_table_unref(a->per_user);
        g_hash_table_unref(a->batches_per_user);
        g_free(a);
}

/* A count per uid in @table; a count back at 0 is forgotten. */
static guint user_count(GHashTable *table, uid_t uid)
{
        return GPOINTER_TO_UINT(g_hash_table_lookup(table, GUINT_TO_POINTER(uid)));
}

static void user_count_add(GHashTable *table, uid_t uid, int delta)
{
        guint n = (guint)((int)user_count(table, uid) + delta);

        if (n == 0)
                g_hash_table_remove(table, GUINT_TO_POINTER(uid));
        else
                g_hash_table_insert(table, GUINT_TO_POINTER(uid), GUINT_TO_POINTER(n));
}

gboolean ptags_authority_take_slot(PtagsAuthority *a, uid_t uid, GError **error)
{
        if (uid != 0 && user_count(a->batches_per_user, uid) >= a->max_batches_per_user) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_LIMIT_EXCEEDED,
                            "uid %u (its subordinate uids included) already has %u calls "
                            "waiting for polkit, the MaxPolkitCalls limit; wait for their "
                            "replies",
                            (unsigned)uid, a->max_batches_per_user);
                return FALSE;
        }
        user_count_add(a->batches_per_user, uid, +1);
        return TRUE;
}

void ptags_authority_give_slot(PtagsAuthority *a, uid_t uid)
{
        user_count_add(a->batches_per_user, uid, -1);
}

/* One batch: its checks run concurrently (up to the in-flight limit); the
 * first failure wins. */
typedef struct {
        GTask *task;               /* owned until completed */
        GCancellable *cancellable; /* cancels every pending check */
        gulong outer_handler;
        GCancellable *outer;
        guint timeout_id;
        guint pending;
        PolkitSubject *subject;
        uid_t uid; /* the caller's, for the per-user share */
        PtagsAuthority *owner;
        PolkitAuthority *polkit;
        PolkitCheckAuthorizationFlags flags;
        GQueue waiting; /* CheckCall not yet sent to polkit */
        guint in_flight;
        GPtrArray *checks;
        gboolean interactive;
        guint timeout_seconds;
} Batch;

static void batch_free(Batch *b)
{
        if (b->outer_handler != 0)
                g_cancellable_disconnect(b->outer, b->outer_handler);
        g_clear_object(&b->outer);
        if (b->timeout_id != 0)
                g_source_remove(b->timeout_id);
        g_clear_object(&b->cancellable);
        g_clear_object(&b->subject);
        g_clear_object(&b->polkit);
        g_ptr_array_unref(b->checks);
        g_free(b);
}

/* Complete the batch once; later results only drop their reference. */
/* Marks a batch's task whose checks polkit itself said no to. */
#define DENIED_KEY "ptags-polkit-denied"

static void batch_finish(Batch *b, GError *error)
{
        if (b->task != NULL) {
                GTask *task = g_steal_pointer(&b->task);
                ptags_authority_give_slot(b->owner, b->uid);
                if (b->timeout_id != 0) {
                        g_source_remove(b->timeout_id);
                        b->timeout_id = 0;
                }
                if (error != NULL) {
                        g_cancellable_cancel(b->cancellable);
                        g_task_return_error(task, error);
                } else {
                        g_task_return_boolean(task, TRUE);
                }
                g_object_unref(task);
        } else if (error != NULL) {
                g_error_free(error);
        }
}

/* batch_finish() for polkit's own "no". */
static void batch_deny(Batch *b, GError *error)
{
        if (b->task != NULL)
                g_object_set_data(G_OBJECT(b->task), DENIED_KEY, GINT_TO_POINTER(TRUE));
        batch_finish(b, error);
}

static void batch_unref_pending(Batch *b)
{
        if (--b->pending == 0)
                batch_free(b);
}

typedef struct {
        Batch *batch;
        PtagsCheck *check;
} CheckCall;

static void check_done(GObject *source, GAsyncResult *res, gpointer user_data);
static gboolean batch_timed_out(gpointer user_data);

/* (Re)start the batch's polkit timeout. It runs from the call, and again
 * from each check sent and each answer that leaves checks to go: it bounds
 * how long polkit may keep the batch without progress, not the batch,
 * whose checks may queue behind others' and may each ask a person for a
 * password in turn. */
static void batch_arm_timer(Batch *b)
{
        if (b->timeout_id != 0)
                g_source_remove(b->timeout_id);
        b->timeout_id = g_timeout_add_seconds(b->timeout_seconds, batch_timed_out, b);
}

/* Drop the waiting checks of a decided batch; may free it. */
static void drop_waiting(Batch *b)
{
        guint n = g_queue_get_length(&b->waiting);

        g_queue_clear_full(&b->waiting, g_free);
        b->pending -= n;
        if (b->pending == 0)
                batch_free(b);
}

/* Start waiting checks, one batch after another, within both limits. */
static void start_checks(PtagsAuthority *a)
{
        guint skipped = 0;

        while (a->in_flight < MAX_CHECKS_IN_FLIGHT && skipped < g_queue_get_length(&a->batches)) {
                Batch *b = g_queue_pop_head(&a->batches);
                if (b->task == NULL) {
                        drop_waiting(b);
                        skipped = 0;
                        continue;
                }
                if (b->in_flight >= MAX_CHECKS_PER_BATCH ||
                    user_count(a->per_user, b->uid) >= MAX_CHECKS_PER_USER) {
                        g_queue_push_tail(&a->batches, b);
                        skipped++;
                        continue;
                }
                CheckCall *call = g_queue_pop_head(&b->waiting);
                if (!g_queue_is_empty(&b->waiting))
                        g_queue_push_tail(&a->batches, b);
                /* A check sent after waiting its turn has the whole timeout. */
                batch_arm_timer(b);
                skipped = 0;
                a->in_flight++;
                b->in_flight++;
                user_count_add(a->per_user, b->uid, +1);
                /* polkit turns the details into the message here and now. */
                g_autoptr(PolkitDetails) details = check_details(call->check);
                polkit_authority_check_authorization(b->polkit, b->subject, call->check->action_id,
                                                     details, b->flags, b->cancellable, check_done,
                                                     call);
        }
}

static void check_done(GObject *source, GAsyncResult *res, gpointer user_data)
{
        CheckCall *call = user_data;
        Batch *b = call->batch;
        g_autoptr(GError) error = NULL;
        g_autoptr(PolkitAuthorizationResult) result =
                polkit_authority_check_authorization_finish(POLKIT_AUTHORITY(source), res, &error);

        if (b->task == NULL) {
                /* already decided */
        } else if (result == NULL) {
                if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        batch_finish(b, g_steal_pointer(&error));
                else
                        batch_finish(b, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                                    "%s for %s: polkit failed: %s",
                                                    call->check->action_id, call->check->label,
                                                    error->message));
        } else if (polkit_authorization_result_get_is_authorized(result)) {
                g_debug("%s for %s: authorized", call->check->action_id, call->check->label);
                /* the last authorized check completes the batch */
                if (b->pending == 1)
                        batch_finish(b, NULL);
                else
                        batch_arm_timer(b);
        } else if (polkit_authorization_result_get_is_challenge(result) && !b->interactive) {
                batch_deny(b,
                           g_error_new(PTAGS_ERROR, PTAGS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                       "%s for %s needs interactive authorization, "
                                       "which the call did not allow",
                                       call->check->action_id, call->check->label));
        } else {
                batch_deny(b, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                          "%s for %s: not authorized", call->check->action_id,
                                          call->check->label));
        }
        PtagsAuthority *a = b->owner;
        a->in_flight--;
        b->in_flight--;
        user_count_add(a->per_user, b->uid, -1);
        g_free(call);
        batch_unref_pending(b);
        start_checks(a);
}

static void batch_start(Batch *b, PolkitAuthority *authority);

static void authority_ready(GObject *source, GAsyncResult *res, gpointer user_data)
{
        Batch *b = user_data;
        g_autoptr(GError) error = NULL;
        g_autoptr(PolkitAuthority) authority = polkit_authority_get_finish(res, &error);

        if (authority == NULL) {
                batch_finish(b, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                            "polkit is unavailable: %s", error->message));
                batch_unref_pending(b);
                return;
        }
        if (b->owner->polkit == NULL)
                b->owner->polkit = g_object_ref(authority);
        batch_start(b, authority);
}

static void batch_start(Batch *b, PolkitAuthority *authority)
{
        if (b->task == NULL) {
                batch_unref_pending(b);
                return;
        }
        b->flags = b->interactive ? POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION
                                  : POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE;
        b->polkit = g_object_ref(authority);
        /* The reference held for the authority lookup becomes the first check's. */
        b->pending += b->checks->len - 1;
        for (guint i = 0; i < b->checks->len; i++) {
                CheckCall *call = g_new0(CheckCall, 1);
                call->batch = b;
                call->check = b->checks->pdata[i];
                g_queue_push_tail(&b->waiting, call);
        }
        g_queue_push_tail(&b->owner->batches, b);
        start_checks(b->owner);
}

static gboolean batch_timed_out(gpointer user_data)
{
        Batch *b = user_data;

        b->timeout_id = 0;
        batch_finish(b, g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                    "polkit did not answer within %u s", b->timeout_seconds));
        return G_SOURCE_REMOVE;
}

static void outer_cancelled(GCancellable *outer, gpointer user_data)
{
        GCancellable *inner = user_data;

        g_cancellable_cancel(inner);
}

void ptags_authority_check_all_async(PtagsAuthority *a, const char *sender, uid_t uid,
                                     GPtrArray *checks, gboolean interactive,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data)
{
        GTask *task = g_task_new(NULL, cancellable, callback, user_data);

        for (guint i = 0; i < checks->len; i++) {
                PtagsCheck *check = checks->pdata[i];
                if (check->action_id == NULL) {
                        g_task_return_new_error(task, PTAGS_ERROR, PTAGS_ERROR_NOT_AUTHORIZED,
                                                "%s: no polkit action for this change",
                                                check->label);
                        g_object_unref(task);
                        return;
                }
        }
        if (checks->len == 0) {
                g_task_return_boolean(task, TRUE);
                g_object_unref(task);
                return;
        }
        /* Each call waiting here holds its message and plan: a user other
         * than root may have only so many waiting at once. */
        GError *error = NULL;
        if (!ptags_authority_take_slot(a, uid, &error)) {
                g_task_return_error(task, error);
                g_object_unref(task);
                return;
        }

        Batch *b = g_new0(Batch, 1);
        b->task = task;
        b->checks = g_ptr_array_ref(checks);
        b->interactive = interactive;
        b->subject = polkit_system_bus_name_new(sender);
        b->cancellable = g_cancellable_new();
        b->timeout_seconds = a->timeout_seconds;
        b->owner = a;
        b->uid = uid;
        b->pending = 1;
        if (cancellable != NULL) {
                b->outer = g_object_ref(cancellable);
                b->outer_handler = g_cancellable_connect(cancellable, G_CALLBACK(outer_cancelled),
                                                         b->cancellable, NULL);
        }
        batch_arm_timer(b);
        if (a->polkit != NULL)
                batch_start(b, a->polkit);
        else
                /* Not this batch's cancellable: every batch waiting meanwhile
                 * shares the one authority being set up, and libpolkit keeps
                 * the first set-up's error for all of them, so one caller
                 * leaving would fail every other caller's checks. A decided
                 * batch just ignores the authority when it comes. */
                polkit_authority_get_async(NULL, authority_ready, b);
}

gboolean ptags_authority_check_all_finish(GAsyncResult *result, GError **error)
{
        return g_task_propagate_boolean(G_TASK(result), error);
}

gboolean ptags_authority_denied(GAsyncResult *result)
{
        return g_object_get_data(G_OBJECT(result), DENIED_KEY) != NULL;
}
