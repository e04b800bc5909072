// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* rights.c: the kernel permission model (ptags(7), RIGHTS, rules 1-3): which
 * rights tags a writer needs to add, remove or set a tag of a target. */
#include <string.h>

#include "model-private.h"

/* Does the writer hold "ptags:A" (for ordinary tags) or "ptags:P:A" for
 * some P equal to @tag or a ':'-field prefix of it? @right is "add", "sub",
 * "set" or "others". Each P is one O(log n) lookup, no string building. */
static bool holds_right(const ptags_set *tags, const char *tag, size_t len, const char *right)
{
        char suffix[8]; /* ":" + longest right ("others") + NUL */
        size_t right_len = strlen(right);

        suffix[0] = ':';
        memcpy(suffix + 1, right, right_len + 1);
        /* "ptags:A" covers every tag that is not itself a rights tag. */
        if (!ptags_tag_is_rights(tag, len) &&
            ptags_set_has_pieces(tags, "ptags", 5, suffix, right_len + 1, "", 0))
                return true;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && tag[i] != ':')
                        continue;
                /* P = tag[0..i): the whole tag or a field prefix, possibly
                 * empty (":x::a" has the prefixes "", ":x" and ":x:"). When
                 * no held tag even starts with "ptags:" P, no longer P can
                 * match: stop, so a tag of 2000 fields costs what the
                 * writer's rights are deep, not 2000 lookups. */
                if (!ptags_set_has_prefix_pieces(tags, "ptags:", 6, tag, i))
                        return false;
                if (ptags_set_has_pieces(tags, "ptags:", 6, tag, i, suffix, right_len + 1))
                        return true;
        }
        return false;
}

bool ptags_rights_allow(const ptags_writer *w, ptags_action action, const char *tag, size_t len)
{
        if (w == NULL || w->unrestricted)
                return true;
        if (w->tags == NULL)
                return false;
        if (!holds_right(w->tags, tag, len, ptags_action_name(action)))
                return false;
        return w->self || holds_right(w->tags, tag, len, "others");
}
