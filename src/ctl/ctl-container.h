// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-container.h: "ptagsctl container register|show|list", the audit
 * container IDs that ptagsd registers, as tables and as JSON. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "ctl-bus.h"

typedef struct {
        bool json;
        bool legend;
        bool ask_password;
        const char *address; /* --address, or NULL for the system bus */
        const char *uuid;    /* register --uuid, or NULL */
        const char *name;    /* register --name, or NULL */
} CtlContainerOptions;

/* Checks "VERB ARGS..." (what follows "container") before any connection,
 * so a bad command line fails alike with or without a bus. Returns EXIT_OK,
 * or EXIT_USAGE after saying why. */
int ctl_container_check(char **args, const CtlContainerOptions *options);
/* Runs a checked "VERB ARGS..."; returns an exit code of ctl-error.h. */
int ctl_container_run(sd_bus *bus, char **args, const CtlContainerOptions *options);

/* The JSON object of one container (shape in man/ptagsctl.1). */
void ctl_json_container(FILE *out, const CtlContainer *container);
