// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-echo-sdbus.c: the call benchmark's second reference service: the
 * same canned replies and signal as bench-echo-gdbus, served by sd-bus on
 * one thread with sd-event. Its ratios to its own Ping are what serving the
 * bus with sd-bus would cost for those calls, before any work.
 *
 *   bench-echo-sdbus ADDRESS NAME    (prints "ready" once NAME is owned) */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bench-echo.h"

static int append_tags(sd_bus_message *m, unsigned n)
{
        int r = sd_bus_message_open_container(m, 'a', "(sbs)");
        for (unsigned i = 0; r >= 0 && i < n; i++) {
                char tag[64];
                snprintf(tag, sizeof(tag), ECHO_TAG_PREFIX "%u", i);
                r = sd_bus_message_append(m, "(sbs)", tag, 0, "");
        }
        return r < 0 ? r : sd_bus_message_close_container(m);
}

static int get_tags(sd_bus_message *call, void *data, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        uint32_t pid;
        int r = sd_bus_message_read(call, "u", &pid);
        if (r >= 0)
                r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = append_tags(reply, 10);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        sd_bus_message_unref(reply);
        return r;
}

/* The signal like ptagsd's, then the reply. */
static int change_done(sd_bus_message *call)
{
        sd_bus_message *signal = NULL;
        uint32_t pid;
        int r = sd_bus_message_rewind(call, 1);
        if (r >= 0)
                r = sd_bus_message_read(call, "u", &pid);
        if (r >= 0)
                r = sd_bus_message_new_signal(sd_bus_message_get_bus(call), &signal, ECHO_PATH,
                                              ECHO_INTERFACE, "TagsChanged");
        if (r >= 0)
                r = sd_bus_message_append(signal, "uas", pid, 1, ECHO_SIGNAL_LINE);
        if (r >= 0)
                r = append_tags(signal, 11);
        if (r >= 0)
                r = sd_bus_send(NULL, signal, NULL);
        sd_bus_message_unref(signal);
        return r < 0 ? r : sd_bus_reply_method_return(call, NULL);
}

static int polkit_answered(sd_bus_message *answer, void *data, sd_bus_error *error)
{
        sd_bus_message *call = data;
        int allowed = 0;
        int r = sd_bus_message_is_method_error(answer, NULL)
                        ? -EACCES
                        : sd_bus_message_enter_container(answer, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(answer, "b", &allowed);
        r = r >= 0 && allowed ? change_done(call)
                              : sd_bus_reply_method_errorf(call, SD_BUS_ERROR_ACCESS_DENIED,
                                                           "polkitd said no");
        sd_bus_message_unref(call);
        return r;
}

/* Asynchronously, as ptagsd asks polkitd. */
static int ask_polkit(sd_bus_message *call)
{
        sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(
                sd_bus_message_get_bus(call), &m, "org.freedesktop.PolicyKit1",
                "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.PolicyKit1.Authority",
                "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sa{sv})s", "system-bus-name", 1, "name", "s",
                                          sd_bus_message_get_sender(call), ECHO_POLKIT_ACTION);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{ss}");
        for (int i = 0; r >= 0 && i < ECHO_POLKIT_N; i++)
                r = sd_bus_message_append(m, "{ss}", echo_polkit_details[i][0],
                                          echo_polkit_details[i][1]);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "us", 0, "");
        if (r >= 0)
                r = sd_bus_call_async(NULL, NULL, m, polkit_answered, sd_bus_message_ref(call), 0);
        if (r < 0)
                sd_bus_message_unref(call);
        sd_bus_message_unref(m);
        return r;
}

/* AddTag, RemoveTag; the polkit row's tag asks polkitd first. */
static int change(sd_bus_message *call, void *data, sd_bus_error *error)
{
        uint32_t pid;
        const char *tag = NULL;
        int r = sd_bus_message_read(call, "us", &pid, &tag);
        if (r < 0)
                return r;
        return strcmp(tag, ECHO_POLKIT_TAG) == 0 ? ask_polkit(call) : change_done(call);
}

static int find_tagged(sd_bus_message *call, void *data, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        const char *pattern = NULL;
        int r = sd_bus_message_read(call, "s", &pattern);
        unsigned n = r >= 0 && strcmp(pattern, ECHO_PATTERN_1000) == 0 ? 1000 : 100;
        if (r >= 0)
                r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ua(sbs))");
        for (unsigned i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(ua(sbs))", ECHO_FIRST_PID + i, 1, pattern, 0,
                                          "");
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        sd_bus_message_unref(reply);
        return r;
}

/* UNPRIVILEGED: otherwise sd-bus asks the bus for each caller's
 * credentials before every call (ptagsd decides access itself). */
static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetTags", "u", "a(sbs)", get_tags, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("AddTag", "usb", "", change, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("RemoveTag", "us", "", change, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("FindTagged", "s", "a(ua(sbs))", find_tagged, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL("TagsChanged", "uasa(sbs)", 0),
        SD_BUS_VTABLE_END,
};

int main(int argc, char **argv)
{
        sd_bus *bus = NULL;
        sd_event *event = NULL;

        if (argc != 3) {
                fprintf(stderr, "usage: bench-echo-sdbus ADDRESS NAME\n");
                return 2;
        }
        int r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, argv[1]);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, ECHO_PATH, ECHO_INTERFACE, vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, argv[2], 0);
        if (r >= 0)
                r = sd_event_default(&event);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r < 0) {
                fprintf(stderr, "bench-echo-sdbus: cannot serve %s: %s\n", argv[2], strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        return sd_event_loop(event) < 0;
}
