// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-echo-sdbus.c: the call benchmark's second reference service: the
 * same canned replies and signal as bench-echo-gdbus, served by sd-bus on
 * one thread with sd-event. Its ratios to its own Ping are what serving the
 * bus with sd-bus would cost for those calls, before any work.
 *
 *   bench-echo-sdbus ADDRESS NAME    (prints "ready" once NAME is owned) */
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

/* AddTag, RemoveTag: a signal like ptagsd's, then the reply. */
static int change(sd_bus_message *call, void *data, sd_bus_error *error)
{
        sd_bus_message *signal = NULL;
        uint32_t pid;
        int r = sd_bus_message_read(call, "u", &pid);
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
