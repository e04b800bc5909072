// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* handoff.c: see handoff.h. (A pthread mutex rather than GMutex, so
 * ThreadSanitizer sees it.) */
#include "handoff.h"

#include <pthread.h>

static pthread_mutex_t handoff = PTHREAD_MUTEX_INITIALIZER;

void ptags_handoff_attach(GSource *source, GMainContext *context)
{
        pthread_mutex_lock(&handoff);
        g_source_attach(source, context);
        pthread_mutex_unlock(&handoff);
}

void ptags_handoff_taken(void)
{
        pthread_mutex_lock(&handoff);
        pthread_mutex_unlock(&handoff);
}
