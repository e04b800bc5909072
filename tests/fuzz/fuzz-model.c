// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* fuzz-model.c: libFuzzer target for the model: parse/print round trips,
 * both batch modes on the same input, plans, their lines and undo lines.
 *
 * Input layout: CURRENT \0 BATCH [\0 WRITER]
 * - CURRENT: the target's tags in the read format; when that does not
 *   parse, it is run as kernel command lines on an empty set instead, so
 *   random inputs still reach interesting sets. No \0 at all: the whole
 *   input is the BATCH and the set starts empty.
 * - BATCH: kernel command lines, applied in kernel mode (one write) and in
 *   atomic mode (split at '\n').
 * - WRITER: absent = unrestricted. First byte 'S' or 'O': the writer is
 *   the target, so its rights are the target's own tags, live (what follows
 *   is ignored); anything else: another process holding the tags that
 *   follow (built like CURRENT). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-target.h"
#include "ptags-model.h"

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "fuzz-model: %s:%d: check failed: %s\n", __FILE__,         \
                                __LINE__, #cond);                                                  \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* An independent UTF-8 decoder (code point ranges, not byte tables) to
 * cross-check ptags_utf8_valid. */
static bool reference_utf8_valid(const unsigned char *s, size_t len)
{
        size_t i = 0;
        while (i < len) {
                unsigned b = s[i];
                size_t n;
                uint32_t cp, min;
                if (b < 0x80) {
                        i++;
                        continue;
                } else if ((b & 0xE0) == 0xC0) {
                        n = 1, cp = b & 0x1F, min = 0x80;
                } else if ((b & 0xF0) == 0xE0) {
                        n = 2, cp = b & 0x0F, min = 0x800;
                } else if ((b & 0xF8) == 0xF0) {
                        n = 3, cp = b & 0x07, min = 0x10000;
                } else {
                        return false;
                }
                if (len - i - 1 < n)
                        return false;
                for (size_t k = 1; k <= n; k++) {
                        if ((s[i + k] & 0xC0) != 0x80)
                                return false;
                        cp = (cp << 6) | (s[i + k] & 0x3F);
                }
                if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                        return false;
                i += n + 1;
        }
        return true;
}

/* The permission model read straight off ptags(7), one held tag at a
 * time, to cross-check ptags_rights_allow's prefix search. */
static bool reference_holds(const ptags_set *held, const char *t, size_t t_len, const char *a)
{
        size_t a_len = strlen(a);
        for (size_t i = 0; i < ptags_set_count(held); i++) {
                const ptags_entry *r = ptags_set_at(held, i);
                if (r->name_len < 6 + a_len || memcmp(r->name, "ptags:", 6) != 0 ||
                    memcmp(r->name + r->name_len - a_len, a, a_len) != 0)
                        continue;
                if (r->name_len == 6 + a_len) {
                        /* ptags:A: every tag that is not a rights tag */
                        if (!ptags_tag_is_rights(t, t_len))
                                return true;
                        continue;
                }
                if (r->name[r->name_len - a_len - 1] != ':')
                        continue;
                const char *p = r->name + 6; /* ptags:P:A */
                size_t p_len = r->name_len - 6 - 1 - a_len;
                if (t_len >= p_len && memcmp(t, p, p_len) == 0 &&
                    (t_len == p_len || t[p_len] == ':'))
                        return true;
        }
        return false;
}

static void check_rights_against_reference(const ptags_writer *w, const ptags_set *tags)
{
        static const ptags_action actions[] = {PTAGS_ACTION_ADD, PTAGS_ACTION_SUB,
                                               PTAGS_ACTION_SET};
        size_t n = ptags_set_count(tags) < 64 ? ptags_set_count(tags) : 64;
        for (size_t i = 0; i < n; i++) {
                const ptags_entry *e = ptags_set_at(tags, i);
                for (size_t k = 0; k < 3; k++) {
                        bool expect = reference_holds(w->tags, e->name, e->name_len,
                                                      ptags_action_name(actions[k])) &&
                                      (w->self ||
                                       reference_holds(w->tags, e->name, e->name_len, "others"));
                        CHECK(ptags_rights_allow(w, actions[k], e->name, e->name_len) == expect);
                }
        }
}

static int name_cmp(const ptags_entry *a, const ptags_entry *b)
{
        size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
        int c = memcmp(a->name, b->name, n);
        return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* Sorted, unique, within limits, every name and value valid. */
static void check_set(const ptags_set *s)
{
        size_t n = ptags_set_count(s);
        CHECK(n <= PTAGS_MAX_TAGS);
        for (size_t i = 0; i < n; i++) {
                const ptags_entry *e = ptags_set_at(s, i);
                CHECK(ptags_tag_validate(e->name, e->name_len) == PTAGS_OK);
                CHECK(ptags_value_validate(e->value, e->value_len) == PTAGS_OK);
                CHECK(e->name[e->name_len] == '\0' && e->value[e->value_len] == '\0');
                CHECK(ptags_set_find(s, e->name, e->name_len) == e);
                if (i > 0)
                        CHECK(name_cmp(ptags_set_at(s, i - 1), e) < 0);
        }
        CHECK(ptags_set_at(s, n) == NULL);
}

/* Print, parse back, print again: the same set and the same bytes. */
static void check_round_trip(const ptags_set *s)
{
        size_t len = 0, len2 = 0;
        char *text = ptags_set_format(s, &len);
        CHECK(text != NULL && strlen(text) == len);
        ptags_set *back = NULL;
        CHECK(ptags_set_parse(text, len, &back, NULL) == PTAGS_OK);
        CHECK(ptags_set_equal(s, back));
        char *text2 = ptags_set_format(back, &len2);
        CHECK(text2 != NULL && len2 == len && memcmp(text, text2, len) == 0);
        free(text);
        free(text2);
        ptags_set_free(back);
}

/* A set from text in the read format, or else from running it as kernel
 * command lines (whatever succeeds) on an empty set. */
static ptags_set *build_set(const char *text, size_t len, bool *parsed)
{
        ptags_set *s = NULL;
        *parsed = ptags_set_parse(text, len, &s, NULL) == PTAGS_OK;
        if (*parsed) {
                size_t out_len = 0;
                char *out = ptags_set_format(s, &out_len);
                CHECK(out != NULL && out_len == len && memcmp(out, text, len) == 0);
                free(out);
                return s;
        }
        s = ptags_set_new();
        CHECK(s != NULL);
        for (size_t off = 0, consumed = 1; off < len && consumed > 0; off += consumed)
                ptags_apply_kernel(s, text + off, len - off, NULL, &consumed);
        return s;
}

/* What a change promises about the tag before and after it. */
static void check_change_before(const ptags_set *s, const ptags_change *c)
{
        const ptags_entry *e = ptags_set_find(s, c->tag, c->tag_len);
        if (c->kind == PTAGS_CHANGE_ADD || c->kind == PTAGS_CHANGE_ADD_KEPT) {
                CHECK(e == NULL);
                return;
        }
        CHECK(e != NULL && e->keep == c->old_keep);
        /* A plan keeps the value only where undo restores it. */
        if (c->kind == PTAGS_CHANGE_SET_KEEP || c->kind == PTAGS_CHANGE_CLEAR_KEEP)
                CHECK(c->old_value_len == 0 && c->old_value[0] == '\0');
        else
                CHECK(e->value_len == c->old_value_len &&
                      memcmp(e->value, c->old_value, e->value_len) == 0);
}

static void check_change_after(const ptags_set *s, const ptags_change *c)
{
        const ptags_entry *e = ptags_set_find(s, c->tag, c->tag_len);
        CHECK(c->kind == PTAGS_CHANGE_REMOVE ? e == NULL : e != NULL);
        switch (c->kind) {
        case PTAGS_CHANGE_ADD:
                CHECK(!e->keep && e->value_len == 0 && c->action == PTAGS_ACTION_ADD);
                break;
        case PTAGS_CHANGE_ADD_KEPT:
                CHECK(e->keep && e->value_len == 0 && c->action == PTAGS_ACTION_ADD);
                break;
        case PTAGS_CHANGE_SET_KEEP:
                CHECK(e->keep && !c->old_keep && c->action == PTAGS_ACTION_ADD);
                break;
        case PTAGS_CHANGE_REMOVE:
                CHECK(c->action == PTAGS_ACTION_SUB);
                break;
        case PTAGS_CHANGE_CLEAR_KEEP:
                CHECK(!e->keep && c->old_keep && c->action == PTAGS_ACTION_SUB);
                break;
        case PTAGS_CHANGE_SET_VALUE:
        case PTAGS_CHANGE_CLEAR_VALUE:
                CHECK(e->value_len == c->value_len &&
                      memcmp(e->value, c->value, c->value_len) == 0);
                CHECK((c->kind == PTAGS_CHANGE_SET_VALUE) == (c->value_len > 0));
                CHECK(c->action == PTAGS_ACTION_SET);
                break;
        }
}

/* Run one formatted line unrestricted; it must parse and succeed. */
static void run_line(ptags_set *s, const char *line, size_t len)
{
        ptags_cmd cmd;
        CHECK(strlen(line) == len);
        CHECK(ptags_cmd_parse(line, len, &cmd) == PTAGS_OK);
        CHECK(ptags_cmd_apply(s, &cmd, NULL) == PTAGS_OK);
}

/* The plan's normalized lines rebuild its result from @current, each one a
 * real change; its undo lines, last change first, rebuild @current. */
static void check_plan_lines(const ptags_set *current, const ptags_plan *p, size_t n_lines,
                             char *line)
{
        ptags_set *redo = ptags_set_copy(current);
        CHECK(redo != NULL);
        size_t count = ptags_plan_change_count(p), last_line = 0;
        for (size_t i = 0; i < count; i++) {
                const ptags_change *c = ptags_plan_change_at(p, i);
                CHECK(c->line < n_lines && c->line >= last_line);
                last_line = c->line;
                check_change_before(redo, c);
                size_t len = ptags_change_format(c, false, line, PTAGS_MAX_LINE_LEN);
                CHECK(len < PTAGS_MAX_LINE_LEN);
                run_line(redo, line, len);
                check_change_after(redo, c);
        }
        CHECK(ptags_set_equal(redo, ptags_plan_result(p)));
        for (size_t i = count; i-- > 0;) {
                const ptags_change *c = ptags_plan_change_at(p, i);
                size_t undo = ptags_change_undo_count(c);
                CHECK(undo >= 1 && undo <= 2);
                size_t len0 = ptags_change_format(c, true, line, PTAGS_MAX_LINE_LEN);
                CHECK(ptags_change_format_undo(c, 0, NULL, 0) == len0);
                for (size_t k = 0; k < undo; k++) {
                        size_t len = ptags_change_format_undo(c, k, line, PTAGS_MAX_LINE_LEN);
                        CHECK(len > 0 && len < PTAGS_MAX_LINE_LEN);
                        run_line(redo, line, len);
                }
                CHECK(ptags_change_format_undo(c, undo, line, PTAGS_MAX_LINE_LEN) == 0);
        }
        CHECK(ptags_set_equal(redo, current));
        ptags_set_free(redo);
}

/* Split at '\n' (a non-empty tail counts as a line). (transfer full) */
static size_t split_lines(const char *buf, size_t len, const char ***lines, size_t **lens)
{
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                n += buf[i] == '\n';
        n += len > 0 && buf[len - 1] != '\n';
        *lines = calloc(n + 1, sizeof(**lines));
        *lens = calloc(n + 1, sizeof(**lens));
        CHECK(*lines != NULL && *lens != NULL);
        size_t k = 0, start = 0;
        for (size_t i = 0; i <= len && k < n; i++) {
                if (i == len || buf[i] == '\n') {
                        (*lines)[k] = buf + start;
                        (*lens)[k] = i - start;
                        k++;
                        start = i + 1;
                }
        }
        CHECK(k == n);
        return n;
}

static void check_kernel_mode(const ptags_set *current, const char *batch, size_t len,
                              const ptags_writer *w, ptags_set **out, ptags_result *result,
                              size_t *consumed)
{
        size_t cut = len < PTAGS_WRITE_MAX ? len : PTAGS_WRITE_MAX;
        ptags_set *k = ptags_set_copy(current);
        CHECK(k != NULL);
        /* A self writer's rights are read from k itself as it changes. */
        ptags_result r = ptags_apply_kernel(k, batch, len, w, consumed);
        check_set(k);
        CHECK(*consumed <= cut);
        CHECK(*consumed == 0 || batch[*consumed - 1] == '\n');
        CHECK((r == PTAGS_OK) == (*consumed == cut));

        /* The consumed prefix alone gives the same set and succeeds. */
        ptags_set *again = ptags_set_copy(current);
        size_t consumed2 = 0;
        CHECK(again != NULL);
        CHECK(ptags_apply_kernel(again, batch, *consumed, w, &consumed2) == PTAGS_OK);
        CHECK(consumed2 == *consumed && ptags_set_equal(again, k));
        ptags_set_free(again);

        /* The failing line fails alone too, and leaves the set unchanged. */
        if (r != PTAGS_OK) {
                const char *line = batch + *consumed;
                const char *nl = memchr(line, '\n', cut - *consumed);
                if (nl == NULL) {
                        CHECK(r == PTAGS_E_INVALID_COMMAND);
                } else {
                        ptags_set *probe = ptags_set_copy(k);
                        ptags_cmd cmd;
                        CHECK(probe != NULL);
                        ptags_result r2 = ptags_cmd_parse_kernel(line, (size_t)(nl - line), &cmd);
                        if (r2 == PTAGS_OK)
                                r2 = ptags_cmd_apply(probe, &cmd, w);
                        CHECK(r2 == r && ptags_set_equal(probe, k));
                        ptags_set_free(probe);
                }
        }
        *out = k;
        *result = r;
}

/* Run a wildcard sweep the slow way: one exact line per match, in byte
 * order, against the set as the matches before it left it; a refused
 * match is skipped. */
static void sweep_by_hand(ptags_set *s, const ptags_cmd *cmd, const ptags_writer *w)
{
        size_t n = ptags_set_count(s), k = 0;
        char **names = calloc(n + 1, sizeof(*names));
        size_t *lens = calloc(n + 1, sizeof(*lens));
        CHECK(names != NULL && lens != NULL);
        for (size_t i = 0; i < n; i++) {
                const ptags_entry *e = ptags_set_at(s, i);
                if (!ptags_pattern_match(cmd->arg, cmd->arg_len, e->name, e->name_len))
                        continue;
                names[k] = strdup(e->name);
                CHECK(names[k] != NULL);
                lens[k++] = e->name_len;
        }
        for (size_t i = 0; i < k; i++) {
                ptags_cmd exact = *cmd;
                exact.arg = names[i];
                exact.arg_len = lens[i];
                exact.global = false;
                ptags_result r = ptags_cmd_apply(s, &exact, w);
                CHECK(r == PTAGS_OK || r == PTAGS_E_NOT_PERMITTED);
                free(names[i]);
        }
        free(names);
        free(lens);
}

/* The kernel write again with every wildcard line swept by hand: the
 * in-place sweep must read a self-writer's rights live at each match. */
static void check_kernel_by_hand(const ptags_set *current, const char *batch, size_t len,
                                 const ptags_writer *w, const ptags_set *kernel, ptags_result kr,
                                 size_t consumed)
{
        size_t cut = len < PTAGS_WRITE_MAX ? len : PTAGS_WRITE_MAX, off = 0;
        ptags_set *s = ptags_set_copy(current);
        ptags_result r = PTAGS_OK;
        CHECK(s != NULL);
        while (off < cut) {
                const char *line = batch + off;
                const char *nl = memchr(line, '\n', cut - off);
                ptags_cmd cmd;
                if (nl == NULL) {
                        r = PTAGS_E_INVALID_COMMAND;
                        break;
                }
                r = ptags_cmd_parse_kernel(line, (size_t)(nl - line), &cmd);
                /* cmd is only written when the line parses. */
                bool sweep = r == PTAGS_OK && cmd.global &&
                             (cmd.kind == PTAGS_CMD_SUB || cmd.kind == PTAGS_CMD_SUB_KEEP ||
                              cmd.kind == PTAGS_CMD_ADD_KEEP);
                if (sweep)
                        sweep_by_hand(s, &cmd, w);
                else if (r == PTAGS_OK)
                        r = ptags_cmd_apply(s, &cmd, w);
                if (r != PTAGS_OK)
                        break;
                off = (size_t)(nl - batch) + 1;
        }
        CHECK(r == kr && off == consumed && ptags_set_equal(s, kernel));
        ptags_set_free(s);
}

/* ptags_plan_rights says of every change what ptags_plan_check_rights
 * says of the first refused one: they walk the same live rights. */
static void check_granted(const ptags_plan *p, const ptags_writer *w, ptags_result rr,
                          size_t refused)
{
        size_t n = ptags_plan_change_count(p);
        bool *granted = malloc(n + 1);
        CHECK(granted != NULL);
        CHECK(ptags_plan_rights(p, w, granted) == PTAGS_OK);
        size_t first = n;
        for (size_t i = 0; i < n && first == n; i++)
                if (!granted[i])
                        first = i;
        CHECK(rr == (first == n ? PTAGS_OK : PTAGS_E_NOT_PERMITTED));
        CHECK(first == n || refused == first);
        free(granted);
}

/* The one place the modes differ on rights: the kernel refuses a '!' that
 * sets the value the tag already holds to a writer without the set right;
 * an atomic batch drops it as a no-op. True when the kernel stopped there. */
static bool free_in_atomic_only(const ptags_set *kernel, const char *batch, size_t len,
                                size_t consumed, ptags_result kr)
{
        if (kr != PTAGS_E_NOT_PERMITTED || consumed >= len || batch[consumed] != '!')
                return false;
        const char *line = batch + consumed;
        const char *nl = memchr(line, '\n', len - consumed);
        ptags_cmd cmd;
        if (nl == NULL || ptags_cmd_parse(line, (size_t)(nl - line), &cmd) != PTAGS_OK)
                return false;
        const ptags_entry *e = ptags_set_find(kernel, cmd.arg, cmd.arg_len);
        return e != NULL && e->value_len == cmd.value_len &&
               memcmp(e->value, cmd.value, cmd.value_len) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *in = (const char *)data;
        const char *sep = memchr(in, '\0', size);
        const char *cur_text = sep ? in : "";
        size_t cur_len = sep ? (size_t)(sep - in) : 0;
        const char *batch = sep ? sep + 1 : in;
        size_t batch_len = sep ? size - cur_len - 1 : size;
        const char *wsep = memchr(batch, '\0', batch_len);
        const char *w_text = NULL;
        size_t w_len = 0;
        if (wsep) {
                w_text = wsep + 1;
                w_len = batch_len - (size_t)(wsep - batch) - 1;
                batch_len = (size_t)(wsep - batch);
        }

        CHECK(ptags_utf8_valid(in, size) == reference_utf8_valid(data, size));

        bool parsed;
        ptags_set *current = build_set(cur_text, cur_len, &parsed);
        check_set(current);
        check_round_trip(current);

        ptags_writer writer = {0}, *w = NULL;
        ptags_set *w_tags = NULL;
        if (w_text) {
                bool ignored;
                char mode = w_len > 0 ? w_text[0] : '-';
                w_tags = build_set(w_len ? w_text + 1 : "", w_len ? w_len - 1 : 0, &ignored);
                writer.self = mode == 'S' || mode == 'O';
                /* For the plan functions a self writer starts from the tags
                 * the plan is built from. */
                writer.tags = writer.self ? current : w_tags;
                w = &writer;
        }

        if (w != NULL) {
                check_rights_against_reference(w, current);
                check_rights_against_reference(w, w_tags);
        }

        /* Kernel mode. */
        ptags_set *kernel;
        ptags_result kr;
        size_t consumed;
        check_kernel_mode(current, batch, batch_len, w, &kernel, &kr, &consumed);
        check_kernel_by_hand(current, batch, batch_len, w, kernel, kr, consumed);
        check_round_trip(kernel);

        /* Atomic mode, and the plan it is made of. */
        const char **lines;
        size_t *lens;
        size_t n = split_lines(batch, batch_len, &lines, &lens);
        ptags_set *atomic = ptags_set_copy(current);
        CHECK(atomic != NULL);
        size_t failed = SIZE_MAX;
        ptags_result ar = ptags_apply_atomic(atomic, lines, lens, n, w, &failed);
        check_set(atomic);
        if (ar != PTAGS_OK)
                CHECK(failed < n && ptags_set_equal(atomic, current));

        ptags_plan *plan = NULL;
        size_t plan_failed = SIZE_MAX;
        ptags_result pr = ptags_plan_build(current, lines, lens, n, &plan, &plan_failed);
        if (pr != PTAGS_OK) {
                CHECK(ar == pr && failed == plan_failed);
        } else {
                size_t refused = SIZE_MAX;
                ptags_result rr = ptags_plan_check_rights(plan, w, &refused);
                check_granted(plan, w, rr, refused);
                if (rr != PTAGS_OK) {
                        CHECK(rr == PTAGS_E_NOT_PERMITTED && ar == rr);
                        CHECK(failed == ptags_plan_change_at(plan, refused)->line);
                } else {
                        CHECK(ar == PTAGS_OK && ptags_set_equal(atomic, ptags_plan_result(plan)));
                }
                check_set(ptags_plan_result(plan));
                char *line = malloc(PTAGS_MAX_LINE_LEN);
                CHECK(line != NULL);
                check_plan_lines(current, plan, n, line);
                free(line);
        }

        /* The modes agree wherever the kernel sees the whole batch. */
        bool whole =
                batch_len <= PTAGS_WRITE_MAX && (batch_len == 0 || batch[batch_len - 1] == '\n');
        if (whole && ar == PTAGS_OK && !free_in_atomic_only(kernel, batch, batch_len, consumed, kr))
                CHECK(kr == PTAGS_OK && ptags_set_equal(kernel, atomic));
        /* But for the atomic mode's own bounds (PTAGS_PLAN_MAX_CHANGES,
         * PTAGS_PLAN_MAX_LOOKS): a few keep sweeps over 4000 tags pass in the
         * kernel's mode. */
        if (whole && w == NULL && ar != PTAGS_E_BATCH_TOO_LARGE && ar != PTAGS_E_BATCH_TOO_BROAD) {
                CHECK(kr == ar);
                if (kr != PTAGS_OK) {
                        size_t line_no = 0;
                        for (size_t i = 0; i < consumed; i++)
                                line_no += batch[i] == '\n';
                        CHECK(failed == line_no);
                }
        }

        /* exec keeps exactly the kept tags. */
        size_t kept = 0;
        for (size_t i = 0; i < ptags_set_count(kernel); i++)
                kept += ptags_set_at(kernel, i)->keep;
        ptags_set_exec_filter(kernel);
        check_set(kernel);
        CHECK(ptags_set_count(kernel) == kept);

        /* A container ID that parses prints back to the same number. */
        uint64_t id;
        if (ptags_contid_parse(batch, batch_len, &id)) {
                char buf[32];
                uint64_t back;
                size_t len = ptags_contid_format_chain(&id, 1, buf, sizeof(buf));
                CHECK(len < sizeof(buf) && ptags_contid_parse(buf, len, &back) && back == id);
        }

        ptags_plan_free(plan);
        free(lines);
        free(lens);
        ptags_set_free(atomic);
        ptags_set_free(kernel);
        ptags_set_free(w_tags);
        ptags_set_free(current);
        return 0;
}
