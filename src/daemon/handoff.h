// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* handoff.h: handing work made in GDBus's worker thread to a main context
 * by an idle source, in a way ThreadSanitizer can follow. GLib's own locks
 * order the making thread's writes before the callback's reads, but TSan
 * does not see them (GLib is not built with it): the source is attached
 * holding one lock, which its callback takes before it reads the work. */
#pragma once

#include <glib.h>

/* Attach @source to @context, holding the handoff lock. Any thread. */
void ptags_handoff_attach(GSource *source, GMainContext *context);

/* First thing in a callback of a source attached with ptags_handoff_attach(). */
void ptags_handoff_taken(void);
