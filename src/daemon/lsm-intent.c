// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* lsm-intent.c: the ptags-lsm backend's crash journal and the lines that
 * put a process's tags back as they were. */
#define G_LOG_DOMAIN "ptagsd-lsm"

#include "lsm-intent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

char *ptags_runtime_path(const char *name)
{
        const char *dir = g_getenv("RUNTIME_DIRECTORY");

        /* systemd may list several directories: the first is ours. */
        if (dir != NULL && *dir != '\0') {
                g_autofree char *first = g_strndup(dir, strcspn(dir, ":"));
                return g_build_filename(first, name, NULL);
        }
        return g_build_filename("/run/ptags", name, NULL);
}

int ptags_intent_write(const char *path, pid_t pid, guint64 start_time, const ptags_set *before)
{
        size_t len = 0;
        g_autofree char *tags = ptags_set_format(before, &len);
        if (tags == NULL)
                return -ENOMEM;
        g_autofree char *dir = g_path_get_dirname(path);
        if (g_mkdir_with_parents(dir, 0700) < 0)
                return -errno;
        GString *text = g_string_new(NULL);
        g_string_append_printf(text, "%d %" G_GUINT64_FORMAT "\n", (int)pid, start_time);
        g_string_append_len(text, tags, (gssize)len);
        g_autoptr(GError) error = NULL;
        gboolean ok = g_file_set_contents(path, text->str, (gssize)text->len, &error);
        g_string_free(text, TRUE);
        if (!ok) {
                g_warning("%s: %s", path, error->message);
                /* A full runtime directory is the one cause worth naming to
                 * the caller; the rest are ptagsd's own faults. */
                return g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOSPC) ? -ENOSPC : -EIO;
        }
        return 0;
}

int ptags_intent_read(const char *path, pid_t *pid, guint64 *start_time, ptags_set **before)
{
        g_autofree char *text = NULL;
        gsize len = 0;

        if (!g_file_get_contents(path, &text, &len, NULL))
                return -ENOENT;
        const char *nl = memchr(text, '\n', len);
        int p = 0;
        unsigned long long start = 0;
        if (nl == NULL || sscanf(text, "%d %llu", &p, &start) != 2 || p <= 0)
                return -EBADMSG;
        size_t head = (size_t)(nl - text) + 1;
        if (ptags_set_parse(text + head, len - head, before, NULL) != PTAGS_OK)
                return -EBADMSG;
        *pid = p;
        *start_time = start;
        return 0;
}

ptags_set *ptags_restore_target(const ptags_set *now, const ptags_set *before)
{
        ptags_set *want = ptags_set_copy(before);

        if (want == NULL)
                g_error("out of memory");
        for (size_t i = 0; i < ptags_set_count(now); i++) {
                const ptags_entry *e = ptags_set_at(now, i);
                if (!e->keep && ptags_set_find(before, e->name, strlen(e->name)) != NULL)
                        return want;
        }
        ptags_set_exec_filter(want);
        return want;
}

GPtrArray *ptags_restore_lines(const ptags_set *now, const ptags_set *want)
{
        GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);

        for (size_t i = 0; i < ptags_set_count(now); i++) {
                const ptags_entry *e = ptags_set_at(now, i);
                if (ptags_set_find(want, e->name, strlen(e->name)) == NULL)
                        g_ptr_array_add(lines, g_strconcat("-", e->name, NULL));
        }
        for (size_t i = 0; i < ptags_set_count(want); i++) {
                const ptags_entry *w = ptags_set_at(want, i);
                const ptags_entry *n = ptags_set_find(now, w->name, strlen(w->name));
                if (n == NULL || (bool)n->keep != (bool)w->keep)
                        g_ptr_array_add(lines, g_strconcat(w->keep ? "+@" : (n ? "-@" : "+"),
                                                           w->name, NULL));
                if (strcmp(n ? n->value : "", w->value) != 0)
                        g_ptr_array_add(lines, g_strconcat("!", w->name, "=", w->value, NULL));
        }
        return lines;
}
