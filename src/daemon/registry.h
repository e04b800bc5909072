// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* registry.h: the live audit containers ptagsd registered (who, when, which
 * namespaces, which parent), persisted across restarts, and their removal. */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "backend.h"
#include "target.h"

/* Known processes of one container pinned at a time; more are found by a
 * scan once all of these have exited. */
#define PTAGS_REGISTRY_MAX_PINNED 8

/* Live containers one registrant uid may hold unless configured otherwise. */
#define PTAGS_CONTAINERS_PER_UID_DEFAULT 1024

/* Set the per-uid bound (main.c) before the service is created; it is in
 * manager-container.c, which enforces it. */
void ptags_containers_set_max_per_uid(guint max);

/* One /proc/PID/ns/NAME link of the container's first process. */
typedef struct {
        char type[16]; /* "mnt", "net", ... */
        guint64 device;
        guint64 inode;
} PtagsNamespace;

/* The owner of an ID processes carry that the registry had lost (it was
 * removed or unreadable): nobody's uid, owner pid 0. */
#define PTAGS_REGISTRY_OWNER_UNKNOWN ((uid_t)-1)

typedef struct {
        guint64 contid;
        guint64 parent; /* PTAGS_CONTID_UNSET when not nested */
        gboolean has_uuid;
        guint8 uuid[16];
        char *name; /* NULL when none */
        pid_t leader;
        uid_t owner_uid;
        pid_t owner_pid;
        guint64 owner_start;  /* /proc/PID/stat start time of the registrant */
        gint64 registered_us; /* realtime */
        GArray *namespaces;   /* PtagsNamespace */
        /* private */
        GPtrArray *members; /* pinned known processes */
        guint retry_source; /* the next check after a failed one */
        guint rescans;      /* checks in a row that found carriers exiting */
        GHashTable *gone;   /* pids those checks found exited, or NULL */
        struct _PtagsRegistry *registry;
} PtagsContainer;

typedef struct _PtagsRegistry PtagsRegistry;

/* Called once the last process carrying @c's ID has exited, just before @c
 * is forgotten. */
typedef void (*PtagsContainerGoneFunc)(const PtagsContainer *c, void *user_data);

/* @path: the file the registry is kept in (its directory is created 0700
 * when first written). Nothing is read until ptags_registry_load().
 * (transfer full: ptags_registry_free) */
PtagsRegistry *ptags_registry_new(PtagsBackend *backend, const char *path,
                                  PtagsContainerGoneFunc gone, void *user_data);
void ptags_registry_free(PtagsRegistry *r);

/* Read the saved registry, then find the live processes of each container
 * with one backend scan; containers without any are reported gone. */
void ptags_registry_load(PtagsRegistry *r);

/* The default file: $RUNTIME_DIRECTORY/containers, else /run/ptags/containers.
 * (transfer full) */
char *ptags_registry_default_path(void);

/* Remove the registry file @path and the temporary copies a save killed
 * midway leaves beside it (uninstalling: no ptagsd may run). */
gboolean ptags_registry_remove_file(const char *path, GError **error);

/* (transfer none) NULL when @contid is not a live container. */
PtagsContainer *ptags_registry_lookup(PtagsRegistry *r, guint64 contid);
/* Live containers registered by the uids that draw on @budget_uid's
 * budgets (subuids.h): itself and its subordinate uids. */
guint ptags_registry_count_for_budget(PtagsRegistry *r, uid_t budget_uid);
/* Every live container, sorted by ID. (transfer container) */
GPtrArray *ptags_registry_list(PtagsRegistry *r);

/* A new container (transfer none) whose first process is @leader, saved
 * before it returns (so before the kernel write: a ptagsd killed in
 * between finds it and, when the write never happened, drops it at the
 * next start's scan). NULL when it cannot be saved (nothing kept). */
PtagsContainer *ptags_registry_add(PtagsRegistry *r, guint64 contid, guint64 parent,
                                   const PtagsTarget *leader, uid_t owner_uid,
                                   const PtagsTarget *owner, const guint8 *uuid, const char *name,
                                   GArray *namespaces, GError **error);
/* Drop @contid without announcing it (a registration whose write failed),
 * unless processes carry the ID all the same: then it stays. */
void ptags_registry_forget(PtagsRegistry *r, guint64 contid);
/* Watch @t (duplicated) as a process of @c (at most
 * PTAGS_REGISTRY_MAX_PINNED are). FALSE when it cannot (no descriptor). */
gboolean ptags_registry_watch(PtagsContainer *c, const PtagsTarget *t);

/* The a{sv} description of @c (GetContainer, signals). (transfer floating) */
GVariant *ptags_container_to_variant(const PtagsContainer *c);

/* The namespaces of the pinned @t from /proc/PID/ns. (transfer full) */
GArray *ptags_namespaces_read(const PtagsTarget *t, GError **error);
