// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* args.c: the checks every handler runs on its arguments before any I/O,
 * and the labels that name a bad argument in an error message. */
#define G_LOG_DOMAIN "ptagsd-manager"

#include "args.h"

#include "errors.h"

#include <string.h>

/* Long lines are shortened in messages so errors stay readable. */
#define LABEL_MAX_CHARS 64

GVariant *ptags_set_to_variant(const ptags_set *set)
{
        size_t n = set != NULL ? ptags_set_count(set) : 0;
        g_autofree GVariant **items = g_new(GVariant *, n + 1);

        /* Built directly: a builder parses its format string per tag, which
         * was most of the cost of a cheap read. */
        for (size_t i = 0; i < n; i++) {
                const ptags_entry *e = ptags_set_at(set, i);
                GVariant *fields[3] = {g_variant_new_string(e->name),
                                       g_variant_new_boolean(e->keep),
                                       g_variant_new_string(e->value)};
                items[i] = g_variant_new_tuple(fields, 3);
        }
        return g_variant_new_array(G_VARIANT_TYPE("(sbs)"), items, n);
}

/* Whether @c shows as nothing or as a blank though Unicode counts it a
 * mark, a letter or a symbol: the characters to be shown as nothing that
 * are no format characters (the combining grapheme joiner, variation
 * selectors), and the Hangul fillers and the blank Braille pattern. */
static gboolean blank_or_invisible(gunichar c)
{
        static const struct {
                gunichar first, last;
        } ranges[] = {
                {0x034f, 0x034f}, {0x115f, 0x1160}, {0x17b4, 0x17b5},
                {0x180b, 0x180f}, {0x2800, 0x2800}, {0x3164, 0x3164},
                {0xfe00, 0xfe0f}, {0xffa0, 0xffa0}, {0xe0100, 0xe01ef},
        };

        for (gsize i = 0; i < G_N_ELEMENTS(ranges); i++)
                if (c >= ranges[i].first && c <= ranges[i].last)
                        return TRUE;
        return FALSE;
}

/* Whether @c prints as itself: not a control, format (bidi), unassigned,
 * private-use or separator character other than the space, nor one that
 * shows as nothing or a blank. */
static gboolean prints(gunichar c)
{
        if (blank_or_invisible(c))
                return FALSE;
        switch (g_unichar_type(c)) {
        case G_UNICODE_CONTROL:
        case G_UNICODE_FORMAT:
        case G_UNICODE_UNASSIGNED:
        case G_UNICODE_PRIVATE_USE:
        case G_UNICODE_SURROGATE:
        case G_UNICODE_LINE_SEPARATOR:
        case G_UNICODE_PARAGRAPH_SEPARATOR:
                return FALSE;
        case G_UNICODE_SPACE_SEPARATOR:
                return c == ' ';
        default:
                return TRUE;
        }
}

/* Whether @c shows as itself in a message and cannot pass for the message
 * around the text: it prints, and is no quotation mark and no backslash. */
static gboolean shows_as_itself(gunichar c)
{
        switch (g_unichar_type(c)) {
        case G_UNICODE_INITIAL_PUNCTUATION: /* “ ‘ « ‹ */
        case G_UNICODE_FINAL_PUNCTUATION:   /* ” ’ » › */
                return FALSE;
        default:
                return prints(c) && c != '"' && c != '\\' && c != 0x201A && c != 0x201E; /* ‚ „ */
        }
}

char *ptags_shown_text(const char *text, gsize len, guint max_chars)
{
        if (len == 0)
                return g_strdup("");

        GString *shown = g_string_sized_new(MIN(len, max_chars * 2) + 8);
        const char *end = text + len;
        guint n = 0;

        for (const char *p = text; p < end; p = g_utf8_next_char(p), n++) {
                gunichar c = g_utf8_get_char(p);
                if (n == max_chars) {
                        g_string_append(shown, "…");
                        break;
                }
                if (shows_as_itself(c))
                        g_string_append_unichar(shown, c);
                else
                        g_string_append_printf(shown, "\\u{%04X}", c);
        }
        return g_string_free(shown, FALSE);
}

char *ptags_shorten(const char *text)
{
        GString *out = g_string_new(NULL);
        glong chars = 0;

        /* Control bytes are shown escaped so a message stays on one line,
         * and so are the characters that would not print as themselves; a
         * quotation mark and a backslash too, so that no text can end the
         * quotes it is shown in and pass for the message around them. */
        for (const char *p = text; *p != '\0' && chars < LABEL_MAX_CHARS;
             p = g_utf8_next_char(p), chars++) {
                guchar c = (guchar)*p;
                gunichar u = c < 0x80 ? c : g_utf8_get_char(p);
                if (c == '"' || c == '\\')
                        g_string_append_printf(out, "\\%c", c);
                else if (c == '\n')
                        g_string_append(out, "\\n");
                else if (c < 0x20 || c == 0x7f)
                        g_string_append_printf(out, "\\x%02x", c);
                else if (u >= 0x80 && !prints(u)) /* C1 controls, bidi overrides */
                        g_string_append_printf(out, "\\u{%04X}", u);
                else
                        g_string_append_len(out, p, g_utf8_next_char(p) - p);
        }
        if (g_utf8_strlen(text, -1) > LABEL_MAX_CHARS)
                g_string_append(out, "...");
        return g_string_free(out, FALSE);
}

char *ptags_line_label(size_t index, const char *line)
{
        g_autofree char *text = ptags_shorten(line);

        return g_strdup_printf("line %zu (\"%s\")", index + 1, text);
}

gboolean ptags_lines_check_limits(const char *const *lines, GError **error)
{
        size_t n = 0, total = 0;

        for (; lines[n] != NULL; n++)
                total += strlen(lines[n]) + 1;
        if (n > PTAGS_APPLY_MAX_LINES) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND,
                            "argument lines: %zu lines, at most %u are allowed", n,
                            PTAGS_APPLY_MAX_LINES);
                return FALSE;
        }
        if (total > PTAGS_APPLY_MAX_BYTES) {
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND,
                            "argument lines: %zu bytes, at most %u are allowed", total,
                            PTAGS_APPLY_MAX_BYTES);
                return FALSE;
        }
        return TRUE;
}

gboolean ptags_lines_validate(const char *const *lines, GError **error)
{
        if (!ptags_lines_check_limits(lines, error))
                return FALSE;
        /* The label (an escaped copy of the line) is made only for the line
         * that fails, not for each of up to 4096 good ones. */
        for (size_t i = 0; lines[i] != NULL; i++) {
                if (strchr(lines[i], '\n') != NULL) {
                        g_autofree char *label = ptags_line_label(i, lines[i]);
                        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_COMMAND,
                                    "%s: contains a newline; give one command per line", label);
                        return FALSE;
                }
                ptags_cmd cmd;
                ptags_result r = ptags_cmd_parse(lines[i], strlen(lines[i]), &cmd);
                if (r != PTAGS_OK) {
                        g_autofree char *label = ptags_line_label(i, lines[i]);
                        g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r), "%s: %s", label,
                                    ptags_result_message(r));
                        return FALSE;
                }
        }
        return TRUE;
}

/* FALSE with "argument NAME (\"TEXT\"): why" unless @r is PTAGS_OK. */
static gboolean arg_ok(ptags_result r, const char *name, const char *text, GError **error)
{
        if (r == PTAGS_OK)
                return TRUE;
        g_autofree char *shown = ptags_shorten(text);
        g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r), "argument %s (\"%s\"): %s",
                    name, shown, ptags_result_message(r));
        return FALSE;
}

gboolean ptags_query_pattern_parse(const char *pattern, gboolean *kept_only, char **body,
                                   GError **error)
{
        gboolean kept = pattern[0] == '@';
        const char *rest = pattern + (kept ? 1 : 0);
        if (!arg_ok(ptags_pattern_validate(rest, strlen(rest), true), "pattern", pattern, error))
                return FALSE;
        *kept_only = kept;
        *body = g_strdup(rest);
        return TRUE;
}

gboolean ptags_check_bus_name(const char *bus_name, GError **error)
{
        if (g_dbus_is_name(bus_name))
                return TRUE;
        g_autofree char *text = ptags_shorten(bus_name);
        g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS,
                    "argument bus_name: \"%s\" is not a bus name", text);
        return FALSE;
}

gboolean ptags_check_pid(guint32 pid, GError **error)
{
        if (pid <= G_MAXINT)
                return TRUE;
        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NO_SUCH_PROCESS,
                    "argument pid: %u is not a process id", pid);
        return FALSE;
}

gboolean ptags_check_change_arg(const char *arg_name, const char *arg, const char *value,
                                GError **error)
{
        size_t len = strlen(arg);

        if (strcmp(arg_name, "tag") != 0 && arg[0] == '@') {
                g_autofree char *text = ptags_shorten(arg);
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_INVALID_PATTERN,
                            "argument %s (\"%s\"): a leading '@' is not allowed here (keep "
                            "flags are SetKeep's)",
                            arg_name, text);
                return FALSE;
        }
        ptags_result r = strcmp(arg_name, "tag") == 0 ? ptags_tag_validate(arg, len)
                                                      : ptags_pattern_validate(arg, len, true);
        return arg_ok(r, arg_name, arg, error) &&
               (value == NULL ||
                arg_ok(ptags_value_validate(value, strlen(value)), "value", value, error));
}
