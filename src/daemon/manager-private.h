// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* manager-private.h: what the read handlers (manager.c) and the change
 * pipeline (manager-change.c) share: the service and one call in flight. */
#pragma once

#include "clients.h"
#include "budgets.h"
#include "manager.h"
#include "ptags-manager-generated.h"
#include "peer-cache.h"
#include "registry.h"
#include "target.h"

#include <gio/gunixfdlist.h>

struct _PtagsService {
        GDBusConnection *connection;
        PtagsManager *skeleton;
        PtagsBackend *backend;
        PtagsAuthority *authority;
        GHashTable *reauthorizing; /* pid -> GQueue of Call waiting to apply */
        PtagsPeerCache *peers;
        PtagsRegistry *registry; /* audit containers (manager-container.c) */
        PtagsLimits limits;
        PtagsClients *clients;
        PtagsByteCache *byte_cache; /* for the per-uid budgets */
};

typedef struct _Call Call;
typedef void (*CallStepFn)(Call *call);

/* One method call in flight; owned by whichever async step runs next. */
struct _Call {
        PtagsService *svc;
        GDBusMethodInvocation *invocation;
        const char *method;
        /* reads */
        char *pattern; /* without the leading '@' */
        gboolean kept_only;
        gboolean want_bool;
        char *peer_name;          /* GetPeerTags/PeerHasTag: the bus name asked about */
        CallStepFn read_next;     /* what an admitted read does */
        gboolean counts_replies;  /* its reply counts against the unread budgets */
        gboolean holds_read_slot; /* one of its uid's MaxExpensiveCalls */
        uid_t read_uid;
        /* changes */
        GStrv lines;          /* the input lines */
        const char *arg_name; /* single-argument methods: "tag"/"pattern"; NULL for Apply */
        char *arg;            /* that argument's text */
        char *value;          /* SetValue's value, else NULL */
        gboolean target_is_caller;
        PtagsPeer *caller;
        PtagsTarget target;
        ptags_set *current;
        ptags_plan *plan;
        gboolean rebuilt;
        PtagsProcessInfo checked_info; /* the target as polkit was told about it */
        gboolean checked_info_valid;
        gboolean holds_target_lock;
        gboolean summarize_lines; /* TagsChanged lists no lines: too many bytes */
        GCancellable *cancellable;
        guint owner_watch;
        /* container methods: their arguments (manager-container.c) */
        gpointer extra;
        GDestroyNotify extra_free;
};

/* The next step of a call once its target is pinned. */
typedef CallStepFn CallStep;

Call *call_new(PtagsService *svc, GDBusMethodInvocation *invocation);
void call_free(Call *call);
/* Reply with @error (transfer full) and free the call. */
void call_fail(Call *call, GError *error);
/* Reply with @value (floating) and free the call. */
void call_return(Call *call, GVariant *value);
/* Read the pinned target's tags into call->current. */
gboolean call_read_current(Call *call, GError **error);
/* Look up @bus_name into call->caller (and the target when target_is_caller). */
void call_lookup_peer(Call *call, const char *bus_name, CallStep next);
/* Pin the target of a "u pid" method, resolving pid 0 through the caller. */
void call_pin_pid(Call *call, guint32 pid, CallStep next);
/* Take the pidfd of an "h" argument from the message's fd list. */
gboolean call_adopt_fd(Call *call, GUnixFDList *fds, GVariant *handle, GError **error);

/* A D-Bus error for a backend failure (-errno) on process @pid. (transfer full) */
GError *ptags_errno_error(int neg_errno, const char *what, pid_t pid);
/* @text cut to a readable length for messages. (transfer full) */
char *ptags_shorten(const char *text);

/* Run @next once it is @uid's turn in the per-uid queue of work that
 * parses tag lists (budgets.h, MaxExpensiveCalls); LimitExceeded (and @call
 * answered) when @uid has too much queued. call_end_turn gives the slot
 * back early, call_free at the latest. */
void call_take_turn(Call *call, uid_t uid, CallStepFn next);
void call_end_turn(Call *call);

/* The target's re-authorization lock (manager-change.c); released by
 * call_free at the latest. */
void target_lock_take(Call *call);
void target_lock_release(Call *call);

/* LimitExceeded unless the budgets (budgets.h) allow @call's plan, whose
 * target now holds call->current; @scan_user also sums the bytes of every
 * process of the target's uid (a scan of all tagged processes). */
gboolean change_check_budgets(Call *call, gboolean scan_user, GError **error);
/* The lines of @call's TagsChanged: the plan's, or one comment line saying
 * how many were left out when they would not fit. (transfer full) */
char **change_signal_lines(Call *call);

/* Connect the change methods (manager-change.c) to the skeleton. */
void ptags_manager_connect_changes(PtagsService *svc);

/* Load the container registry and connect the container methods
 * (manager-container.c); ptags_manager_free_containers undoes it. */
void ptags_manager_connect_containers(PtagsService *svc);
void ptags_manager_free_containers(PtagsService *svc);
