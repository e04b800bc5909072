// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* contid.c: audit container IDs: parsing a write, the kernel's decision
 * (rules in its exact order, so two failures give the kernel's errno), and
 * the printed ID chain. */
#include <errno.h>
#include <stdio.h>

#include "ptags-model.h"

bool ptags_contid_parse(const char *buf, size_t len, uint64_t *out)
{
        uint64_t v = 0;

        if (len > 0 && buf[len - 1] == '\n')
                len--;
        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned d = (unsigned char)buf[i] - (unsigned)'0';
                if (d > 9)
                        return false;
                if (v > (UINT64_MAX - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        *out = v;
        return true;
}

int ptags_contid_decide(const ptags_contid_facts *f, bool *nesting)
{
        bool nests =
                f->target_current != PTAGS_CONTID_UNSET && f->writer_current == f->target_current;

        if (nesting)
                *nesting = false;
        if (!f->target_exists)
                return ESRCH;
        if (!f->value_ok || f->requested == PTAGS_CONTID_UNSET)
                return EINVAL;
        if (!f->writer_cap_audit_control)
                return EPERM;
        if (f->target_has_children || f->target_threads > 1)
                return EBUSY;
        if (f->target_is_writer || (!f->target_is_descendant && !f->writer_is_root_exempt))
                return EXDEV;
        if (f->target_current != PTAGS_CONTID_UNSET && !nests)
                return EEXIST;
        if (f->requested_in_use && !f->requested_owned_by_writer)
                return ENOTUNIQ;
        if (nesting)
                *nesting = nests;
        return 0;
}

size_t ptags_contid_format_chain(const uint64_t *ids, size_t n, char *buf, size_t size)
{
        size_t need = 0;

        if (size > 0)
                buf[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                char item[24]; /* "^" + 20 digits + NUL */
                int len = snprintf(item, sizeof(item), "%s%llu", i ? ",^" : "",
                                   (unsigned long long)ids[i]);
                for (int k = 0; k < len; k++, need++)
                        if (need + 1 < size) {
                                buf[need] = item[k];
                                buf[need + 1] = '\0';
                        }
        }
        return need;
}
