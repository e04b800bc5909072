// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* backend-select.c: picks the backend for --backend, preferring the kernel's
 * own ptags LSM and falling back to the BPF emulation on stock kernels. */
#define G_LOG_DOMAIN "ptagsd-backend"

#include "backend-select.h"

#include "errors.h"
#include "target.h"

#include <string.h>
#include <unistd.h>

#define LSM_LIST_PATH "/sys/kernel/security/lsm"

gboolean ptags_lsm_list_has_ptags(const char *lsm_list)
{
        g_auto(GStrv) names = g_strsplit(lsm_list, ",", -1);

        for (size_t i = 0; names[i] != NULL; i++)
                if (strcmp(g_strstrip(names[i]), "ptags") == 0)
                        return TRUE;
        return FALSE;
}

static gboolean kernel_has_ptags_lsm(void)
{
        g_autofree char *list = NULL;

        return g_file_get_contents(LSM_LIST_PATH, &list, NULL, NULL) &&
               ptags_lsm_list_has_ptags(list);
}

static PtagsBackend *new_bpf(GError **error)
{
#ifdef HAVE_BPF_BACKEND
        return ptags_backend_bpf_new(error);
#else
        g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                    "this ptagsd was built without the bpf backend");
        return NULL;
#endif
}

gboolean ptags_backend_name_check(const char *which, GError **error)
{
        if (which == NULL || strcmp(which, "auto") == 0 || strcmp(which, "ptags-lsm") == 0 ||
            strcmp(which, "bpf") == 0)
                return TRUE;
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--backend=%s: expected auto, ptags-lsm or bpf", which);
        return FALSE;
}

PtagsBackend *ptags_backend_select(const char *which, const char *proc_root, GError **error)
{
        if (!ptags_backend_name_check(which, error))
                return NULL;
        if (which == NULL || strcmp(which, "auto") == 0) {
                if (proc_root != NULL || kernel_has_ptags_lsm())
                        return ptags_backend_lsm_new(proc_root, error);
#ifdef HAVE_BPF_BACKEND
                PtagsBackend *bpf = new_bpf(error);
                /* Not "no provider": the bpf backend may fail for other
                 * reasons (another ptagsd holds its state, a bad setting). */
                if (bpf == NULL)
                        g_prefix_error(error, "%s does not list the ptags LSM, and ",
                                       LSM_LIST_PATH);
                return bpf;
#else
                g_set_error(error, PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                            "no ptags provider on this kernel: %s does not list the ptags LSM "
                            "and this ptagsd was built without the bpf backend",
                            LSM_LIST_PATH);
                return NULL;
#endif
        }
        if (strcmp(which, "ptags-lsm") == 0)
                return ptags_backend_lsm_new(proc_root, error);
        return new_bpf(error);
}

gboolean ptags_backend_contids_available(PtagsBackend *b)
{
        if (b->contids != 0)
                return b->contids > 0;
        PtagsTarget self = {0, -1};
        guint64 id;

        b->contids = -1;
        if (!ptags_backend_has_contids(b) || !ptags_target_pin_pid(&self, getpid(), NULL))
                return FALSE;
        int r = b->ops->read_contid(b, self.pidfd, self.pid, &id);
        ptags_target_clear(&self);
        if (r < 0)
                g_message("audit container IDs are not available: %s", g_strerror(-r));
        else
                b->contids = 1;
        return r == 0;
}
