// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* call.h: one method call in flight and the steps every handler shares:
 * pinning a target, learning the caller, waiting for its uid's turn,
 * replying. The life of a change is told at the top of manager-change.c. */
#pragma once

#include "service.h"
#include "target.h"

#include <gio/gunixfdlist.h>

typedef struct _Call Call;
typedef void (*CallStepFn)(Call *call);

/* One method call in flight; owned by whichever async step runs next. */
struct _Call {
        PtagsService *svc;
        GDBusMethodInvocation *invocation; /* NULL for a call run in the bus thread */
        GDBusMessage *message;             /* the method call */
        const char *sender;
        const char *method;
        /* Runs from its message to its reply in GDBus's worker thread,
         * holding the main loop's lock, without ever waiting (bus-thread.c):
         * every step that would wait refuses it instead. */
        gboolean in_bus_thread;
        /* reads */
        char *pattern; /* without the leading '@' */
        gboolean kept_only;
        gboolean want_bool;
        char *peer_name;          /* GetPeerTags/PeerHasTag: the bus name asked about */
        CallStepFn read_next;     /* what an admitted read does */
        gboolean holds_read_slot; /* one of its uid's MaxExpensiveCalls */
        uid_t read_uid;
        /* changes */
        GStrv lines;          /* the input lines */
        const char *arg_name; /* single-argument methods: "tag"/"pattern"; NULL for Apply */
        char *arg;            /* that argument's text */
        char *value;          /* SetValue's value, else NULL */
        gboolean target_is_caller;
        /* Pid numbers the call names (its pid argument, when not 0) or
         * answers with (FindTagged): ptagsd's, which a caller in another
         * pid namespace would read as other processes; call_lookup_peer
         * refuses such a caller. */
        guint32 pid_arg;
        gboolean answers_pids;
        CallStepFn pin_next; /* call_pin_pid's next step */
        PtagsPeer *caller;
        PtagsTarget target;
        ptags_set *current;
        guint64 exec_mark; /* the target's, when current was read (call_read_base) */
        ptags_plan *plan;
        gboolean rebuilt;
        PtagsProcessInfo checked_info; /* the target as polkit was told about it */
        gboolean checked_info_valid;
        /* What polkit was told the caller's own process grants: "self", and
         * per change of the plan, "caller-holds-right" */
        gboolean checked_self;
        bool *checked_rights;
        gboolean holds_target_lock;
        gboolean holds_wait_slot; /* waits for the lock in a MaxPolkitCalls place */
        CallStepFn resume;        /* what runs once the target lock is free */
        gboolean summarize_lines; /* TagsChanged lists no lines: too many bytes */
        /* The commit's budget check counted the plan against the target's
         * uid, @expect_uid: once applied, the byte cache is told. */
        gboolean expects_bytes;
        uid_t expect_uid;
        GCancellable *cancellable;
        gboolean watched; /* on svc->leaving (call_cancel_if_caller_leaves) */
        gboolean counted; /* in svc->in_progress (call_new) */
        /* How a refusal is answered once the caller is known (the method's
         * own logging); call_fail when NULL. */
        void (*refuse)(Call *call, GError *error);
        /* container methods: their arguments (manager-container.c) */
        gpointer extra;
        GDestroyNotify extra_free;
};

/* The next step of a call once its target is pinned. */
typedef CallStepFn CallStep;

/* NULL, @invocation answered with LimitExceeded, when its connection has
 * MaxConnectionCalls calls in progress already. */
Call *call_new(PtagsService *svc, GDBusMethodInvocation *invocation);
/* A call answered in the bus thread, straight from its @message. */
Call *call_new_in_bus_thread(PtagsService *svc, GDBusMessage *message);
void call_free(Call *call);
/* Reply with @error (transfer full) and free the call. */
void call_fail(Call *call, GError *error);
/* Reply with @value (floating) and free the call. */
void call_return(Call *call, GVariant *value);
/* TRUE unless @call runs in the bus thread, which must never wait for
 * anything: then the call is failed (and a critical logged). Every step that
 * waits asks first. */
gboolean call_may_wait(Call *call);
/* Read the pinned target's tags into call->current. */
gboolean call_read_current(Call *call, GError **error);
/* The same for a change, whose plan is computed from call->current, with
 * call->exec_mark: the target's exec mark when they were read. */
gboolean call_read_base(Call *call, GError **error);
/* The peer call_lookup_peer() would find for @bus_name without asking the
 * bus or waiting behind a lookup, or NULL. (transfer full) */
PtagsPeer *call_known_peer(PtagsService *svc, const char *bus_name);
/* Look up @bus_name into call->caller (and the target when target_is_caller).
 * A bus-thread call keeps the caller it was given (call_known_peer). */
void call_lookup_peer(Call *call, const char *bus_name, CallStep next);
/* Learn the caller, then pin the target of a "u pid" method: the caller
 * names itself as pid 0, and others only from ptagsd's pid namespace
 * (NotSupported from another). */
void call_pin_pid(Call *call, guint32 pid, CallStep next);
/* Take the pidfd of an "h" argument from the message's fd list. */
gboolean call_adopt_fd(Call *call, GUnixFDList *fds, GVariant *handle, GError **error);

/* Reads: learn the caller's uid, then run @next in its turn (below), once
 * the connection's unread replies are within their budget. */
void call_admit_read(Call *call, CallStepFn next);

/* Run @next once it is @uid's turn in the per-uid queue of work that
 * parses tag lists (budgets.h, MaxExpensiveCalls); LimitExceeded (and @call
 * answered) when @uid has too much queued. call_end_turn gives the slot
 * back early, call_free at the latest. */
void call_take_turn(Call *call, uid_t uid, CallStepFn next);
void call_end_turn(Call *call);

/* The target's re-authorization lock: while one call asks polkit again
 * about its target, other authorized calls on that target wait.
 * target_lock_wait queues @call (TRUE) when another call holds the lock;
 * @resume runs it once the lock is released (by call_free at the latest).
 * A call of a uid other than 0 waits in one of its MaxPolkitCalls places:
 * when none is free, TRUE with LimitExceeded in @error (not queued). */
void target_lock_take(Call *call);
void target_lock_release(Call *call);
gboolean target_lock_wait(Call *call, CallStepFn resume, GError **error);

/* Cancel @call's cancellable (its pending polkit checks) if its caller
 * leaves the bus before the call ends. */
void call_cancel_if_caller_leaves(Call *call);
/* The service-wide watch behind it, started and stopped with the service. */
void call_watch_start(PtagsService *svc);
void call_watch_stop(PtagsService *svc);
