// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* backend-select.h: choosing where tags live (--backend=auto|ptags-lsm|bpf)
 * from what this kernel provides. */
#pragma once

#include "backend.h"

/* True when the LSM list text (/sys/kernel/security/lsm: "a,b,c") names ptags. */
gboolean ptags_lsm_list_has_ptags(const char *lsm_list);

/* TRUE when @which (NULL: auto) names a backend choice; an option error
 * naming it otherwise. */
gboolean ptags_backend_name_check(const char *which, GError **error);

/* @which: "auto", "ptags-lsm" or "bpf". auto picks ptags-lsm when the kernel
 * lists the ptags LSM or @proc_root is given, else bpf when built, else fails
 * saying that neither provider exists. (transfer full) */
PtagsBackend *ptags_backend_select(const char *which, const char *proc_root, GError **error);
