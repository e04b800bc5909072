// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* lineage.c: what the container rules need to know of a process, from the
 * real /proc: its parent chain, children, threads and start time. */
#define G_LOG_DOMAIN "ptagsd-lineage"

#include "lineage.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Ancestors walked for the descendant rule; pid chains are far shorter. */
#define MAX_ANCESTRY 4096

static char *proc_text(pid_t pid, const char *name)
{
        g_autofree char *path = g_strdup_printf("/proc/%d/%s", (int)pid, name);
        char *text = NULL;

        return g_file_get_contents(path, &text, NULL, NULL) ? text : NULL;
}

pid_t ptags_lineage_parent(pid_t pid)
{
        g_autofree char *stat = proc_text(pid, "stat");
        const char *p = stat ? strrchr(stat, ')') : NULL;
        char state;
        int ppid;

        if (p == NULL || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
                return 0;
        return ppid;
}

gboolean ptags_lineage_is_descendant(pid_t pid, pid_t ancestor)
{
        for (int i = 0; i < MAX_ANCESTRY && pid > 1; i++) {
                pid = ptags_lineage_parent(pid);
                if (pid == ancestor)
                        return TRUE;
        }
        return FALSE;
}

guint ptags_lineage_threads(pid_t pid)
{
        g_autofree char *status = proc_text(pid, "status");
        const char *line = status ? strstr(status, "\nThreads:") : NULL;

        return line ? (guint)strtoul(line + strlen("\nThreads:"), NULL, 10) : 0;
}

gboolean ptags_lineage_has_children(pid_t pid)
{
        g_autofree char *dir_path = g_strdup_printf("/proc/%d/task", (int)pid);
        DIR *dir = opendir(dir_path);
        gboolean any = FALSE, known = dir != NULL;

        /* task/TID/children (CONFIG_PROC_CHILDREN) names each thread's
         * children; without it, every process's parent is looked at. */
        for (struct dirent *de; dir != NULL && !any && (de = readdir(dir)) != NULL;) {
                if (de->d_name[0] == '.')
                        continue;
                g_autofree char *path = g_strdup_printf("%s/%s/children", dir_path, de->d_name);
                g_autofree char *text = NULL;
                if (!g_file_get_contents(path, &text, NULL, NULL)) {
                        known = FALSE;
                        break;
                }
                any = text[0] != '\0';
        }
        if (dir != NULL)
                closedir(dir);
        if (known || any)
                return any;
        DIR *proc = opendir("/proc");
        for (struct dirent *de; proc != NULL && !any && (de = readdir(proc)) != NULL;) {
                char *end = NULL;
                long child = strtol(de->d_name, &end, 10);
                if (end != de->d_name && *end == '\0' && child > 0)
                        any = ptags_lineage_parent((pid_t)child) == pid;
        }
        if (proc != NULL)
                closedir(proc);
        return any;
}

/* Append the children of @pid (every thread's) to @out, as the kernel
 * lists them in task/TID/children; a process or thread that is gone has
 * none. */
static void append_children(pid_t pid, GArray *out)
{
        g_autofree char *dir_path = g_strdup_printf("/proc/%d/task", (int)pid);
        DIR *dir = opendir(dir_path);

        for (struct dirent *de; dir != NULL && (de = readdir(dir)) != NULL;) {
                if (de->d_name[0] == '.')
                        continue;
                g_autofree char *path = g_strdup_printf("%s/%s/children", dir_path, de->d_name);
                g_autofree char *text = NULL;
                if (!g_file_get_contents(path, &text, NULL, NULL))
                        continue;
                for (char *p = text, *end = NULL; *p != '\0'; p = end) {
                        long child = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        if (child > 0 && child <= G_MAXINT) {
                                PtagsLineageChild c = {(pid_t)child, pid};
                                g_array_append_val(out, c);
                        }
                }
        }
        if (dir != NULL)
                closedir(dir);
}

GArray *ptags_lineage_descendants(pid_t pid, guint max, gboolean *complete)
{
        GArray *out = g_array_new(FALSE, FALSE, sizeof(PtagsLineageChild));
        g_autofree char *probe = g_strdup_printf("/proc/self/task/%d/children", (int)getpid());

        /* Without CONFIG_PROC_CHILDREN no process lists its children. */
        *complete = g_file_test(probe, G_FILE_TEST_EXISTS);
        if (!*complete)
                return out;
        append_children(pid, out);
        for (guint i = 0; i < out->len && out->len <= max; i++)
                append_children(g_array_index(out, PtagsLineageChild, i).pid, out);
        if (out->len > max) {
                g_array_set_size(out, max);
                *complete = FALSE;
        }
        return out;
}

guint64 ptags_lineage_start_time(pid_t pid)
{
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
        g_autofree char *text = NULL;

        if (!g_file_get_contents(path, &text, NULL, NULL))
                return 0;
        /* Fields restart after the last ')' (comm may hold anything);
         * the start time is field 22, the 20th after it. */
        const char *p = strrchr(text, ')');
        if (p == NULL)
                return 0;
        g_auto(GStrv) fields = g_strsplit(p + 2, " ", 21);
        if (g_strv_length(fields) < 21)
                return 0;
        return g_ascii_strtoull(fields[19], NULL, 10);
}
