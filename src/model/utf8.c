// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* utf8.c: strict UTF-8 validation (RFC 3629) for tags, values and patterns.
 * Strict because a lenient decoder would let two spellings name one tag. */
#include "ptags-model.h"

static bool is_continuation(unsigned char b)
{
        return (b & 0xC0u) == 0x80u;
}

bool ptags_utf8_valid(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;

        while (i < len) {
                unsigned char b = p[i];
                size_t need;
                /* The second byte's range rules out overlongs, surrogates
                 * and code points above U+10FFFF in one check. */
                unsigned char lo = 0x80, hi = 0xBF;

                if (b < 0x80) {
                        i++;
                        continue;
                } else if (b >= 0xC2 && b <= 0xDF) {
                        need = 1;
                } else if (b >= 0xE0 && b <= 0xEF) {
                        need = 2;
                        if (b == 0xE0)
                                lo = 0xA0;
                        else if (b == 0xED)
                                hi = 0x9F;
                } else if (b >= 0xF0 && b <= 0xF4) {
                        need = 3;
                        if (b == 0xF0)
                                lo = 0x90;
                        else if (b == 0xF4)
                                hi = 0x8F;
                } else {
                        return false;
                }
                if (len - i - 1 < need)
                        return false;
                if (p[i + 1] < lo || p[i + 1] > hi)
                        return false;
                for (size_t k = 2; k <= need; k++)
                        if (!is_continuation(p[i + k]))
                                return false;
                i += need + 1;
        }
        return true;
}
