// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* names.h: every name ptagsd shows the outside world, in one place: the bus
 * name and object, the polkit actions, the journal MESSAGE_IDs and the
 * journal fields. Each is API: scripts, polkit rules and log filters use them. */
#pragma once

/* The service on the system bus. */
#define PTAGS_BUS_NAME    "org.ptags.Manager"
#define PTAGS_OBJECT_PATH "/org/ptags/Manager"
#define PTAGS_INTERFACE   "org.ptags.Manager"

/* polkit actions (data/polkit-1/org.ptags.policy.in). */
#define PTAGS_ACTION_TAG_ADD            "org.ptags.tag.add"
#define PTAGS_ACTION_TAG_REMOVE         "org.ptags.tag.remove"
#define PTAGS_ACTION_TAG_SET_VALUE      "org.ptags.tag.set-value"
#define PTAGS_ACTION_RIGHTS_CHANGE      "org.ptags.rights.change"
#define PTAGS_ACTION_CONTAINER_REGISTER "org.ptags.container.register"
#define PTAGS_ACTION_CONTAINER_INSPECT  "org.ptags.container.inspect"

/* Journal MESSAGE_IDs, one per event kind (data/catalog/ptags.catalog). */
#define PTAGS_MESSAGE_TAGS_CHANGED      "56f8202c992d48b2b57f12d212df8c0b"
#define PTAGS_MESSAGE_CHANGE_REFUSED    "157bd556789b4955bd9106f6457525c2"
#define PTAGS_MESSAGE_CONTAINER_SET     "ad78356abe3048aaa71ad4a8241e2078"
#define PTAGS_MESSAGE_CONTAINER_REFUSED "297b1404a82e40e4ab70035a932b8586"
#define PTAGS_MESSAGE_CONTAINER_DROPPED "bdd732546eb446778798009d294a0049"

/* Journal fields of those entries, as "NAME=" prefixes. */
#define PTAGS_FIELD_PID           "PTAGS_PID="        /* the target process */
#define PTAGS_FIELD_ACTION        "PTAGS_ACTION="     /* the D-Bus method */
#define PTAGS_FIELD_RESULT        "PTAGS_RESULT="     /* "success" or a D-Bus error name */
#define PTAGS_FIELD_CALLER_PID    "PTAGS_CALLER_PID=" /* 0 when unknown */
#define PTAGS_FIELD_CALLER_UID    "PTAGS_CALLER_UID="
#define PTAGS_FIELD_LINES         "PTAGS_LINES="         /* the normalized change lines */
#define PTAGS_FIELD_TAG           "PTAGS_TAG="           /* once per changed tag, the first 256 */
#define PTAGS_FIELD_TAGS_UNLISTED "PTAGS_TAGS_UNLISTED=" /* changed tags past those */
#define PTAGS_FIELD_CONTID        "PTAGS_CONTID="
#define PTAGS_FIELD_SUPPRESSED    "PTAGS_SUPPRESSED=" /* refusals of the uid not logged before */
