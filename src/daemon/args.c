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

/* The noncharacter whose UTF-8 form starts at @p (@left bytes remain), or
 * 0. Looked at byte by byte, so no text is decoded whole: U+FDD0..U+FDEF
 * are EF B7 90..AF, U+FFFE and U+FFFF are EF BF BE and EF BF BF, and
 * U+nFFFE and U+nFFFF are F0..F4, then a byte whose low 4 bits are all
 * set, then BF, then BE or BF. */
static gunichar noncharacter_at(const guchar *p, gsize left)
{
        if (p[0] == 0xEF && left >= 3) {
                if (p[1] == 0xB7 && p[2] >= 0x90 && p[2] <= 0xAF)
                        return 0xFDD0 + (p[2] - 0x90u);
                if (p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF))
                        return 0xFFFE + (p[2] - 0xBEu);
        } else if (p[0] >= 0xF0 && p[0] <= 0xF4 && left >= 4) {
                if ((p[1] & 0x0F) == 0x0F && p[2] == 0xBF && (p[3] == 0xBE || p[3] == 0xBF))
                        return ((gunichar)(p[0] & 0x07) << 18 | (gunichar)(p[1] & 0x3F) << 12 |
                                0xFFFE) +
                               (p[3] - 0xBEu);
        }
        return 0;
}

gunichar ptags_noncharacter_in(const char *text, gsize len)
{
        const guchar *p = (const guchar *)text;

        /* Every noncharacter's first byte is EF or F0..F4. */
        for (gsize i = 0; i < len; i++) {
                if (p[i] < 0xEF)
                        continue;
                gunichar c = noncharacter_at(p + i, len - i);
                if (c != 0)
                        return c;
        }
        return 0;
}

char *ptags_sendable_text(const char *text, gsize len)
{
        if (ptags_noncharacter_in(text, len) == 0)
                return NULL;

        GString *out = g_string_sized_new(len);
        const guchar *p = (const guchar *)text;
        for (gsize i = 0; i < len;) {
                gunichar c = p[i] >= 0xEF ? noncharacter_at(p + i, len - i) : 0;
                if (c != 0) {
                        g_string_append_c(out, '\x1a');
                        i += c > 0xFFFF ? 4 : 3;
                } else {
                        g_string_append_c(out, text[i++]);
                }
        }
        return g_string_free(out, FALSE);
}

GVariant *ptags_entry_to_variant(const ptags_entry *e)
{
        /* A tag holding a noncharacter came from another kernel writer (or
         * from ptagsd before it refused them): sent as it is, it would break
         * every sd-bus client's read of any reply or signal carrying it. */
        g_autofree char *name = ptags_sendable_text(e->name, e->name_len);
        g_autofree char *value = ptags_sendable_text(e->value, e->value_len);
        GVariant *fields[3] = {g_variant_new_string(name != NULL ? name : e->name),
                               g_variant_new_boolean(e->keep),
                               g_variant_new_string(value != NULL ? value : e->value)};

        return g_variant_new_tuple(fields, 3);
}

GVariant *ptags_set_to_variant(const ptags_set *set)
{
        size_t n = set != NULL ? ptags_set_count(set) : 0;
        g_autofree GVariant **items = g_new(GVariant *, n + 1);

        /* Built directly: a builder parses its format string per tag, which
         * was most of the cost of a cheap read. */
        for (size_t i = 0; i < n; i++)
                items[i] = ptags_entry_to_variant(ptags_set_at(set, i));
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

/* What a noncharacter in text at @arg (@len bytes) is refused as: that
 * text otherwise bad. A pattern is a pattern only with a '*' in it, else an
 * exact tag, as ptags_pattern_validate judges it. */
static ptags_result pattern_error(const char *arg, size_t len)
{
        return memchr(arg, '*', len) != NULL ? PTAGS_E_INVALID_PATTERN : PTAGS_E_INVALID_TAG;
}

/* The first noncharacter in @line, parsed as @cmd, in *@c (0: none), and
 * what it is refused as: the error its tag, pattern, value or comment gets
 * when otherwise bad. */
static ptags_result line_noncharacter(const char *line, const ptags_cmd *cmd, gunichar *c)
{
        switch (cmd->kind) {
        case PTAGS_CMD_NOP:
                *c = ptags_noncharacter_in(line, strlen(line));
                return PTAGS_E_INVALID_COMMAND;
        case PTAGS_CMD_ADD:
                *c = ptags_noncharacter_in(cmd->arg, cmd->arg_len);
                return PTAGS_E_INVALID_TAG;
        case PTAGS_CMD_SET:
                if ((*c = ptags_noncharacter_in(cmd->arg, cmd->arg_len)) != 0)
                        return PTAGS_E_INVALID_TAG;
                *c = ptags_noncharacter_in(cmd->value, cmd->value_len);
                return PTAGS_E_INVALID_VALUE;
        default:
                *c = ptags_noncharacter_in(cmd->arg, cmd->arg_len);
                return pattern_error(cmd->arg, cmd->arg_len);
        }
}

/* Why ptagsd refuses the noncharacter @c, after the text that holds it. */
#define NONCHARACTER_WHY                                                                           \
        "U+%04X is a Unicode noncharacter, which ptagsd takes in no tag, value, pattern or "       \
        "line (D-Bus clients built on sd-bus could not receive it)"

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
                /* The kernel takes noncharacters, so the model's grammar
                 * does too: refused here, at ptagsd's door. */
                gunichar c = 0;
                r = line_noncharacter(lines[i], &cmd, &c);
                if (c != 0) {
                        g_autofree char *label = ptags_line_label(i, lines[i]);
                        g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r),
                                    "%s: " NONCHARACTER_WHY, label, c);
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

/* FALSE with "argument NAME (\"TEXT\"): why" when @text holds a
 * noncharacter, with the error @r (what the same text otherwise bad gets). */
static gboolean arg_has_no_noncharacter(ptags_result r, const char *name, const char *text,
                                        GError **error)
{
        gunichar c = ptags_noncharacter_in(text, strlen(text));

        if (c == 0)
                return TRUE;
        g_autofree char *shown = ptags_shorten(text);
        g_set_error(error, PTAGS_ERROR, ptags_error_from_result(r),
                    "argument %s (\"%s\"): " NONCHARACTER_WHY, name, shown, c);
        return FALSE;
}

gboolean ptags_query_pattern_parse(const char *pattern, gboolean *kept_only, char **body,
                                   GError **error)
{
        gboolean kept = pattern[0] == '@';
        const char *rest = pattern + (kept ? 1 : 0);
        size_t len = strlen(rest);
        if (!arg_ok(ptags_pattern_validate(rest, len, true), "pattern", pattern, error) ||
            !arg_has_no_noncharacter(pattern_error(rest, len), "pattern", pattern, error))
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
        gboolean is_tag = strcmp(arg_name, "tag") == 0;
        ptags_result r =
                is_tag ? ptags_tag_validate(arg, len) : ptags_pattern_validate(arg, len, true);
        /* The argument first, whatever is wrong with it, then the value. */
        return arg_ok(r, arg_name, arg, error) &&
               arg_has_no_noncharacter(is_tag ? PTAGS_E_INVALID_TAG : pattern_error(arg, len),
                                       arg_name, arg, error) &&
               (value == NULL ||
                (arg_ok(ptags_value_validate(value, strlen(value)), "value", value, error) &&
                 arg_has_no_noncharacter(PTAGS_E_INVALID_VALUE, "value", value, error)));
}
