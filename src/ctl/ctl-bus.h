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

/* Each call below returns 0, or a negative errno with @error filled in
 * when the daemon or the bus answered with an error. */
int ctl_get_status(sd_bus *bus, CtlStatus *ret, sd_bus_error *error);
int ctl_get_tags(sd_bus *bus, uint32_t pid, CtlTagList *ret, sd_bus_error *error);
int ctl_has_tag(sd_bus *bus, uint32_t pid, const char *pattern, bool *ret, sd_bus_error *error);
int ctl_get_peer_tags(sd_bus *bus, const char *bus_name, CtlTagList *ret, sd_bus_error *error);
int ctl_find_tagged(sd_bus *bus, const char *pattern, CtlProcess **ret, size_t *n_ret,
                    sd_bus_error *error);
int ctl_add_tag(sd_bus *bus, uint32_t pid, const char *tag, bool keep, sd_bus_error *error);
int ctl_remove_tag(sd_bus *bus, uint32_t pid, const char *pattern, sd_bus_error *error);
int ctl_set_value(sd_bus *bus, uint32_t pid, const char *tag, const char *value,
                  sd_bus_error *error);
int ctl_set_keep(sd_bus *bus, uint32_t pid, const char *pattern, bool keep, sd_bus_error *error);
/* @lines: NULL-terminated, each without its newline. */
int ctl_apply(sd_bus *bus, uint32_t pid, char *const *lines, sd_bus_error *error);

/* A TagsChanged signal as delivered to ctl_monitor()'s callback. */
typedef struct {
        uint32_t pid;
        char **lines; /* NULL-terminated */
        CtlTagList tags;
} CtlTagsChanged;

typedef void (*CtlTagsChangedFunc)(const CtlTagsChanged *event, void *userdata);

/* Subscribes to TagsChanged from the owner of org.ptags.Manager, calls
 * @ready once the subscription is in place, then @func for every signal.
 * Returns only on failure, e.g. -ECONNRESET when the bus goes away. */
int ctl_monitor(sd_bus *bus, void (*ready)(void *userdata), CtlTagsChangedFunc func,
                void *userdata);

void ctl_tag_list_clear(CtlTagList *list);
void ctl_processes_free(CtlProcess *processes, size_t n);
void ctl_status_clear(CtlStatus *status);
void ctl_strv_free(char **strv);
