// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* result.c: the one mapping from model results to errno, D-Bus error names
 * and messages, so no caller invents its own. */
#include <errno.h>

#include "ptags-model.h"

int ptags_result_errno(ptags_result r)
{
        switch (r) {
        case PTAGS_OK:
                return 0;
        case PTAGS_E_INVALID_TAG:
        case PTAGS_E_INVALID_VALUE:
        case PTAGS_E_INVALID_PATTERN:
        case PTAGS_E_INVALID_COMMAND:
                return EINVAL;
        case PTAGS_E_NOT_PERMITTED:
                return EPERM;
        case PTAGS_E_NO_SUCH_TAG:
                return ENOENT;
        case PTAGS_E_TOO_MANY_TAGS:
                return ECANCELED;
        case PTAGS_E_NOMEM:
                return ENOMEM;
        case PTAGS_E_BATCH_TOO_LARGE:
        case PTAGS_E_BATCH_TOO_BROAD:
                return E2BIG;
        }
        return EINVAL;
}

const char *ptags_result_name(ptags_result r)
{
        switch (r) {
        case PTAGS_OK:
                return NULL;
        case PTAGS_E_INVALID_TAG:
                return "InvalidTag";
        case PTAGS_E_INVALID_VALUE:
                return "InvalidValue";
        case PTAGS_E_INVALID_PATTERN:
                return "InvalidPattern";
        case PTAGS_E_INVALID_COMMAND:
                return "InvalidCommand";
        case PTAGS_E_NOT_PERMITTED:
                return "NotAuthorized";
        case PTAGS_E_NO_SUCH_TAG:
                return "NoSuchTag";
        case PTAGS_E_TOO_MANY_TAGS:
                return "TooManyTags";
        case PTAGS_E_NOMEM:
                return "Failed";
        case PTAGS_E_BATCH_TOO_LARGE:
        case PTAGS_E_BATCH_TOO_BROAD:
                return "InvalidCommand";
        }
        return "Failed";
}

const char *ptags_result_message(ptags_result r)
{
        switch (r) {
        case PTAGS_OK:
                return "Success";
        case PTAGS_E_INVALID_TAG:
                return "Invalid tag";
        case PTAGS_E_INVALID_VALUE:
                return "Invalid value";
        case PTAGS_E_INVALID_PATTERN:
                return "Invalid pattern, or a pattern where a single tag is required";
        case PTAGS_E_INVALID_COMMAND:
                return "Invalid command line";
        case PTAGS_E_NOT_PERMITTED:
                return "Not permitted to change this tag";
        case PTAGS_E_NO_SUCH_TAG:
                return "No such tag";
        case PTAGS_E_TOO_MANY_TAGS:
                return "Too many tags";
        case PTAGS_E_NOMEM:
                return "Out of memory";
        case PTAGS_E_BATCH_TOO_LARGE:
                return "Batch too large: it resolves to more than 16000 changes or 192 MiB of "
                       "tags and values";
        case PTAGS_E_BATCH_TOO_BROAD:
                return "Batch too large: its patterns look at more than 256000 tags, whether "
                       "they change or not";
        }
        return "Unknown error";
}

const char *ptags_action_name(ptags_action a)
{
        switch (a) {
        case PTAGS_ACTION_ADD:
                return "add";
        case PTAGS_ACTION_SUB:
                return "sub";
        case PTAGS_ACTION_SET:
                return "set";
        }
        return "add";
}
