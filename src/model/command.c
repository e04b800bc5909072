// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* command.c: the kernel's command language (parse one line, run it on a
 * tag set) and the kernel's non-atomic write(2) of a batch of lines. */
#include <stdlib.h>
#include <string.h>

#include "model-private.h"

/* Where a single tag is required: empty is a bare command, a '*' means a
 * pattern was given where it is not allowed. */
static ptags_result check_tag_arg(const char *arg, size_t len)
{
        if (len == 0)
                return PTAGS_E_INVALID_COMMAND;
        if (memchr(arg, '*', len) != NULL)
                return PTAGS_E_INVALID_PATTERN;
        return ptags_tag_validate(arg, len);
}

/* @check_value: validate the value of '!' now (strict parse) or leave it
 * to run_set, which checks it last as the kernel does. */
static ptags_result cmd_parse(const char *line, size_t len, bool check_value, ptags_cmd *out)
{
        ptags_cmd c = {.kind = PTAGS_CMD_NOP, .arg = "", .value = ""};
        bool at = len > 1 && line[1] == '@';
        ptags_result r;

        if (len > 0 && memchr(line, '\n', len) != NULL)
                return PTAGS_E_INVALID_COMMAND;
        if (len == 0 || line[0] == '#') {
                /* The kernel checks a comment's UTF-8 like any line's;
                 * its other bytes are not looked at. */
                if (!ptags_utf8_valid(line, len))
                        return PTAGS_E_INVALID_COMMAND;
                *out = c;
                return PTAGS_OK;
        }
        switch (line[0]) {
        case '+':
                c.kind = at ? PTAGS_CMD_ADD_KEEP : PTAGS_CMD_ADD;
                break;
        case '-':
                c.kind = at ? PTAGS_CMD_SUB_KEEP : PTAGS_CMD_SUB;
                break;
        case '?':
                c.kind = at ? PTAGS_CMD_QUERY_KEEP : PTAGS_CMD_QUERY;
                break;
        case '!':
                c.kind = PTAGS_CMD_SET;
                at = false; /* "!@x" is a (bad) tag, not a keep form */
                break;
        default:
                return PTAGS_E_INVALID_COMMAND;
        }
        c.arg = line + 1 + at;
        c.arg_len = len - 1 - at;

        if (c.kind == PTAGS_CMD_SET) {
                const char *eq = memchr(c.arg, '=', c.arg_len);
                if (eq != NULL) {
                        c.value = eq + 1;
                        c.value_len = c.arg_len - (size_t)(eq - c.arg) - 1;
                        c.arg_len = (size_t)(eq - c.arg);
                }
                r = check_tag_arg(c.arg, c.arg_len);
                if (r == PTAGS_OK && check_value)
                        r = ptags_value_validate(c.value, c.value_len);
        } else if (c.kind == PTAGS_CMD_ADD) {
                r = check_tag_arg(c.arg, c.arg_len);
        } else {
                r = ptags_pattern_validate(c.arg, c.arg_len, true);
                c.global = ptags_pattern_is_global(c.arg, c.arg_len);
        }
        if (r != PTAGS_OK)
                return r;
        *out = c;
        return PTAGS_OK;
}

ptags_result ptags_cmd_parse(const char *line, size_t len, ptags_cmd *out)
{
        return cmd_parse(line, len, true, out);
}

ptags_result ptags_cmd_parse_kernel(const char *line, size_t len, ptags_cmd *out)
{
        return cmd_parse(line, len, false, out);
}

static bool allowed(const ptags_writer *w, ptags_action a, const char *tag, size_t len)
{
        return w == NULL || ptags_rights_allow(w, a, tag, len);
}

/* Report a change about to be made to entry @e (NULL for a new tag). */
static ptags_result emit(ptags_change_sink sink, void *ctx, ptags_change_kind kind,
                         ptags_action action, const char *tag, size_t tag_len, const ptags_entry *e,
                         const char *value, size_t value_len)
{
        if (sink == NULL)
                return PTAGS_OK;
        ptags_change c = {.kind = kind,
                          .action = action,
                          .tag = tag,
                          .tag_len = tag_len,
                          .value = value,
                          .value_len = value_len,
                          .old_value = e ? e->value : "",
                          .old_value_len = e ? e->value_len : 0,
                          .old_keep = e ? e->keep : false};
        return sink(&c, ctx);
}

typedef struct {
        const ptags_cmd *cmd;
        const ptags_writer *w;
        ptags_change_sink sink;
        void *sink_ctx;
} sub_ctx;

static ptags_result drop_matching(const ptags_entry *e, void *ctx, bool *drop)
{
        sub_ctx *c = ctx;
        *drop = ptags_pattern_match(c->cmd->arg, c->cmd->arg_len, e->name, e->name_len) &&
                allowed(c->w, PTAGS_ACTION_SUB, e->name, e->name_len);
        if (!*drop)
                return PTAGS_OK;
        return emit(c->sink, c->sink_ctx, PTAGS_CHANGE_REMOVE, PTAGS_ACTION_SUB, e->name,
                    e->name_len, e, "", 0);
}

/* +TAG and +@TAG: no-op when nothing would change, then the tag limit,
 * then the right (the kernel's order). */
static ptags_result run_add_tag(ptags_set *s, const ptags_cmd *cmd, bool keep,
                                const ptags_writer *w, ptags_change_sink sink, void *ctx)
{
        size_t i;
        ptags_result r;

        if (ptags_set_lookup(s, cmd->arg, cmd->arg_len, &i)) {
                const ptags_entry *e = ptags_set_at(s, i);
                if (!keep || e->keep)
                        return PTAGS_OK;
                if (!allowed(w, PTAGS_ACTION_ADD, cmd->arg, cmd->arg_len))
                        return PTAGS_E_NOT_PERMITTED;
                r = emit(sink, ctx, PTAGS_CHANGE_SET_KEEP, PTAGS_ACTION_ADD, e->name, e->name_len,
                         e, "", 0);
                if (r == PTAGS_OK)
                        ptags_set_set_keep_at(s, i, true);
                return r;
        }
        if (ptags_set_count(s) >= PTAGS_MAX_TAGS)
                return PTAGS_E_TOO_MANY_TAGS;
        if (!allowed(w, PTAGS_ACTION_ADD, cmd->arg, cmd->arg_len))
                return PTAGS_E_NOT_PERMITTED;
        r = emit(sink, ctx, keep ? PTAGS_CHANGE_ADD_KEPT : PTAGS_CHANGE_ADD, PTAGS_ACTION_ADD,
                 cmd->arg, cmd->arg_len, NULL, "", 0);
        if (r != PTAGS_OK)
                return r;
        return ptags_set_insert_at(s, i, cmd->arg, cmd->arg_len, keep);
}

/* +@PATTERN / -@PATTERN (global or exact): change the keep flag of every
 * match whose flag differs. An exact tag the writer may not change fails;
 * global forms skip it. */
static ptags_result run_keep(ptags_set *s, const ptags_cmd *cmd, bool keep, const ptags_writer *w,
                             ptags_change_sink sink, void *ctx)
{
        ptags_action action = keep ? PTAGS_ACTION_ADD : PTAGS_ACTION_SUB;
        ptags_change_kind kind = keep ? PTAGS_CHANGE_SET_KEEP : PTAGS_CHANGE_CLEAR_KEEP;

        size_t first, end;
        ptags_set_pattern_range(s, cmd->arg, cmd->arg_len, &first, &end);
        for (size_t i = first; i < end; i++) {
                const ptags_entry *e = ptags_set_at(s, i);
                if (e->keep == keep ||
                    !ptags_pattern_match(cmd->arg, cmd->arg_len, e->name, e->name_len))
                        continue;
                if (!allowed(w, action, e->name, e->name_len)) {
                        if (cmd->global)
                                continue;
                        return PTAGS_E_NOT_PERMITTED;
                }
                ptags_result r = emit(sink, ctx, kind, action, e->name, e->name_len, e, "", 0);
                if (r != PTAGS_OK)
                        return r;
                ptags_set_set_keep_at(s, i, keep);
        }
        return PTAGS_OK;
}

static ptags_result run_sub(ptags_set *s, const ptags_cmd *cmd, const ptags_writer *w,
                            ptags_change_sink sink, void *ctx)
{
        size_t first, end;
        ptags_set_pattern_range(s, cmd->arg, cmd->arg_len, &first, &end);
        if (!cmd->global) {
                if (first == end)
                        return PTAGS_OK;
                if (!allowed(w, PTAGS_ACTION_SUB, cmd->arg, cmd->arg_len))
                        return PTAGS_E_NOT_PERMITTED;
        }
        sub_ctx c = {.cmd = cmd, .w = w, .sink = sink, .sink_ctx = ctx};
        return ptags_set_remove_if_range(s, first, end, drop_matching, &c);
}

/* The kernel's order: the set right (even for a missing tag), existence,
 * the value last. '!' is never free: the identical value needs the right
 * too, it only records no change. */
static ptags_result run_set(ptags_set *s, const ptags_cmd *cmd, const ptags_writer *w,
                            ptags_change_sink sink, void *ctx)
{
        size_t i;
        if (!allowed(w, PTAGS_ACTION_SET, cmd->arg, cmd->arg_len))
                return PTAGS_E_NOT_PERMITTED;
        if (!ptags_set_lookup(s, cmd->arg, cmd->arg_len, &i))
                return PTAGS_E_NO_SUCH_TAG;
        ptags_result r = ptags_value_validate(cmd->value, cmd->value_len);
        if (r != PTAGS_OK)
                return r;
        const ptags_entry *e = ptags_set_at(s, i);
        if (e->value_len == cmd->value_len && memcmp(e->value, cmd->value, cmd->value_len) == 0)
                return PTAGS_OK;
        r = emit(sink, ctx, cmd->value_len ? PTAGS_CHANGE_SET_VALUE : PTAGS_CHANGE_CLEAR_VALUE,
                 PTAGS_ACTION_SET, e->name, e->name_len, e, cmd->value, cmd->value_len);
        if (r != PTAGS_OK)
                return r;
        return ptags_set_set_value_at(s, i, cmd->value, cmd->value_len);
}

ptags_result ptags_cmd_run(ptags_set *target, const ptags_cmd *cmd, const ptags_writer *w,
                           ptags_change_sink sink, void *sink_ctx)
{
        /* A writer changing itself holds exactly the target's tags, and
         * holds them live: each check below reads the set as it is then. */
        ptags_writer live;
        if (w != NULL && w->self && !w->unrestricted) {
                live = *w;
                live.tags = target;
                w = &live;
        }
        switch (cmd->kind) {
        case PTAGS_CMD_NOP:
                return PTAGS_OK;
        case PTAGS_CMD_ADD:
                return run_add_tag(target, cmd, false, w, sink, sink_ctx);
        case PTAGS_CMD_ADD_KEEP:
                if (!cmd->global)
                        return run_add_tag(target, cmd, true, w, sink, sink_ctx);
                return run_keep(target, cmd, true, w, sink, sink_ctx);
        case PTAGS_CMD_SUB:
                return run_sub(target, cmd, w, sink, sink_ctx);
        case PTAGS_CMD_SUB_KEEP:
                return run_keep(target, cmd, false, w, sink, sink_ctx);
        case PTAGS_CMD_SET:
                return run_set(target, cmd, w, sink, sink_ctx);
        case PTAGS_CMD_QUERY:
        case PTAGS_CMD_QUERY_KEEP:
                return ptags_set_matches(target, cmd->arg, cmd->arg_len,
                                         cmd->kind == PTAGS_CMD_QUERY_KEEP)
                               ? PTAGS_OK
                               : PTAGS_E_NO_SUCH_TAG;
        }
        return PTAGS_E_INVALID_COMMAND;
}

ptags_result ptags_cmd_apply(ptags_set *target, const ptags_cmd *cmd, const ptags_writer *w)
{
        return ptags_cmd_run(target, cmd, w, NULL, NULL);
}

ptags_result ptags_apply_kernel(ptags_set *target, const char *buf, size_t len,
                                const ptags_writer *w, size_t *consumed)
{
        ptags_result r = PTAGS_OK;
        size_t off = 0;

        if (len > PTAGS_WRITE_MAX)
                len = PTAGS_WRITE_MAX;
        while (off < len) {
                const char *line = buf + off;
                const char *nl = memchr(line, '\n', len - off);
                ptags_cmd cmd;

                if (nl == NULL) {
                        r = PTAGS_E_INVALID_COMMAND; /* missing final newline */
                        break;
                }
                r = ptags_cmd_parse_kernel(line, (size_t)(nl - line), &cmd);
                if (r == PTAGS_OK)
                        r = ptags_cmd_apply(target, &cmd, w);
                if (r != PTAGS_OK)
                        break;
                off = (size_t)(nl - buf) + 1;
        }
        if (consumed)
                *consumed = off;
        return r;
}
