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
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                switch (*p) {
                case '"':
                        fputs("\\\"", out);
                        break;
                case '\\':
                        fputs("\\\\", out);
                        break;
                default:
                        /* D-Bus strings are valid UTF-8: copy all but
                         * the control bytes JSON forbids raw. */
                        if (*p < 0x20 || *p == 0x7f)
                                fprintf(out, "\\u%04x", *p);
                        else
                                fputc(*p, out);
                }
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
                const char *row_with_pid[] = {pid, list->tags[i].name, keep, list->tags[i].value};
                const char *const *row = pid ? row_with_pid : row_with_pid + 1;
                int r = ctl_table_add_row(table, row);
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
