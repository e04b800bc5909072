// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-output.c: aligned tables and JSON text for ptagsctl, with no library
 * beyond libc (the output shapes are documented in man/ptagsctl.1). */
#include "ctl-output.h"

#include <errno.h>
#include <libintl.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define _(s) gettext(s)

struct CtlTable {
        size_t n_columns;
        char **headers;
        char **cells; /* row-major */
        size_t n_rows, allocated;
};

/* The code point of the UTF-8 sequence at @s and its length in *@n, or
 * -1 (*@n = 1) for a byte that starts no valid sequence. @s ends with a
 * NUL, which no continuation byte matches, so no read goes past it. */
static long utf8_next(const unsigned char *s, size_t *n)
{
        static const long min[] = {0, 0, 0x80, 0x800, 0x10000}; /* no overlong forms */
        size_t len;

        *n = 1;
        if (s[0] < 0x80)
                return s[0];
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4;
        else
                return -1;
        long c = s[0] & (0x7f >> len);
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return -1;
                c = c << 6 | (s[i] & 0x3f);
        }
        if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return -1;
        *n = len;
        return c;
}

/* Whether @c does not print as itself, or could make text on a terminal
 * read as other text: controls (C0, DEL and C1, whose U+009B is CSI on
 * xterm), format characters (the bidi overrides and isolates, zero-width
 * characters), the other characters Unicode says to show as nothing
 * (variation selectors, the combining grapheme joiner), characters that
 * show as a blank (the Hangul fillers, the blank Braille pattern), the line
 * and paragraph separators, spaces other than U+0020 (they look like a
 * column break), private-use characters and noncharacters. Unassigned
 * characters are not known here: that would take Unicode's whole table. */
static bool is_hidden(long c)
{
        static const struct {
                long first, last;
        } ranges[] = {
                {0x0000, 0x001f},    {0x007f, 0x00a0},   {0x00ad, 0x00ad},   {0x034f, 0x034f},
                {0x0600, 0x0605},    {0x061c, 0x061c},   {0x06dd, 0x06dd},   {0x070f, 0x070f},
                {0x0890, 0x0891},    {0x08e2, 0x08e2},   {0x115f, 0x1160},   {0x1680, 0x1680},
                {0x17b4, 0x17b5},    {0x180b, 0x180f},   {0x2000, 0x200f},   {0x2028, 0x202f},
                {0x205f, 0x206f},    {0x2800, 0x2800},   {0x3000, 0x3000},   {0x3164, 0x3164},
                {0xe000, 0xf8ff},    {0xfdd0, 0xfdef},   {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},
                {0xffa0, 0xffa0},    {0xfff0, 0xfffb},   {0x110bd, 0x110bd}, {0x110cd, 0x110cd},
                {0x13430, 0x1343f},  {0x1bca0, 0x1bca3}, {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
                {0xf0000, 0x10ffff},
        };

        if (c >= 0x20 && c < 0x7f)
                return false;
        if ((c & 0xfffe) == 0xfffe) /* U+FFFE, U+FFFF and their like in every plane */
                return true;
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
                if (c >= ranges[i].first && c <= ranges[i].last)
                        return true;
        }
        return false;
}

/* ctl_print_escaped(), or with @keep_spaces the same but for U+0020. */
static void print_escaped(FILE *out, const char *s, bool keep_spaces)
{
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n;
                long c = utf8_next(p, &n);

                /* D-Bus strings are valid UTF-8: a byte that is not (in an
                 * argument or line ptagsctl refuses) is shown as itself,
                 * never as a U+FFFD the text could really hold. */
                if (c < 0)
                        fprintf(out, "\\x{%02X}", *p);
                else if (c == '\\' || (c == ' ' && !keep_spaces) || is_hidden(c))
                        fprintf(out, "\\u{%04lX}", c);
                else
                        fwrite(p, 1, n, out);
                p += n;
        }
}

void ctl_print_escaped(FILE *out, const char *s)
{
        /* A space separates the changes of a monitor line and pads the
         * cells of a table: inside a tag it would fake either. */
        print_escaped(out, s, false);
}

void ctl_print_comment(FILE *out, const char *s)
{
        print_escaped(out, s, true);
}

char *ctl_escape(const char *s)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (f == NULL)
                return NULL;
        ctl_print_escaped(f, s);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

bool ctl_utf8_valid(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n;
                if (utf8_next(p, &n) < 0)
                        return false;
                p += n;
        }
        return true;
}

long ctl_noncharacter(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n;
                long c = utf8_next(p, &n);
                if ((c >= 0xfdd0 && c <= 0xfdef) || (c >= 0 && (c & 0xfffe) == 0xfffe))
                        return c;
                p += n;
        }
        return 0;
}

CtlTable *ctl_table_new(size_t n_columns, const char *const *headers)
{
        CtlTable *t = calloc(1, sizeof(*t));

        if (t == NULL)
                return NULL;
        t->n_columns = n_columns;
        t->headers = calloc(n_columns, sizeof(char *));
        if (t->headers == NULL) {
                free(t);
                return NULL;
        }
        for (size_t i = 0; i < n_columns; i++) {
                t->headers[i] = strdup(headers[i]);
                if (t->headers[i] == NULL) {
                        ctl_table_free(t);
                        return NULL;
                }
        }
        return t;
}

int ctl_table_add_row(CtlTable *t, const char *const *cells)
{
        if (t->n_rows == t->allocated) {
                size_t grown = t->allocated ? t->allocated * 2 : 16;
                char **c = reallocarray(t->cells, grown * t->n_columns, sizeof(char *));
                if (c == NULL)
                        return -ENOMEM;
                t->cells = c;
                t->allocated = grown;
        }
        char **row = t->cells + t->n_rows * t->n_columns;
        for (size_t i = 0; i < t->n_columns; i++) {
                row[i] = strdup(cells[i]);
                if (row[i] == NULL) {
                        while (i-- > 0)
                                free(row[i]);
                        return -ENOMEM;
                }
        }
        t->n_rows++;
        return 0;
}

size_t ctl_table_rows(const CtlTable *t)
{
        return t->n_rows;
}

/* Terminal columns of @s; bytes that do not decode count one each. */
static size_t text_width(const char *s)
{
        mbstate_t state = {0};
        size_t width = 0, len = strlen(s);

        while (len > 0) {
                wchar_t wc;
                size_t n = mbrtowc(&wc, s, len, &state);
                if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
                        memset(&state, 0, sizeof(state));
                        n = 1;
                        width++;
                } else {
                        int w = wcwidth(wc);
                        width += w > 0 ? (size_t)w : 0;
                }
                s += n;
                len -= n;
        }
        return width;
}

static void print_row(FILE *out, char *const *row, const size_t *widths, size_t n)
{
        size_t last = n;

        /* Pad up to the last non-empty cell only: no trailing blanks. */
        while (last > 1 && row[last - 1][0] == '\0')
                last--;
        for (size_t i = 0; i < last; i++) {
                fputs(row[i], out);
                if (i + 1 < last) {
                        for (size_t w = text_width(row[i]); w < widths[i] + 2; w++)
                                fputc(' ', out);
                }
        }
        fputc('\n', out);
}

void ctl_table_print(const CtlTable *t, FILE *out, bool legend)
{
        size_t *widths = calloc(t->n_columns, sizeof(size_t));

        if (widths == NULL)
                return;
        for (size_t i = 0; i < t->n_columns; i++) {
                widths[i] = legend ? text_width(t->headers[i]) : 0;
                for (size_t r = 0; r < t->n_rows; r++) {
                        size_t w = text_width(t->cells[r * t->n_columns + i]);
                        if (w > widths[i])
                                widths[i] = w;
                }
        }
        if (legend)
                print_row(out, t->headers, widths, t->n_columns);
        for (size_t r = 0; r < t->n_rows; r++)
                print_row(out, t->cells + r * t->n_columns, widths, t->n_columns);
        free(widths);
}

void ctl_table_free(CtlTable *t)
{
        if (t == NULL)
                return;
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        for (size_t i = 0; i < t->n_columns; i++)
                free(t->headers[i]);
        free(t->cells);
        free(t->headers);
        free(t);
}

void ctl_json_string(FILE *out, const char *s)
{
        fputc('"', out);
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n;
                long c = utf8_next(p, &n);

                if (c == '"') {
                        fputs("\\\"", out);
                } else if (c == '\\') {
                        fputs("\\\\", out);
                } else if (c > 0xffff && is_hidden(c)) {
                        /* JSON spells a code point above U+FFFF as a UTF-16 pair. */
                        fprintf(out, "\\u%04lx\\u%04lx", 0xd800 + ((c - 0x10000) >> 10),
                                0xdc00 + ((c - 0x10000) & 0x3ff));
                } else if (c >= 0 && is_hidden(c)) {
                        /* RFC 8259 asks this of C0 controls only; the rest
                         * (C1, bidi, separators) is escaped too, so JSON on a
                         * terminal is as safe as a table. Parsers read back
                         * the exact text. */
                        fprintf(out, "\\u%04lx", c);
                } else {
                        /* Bytes that are not UTF-8 (only a bus name given on
                         * the command line can hold them) are copied. */
                        fwrite(p, 1, n, out);
                }
                p += n;
        }
        fputc('"', out);
}

void ctl_json_tag_list(FILE *out, const CtlTagList *list)
{
        fputc('[', out);
        for (size_t i = 0; i < list->n; i++) {
                fputs(i ? ", {\"name\": " : "{\"name\": ", out);
                ctl_json_string(out, list->tags[i].name);
                fprintf(out, ", \"keep\": %s, \"value\": ", list->tags[i].keep ? "true" : "false");
                ctl_json_string(out, list->tags[i].value);
                fputc('}', out);
        }
        fputc(']', out);
}

int ctl_table_add_tags(CtlTable *table, const char *pid, const CtlTagList *list)
{
        for (size_t i = 0; i < list->n; i++) {
                const char *keep = list->tags[i].keep ? _("yes") : _("no");
                /* Any user who may tag a process chooses these. */
                char *name = ctl_escape(list->tags[i].name);
                char *value = ctl_escape(list->tags[i].value);
                const char *row_with_pid[] = {pid, name, keep, value};
                const char *const *row = pid ? row_with_pid : row_with_pid + 1;
                int r = name && value ? ctl_table_add_row(table, row) : -ENOMEM;
                free(name);
                free(value);
                if (r < 0)
                        return r;
        }
        return 0;
}

void ctl_print_fields(FILE *out, size_t n, const char *const *labels, const char *const *values)
{
        size_t width = 0;

        for (size_t i = 0; i < n; i++) {
                size_t w = text_width(labels[i]);
                if (w > width)
                        width = w;
        }
        for (size_t i = 0; i < n; i++) {
                for (size_t w = text_width(labels[i]); w < width; w++)
                        fputc(' ', out);
                fprintf(out, "%s: %s\n", labels[i], values[i]);
        }
}
