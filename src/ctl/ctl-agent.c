// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-agent.c: starts and stops pkttyagent (polkit's text agent) around the
 * calls that may need a password, the way systemd's tools do. */
#include "ctl-agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <systemd/sd-login.h>
#include <unistd.h>

static pid_t agent_pid;

void ctl_agent_open(bool ask_password, const char *address)
{
        int notify[2];

        if (!ask_password || agent_pid > 0 || geteuid() == 0 || !isatty(STDIN_FILENO))
                return;
        if (pipe2(notify, O_CLOEXEC) < 0)
                return;
        pid_t parent = getpid();
        /* polkitd consults an agent registered as a fallback only for a
         * subject in a login session, and then only when the session has
         * no agent of its own (a desktop's, which keeps precedence, as with
         * systemctl). Outside a session a fallback agent would never be
         * asked: register as this process's agent proper. */
        char *session = NULL;
        bool fallback = sd_pid_get_session(0, &session) >= 0;
        free(session);
        pid_t pid = fork();
        if (pid < 0) {
                close(notify[0]);
                close(notify[1]);
                return;
        }
        if (pid == 0) {
                char fd_arg[16], pid_arg[16];

                /* The agent closes this end once it is registered. */
                if (fcntl(notify[1], F_SETFD, 0) < 0)
                        _exit(127);
                /* The polkitd to register with is the one ptagsd asks. */
                if (address != NULL && setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1) < 0)
                        _exit(127);
                snprintf(fd_arg, sizeof(fd_arg), "%d", notify[1]);
                snprintf(pid_arg, sizeof(pid_arg), "%d", (int)parent);
                /* ptagsd asks about our bus name, which polkitd traces to
                 * this process to find the agent. */
                execl(PKTTYAGENT, PKTTYAGENT, "--notify-fd", fd_arg, "--process", pid_arg,
                      fallback ? "--fallback" : (char *)NULL, (char *)NULL);
                _exit(127);
        }
        close(notify[1]);
        agent_pid = pid;
        /* EOF: registered, or the agent could not start (then the call
         * simply fails as unauthorized). Bounded, so a stuck agent cannot
         * hang ptagsctl. */
        struct pollfd p = {.fd = notify[0], .events = POLLIN};
        while (poll(&p, 1, 10000) < 0 && errno == EINTR)
                ;
        close(notify[0]);
}

void ctl_agent_close(void)
{
        if (agent_pid <= 0)
                return;
        kill(agent_pid, SIGTERM);
        while (waitpid(agent_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        agent_pid = 0;
}
