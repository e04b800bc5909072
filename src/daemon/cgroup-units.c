// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* cgroup-units.c: a process's systemd units from its cgroup text, by the
 * rules sd-login follows (see cgroup-units.h). Polkit rules trust
 * target-unit, so every rule here is sd-login's, down to the odd ones; the
 * unit tests compare the two on real cgroups. */
#include "cgroup-units.h"

#include <linux/magic.h>
#include <stdint.h>
#include <string.h>
#include <sys/statfs.h>

static gboolean fs_is(const char *path, long magic)
{
        struct statfs fs;

        return statfs(path, &fs) == 0 && fs.f_type == magic;
}

static PtagsCgroupTree tree_detect(void)
{
        struct statfs fs;

        if (statfs("/sys/fs/cgroup/", &fs) != 0)
                return PTAGS_CGROUP_TREE_UNKNOWN;
        if (fs.f_type == CGROUP2_SUPER_MAGIC)
                return PTAGS_CGROUP_TREE_UNIFIED;
        if (fs.f_type != TMPFS_MAGIC)
                return PTAGS_CGROUP_TREE_UNKNOWN; /* nothing mounted, or unknown */
        /* Hybrid: cgroup2 beside the v1 controllers holds systemd's tree. */
        if (fs_is("/sys/fs/cgroup/unified/", CGROUP2_SUPER_MAGIC))
                return PTAGS_CGROUP_TREE_UNIFIED;
        if (statfs("/sys/fs/cgroup/systemd/", &fs) != 0)
                return PTAGS_CGROUP_TREE_UNKNOWN;
        /* systemd 232 mounted its cgroup2 tree right there. */
        return fs.f_type == CGROUP2_SUPER_MAGIC ? PTAGS_CGROUP_TREE_UNIFIED
                                                : PTAGS_CGROUP_TREE_LEGACY;
}

PtagsCgroupTree ptags_cgroup_tree(void)
{
        static gsize once;
        static PtagsCgroupTree tree;

        if (g_once_init_enter(&once)) {
                tree = tree_detect();
                g_once_init_leave(&once, 1);
        }
        return tree;
}

/* Whether the comma-separated list @list (of @len bytes) holds @word. */
static gboolean list_has(const char *list, gsize len, const char *word)
{
        gsize wlen = strlen(word);

        for (const char *p = list, *end = list + len; p <= end;) {
                const char *comma = memchr(p, ',', end - p);
                const char *stop = comma != NULL ? comma : end;
                if ((gsize)(stop - p) == wlen && memcmp(p, word, wlen) == 0)
                        return TRUE;
                p = stop + 1;
        }
        return FALSE;
}

/* The path of systemd's tree in @text (a whole /proc/PID/cgroup), without
 * a zombie's " (deleted)"; NULL when @tree has no line there. */
static char *systemd_path(const char *text, PtagsCgroupTree tree)
{
        if (text == NULL || tree == PTAGS_CGROUP_TREE_UNKNOWN)
                return NULL;
        /* A line ends at a newline or a carriage return, as sd-login reads
         * it; the first line naming the tree counts. */
        for (const char *line = text; *line != '\0';) {
                gsize len = strcspn(line, "\n\r");
                const char *end = line + len, *path = NULL;
                const char *colon = memchr(line, ':', len);
                if (colon != NULL) {
                        const char *second = memchr(colon + 1, ':', end - colon - 1);
                        if (tree == PTAGS_CGROUP_TREE_UNIFIED) {
                                if (colon == line + 1 && line[0] == '0' && second != NULL)
                                        path = second + 1;
                        } else if (second != NULL &&
                                   list_has(colon + 1, second - colon - 1, "name=systemd")) {
                                path = second + 1;
                        }
                }
                if (path != NULL) {
                        gsize plen = end - path;
                        static const char zombie[] = " (deleted)";
                        if (plen >= sizeof(zombie) - 1 &&
                            memcmp(end - (sizeof(zombie) - 1), zombie, sizeof(zombie) - 1) == 0)
                                plen -= sizeof(zombie) - 1;
                        return g_strndup(path, plen);
                }
                line = *end != '\0' ? end + 1 : end;
        }
        return NULL;
}

/* PID 1's path less the scope or slice systemd itself runs in: the root
 * of this machine's (or container's) tree. */
static void strip_root_suffix(char *root)
{
        static const char *const suffixes[] = {"/init.scope", "/system.slice", "/system"};

        for (gsize i = 0; i < G_N_ELEMENTS(suffixes); i++) {
                if (g_str_has_suffix(root, suffixes[i])) {
                        root[strlen(root) - strlen(suffixes[i])] = '\0';
                        return;
                }
        }
}

/* One path component at *@p (after any slashes), its length in *@len;
 * FALSE at the end of the path. */
static gboolean next_component(const char **p, gsize *len)
{
        *p += strspn(*p, "/");
        *len = strcspn(*p, "/");
        return *len > 0;
}

/* @path relative to @root, compared component by component; @path itself
 * where it is not below @root. Both absolute, or both not. */
static const char *shift_path(const char *path, const char *root)
{
        if ((path[0] == '/') != (root[0] == '/'))
                return path;
        const char *p = path, *r = root;
        gsize plen, rlen;
        for (;;) {
                gboolean more_path = next_component(&p, &plen);
                if (!next_component(&r, &rlen))
                        return p; /* root exhausted: the rest is below it */
                if (!more_path || plen != rlen || memcmp(p, r, plen) != 0)
                        return path;
                p += plen;
                r += rlen;
        }
}

static gboolean unit_type_known(const char *type, gsize len)
{
        static const char *const types[] = {
                "service",   "mount", "swap", "socket", "target", "device",
                "automount", "timer", "path", "slice",  "scope",
        };

        for (gsize i = 0; i < G_N_ELEMENTS(types); i++)
                if (strlen(types[i]) == len && memcmp(types[i], type, len) == 0)
                        return TRUE;
        return FALSE;
}

gboolean ptags_unit_name_valid(const char *name, gsize len, gboolean instance)
{
        if (len == 0 || len >= 256)
                return FALSE;
        const char *dot = g_strrstr_len(name, len, ".");
        if (dot == NULL || dot == name || !unit_type_known(dot + 1, name + len - dot - 1))
                return FALSE;
        const char *at = NULL;
        for (const char *c = name; c < dot; c++) {
                if (*c == '@' && at == NULL)
                        at = c;
                if (!g_ascii_isalnum(*c) && strchr(":-_.\\@", *c) == NULL)
                        return FALSE;
        }
        if (at == NULL)
                return TRUE;
        return instance && at != name && dot > at + 1;
}

/* A cgroup named like a kernel file is escaped with one leading '_'. */
static void unescape(const char **name, gsize *len)
{
        if (*len > 0 && **name == '_') {
                (*name)++;
                (*len)--;
        }
}

static gboolean ends_in_slice(const char *p, gsize len)
{
        return len >= 6 && memcmp(p + len - 6, ".slice", 6) == 0;
}

static gboolean is_slice(const char *p, gsize len)
{
        if (len < strlen("x.slice") || !ends_in_slice(p, len))
                return FALSE;
        unescape(&p, &len);
        return ptags_unit_name_valid(p, len, FALSE);
}

/* The first component of @path that is not a slice. */
static const char *skip_slices(const char *path)
{
        gsize len;

        while (next_component(&path, &len) && is_slice(path, len))
                path += len;
        return path;
}

/* The unit of a path: the first component below the slices. */
static char *path_unit(const char *path)
{
        const char *c = skip_slices(path);
        gsize len = strcspn(c, "/");

        if (len < 3)
                return NULL;
        unescape(&c, &len);
        if (!ptags_unit_name_valid(c, len, TRUE) || ends_in_slice(c, len))
                return NULL;
        return g_strndup(c, len);
}

/* A uid as systemd accepts one in user@UID.service: decimal digits without
 * sign or leading zero, neither 2^32-1 nor 65535. */
static gboolean uid_text_valid(const char *text, gsize len)
{
        guint64 uid = 0;

        if (len == 0 || (text[0] == '0' && len > 1))
                return FALSE;
        for (gsize i = 0; i < len; i++) {
                if (!g_ascii_isdigit(text[i]))
                        return FALSE;
                uid = uid * 10 + (guint64)(text[i] - '0');
                if (uid > UINT32_MAX)
                        return FALSE;
        }
        return uid != UINT32_MAX && uid != 0xFFFF;
}

/* Below the slices, past a user's manager (user@UID.service, unescaped
 * as it is never escaped): where that manager's units start, or NULL. */
static const char *skip_user_manager(const char *path)
{
        const char *c = skip_slices(path);
        gsize len;

        if (!next_component(&c, &len) || len < strlen("user@x.service") ||
            memcmp(c, "user@", 5) != 0 || memcmp(c + len - 8, ".service", 8) != 0 ||
            !uid_text_valid(c + 5, len - 5 - 8))
                return NULL;
        return c + len;
}

void ptags_cgroup_units(const char *text, const char *pid1_text, PtagsCgroupTree tree, char **unit,
                        char **user_unit)
{
        *unit = NULL;
        *user_unit = NULL;
        g_autofree char *path = systemd_path(text, tree);
        g_autofree char *root = systemd_path(pid1_text, tree);
        if (path == NULL || root == NULL)
                return;
        strip_root_suffix(root);
        const char *shifted = shift_path(path, root);
        *unit = path_unit(shifted);
        /* Only a user's manager runs user units. */
        if (*unit == NULL || !g_str_has_prefix(*unit, "user@"))
                return;
        const char *below = skip_user_manager(shifted);
        if (below != NULL)
                *user_unit = path_unit(below);
}
