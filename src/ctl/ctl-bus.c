// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-bus.c: ptagsctl's sd-bus calls to org.ptags.Manager and the decoding
 * of their replies (tag lists, FindTagged results, properties, signals). */
#include "ctl-bus.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BUS_NAME    "org.ptags.Manager"
#define OBJECT_PATH "/org/ptags/Manager"
#define INTERFACE   "org.ptags.Manager"

/* Far above any polkit dialog a person answers (the daemon's own polkit
 * timeout ends a check sooner); sd-bus's 25 s default is too short for
 * typing a password. SYSTEMD_BUS_TIMEOUT, which sd-bus reads as systemd's
 * tools do, replaces it. */
#define CALL_TIMEOUT_USEC (120ULL * 1000 * 1000)

int ctl_bus_open(const char *address, bool interactive, sd_bus **ret)
{
        sd_bus *bus = NULL;
        int r;

        if (address == NULL) {
                r = sd_bus_open_system(&bus);
        } else {
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, 1);
                if (r >= 0)
                        r = sd_bus_start(bus);
        }
        if (r >= 0)
                r = sd_bus_set_allow_interactive_authorization(bus, interactive);
        /* Every call below passes 0: this timeout, or the variable's. */
        const char *timeout = getenv("SYSTEMD_BUS_TIMEOUT");
        if (r >= 0 && (timeout == NULL || *timeout == '\0'))
                r = sd_bus_set_method_call_timeout(bus, CALL_TIMEOUT_USEC);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

static int call(sd_bus *bus, const char *method, sd_bus_error *error, sd_bus_message **reply,
                const char *types, ...)
{
        sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, OBJECT_PATH, INTERFACE, method);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, error, reply);
        sd_bus_message_unref(m);
        return r;
}

void ctl_tag_list_clear(CtlTagList *list)
{
        for (size_t i = 0; i < list->n; i++) {
                free(list->tags[i].name);
                free(list->tags[i].value);
        }
        free(list->tags);
        list->tags = NULL;
        list->n = 0;
}

void ctl_processes_free(CtlProcess *processes, size_t n)
{
        for (size_t i = 0; i < n; i++)
                ctl_tag_list_clear(&processes[i].tags);
        free(processes);
}

void ctl_strv_free(char **strv)
{
        for (char **s = strv; s != NULL && *s != NULL; s++)
                free(*s);
        free(strv);
}

void ctl_status_clear(CtlStatus *status)
{
        free(status->version);
        free(status->backend);
        ctl_strv_free(status->features);
        memset(status, 0, sizeof(*status));
}

/* Reads an a(sbs) at the message's current position. */
static int read_tag_list(sd_bus_message *m, CtlTagList *ret)
{
        CtlTagList list = {0};
        size_t allocated = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sbs)");
        if (r < 0)
                return r;
        for (;;) {
                const char *name, *value;
                int keep;

                r = sd_bus_message_read(m, "(sbs)", &name, &keep, &value);
                if (r < 0)
                        goto fail;
                if (r == 0)
                        break;
                if (list.n == allocated) {
                        size_t grown = allocated ? allocated * 2 : 8;
                        CtlTag *tags = reallocarray(list.tags, grown, sizeof(*tags));
                        if (tags == NULL) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        list.tags = tags;
                        allocated = grown;
                }
                list.tags[list.n].name = strdup(name);
                list.tags[list.n].value = strdup(value);
                list.tags[list.n].keep = keep;
                list.n++;
                if (list.tags[list.n - 1].name == NULL || list.tags[list.n - 1].value == NULL) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                goto fail;
        *ret = list;
        return 0;
fail:
        ctl_tag_list_clear(&list);
        return r;
}

static int read_strv(sd_bus_message *m, char ***ret)
{
        char **strv = NULL;
        int r = sd_bus_message_read_strv(m, &strv);

        if (r < 0)
                return r;
        *ret = strv;
        return 0;
}

static int get_string_property(sd_bus *bus, const char *name, char **ret, sd_bus_error *error)
{
        return sd_bus_get_property_string(bus, BUS_NAME, OBJECT_PATH, INTERFACE, name, error, ret);
}

static int get_u32_property(sd_bus *bus, const char *name, uint32_t *ret, sd_bus_error *error)
{
        return sd_bus_get_property_trivial(bus, BUS_NAME, OBJECT_PATH, INTERFACE, name, error, 'u',
                                           ret);
}

int ctl_get_status(sd_bus *bus, CtlStatus *ret, sd_bus_error *error)
{
        CtlStatus s = {0};
        int r;

        r = get_string_property(bus, "Version", &s.version, error);
        if (r >= 0)
                r = get_string_property(bus, "Backend", &s.backend, error);
        if (r >= 0)
                r = sd_bus_get_property_strv(bus, BUS_NAME, OBJECT_PATH, INTERFACE, "Features",
                                             error, &s.features);
        if (r >= 0)
                r = get_u32_property(bus, "MaxTags", &s.max_tags, error);
        if (r >= 0)
                r = get_u32_property(bus, "MaxTagLength", &s.max_tag_length, error);
        if (r >= 0)
                r = get_u32_property(bus, "MaxValueLength", &s.max_value_length, error);
        if (r < 0) {
                ctl_status_clear(&s);
                return r;
        }
        *ret = s;
        return 0;
}

/* A pidfd of @pid, or -errno where there is none to be had (-ESRCH: the
 * process is gone; -ENOSYS: no pidfd_open; -EOPNOTSUPP: the bus cannot
 * carry descriptors). */
static int open_pidfd(sd_bus *bus, uint32_t pid)
{
        int r = sd_bus_can_send(bus, SD_BUS_TYPE_UNIX_FD);
        if (r <= 0)
                return r < 0 ? r : -EOPNOTSUPP;
#ifdef SYS_pidfd_open
        int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        /* A thread id (EINVAL before Linux 6.9, ENOENT since) or a number
         * past any pid (EINVAL) names no process, as ptagsd would say. */
        return fd >= 0 ? fd : errno == EINVAL || errno == ENOENT ? -ESRCH : -errno;
#else
        return -ENOSYS;
#endif
}

int ctl_target_open(sd_bus *bus, uint32_t pid, CtlTarget *ret)
{
        int fd = pid == 0 ? -1 : open_pidfd(bus, pid);

        if (pid != 0 && fd < 0)
                return fd;
        *ret = (CtlTarget){pid, fd};
        return 0;
}

void ctl_target_close(CtlTarget *target)
{
        if (target->pidfd >= 0)
                close(target->pidfd);
        target->pidfd = -1;
}

int ctl_get_tags(sd_bus *bus, const CtlTarget *target, CtlTagList *ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        /* sd-bus sends a duplicate of the descriptor. */
        int r = target->pidfd >= 0 ? call(bus, "GetTagsFd", error, &reply, "h", target->pidfd)
                                   : call(bus, "GetTags", error, &reply, "u", target->pid);

        if (r >= 0)
                r = read_tag_list(reply, ret);
        sd_bus_message_unref(reply);
        return r;
}

int ctl_get_peer_tags(sd_bus *bus, const char *bus_name, CtlTagList *ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        int r = call(bus, "GetPeerTags", error, &reply, "s", bus_name);

        if (r >= 0)
                r = read_tag_list(reply, ret);
        sd_bus_message_unref(reply);
        return r;
}

int ctl_has_tag(sd_bus *bus, const CtlTarget *target, const char *pattern, bool *ret,
                sd_bus_error *error)
{
        if (target->pidfd >= 0) {
                char *query = NULL;
                if (asprintf(&query, "?%s", pattern) < 0)
                        return -ENOMEM;
                char *lines[] = {query, NULL};
                int r = ctl_apply(bus, target, lines, error);
                free(query);
                /* A query without a match fails the batch, and nothing else
                 * in a batch of one query line can. */
                if (r < 0 && sd_bus_error_has_name(error, "org.ptags.Error.NoSuchTag")) {
                        sd_bus_error_free(error);
                        r = 0;
                        *ret = false;
                } else if (r >= 0) {
                        *ret = true;
                }
                return r < 0 ? r : 0;
        }
        sd_bus_message *reply = NULL;
        int result = 0;
        int r = call(bus, "HasTag", error, &reply, "us", target->pid, pattern);

        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &result);
        sd_bus_message_unref(reply);
        if (r >= 0)
                *ret = result;
        return r < 0 ? r : 0;
}

/* Room for element @n of *@array (@size bytes each), doubling as needed:
 * 0 or -ENOMEM (the array is then unchanged). */
static int grow(void **array, size_t *allocated, size_t n, size_t size)
{
        if (n < *allocated)
                return 0;
        size_t grown = *allocated ? *allocated * 2 : 16;
        void *p = reallocarray(*array, grown, size);
        if (p == NULL)
                return -ENOMEM;
        *array = p;
        *allocated = grown;
        return 0;
}

int ctl_find_tagged(sd_bus *bus, const char *pattern, CtlProcess **ret, size_t *n_ret,
                    sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        CtlProcess *procs = NULL;
        size_t n = 0, allocated = 0;
        int r = call(bus, "FindTagged", error, &reply, "s", pattern);

        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ua(sbs))");
        while (r >= 0) {
                uint32_t pid;

                r = sd_bus_message_enter_container(reply, 'r', "ua(sbs)");
                if (r <= 0)
                        break;
                r = grow((void **)&procs, &allocated, n, sizeof(*procs));
                if (r < 0)
                        break;
                r = sd_bus_message_read(reply, "u", &pid);
                if (r < 0)
                        break;
                procs[n].pid = pid;
                procs[n].tags = (CtlTagList){0};
                r = read_tag_list(reply, &procs[n].tags);
                if (r < 0)
                        break;
                n++;
                r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        sd_bus_message_unref(reply);
        if (r < 0) {
                ctl_processes_free(procs, n);
                return r;
        }
        *ret = procs;
        *n_ret = n;
        return 0;
}

int ctl_apply(sd_bus *bus, const CtlTarget *target, char *const *lines, sd_bus_error *error)
{
        sd_bus_message *m = NULL;
        bool by_fd = target->pidfd >= 0;
        int r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, OBJECT_PATH, INTERFACE,
                                               by_fd ? "ApplyFd" : "Apply");

        if (r >= 0)
                r = by_fd ? sd_bus_message_append(m, "h", target->pidfd)
                          : sd_bus_message_append(m, "u", target->pid);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, (char **)lines);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, error, NULL);
        sd_bus_message_unref(m);
        return r;
}

void ctl_container_clear(CtlContainer *c)
{
        for (size_t i = 0; i < c->n_namespaces; i++)
                free(c->namespaces[i].type);
        free(c->namespaces);
        free(c->name);
        memset(c, 0, sizeof(*c));
}

void ctl_containers_free(CtlContainer *containers, size_t n)
{
        for (size_t i = 0; i < n; i++)
                ctl_container_clear(&containers[i]);
        free(containers);
}

/* Reads an a(stt) of namespaces inside the current variant. */
static int read_namespaces(sd_bus_message *m, CtlContainer *c)
{
        size_t allocated = 0;
        int r = sd_bus_message_enter_container(m, 'a', "(stt)");

        while (r >= 0) {
                const char *type;
                uint64_t device, inode;

                r = sd_bus_message_read(m, "(stt)", &type, &device, &inode);
                if (r <= 0)
                        break;
                if (c->n_namespaces == allocated) {
                        size_t grown = allocated ? allocated * 2 : 8;
                        CtlNamespace *ns = reallocarray(c->namespaces, grown, sizeof(*ns));
                        if (ns == NULL)
                                return -ENOMEM;
                        c->namespaces = ns;
                        allocated = grown;
                }
                c->namespaces[c->n_namespaces] = (CtlNamespace){strdup(type), device, inode};
                if (c->namespaces[c->n_namespaces++].type == NULL)
                        return -ENOMEM;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* One "key": variant entry of a container's a{sv}; unknown keys (a later
 * ptagsd may add some) are skipped, known ones must have their type. */
static int read_info_entry(sd_bus_message *m, const char *key, CtlContainer *c)
{
        int r;

        if (strcmp(key, "contid") == 0)
                return sd_bus_message_read(m, "v", "t", &c->contid);
        if (strcmp(key, "parent") == 0)
                return sd_bus_message_read(m, "v", "t", &c->parent);
        if (strcmp(key, "leader") == 0)
                return sd_bus_message_read(m, "v", "u", &c->leader);
        if (strcmp(key, "owner") == 0)
                return sd_bus_message_read(m, "v", "u", &c->owner);
        if (strcmp(key, "owner-pid") == 0)
                return sd_bus_message_read(m, "v", "u", &c->owner_pid);
        if (strcmp(key, "registered") == 0)
                return sd_bus_message_read(m, "v", "t", &c->registered);
        if (strcmp(key, "name") == 0) {
                const char *name;
                r = sd_bus_message_read(m, "v", "s", &name);
                if (r < 0)
                        return r;
                free(c->name);
                c->name = strdup(name);
                return c->name ? 0 : -ENOMEM;
        }
        if (strcmp(key, "uuid") == 0) {
                const void *bytes;
                size_t n;
                r = sd_bus_message_enter_container(m, 'v', "ay");
                if (r >= 0)
                        r = sd_bus_message_read_array(m, 'y', &bytes, &n);
                if (r >= 0 && n != sizeof(c->uuid))
                        r = -EBADMSG;
                if (r < 0)
                        return r;
                memcpy(c->uuid, bytes, n);
                c->has_uuid = true;
                return sd_bus_message_exit_container(m);
        }
        if (strcmp(key, "namespaces") == 0) {
                r = sd_bus_message_enter_container(m, 'v', "a(stt)");
                if (r >= 0)
                        r = read_namespaces(m, c);
                return r < 0 ? r : sd_bus_message_exit_container(m);
        }
        return sd_bus_message_skip(m, "v");
}

/* Reads an a{sv} describing a container at the message's position. */
static int read_container(sd_bus_message *m, CtlContainer *ret)
{
        CtlContainer c = {.parent = CTL_CONTID_UNSET};
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");

        while (r >= 0) {
                const char *key;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(m, "s", &key);
                if (r >= 0)
                        r = read_info_entry(m, key, &c);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0) {
                ctl_container_clear(&c);
                return r;
        }
        *ret = c;
        return 0;
}

static int append_register_info(sd_bus_message *m, const uint8_t *uuid, const char *name)
{
        int r = sd_bus_message_open_container(m, 'a', "{sv}");

        if (r >= 0 && uuid != NULL) {
                r = sd_bus_message_open_container(m, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "uuid");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'v', "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', uuid, 16);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0 && name != NULL)
                r = sd_bus_message_append(m, "{sv}", "name", "s", name);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

int ctl_register_container(sd_bus *bus, uint32_t pid, uint64_t contid, const uint8_t *uuid,
                           const char *name, sd_bus_error *error)
{
        sd_bus_message *m = NULL;
        CtlTarget target;
        /* Never by number: a process that took the pid meanwhile would be
         * registered. Pid 0, ptagsctl itself, cannot be reused (and ptagsd
         * refuses it, named). */
        int r = ctl_target_open(bus, pid, &target);

        if (r < 0)
                return r;
        bool by_fd = target.pidfd >= 0;
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, OBJECT_PATH, INTERFACE,
                                           by_fd ? "RegisterContainerFd" : "RegisterContainer");
        /* sd-bus sends a duplicate of the descriptor. */
        if (r >= 0)
                r = by_fd ? sd_bus_message_append(m, "ht", target.pidfd, contid)
                          : sd_bus_message_append(m, "ut", pid, contid);
        if (r >= 0)
                r = append_register_info(m, uuid, name);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, error, NULL);
        sd_bus_message_unref(m);
        ctl_target_close(&target);
        return r;
}

int ctl_get_container_id(sd_bus *bus, uint32_t pid, uint64_t *ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        int r = call(bus, "GetContainerId", error, &reply, "u", pid);

        if (r >= 0)
                r = sd_bus_message_read(reply, "t", ret);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

int ctl_get_container(sd_bus *bus, uint64_t contid, CtlContainer *ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        int r = call(bus, "GetContainer", error, &reply, "t", contid);

        if (r >= 0)
                r = read_container(reply, ret);
        sd_bus_message_unref(reply);
        return r;
}

int ctl_list_containers(sd_bus *bus, CtlContainer **ret, size_t *n_ret, sd_bus_error *error)
{
        sd_bus_message *reply = NULL;
        CtlContainer *list = NULL;
        size_t n = 0, allocated = 0;
        int r = call(bus, "ListContainers", error, &reply, "");

        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ta{sv})");
        while (r >= 0) {
                uint64_t contid;

                r = sd_bus_message_enter_container(reply, 'r', "ta{sv}");
                if (r <= 0)
                        break;
                r = grow((void **)&list, &allocated, n, sizeof(*list));
                if (r < 0)
                        break;
                r = sd_bus_message_read(reply, "t", &contid);
                if (r >= 0)
                        r = read_container(reply, &list[n]);
                if (r < 0)
                        break;
                list[n++].contid = contid;
                r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        sd_bus_message_unref(reply);
        if (r < 0) {
                ctl_containers_free(list, n);
                return r;
        }
        *ret = list;
        *n_ret = n;
        return 0;
}

typedef struct {
        const CtlMonitorHandlers *handlers;
        void *userdata;
        int stop; /* a handler's negative errno: ctl_monitor() returns it */
} MonitorData;

/* A signal of another shape than documented is not ours to print: each
 * handler below skips it. */
static int on_tags_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        MonitorData *data = userdata;
        CtlTagsChanged event = {0};
        int r;

        r = sd_bus_message_read(m, "u", &event.pid);
        if (r >= 0)
                r = read_strv(m, &event.lines);
        if (r >= 0)
                r = read_tag_list(m, &event.tags);
        if (r >= 0 && data->handlers->tags_changed && data->stop == 0)
                data->stop = data->handlers->tags_changed(&event, data->userdata);
        ctl_strv_free(event.lines);
        ctl_tag_list_clear(&event.tags);
        return 0;
}

static int on_container_registered(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        MonitorData *data = userdata;
        CtlContainer c = {0};
        uint64_t contid;
        uint32_t pid;
        int r = sd_bus_message_read(m, "tu", &contid, &pid);

        if (r >= 0)
                r = read_container(m, &c);
        if (r >= 0 && data->handlers->container_registered && data->stop == 0)
                data->stop = data->handlers->container_registered(contid, pid, &c, data->userdata);
        ctl_container_clear(&c);
        return 0;
}

static int on_container_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        MonitorData *data = userdata;
        uint64_t contid;

        if (sd_bus_message_read(m, "t", &contid) >= 0 && data->handlers->container_removed &&
            data->stop == 0)
                data->stop = data->handlers->container_removed(contid, data->userdata);
        return 0;
}

int ctl_monitor(sd_bus *bus, const CtlMonitorHandlers *handlers, void *userdata,
                sd_bus_error *error)
{
        MonitorData data = {handlers, userdata, 0};
        static const struct {
                const char *member;
                sd_bus_message_handler_t func;
        } signals[] = {
                {"TagsChanged", on_tags_changed},
                {"ContainerRegistered", on_container_registered},
                {"ContainerRemoved", on_container_removed},
        };
        int r;

        /* Synchronous: once they return, the bus routes every later signal
         * to us, so a change made after ready is never missed. */
        for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
                r = sd_bus_match_signal(bus, NULL, BUS_NAME, OBJECT_PATH, INTERFACE,
                                        signals[i].member, signals[i].func, &data);
                if (r < 0)
                        return r;
        }
        /* A match alone asks nothing of ptagsd: with no ptagsd on the bus,
         * nor one the bus can start, the monitor would wait for ever. A
         * call, as every other command makes, starts it or fails. */
        char *version = NULL;
        r = get_string_property(bus, "Version", &version, error);
        free(version);
        if (r < 0)
                return r;
        handlers->ready(userdata);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (data.stop < 0)
                        return data.stop;
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0)
                        return r;
        }
}
