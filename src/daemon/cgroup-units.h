// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* cgroup-units.h: the systemd units a process runs in, read from the text
 * of its /proc/PID/cgroup exactly as sd-login (sd_pid_get_unit,
 * sd_pid_get_user_unit) reads them, so the text ptagsd already holds is not
 * read again (twice, with PID 1's) for every polkit check. */
#pragma once

#include <glib.h>

/* Which line of /proc/PID/cgroup holds systemd's tree, decided once per
 * process from what is mounted on /sys/fs/cgroup, as sd-login decides. */
typedef enum {
        PTAGS_CGROUP_TREE_UNKNOWN, /* nothing systemd knows: no units */
        PTAGS_CGROUP_TREE_UNIFIED, /* the "0::" line (cgroup2, pure or hybrid) */
        PTAGS_CGROUP_TREE_LEGACY,  /* the "name=systemd" line (cgroup v1) */
} PtagsCgroupTree;

/* This machine's tree (statfs of /sys/fs/cgroup, once). */
PtagsCgroupTree ptags_cgroup_tree(void);

/* The system unit (@unit) and, for a process below a user's manager
 * (user@UID.service), the user unit (@user_unit) of the process whose
 * /proc/PID/cgroup is @text, with PID 1's in @pid1_text (its cgroup, less
 * init.scope, is the root the path is taken relative to). Each is NULL
 * where sd-login finds none. */
void ptags_cgroup_units(const char *text, const char *pid1_text, PtagsCgroupTree tree, char **unit,
                        char **user_unit);

/* sd-login's test of a unit name: a known type after the last dot, only
 * unit characters before it, and (with @instance) at most "NAME@INST."
 * with INST not empty; without @instance no '@' at all. */
gboolean ptags_unit_name_valid(const char *name, gsize len, gboolean instance);
