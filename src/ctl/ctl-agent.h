// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-agent.h: the text polkit agent ptagsctl starts, as systemctl does,
 * when a person at a terminal may be asked for a password. */
#pragma once

#include <stdbool.h>

/* Starts pkttyagent for this process when stdin is a terminal, the caller
 * is not root (polkit never asks root) and @ask_password; waits until it
 * has registered with the polkitd of the bus at @address (NULL: the system
 * bus), the one ptagsd asks. Failing to start it is not an error: the call
 * then fails with the daemon's NotAuthorized or
 * InteractiveAuthorizationRequired. */
void ctl_agent_open(bool ask_password, const char *address);
/* Stops the agent, if one runs. */
void ctl_agent_close(void);
