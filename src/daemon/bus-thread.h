// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bus-thread.h: the calls answered in GDBus's worker thread, before the
 * main loop sees them: cheap reads, and root's changes (bus-thread.c). */
#pragma once

#include "manager.h"

typedef struct _PtagsBusThread PtagsBusThread;

/* Start answering calls to @svc's object in the bus thread: reads when the
 * backend reads thread-safely, and root's changes. From now on the calling
 * thread, the one running the default main context, holds the main loop's
 * lock except while it polls. (transfer full) */
PtagsBusThread *ptags_bus_thread_new(PtagsService *svc);
/* Stop, waiting (on the main loop) until the bus thread is done with it,
 * and let go of the main loop's lock. */
void ptags_bus_thread_free(PtagsBusThread *bt);

/* Stops counting @msg, a call passed to the main loop, as in progress for
 * the bounds on arrival: called just before its reply is sent, so a client
 * that sends its next call as soon as it reads the reply finds it gone. */
void ptags_bus_thread_call_done(GDBusMessage *msg);
