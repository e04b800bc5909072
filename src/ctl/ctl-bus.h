// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-bus.h: every org.ptags.Manager call ptagsctl makes, in one place, so a
 * change of the interface's shapes touches this module only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/* One tag as the interface carries it: (name, keep, value); "" = no value. */
typedef struct {
        char *name;
        bool keep;
        char *value;
} CtlTag;

typedef struct {
        CtlTag *tags;
        size_t n;
} CtlTagList;

/* One FindTagged result. */
typedef struct {
        uint32_t pid;
        CtlTagList tags;
} CtlProcess;

typedef struct {
        char *version;
        char *backend;
        char **features; /* NULL-terminated */
        uint32_t max_tags;
        uint32_t max_tag_length;
        uint32_t max_value_length;
} CtlStatus;

/* Connects to @address, or to the system bus (DBUS_SYSTEM_BUS_ADDRESS or
 * the standard socket) when NULL. @interactive sets the
 * ALLOW_INTERACTIVE_AUTHORIZATION flag on every call. Returns -errno. */
int ctl_bus_open(const char *address, bool interactive, sd_bus **ret);

/* A process named on the command line. ptagsctl holds a pidfd of it for
 * the whole command, so every call of the command is about that one
 * process, and a pid is read in ptagsctl's own pid namespace (a container's
 * numbers name other processes to ptagsd). pid 0, ptagsctl itself, goes by
 * number: ptagsd knows its caller. */
typedef struct {
        uint32_t pid; /* as given; 0: ptagsctl itself */
        int pidfd;    /* -1 for pid 0 */
} CtlTarget;

/* Opens @pid's pidfd into @ret: 0, or -ESRCH without asking anyone when
 * the process is gone (or the number is a thread's), another -errno when
 * no pidfd can be had. ctl_target_close() closes it. */
int ctl_target_open(sd_bus *bus, uint32_t pid, CtlTarget *ret);
void ctl_target_close(CtlTarget *target);

/* Each call below returns 0, or a negative errno with @error filled in
 * when the daemon or the bus answered with an error. */
int ctl_get_status(sd_bus *bus, CtlStatus *ret, sd_bus_error *error);
int ctl_get_tags(sd_bus *bus, const CtlTarget *target, CtlTagList *ret, sd_bus_error *error);
/* HasTag for ptagsctl itself; for another process, a batch of the one
 * query line "?PATTERN", which changes nothing and needs no one's leave:
 * HasTag takes no pidfd. */
int ctl_has_tag(sd_bus *bus, const CtlTarget *target, const char *pattern, bool *ret,
                sd_bus_error *error);
int ctl_get_peer_tags(sd_bus *bus, const char *bus_name, CtlTagList *ret, sd_bus_error *error);
int ctl_find_tagged(sd_bus *bus, const char *pattern, CtlProcess **ret, size_t *n_ret,
                    sd_bus_error *error);
/* Apply, or ApplyFd; @lines: NULL-terminated, each without its newline. */
int ctl_apply(sd_bus *bus, const CtlTarget *target, char *const *lines, sd_bus_error *error);

/* A TagsChanged signal as delivered to ctl_monitor()'s handler. */
typedef struct {
        uint32_t pid;
        char **lines; /* NULL-terminated */
        CtlTagList tags;
} CtlTagsChanged;

/* The unset audit container ID: a process in no container. */
#define CTL_CONTID_UNSET UINT64_MAX

/* One namespace of a container's first process at registration. */
typedef struct {
        char *type; /* "mnt", "net", ... */
        uint64_t device;
        uint64_t inode;
} CtlNamespace;

/* A container as GetContainer describes it. */
typedef struct {
        uint64_t contid;
        uint64_t parent; /* CTL_CONTID_UNSET when not nested */
        bool has_uuid;
        uint8_t uuid[16];
        char *name; /* NULL when none was given */
        uint32_t leader;
        uint32_t owner; /* the registrant's uid */
        uint32_t owner_pid;
        CtlNamespace *namespaces;
        size_t n_namespaces;
        uint64_t registered; /* microseconds since the epoch */
} CtlContainer;

/* Registers @pid (0: the caller, which ptagsd refuses) as container
 * @contid, always through a pidfd (so a reused pid is never registered):
 * -ESRCH without asking when the process is gone, another -errno when no
 * pidfd can be had; @uuid (16 bytes) and @name may be NULL. */
int ctl_register_container(sd_bus *bus, uint32_t pid, uint64_t contid, const uint8_t *uuid,
                           const char *name, sd_bus_error *error);
int ctl_get_container_id(sd_bus *bus, uint32_t pid, uint64_t *ret, sd_bus_error *error);
int ctl_get_container(sd_bus *bus, uint64_t contid, CtlContainer *ret, sd_bus_error *error);
int ctl_list_containers(sd_bus *bus, CtlContainer **ret, size_t *n_ret, sd_bus_error *error);

/* What ctl_monitor() calls; any handler but ready may be NULL. A signal's
 * handler returns 0, or a negative errno to end the monitor with. */
typedef struct {
        void (*ready)(void *userdata);
        int (*tags_changed)(const CtlTagsChanged *event, void *userdata);
        int (*container_registered)(uint64_t contid, uint32_t pid, const CtlContainer *container,
                                    void *userdata);
        int (*container_removed)(uint64_t contid, void *userdata);
} CtlMonitorHandlers;

/* Subscribes to TagsChanged, ContainerRegistered and ContainerRemoved from
 * the owner of org.ptags.Manager, makes sure ptagsd is there (a call to
 * it, which the bus may answer by starting it; its failure is in @error),
 * calls @handlers->ready, then the handler of every signal. Returns only
 * on failure, e.g. -ECONNRESET when the bus goes away, or what a handler
 * returned to end it. */
int ctl_monitor(sd_bus *bus, const CtlMonitorHandlers *handlers, void *userdata,
                sd_bus_error *error);

void ctl_tag_list_clear(CtlTagList *list);
void ctl_processes_free(CtlProcess *processes, size_t n);
void ctl_status_clear(CtlStatus *status);
void ctl_strv_free(char **strv);
void ctl_container_clear(CtlContainer *container);
void ctl_containers_free(CtlContainer *containers, size_t n);
