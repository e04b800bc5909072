// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* grammar.c: what a tag, a value and a pattern may look like (ptags(7)
 * "TAGS, VALUES AND PATTERNS", "LIMITS"), and how a pattern matches a tag. */
#include <string.h>

#include "ptags-model.h"

static const char rights_prefix[] = "ptags:";
#define RIGHTS_PREFIX_LEN (sizeof(rights_prefix) - 1)

/* Bytes no tag may hold; '=' and '*' would make lines and patterns ambiguous. */
static bool tag_byte_forbidden(unsigned char b)
{
        return b < 0x20 || b == 0x7F || b == '=' || b == '*';
}

static bool value_byte_forbidden(unsigned char b)
{
        return b < 0x20 || b == 0x7F;
}

/* The checks a tag and a pattern prefix share: bytes, leading '@', UTF-8. */
static bool tag_chars_valid(const char *s, size_t len)
{
        if (len > 0 && s[0] == '@')
                return false;
        for (size_t i = 0; i < len; i++)
                if (tag_byte_forbidden((unsigned char)s[i]))
                        return false;
        return ptags_utf8_valid(s, len);
}

static bool field_is(const char *field, size_t len, const char *word)
{
        return strlen(word) == len && memcmp(field, word, len) == 0;
}

bool ptags_tag_is_rights(const char *tag, size_t len)
{
        return len >= RIGHTS_PREFIX_LEN && memcmp(tag, rights_prefix, RIGHTS_PREFIX_LEN) == 0;
}

ptags_result ptags_tag_validate(const char *tag, size_t len)
{
        if (len == 0 || len > PTAGS_MAX_TAG_LEN)
                return PTAGS_E_INVALID_TAG;
        if (tag[len - 1] == ':')
                return PTAGS_E_INVALID_TAG;
        if (!tag_chars_valid(tag, len))
                return PTAGS_E_INVALID_TAG;
        if (ptags_tag_is_rights(tag, len)) {
                const char *last = memrchr(tag, ':', len);
                /* last is non-NULL: the tag starts with "ptags:". */
                size_t field_len = len - (size_t)(last + 1 - tag);
                const char *field = last + 1;
                if (!field_is(field, field_len, "add") && !field_is(field, field_len, "sub") &&
                    !field_is(field, field_len, "set") && !field_is(field, field_len, "others"))
                        return PTAGS_E_INVALID_TAG;
        }
        return PTAGS_OK;
}

ptags_result ptags_value_validate(const char *value, size_t len)
{
        if (len > PTAGS_MAX_VALUE_LEN)
                return PTAGS_E_INVALID_VALUE;
        for (size_t i = 0; i < len; i++)
                if (value_byte_forbidden((unsigned char)value[i]))
                        return PTAGS_E_INVALID_VALUE;
        if (!ptags_utf8_valid(value, len))
                return PTAGS_E_INVALID_VALUE;
        return PTAGS_OK;
}

bool ptags_pattern_is_global(const char *pat, size_t len)
{
        return len == 0 || (len >= 2 && pat[len - 2] == ':' && pat[len - 1] == '*');
}

/* Without a '*' a pattern is an exact tag and fails as a tag (INVALID_TAG);
 * with one it must be "PREFIX:*" and fails as a pattern. The prefix
 * "PREFIX:" follows the tag byte rules but not the rights-tag field rule,
 * so "ptags:*" (every rights tag) is valid. The kernel's tag length limit
 * applies to PREFIX alone, without ":*", so a pattern may be up to
 * PTAGS_MAX_TAG_LEN + 2 bytes even though the longest can match no tag. */
ptags_result ptags_pattern_validate(const char *pat, size_t len, bool allow_empty)
{
        if (len == 0)
                return allow_empty ? PTAGS_OK : PTAGS_E_INVALID_PATTERN;
        if (memchr(pat, '*', len) == NULL)
                return ptags_tag_validate(pat, len);
        if (!ptags_pattern_is_global(pat, len) || len - 2 > PTAGS_MAX_TAG_LEN)
                return PTAGS_E_INVALID_PATTERN;
        if (!tag_chars_valid(pat, len - 1))
                return PTAGS_E_INVALID_PATTERN;
        return PTAGS_OK;
}

bool ptags_pattern_match(const char *pat, size_t pat_len, const char *tag, size_t tag_len)
{
        if (pat_len == 0)
                return true;
        if (ptags_pattern_is_global(pat, pat_len)) {
                size_t prefix_len = pat_len - 1; /* "PREFIX:" */
                return tag_len > prefix_len && memcmp(tag, pat, prefix_len) == 0;
        }
        return tag_len == pat_len && memcmp(tag, pat, pat_len) == 0;
}
