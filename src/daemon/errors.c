// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* errors.c: the org.ptags.Error domain and the single mapping table from
 * model results and errnos to it, so no handler invents its own mapping. */
#define G_LOG_DOMAIN "ptagsd-errors"

#include "errors.h"

#include <errno.h>

static const GDBusErrorEntry error_entries[] = {
        {PTAGS_ERROR_INVALID_TAG, "org.ptags.Error.InvalidTag"},
        {PTAGS_ERROR_INVALID_VALUE, "org.ptags.Error.InvalidValue"},
        {PTAGS_ERROR_INVALID_PATTERN, "org.ptags.Error.InvalidPattern"},
        {PTAGS_ERROR_INVALID_COMMAND, "org.ptags.Error.InvalidCommand"},
        {PTAGS_ERROR_NO_SUCH_PROCESS, "org.ptags.Error.NoSuchProcess"},
        {PTAGS_ERROR_NO_SUCH_TAG, "org.ptags.Error.NoSuchTag"},
        {PTAGS_ERROR_TOO_MANY_TAGS, "org.ptags.Error.TooManyTags"},
        {PTAGS_ERROR_NOT_AUTHORIZED, "org.ptags.Error.NotAuthorized"},
        {PTAGS_ERROR_NOT_SUPPORTED, "org.ptags.Error.NotSupported"},
        {PTAGS_ERROR_SELF_TARGET, "org.ptags.Error.SelfTarget"},
        {PTAGS_ERROR_NOT_DESCENDANT, "org.ptags.Error.NotDescendant"},
        {PTAGS_ERROR_TARGET_BUSY, "org.ptags.Error.TargetBusy"},
        {PTAGS_ERROR_ALREADY_REGISTERED, "org.ptags.Error.AlreadyRegistered"},
        {PTAGS_ERROR_CONTAINER_ID_IN_USE, "org.ptags.Error.ContainerIdInUse"},
        {PTAGS_ERROR_INVALID_CONTAINER_ID, "org.ptags.Error.InvalidContainerId"},
        {PTAGS_ERROR_NO_SUCH_CONTAINER, "org.ptags.Error.NoSuchContainer"},
        {PTAGS_ERROR_LIMIT_EXCEEDED, "org.ptags.Error.LimitExceeded"},
        {PTAGS_ERROR_FAILED, "org.ptags.Error.Failed"},
        {PTAGS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
         "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"},
};

G_STATIC_ASSERT(G_N_ELEMENTS(error_entries) == PTAGS_ERROR_N_CODES);

GQuark ptags_error_quark(void)
{
        static gsize quark = 0;

        g_dbus_error_register_error_domain("ptags-error-quark", &quark, error_entries,
                                           G_N_ELEMENTS(error_entries));
        return (GQuark)quark;
}

const char *ptags_error_dbus_name(PtagsError code)
{
        if ((unsigned)code >= G_N_ELEMENTS(error_entries))
                return NULL;
        return error_entries[code].dbus_error_name;
}

/* One row per source: a model result or an errno, never both. */
static const struct {
        ptags_result result;
        int errnum;
        PtagsError code;
} mapping[] = {
        {PTAGS_E_INVALID_TAG, 0, PTAGS_ERROR_INVALID_TAG},
        {PTAGS_E_INVALID_VALUE, 0, PTAGS_ERROR_INVALID_VALUE},
        {PTAGS_E_INVALID_PATTERN, 0, PTAGS_ERROR_INVALID_PATTERN},
        {PTAGS_E_INVALID_COMMAND, 0, PTAGS_ERROR_INVALID_COMMAND},
        {PTAGS_E_NOT_PERMITTED, 0, PTAGS_ERROR_NOT_AUTHORIZED},
        {PTAGS_E_NO_SUCH_TAG, 0, PTAGS_ERROR_NO_SUCH_TAG},
        {PTAGS_E_TOO_MANY_TAGS, 0, PTAGS_ERROR_TOO_MANY_TAGS},
        {PTAGS_E_NOMEM, 0, PTAGS_ERROR_FAILED},
        {PTAGS_E_BATCH_TOO_LARGE, 0, PTAGS_ERROR_INVALID_COMMAND},
        {PTAGS_E_BATCH_TOO_BROAD, 0, PTAGS_ERROR_INVALID_COMMAND},
        {PTAGS_OK, EINVAL, PTAGS_ERROR_INVALID_COMMAND},
        {PTAGS_OK, EPERM, PTAGS_ERROR_NOT_AUTHORIZED},
        {PTAGS_OK, EACCES, PTAGS_ERROR_NOT_SUPPORTED},
        {PTAGS_OK, EOPNOTSUPP, PTAGS_ERROR_NOT_SUPPORTED},
        {PTAGS_OK, ENOSYS, PTAGS_ERROR_NOT_SUPPORTED},
        {PTAGS_OK, ESRCH, PTAGS_ERROR_NO_SUCH_PROCESS},
        {PTAGS_OK, ENOENT, PTAGS_ERROR_NO_SUCH_PROCESS},
        {PTAGS_OK, ECANCELED, PTAGS_ERROR_TOO_MANY_TAGS},
        {PTAGS_OK, EBUSY, PTAGS_ERROR_TARGET_BUSY},
        {PTAGS_OK, EXDEV, PTAGS_ERROR_NOT_DESCENDANT},
        {PTAGS_OK, EEXIST, PTAGS_ERROR_ALREADY_REGISTERED},
        {PTAGS_OK, ENOTUNIQ, PTAGS_ERROR_CONTAINER_ID_IN_USE},
};

PtagsError ptags_error_from_result(ptags_result r)
{
        for (size_t i = 0; i < G_N_ELEMENTS(mapping); i++)
                if (mapping[i].errnum == 0 && mapping[i].result == r)
                        return mapping[i].code;
        return PTAGS_ERROR_FAILED;
}

PtagsError ptags_error_from_errno(int errnum)
{
        for (size_t i = 0; i < G_N_ELEMENTS(mapping); i++)
                if (mapping[i].errnum != 0 && mapping[i].errnum == errnum)
                        return mapping[i].code;
        return PTAGS_ERROR_FAILED;
}

GError *ptags_errno_error(int neg_errno, const char *what, pid_t pid)
{
        int e = -neg_errno;

        if (e == EACCES)
                return g_error_new(PTAGS_ERROR, PTAGS_ERROR_NOT_SUPPORTED,
                                   "%s process %d: the kernel refuses the write (a mainline "
                                   "kernel without the ptags LSM?)",
                                   what, (int)pid);
        return g_error_new(PTAGS_ERROR, ptags_error_from_errno(e), "%s process %d: %s", what,
                           (int)pid, g_strerror(e));
}
