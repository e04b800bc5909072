// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-model.h: the one home of every rule in ptags(7) (tag grammar, tag
 * lists, the command language, the exec filter, the rights model and the
 * audit container-ID decision). Plain C11 + libc: no I/O, no GLib.
 *
 * Conventions for the whole API:
 * - Every string is (pointer, explicit length); nothing relies on NUL
 *   termination on input. Strings handed out by the library are also
 *   NUL-terminated for convenience.
 * - Functions that can fail return a ptags_result; PTAGS_OK is 0. Allocation
 *   failure is reported as PTAGS_E_NOMEM, never hidden and never abort().
 * - Ownership is stated per function: "(transfer full)" means the caller
 *   frees it with the named function; "(transfer none)" means borrowed, valid
 *   until the owning object is modified or freed.
 * - Since: 0.1 for everything in this file unless said otherwise.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ limits */

#define PTAGS_MAX_TAGS      4000u      /* tags per process */
#define PTAGS_MAX_TAG_LEN   4000u      /* bytes in a tag name */
#define PTAGS_MAX_VALUE_LEN 32700u     /* bytes in a value */
#define PTAGS_WRITE_MAX     4096u      /* a kernel write is cut to one page */
#define PTAGS_CONTID_UNSET  UINT64_MAX /* audit container ID "unset" */

/* ----------------------------------------------------------------- results */

/* Every outcome the model can produce. Each maps to one kernel errno
 * (ptags_result_errno) and to one D-Bus error name suffix
 * (ptags_result_name), so callers never invent their own mapping. */
typedef enum {
        PTAGS_OK = 0,
        PTAGS_E_INVALID_TAG,     /* EINVAL: bad tag (grammar, length, UTF-8) */
        PTAGS_E_INVALID_VALUE,   /* EINVAL: bad value */
        PTAGS_E_INVALID_PATTERN, /* EINVAL: bad pattern, or pattern where a tag is required */
        PTAGS_E_INVALID_COMMAND, /* EINVAL: unknown command, missing final newline, bare '+' */
        PTAGS_E_NOT_PERMITTED,   /* EPERM: the writer lacks the right */
        PTAGS_E_NO_SUCH_TAG,     /* ENOENT: '!' on a missing tag, or a '?' without match */
        PTAGS_E_TOO_MANY_TAGS,   /* ECANCELED: the 4001st tag */
        PTAGS_E_NOMEM,           /* ENOMEM */
        PTAGS_E_BATCH_TOO_LARGE, /* E2BIG: an atomic batch resolving to more than
                                  * PTAGS_PLAN_MAX_CHANGES changes or
                                  * PTAGS_PLAN_MAX_BYTES bytes of change data */
        PTAGS_E_BATCH_TOO_BROAD, /* E2BIG: an atomic batch whose patterns look at more
                                  * than PTAGS_PLAN_MAX_LOOKS tags */
} ptags_result;

/* The kernel errno (positive) for @r; 0 for PTAGS_OK. */
int ptags_result_errno(ptags_result r);
/* The D-Bus error name suffix for @r ("InvalidTag", "NotAuthorized", ...;
 * "Failed" for NOMEM, NULL for PTAGS_OK). (transfer none, static) */
const char *ptags_result_name(ptags_result r);
/* A short English description of @r. (transfer none, static) */
const char *ptags_result_message(ptags_result r);

/* ----------------------------------------------------------------- grammar */

/* True when s[0..len) is valid UTF-8: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence. */
bool ptags_utf8_valid(const char *s, size_t len);

/* A tag: 1..4000 bytes, no byte < 0x20, no 0x7F, no '=', no '*', not
 * starting with '@', not ending with ':', valid UTF-8; a tag starting with
 * "ptags:" must end with field add, sub, set or others. */
ptags_result ptags_tag_validate(const char *tag, size_t len);
/* True when @tag (assumed valid) starts with "ptags:". */
bool ptags_tag_is_rights(const char *tag, size_t len);
/* A value: 0..32700 bytes, no byte < 0x20, no 0x7F, valid UTF-8. */
ptags_result ptags_value_validate(const char *value, size_t len);
/* A pattern: an exact tag, "PREFIX:*" (PREFIX:x a valid tag prefix, the '*'
 * last and alone), or, only when @allow_empty, the empty pattern (all tags).
 * Without a '*' the pattern is an exact tag and fails as one (INVALID_TAG);
 * with one, any fault is INVALID_PATTERN, as is a disallowed empty pattern.
 * "PREFIX:" follows the tag byte rules but not the rights-tag field rule,
 * so "ptags:*" (every rights tag) is valid. As in the kernel, the length
 * limit is on PREFIX: at most PTAGS_MAX_TAG_LEN bytes before ":*" (so a
 * valid pattern may be 4002 bytes long and match no tag). */
ptags_result ptags_pattern_validate(const char *pat, size_t len, bool allow_empty);
/* True when the pattern is "PREFIX:*" or empty, i.e. may match many tags. */
bool ptags_pattern_is_global(const char *pat, size_t len);
/* Byte-wise match of a validated pattern against a tag. */
bool ptags_pattern_match(const char *pat, size_t pat_len, const char *tag, size_t tag_len);

/* ---------------------------------------------------------------- tag sets */

/* One tag as held in a set. Borrowed from the set: (transfer none). */
typedef struct {
        const char *name; /* NUL-terminated too */
        size_t name_len;
        const char *value; /* "" when no value; NUL-terminated too */
        size_t value_len;
        bool keep;
} ptags_entry;

/* A process's tag list: sorted byte-wise by name, unique names, at most
 * PTAGS_MAX_TAGS entries. Opaque. */
typedef struct ptags_set ptags_set;

/* A new empty set, or NULL when out of memory. (transfer full: ptags_set_free) */
ptags_set *ptags_set_new(void);
/* A deep copy, or NULL when out of memory. (transfer full) */
ptags_set *ptags_set_copy(const ptags_set *s);
/* Frees @s; NULL is allowed. */
void ptags_set_free(ptags_set *s);
size_t ptags_set_count(const ptags_set *s);
/* The @i-th entry in byte-wise order; NULL when i >= count. (transfer none) */
const ptags_entry *ptags_set_at(const ptags_set *s, size_t i);
/* The entry named exactly @name, or NULL; a binary search, O(log n).
 * (transfer none) */
const ptags_entry *ptags_set_find(const ptags_set *s, const char *name, size_t len);
/* True when both hold the same names, values and keep flags. */
bool ptags_set_equal(const ptags_set *a, const ptags_set *b);
/* True when any (kept, if @kept_only) tag matches the validated pattern. */
bool ptags_set_matches(const ptags_set *s, const char *pat, size_t len, bool kept_only);

/* Parse the kernel's read format: zero or more lines "[@]TAG[=VALUE]\n".
 * Rejects bad tags/values, duplicates, unsorted input, a missing final
 * newline and more than PTAGS_MAX_TAGS lines. On error *out is untouched and
 * *err_offset (may be NULL) gets the byte offset of the bad line. Errors:
 * INVALID_TAG (bad tag, duplicate or out of order), INVALID_VALUE (bad value,
 * or "TAG=" which the kernel never prints), INVALID_COMMAND (no final
 * newline), TOO_MANY_TAGS. Whatever parses prints back byte for byte.
 * (transfer full: *out) */
ptags_result ptags_set_parse(const char *buf, size_t len, ptags_set **out, size_t *err_offset);
/* Print in the kernel's read format. Returns a malloc'd NUL-terminated
 * buffer and its length in *len (may be NULL), or NULL when out of memory.
 * An empty set gives "" (not NULL). (transfer full: free()) */
char *ptags_set_format(const ptags_set *s, size_t *len);

/* The exec filter: drop every tag without the keep flag; kept tags keep
 * their values and stay kept. Cannot fail. */
void ptags_set_exec_filter(ptags_set *s);

/* ------------------------------------------------------------- the rights */

typedef enum {
        PTAGS_ACTION_ADD = 0, /* +TAG, +@... (set keep) */
        PTAGS_ACTION_SUB = 1, /* -..., -@... (clear keep) */
        PTAGS_ACTION_SET = 2, /* !... */
} ptags_action;

/* "add", "sub" or "set". (transfer none, static) */
const char *ptags_action_name(ptags_action a);

/* Who is writing. A writer changing its own tags (@self) is checked, as in
 * the kernel, against its tags as they are at each moment: every line, and
 * every match of a wildcard line, sees what the ones before it did
 * ("+ptags:add" then "+x" succeeds for a writer holding ptags:ptags:add).
 * So for @self, ptags_cmd_apply, ptags_apply_kernel and ptags_apply_atomic
 * read the rights from the target itself and ignore @tags;
 * ptags_rights_allow reads @tags as given; ptags_plan_check_rights and
 * ptags_plan_rights take @tags as the writer's tags before the batch (the
 * target's) and follow the batch's changes to its rights tags. */
typedef struct {
        const ptags_set *tags; /* may be NULL when unrestricted; NULL grants nothing */
        bool unrestricted;     /* kernel thread or CAP_MAC_ADMIN */
        bool self;             /* the writer is the target process */
} ptags_writer;

/* May @w do @action on @tag (a valid tag) of the target, given w->tags as
 * they are now? Rules 1-3 of ptags(7)'s rights model: ptags:A / ptags:P:A
 * (P = tag or a ':'-field prefix of it), ptags:ptags:A for rights tags, and
 * for another process also ptags:others / ptags:P:others. Free no-ops are
 * decided by the caller. */
bool ptags_rights_allow(const ptags_writer *w, ptags_action action, const char *tag, size_t len);

/* --------------------------------------------------------------- commands */

typedef enum {
        PTAGS_CMD_NOP,        /* empty line or '#...' */
        PTAGS_CMD_ADD,        /* +TAG */
        PTAGS_CMD_ADD_KEEP,   /* +@TAG (tag) or +@PATTERN / +@ (global) */
        PTAGS_CMD_SUB,        /* -TAG, -PATTERN, - */
        PTAGS_CMD_SUB_KEEP,   /* -@TAG, -@PATTERN, -@ */
        PTAGS_CMD_SET,        /* !TAG=VALUE, !TAG=, !TAG */
        PTAGS_CMD_QUERY,      /* ?PATTERN (empty: any tag) */
        PTAGS_CMD_QUERY_KEEP, /* ?@PATTERN */
} ptags_cmd_kind;

/* One parsed command line. Pointers borrow from the parsed line. */
typedef struct {
        ptags_cmd_kind kind;
        const char *arg; /* tag or pattern, after the command characters */
        size_t arg_len;
        bool global;       /* arg is "PREFIX:*" or empty */
        const char *value; /* PTAGS_CMD_SET only: after the first '=' ("" clears) */
        size_t value_len;
} ptags_cmd;

/* Parse one line WITHOUT its trailing '\n' (a '\n' inside, even in a '#'
 * comment, is INVALID_COMMAND; so is a comment that is not valid UTF-8).
 * Validates tag, pattern and value per command: the strict form, for
 * checking lines before anything runs. Decisions beyond ptags(7)'s table of
 * command lines:
 * - the first byte must be '+', '-', '!', '?' or '#' (or the line empty),
 *   else INVALID_COMMAND; '@' right after '+', '-' or '?' selects the keep
 *   form ("!@x" is the tag "@x", hence INVALID_TAG);
 * - where a single tag is required (+TAG, the TAG of !TAG=VALUE): an empty
 *   tag is INVALID_COMMAND (bare '+', "!", "!=v"), any '*' in it is
 *   INVALID_PATTERN ("+app:*"), other grammar errors INVALID_TAG;
 * - where a pattern is allowed (+@ - -@ ? ?@): empty means every (kept)
 *   tag; without '*' the pattern is an exact tag (errors: INVALID_TAG);
 *   with '*' it must be "PREFIX:*" (errors: INVALID_PATTERN);
 * - +@TAG (exact) adds TAG if missing and sets keep; +@PREFIX:* and bare
 *   "+@" only set keep on existing matches;
 * - a bad value is INVALID_VALUE; "!TAG=" and "!TAG" both clear. */
ptags_result ptags_cmd_parse(const char *line, size_t len, ptags_cmd *out);
/* ptags_cmd_parse as the kernel parses a line: the value of '!' is not
 * checked here but when the line runs, after the tag's syntax, the set
 * right and the tag's existence (ptags(7): "!TAG=VALUE" fails EINVAL on
 * the tag, EPERM, ENOENT, then EINVAL on the value). Since: 0.1 */
ptags_result ptags_cmd_parse_kernel(const char *line, size_t len, ptags_cmd *out);

/* Apply one parsed command to @target as the kernel does, checking rights
 * against @w (NULL = unrestricted; a self writer's rights are @target's
 * tags, read live). No-ops succeed without rights; global forms act where
 * allowed and silently skip the rest, each match checked against the
 * rights as the earlier matches left them; a new tag beyond PTAGS_MAX_TAGS
 * fails with TOO_MANY_TAGS before permissions. On failure @target is
 * unchanged. Free no-ops: re-adding a present tag, +@ on a kept tag,
 * removing an absent tag, -@ on a tag without keep (or absent). '!' is
 * never free: it checks the set right (NOT_PERMITTED), then that the tag
 * exists (NO_SUCH_TAG), then the value (INVALID_VALUE), and setting the
 * value a tag already holds needs the right too. An exact tag the writer
 * may not change is NOT_PERMITTED. */
ptags_result ptags_cmd_apply(ptags_set *target, const ptags_cmd *cmd, const ptags_writer *w);

/* The kernel's write(2) on /proc/PID/attr/ptags: @buf is cut to
 * PTAGS_WRITE_MAX bytes; lines run in order and stop at the first failure,
 * whose effects are not applied (earlier lines stay applied). Every line,
 * the last too, must end with '\n' (a line cut by the one-page limit fails
 * as INVALID_COMMAND). Lines parse as ptags_cmd_parse_kernel. *consumed
 * gets the byte count of the lines that succeeded (the failing line's byte
 * offset): write(2) returns it, or -ptags_result_errno() when it is 0 and a
 * line failed. Returns PTAGS_OK when every line succeeded. A process
 * writing its own tags (w->self) is checked against them live, line by
 * line and match by match, as the kernel does. */
ptags_result ptags_apply_kernel(ptags_set *target, const char *buf, size_t len,
                                const ptags_writer *w, size_t *consumed);

/* ------------------------------------------------------- atomic batches */

/* One effective change of a plan: exactly one tag, never a no-op. Unlike
 * the kernel, an atomic batch counts a '!' that sets the value a tag
 * already has as a no-op too (no change, so nothing to authorize). */
typedef enum {
        PTAGS_CHANGE_ADD,        /* "+TAG": new tag, no keep */
        PTAGS_CHANGE_ADD_KEPT,   /* "+@TAG": new tag with keep */
        PTAGS_CHANGE_SET_KEEP,   /* "+@TAG": existing tag gains keep */
        PTAGS_CHANGE_REMOVE,     /* "-TAG" */
        PTAGS_CHANGE_CLEAR_KEEP, /* "-@TAG" */
        PTAGS_CHANGE_SET_VALUE,  /* "!TAG=VALUE" (value_len > 0) */
        PTAGS_CHANGE_CLEAR_VALUE /* "!TAG" */
} ptags_change_kind;

typedef struct {
        ptags_change_kind kind;
        ptags_action action; /* the right it needs */
        size_t line;         /* index of the input line it came from */
        const char *tag;     /* NUL-terminated, owned by the plan */
        size_t tag_len;
        const char *value; /* SET_VALUE: the new value; else "" */
        size_t value_len;
        /* The value a removal or a value change replaces (what undo
         * restores); "" if none, and in a plan "" for the other kinds. */
        const char *old_value;
        size_t old_value_len;
        bool old_keep; /* the keep flag before the change (undo) */
} ptags_change;

/* The resolved form of an atomic batch against one current set: the list of
 * effective changes (patterns expanded, no-ops dropped, queries checked in
 * order against the evolving set) and the resulting set. Opaque. */
typedef struct ptags_plan ptags_plan;

/* Changes are recorded in order, one per affected tag, so a tag added and
 * then removed in one batch gives two changes; '?' lines see the evolving
 * copy and a failing one is NO_SUCH_TAG at its line. Global forms expand to
 * every match (ptags_plan_check_rights then needs a right for each; unlike
 * the kernel, an atomic batch never skips silently).
 * Build a plan from @n lines (each WITHOUT '\n'; @lens may be NULL for
 * NUL-terminated lines) against @current. Rights are NOT checked (the
 * daemon authorizes each change); every other rule is (grammar, ENOENT,
 * query preconditions, 4000 tags), each line in the kernel's order for an
 * unrestricted writer (lines parse as ptags_cmd_parse_kernel). On failure
 * returns the error, sets *failed_line (may be NULL) to the index of the
 * failing line and leaves *out untouched. (transfer full: ptags_plan_free)
 * A plan is bounded whatever the target holds: global lines expand to one
 * change per match, so a short batch of keep flips over a full set would
 * otherwise copy gigabytes before anyone is authorized. Past
 * PTAGS_PLAN_MAX_CHANGES changes (four sweeps of a full set) or
 * PTAGS_PLAN_MAX_BYTES of copied tags and values (a full remove of the
 * largest set still fits) it fails with BATCH_TOO_LARGE at the line that
 * crossed the bound. Since: 0.1 */
#define PTAGS_PLAN_MAX_CHANGES (4u * PTAGS_MAX_TAGS)
#define PTAGS_PLAN_MAX_BYTES   (192u * 1024u * 1024u)
/* Each pattern line looks at the tags its pattern can match (a binary
 * search finds them), whether they change or not; past this many looks a
 * plan fails with BATCH_TOO_BROAD at the line that crossed the bound, so
 * that 4096 lines sweeping a full set cannot cost anyone seconds of work
 * before they are authorized. Sixty-four sweeps of a full set fit. */
#define PTAGS_PLAN_MAX_LOOKS (64u * PTAGS_MAX_TAGS)
ptags_result ptags_plan_build(const ptags_set *current, const char *const *lines,
                              const size_t *lens, size_t n, ptags_plan **out, size_t *failed_line);
/* ptags_plan_build, failing with BATCH_TOO_LARGE once the plan would hold
 * more than @max_changes changes (at most PTAGS_PLAN_MAX_CHANGES): a caller
 * that will refuse such a plan anyway stops copying it there. Since: 0.1 */
ptags_result ptags_plan_build_bounded(const ptags_set *current, const char *const *lines,
                                      const size_t *lens, size_t n, size_t max_changes,
                                      ptags_plan **out, size_t *failed_line);
void ptags_plan_free(ptags_plan *p);
/* A plan of only the changes of @p whose entry in @keep is true, built
 * again against @current (the set @p was built from, or one differing only
 * in tags no kept change touches), each change keeping its input line.
 * Fails with the error of a kept change that no longer applies as it did
 * (INVALID_COMMAND when it applies differently), leaving *out untouched.
 * (transfer full: ptags_plan_free) Since: 0.1 */
ptags_result ptags_plan_restrict(const ptags_plan *p, const ptags_set *current, const bool *keep,
                                 ptags_plan **out);
size_t ptags_plan_change_count(const ptags_plan *p);
/* (transfer none) */
const ptags_change *ptags_plan_change_at(const ptags_plan *p, size_t i);
/* The set after every change. (transfer none) */
const ptags_set *ptags_plan_result(const ptags_plan *p);
/* Check every change, in order, against @w (NULL = unrestricted) as the
 * kernel would for the same lines: for a self writer, w->tags are its tags
 * before the batch (those the plan was built from) and each change sees the
 * rights tags added and removed by the changes before it. On the first
 * refused change returns NOT_PERMITTED and sets *refused (may be NULL) to
 * its index; NOMEM when out of memory. */
ptags_result ptags_plan_check_rights(const ptags_plan *p, const ptags_writer *w, size_t *refused);
/* The same decision for every change, without stopping: @granted (an array
 * of ptags_plan_change_count(p) entries) gets for each change whether @w's
 * own rights allow it at that point of the batch, assuming every change
 * before it is made (the batch is all or nothing). The daemon's
 * "caller-holds-right". On NOMEM every entry is false. Since: 0.1 */
ptags_result ptags_plan_rights(const ptags_plan *p, const ptags_writer *w, bool *granted);

/* The normalized kernel line of change @c, WITHOUT '\n' ("+@app:x",
 * "!app:x=v", ...), or of its inverse (undo) when @inverse. Writes at most
 * @size bytes including a NUL; returns the length it needs (like
 * snprintf), so a buffer of PTAGS_MAX_LINE_LEN always suffices. */
#define PTAGS_MAX_LINE_LEN (2u + PTAGS_MAX_TAG_LEN + 1u + PTAGS_MAX_VALUE_LEN + 1u)
size_t ptags_change_format(const ptags_change *c, bool inverse, char *buf, size_t size);

/* How many kernel lines undo @c: 2 for a REMOVE of a tag that had a value
 * ("+@TAG" or "+TAG" restores the tag and its keep flag, then "!TAG=OLD"),
 * 1 otherwise. To undo a whole plan, run the undo lines of its changes from
 * the last change to the first, each change's lines in index order.
 * ptags_change_format(c, true, ...) is the same as undo line 0.
 * Since: 0.1 (added with the atomic batches). */
size_t ptags_change_undo_count(const ptags_change *c);
/* The @index-th undo line of @c (0 <= index < ptags_change_undo_count),
 * formatted like ptags_change_format; returns 0 (and writes "" when @size
 * allows) for an index past the last line. */
size_t ptags_change_format_undo(const ptags_change *c, size_t index, char *buf, size_t size);

/* Atomic mode in one call: all lines succeed (rights checked against @w,
 * NULL = unrestricted, as ptags_plan_check_rights does; a self writer's
 * rights start from @target) and @target becomes the result, or nothing
 * changes and *failed_line names the failing line. */
ptags_result ptags_apply_atomic(ptags_set *target, const char *const *lines, const size_t *lens,
                                size_t n, const ptags_writer *w, size_t *failed_line);

/* ------------------------------------------------ audit container IDs */

/* Parse what a writer wrote to /proc/PID/audit_containerid: a decimal u64
 * (leading zeros allowed), optionally followed by one '\n'. No sign, no
 * spaces, no overflow; *out is only written on success.
 * PTAGS_CONTID_UNSET itself parses (the decision refuses it). */
bool ptags_contid_parse(const char *buf, size_t len, uint64_t *out);

/* The facts the kernel looks at when a writer registers a container ID. */
typedef struct {
        bool target_exists;
        bool value_ok;                 /* complete write that parsed */
        uint64_t requested;            /* the ID asked for */
        bool writer_cap_audit_control; /* CAP_AUDIT_CONTROL in the init user ns */
        bool target_has_children;
        unsigned target_threads; /* number of threads of the target */
        bool target_is_writer;
        bool target_is_descendant;      /* of the writer */
        bool writer_is_root_exempt;     /* D-Bus: caller uid 0 skips the descendant rule */
        uint64_t target_current;        /* PTAGS_CONTID_UNSET when none */
        uint64_t writer_current;        /* the writer's own ID; nesting = equal to target's */
        bool requested_in_use;          /* some live container already has @requested */
        bool requested_owned_by_writer; /* ...and this writer registered it */
} ptags_contid_facts;

/* The kernel's errno (0 = allowed) for the facts, rules checked in the
 * kernel's order, so the first failing rule decides:
 *   ESRCH    !target_exists
 *   EINVAL   !value_ok, or requested == PTAGS_CONTID_UNSET
 *   EPERM    !writer_cap_audit_control
 *   EBUSY    target_has_children, or target_threads > 1
 *   EXDEV    target_is_writer, or !target_is_descendant (unless
 *            writer_is_root_exempt; the self rule has no exemption)
 *   EEXIST   target_current != UNSET and not nesting, where nesting means
 *            writer_current == target_current (the writer runs inside the
 *            target's container)
 *   ENOTUNIQ requested_in_use && !requested_owned_by_writer
 * *nesting (may be NULL) is set true only when the result is 0 and the
 * registration nests inside the target's current container. */
int ptags_contid_decide(const ptags_contid_facts *f, bool *nesting);

/* Format an ID chain, newest first: "5,^3,^1" for ids {5,3,1}. Returns the
 * length needed (like snprintf). */
size_t ptags_contid_format_chain(const uint64_t *ids, size_t n, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
