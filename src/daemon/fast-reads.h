// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* fast-reads.h: cheap reads answered in GDBus's worker thread, before the
 * main loop sees them (fast-reads.c). */
#pragma once

#include "manager.h"

typedef struct _PtagsFastReads PtagsFastReads;

/* Start answering cheap reads of @svc's object in the bus thread; NULL
 * when the backend has no thread-safe read (every read then runs on the
 * main loop). Call from the main thread. (transfer full) */
PtagsFastReads *ptags_fast_reads_new(PtagsService *svc);
/* Stop, waiting (on the main loop) until the bus thread is done with it. */
void ptags_fast_reads_free(PtagsFastReads *fast);
