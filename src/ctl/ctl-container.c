// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ctl-container.c: ptagsctl's container commands: registering a process as
 * an audit container, and showing and listing containers (tables or JSON). */
#include "ctl-container.h"

#include <errno.h>
#include <inttypes.h>
#include <libintl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl-agent.h"
#include "ctl-error.h"
#include "ctl-output.h"

#define _(s) gettext(s)

/* A decimal audit container ID: any u64 (the unset value is the daemon's
 * to refuse, with its named error). Returns 0, or EXIT_USAGE. */
static int parse_contid(const char *s, uint64_t *ret)
{
        char *end;

        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0)
                return ctl_usage_error(_("Invalid container ID '%s': expected a decimal number "
                                         "below 2^64."),
                                       s);
        *ret = v;
        return 0;
}

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* 32 hex digits, optionally with the dashes of the usual 8-4-4-4-12 form. */
static int parse_uuid(const char *s, uint8_t uuid[16])
{
        size_t len = strlen(s), n = 0;
        bool dashed = len == 36;

        for (size_t i = 0; i < len && n < 32; i++) {
                if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
                        if (s[i] != '-')
                                break;
                        continue;
                }
                int d = hex_digit(s[i]);
                if (d < 0)
                        break;
                uuid[n / 2] = (uint8_t)(n % 2 ? (uuid[n / 2] << 4) | d : d);
                n++;
        }
        if (n != 32 || len != (dashed ? 36u : 32u))
                return ctl_usage_error(_("Invalid UUID '%s': expected 32 hexadecimal digits, "
                                         "e.g. 0f14d0ab-9605-4a62-a9e4-5ed26688389b."),
                                       s);
        return 0;
}

/* What "container show" was given: a container ID, or a process as
 * "pid:PID" or "self" (whose container is shown). The unset ID names no
 * container: it is what a process in no container has. */
static int parse_show_target(const char *s, bool *by_pid, uint32_t *pid, uint64_t *contid)
{
        *by_pid = strcmp(s, "self") == 0 || strncmp(s, "pid:", 4) == 0;
        if (*by_pid)
                return ctl_parse_pid(strcmp(s, "self") == 0 ? s : s + 4, true, pid);
        int r = parse_contid(s, contid);
        if (r == 0 && *contid == CTL_CONTID_UNSET)
                return ctl_usage_error(_("%s is the unset container ID, which processes in no "
                                         "container have, not a container."),
                                       s);
        return r;
}

int ctl_container_check(char **args, const CtlContainerOptions *o)
{
        size_t n = 0;
        uint8_t uuid[16];
        uint64_t contid;
        uint32_t pid;
        bool by_pid;
        int r;

        while (args[n] != NULL)
                n++;
        if (n == 0)
                return ctl_usage_error(_("'container' needs one of: register, show, list."));
        if ((o->uuid || o->name) && strcmp(args[0], "register") != 0)
                return ctl_usage_error(_("--uuid and --name belong to 'container register'."));
        if (strcmp(args[0], "register") == 0) {
                if (n != 3)
                        return ctl_usage_error(_("Wrong number of arguments for '%s'."),
                                               "container register");
                if ((r = ctl_parse_pid(args[1], true, &pid)) ||
                    (r = parse_contid(args[2], &contid)))
                        return r;
                return o->uuid ? parse_uuid(o->uuid, uuid) : EXIT_OK;
        }
        if (strcmp(args[0], "show") == 0) {
                if (n != 2)
                        return ctl_usage_error(_("Wrong number of arguments for '%s'."),
                                               "container show");
                return parse_show_target(args[1], &by_pid, &pid, &contid);
        }
        if (strcmp(args[0], "list") == 0) {
                if (n != 1)
                        return ctl_usage_error(_("Wrong number of arguments for '%s'."),
                                               "container list");
                return EXIT_OK;
        }
        return ctl_usage_error(_("Unknown container command '%s'."), args[0]);
}

/* ------------------------------------------------------------ printing */

static void format_uuid(const uint8_t uuid[16], char out[37])
{
        char *p = out;

        for (size_t i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10)
                        *p++ = '-';
                p += sprintf(p, "%02x", uuid[i]);
        }
}

void ctl_json_container(FILE *out, const CtlContainer *c)
{
        char uuid[37];

        fprintf(out, "{\"contid\": %" PRIu64 ", \"parent\": ", c->contid);
        if (c->parent == CTL_CONTID_UNSET)
                fputs("null", out);
        else
                fprintf(out, "%" PRIu64, c->parent);
        fputs(", \"uuid\": ", out);
        if (c->has_uuid) {
                format_uuid(c->uuid, uuid);
                ctl_json_string(out, uuid);
        } else {
                fputs("null", out);
        }
        fputs(", \"name\": ", out);
        if (c->name)
                ctl_json_string(out, c->name);
        else
                fputs("null", out);
        fprintf(out,
                ", \"leader\": %" PRIu32 ", \"owner\": %" PRIu32 ", \"owner_pid\": %" PRIu32
                ", \"registered_usec\": %" PRIu64 ", \"namespaces\": [",
                c->leader, c->owner, c->owner_pid, c->registered);
        for (size_t i = 0; i < c->n_namespaces; i++) {
                fputs(i ? ", {\"type\": " : "{\"type\": ", out);
                ctl_json_string(out, c->namespaces[i].type);
                fprintf(out, ", \"device\": %" PRIu64 ", \"inode\": %" PRIu64 "}",
                        c->namespaces[i].device, c->namespaces[i].inode);
        }
        fputs("]}", out);
}

/* "name (uid)" (or only the name, for a table), or the bare uid when it
 * has no name here. */
static void format_user(uint32_t uid, bool with_uid, char *out, size_t size)
{
        struct passwd *pw = getpwuid(uid);

        if (pw != NULL && !with_uid)
                snprintf(out, size, "%s", pw->pw_name);
        else if (pw != NULL)
                snprintf(out, size, "%s (%" PRIu32 ")", pw->pw_name, uid);
        else
                snprintf(out, size, "%" PRIu32, uid);
}

static void print_container(const CtlContainer *c)
{
        char contid[24], parent[24], uuid[37] = "", leader[16], owner[300], owner_pid[16];
        char registered[64] = "", namespaces[1024] = "";
        time_t t = (time_t)(c->registered / 1000000);
        struct tm tm;

        snprintf(contid, sizeof(contid), "%" PRIu64, c->contid);
        snprintf(parent, sizeof(parent), "%" PRIu64, c->parent);
        if (c->has_uuid)
                format_uuid(c->uuid, uuid);
        snprintf(leader, sizeof(leader), "%" PRIu32, c->leader);
        format_user(c->owner, true, owner, sizeof(owner));
        snprintf(owner_pid, sizeof(owner_pid), "%" PRIu32, c->owner_pid);
        if (localtime_r(&t, &tm) != NULL)
                strftime(registered, sizeof(registered), "%a %Y-%m-%d %H:%M:%S %Z", &tm);
        for (size_t i = 0; i < c->n_namespaces; i++) {
                size_t len = strlen(namespaces);
                /* The form of a /proc/PID/ns link, as ls -l shows it. */
                snprintf(namespaces + len, sizeof(namespaces) - len, "%s%s:[%" PRIu64 "]",
                         i ? " " : "", c->namespaces[i].type, c->namespaces[i].inode);
        }

        /* The registrant chose the name. */
        char *name = c->name ? ctl_escape(c->name) : NULL;
        const char *labels[8], *values[8];
        size_t n = 0;
#define FIELD(label, value)                                                                        \
        do {                                                                                       \
                labels[n] = (label);                                                               \
                values[n++] = (value);                                                             \
        } while (0)
        FIELD(_("Container"), contid);
        if (name)
                FIELD(_("Name"), name);
        if (c->has_uuid)
                FIELD(_("UUID"), uuid);
        if (c->parent != CTL_CONTID_UNSET)
                FIELD(_("Parent"), parent);
        FIELD(_("Leader"), leader);
        FIELD(_("Owner"), owner);
        FIELD(_("Owner PID"), owner_pid);
        FIELD(_("Registered"), registered);
#undef FIELD
        ctl_print_fields(stdout, n, labels, values);
        free(name);
        /* Last and on its own: the list is long. */
        if (c->n_namespaces > 0)
                printf("\n%s: %s\n", _("Namespaces"), namespaces);
}

/* ------------------------------------------------------------ commands */

static int cmd_register(sd_bus *bus, char **args, const CtlContainerOptions *o)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlContainer c;
        uint8_t uuid[16];
        uint64_t contid;
        uint32_t pid;
        int r;

        /* Checked by ctl_container_check() already. */
        if (ctl_parse_pid(args[0], true, &pid) || parse_contid(args[1], &contid) ||
            (o->uuid && parse_uuid(o->uuid, uuid)))
                return EXIT_USAGE;
        if (o->name && (r = ctl_check_utf8(_("Cannot register the container"), o->name)))
                return r;
        ctl_agent_open(o->ask_password, o->address);
        r = ctl_register_container(bus, pid, contid, o->uuid ? uuid : NULL, o->name, &error);
        ctl_agent_close();
        if (r < 0) {
                int code = ctl_call_failed(_("Cannot register the container"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (!o->json)
                return EXIT_OK;
        r = ctl_get_container(bus, contid, &c, &error);
        if (r < 0) {
                int code = ctl_call_failed(_("Cannot read the container back"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        printf("{\"pid\": %" PRIu32 ", \"container\": ", pid);
        ctl_json_container(stdout, &c);
        fputs("}\n", stdout);
        ctl_container_clear(&c);
        return EXIT_OK;
}

static int cmd_show(sd_bus *bus, char **args, const CtlContainerOptions *o)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *what = _("Cannot read the container");
        CtlContainer c;
        uint64_t contid = CTL_CONTID_UNSET;
        uint32_t pid = 0;
        bool by_pid;
        int r;

        if (parse_show_target(args[0], &by_pid, &pid, &contid))
                return EXIT_USAGE;
        /* Reading another user's container may ask for a password. */
        ctl_agent_open(o->ask_password, o->address);
        if (by_pid) {
                r = ctl_get_container_id(bus, pid, &contid, &error);
                if (r < 0)
                        what = _("Cannot read the container ID of the process");
        } else {
                r = 0;
        }
        if (r >= 0 && contid == CTL_CONTID_UNSET) {
                ctl_agent_close();
                fputs("ptagsctl: ", stderr);
                if (pid == 0)
                        fputs(_("This process is in no container."), stderr);
                else
                        fprintf(stderr, _("Process %" PRIu32 " is in no container."), pid);
                fputc('\n', stderr);
                return EXIT_NO_PROCESS;
        }
        if (r >= 0)
                r = ctl_get_container(bus, contid, &c, &error);
        ctl_agent_close();
        if (r < 0) {
                int code = ctl_call_failed(what, r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (o->json) {
                ctl_json_container(stdout, &c);
                fputc('\n', stdout);
        } else {
                print_container(&c);
        }
        ctl_container_clear(&c);
        return EXIT_OK;
}

static int cmd_list(sd_bus *bus, const CtlContainerOptions *o)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlContainer *list = NULL;
        size_t n = 0;
        int r = ctl_list_containers(bus, &list, &n, &error);

        if (r < 0) {
                int code = ctl_call_failed(_("Cannot list the containers"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (o->json) {
                fputs("{\"containers\": [", stdout);
                for (size_t i = 0; i < n; i++) {
                        fputs(i ? ", " : "", stdout);
                        ctl_json_container(stdout, &list[i]);
                }
                fputs("]}\n", stdout);
                ctl_containers_free(list, n);
                return EXIT_OK;
        }
        const char *headers[] = {_("CONTID"), _("NAME"), _("PARENT"), _("LEADER"), _("OWNER")};
        CtlTable *t = ctl_table_new(5, headers);
        r = t ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char contid[24], parent[24] = "-", leader[16], owner[300];
                snprintf(contid, sizeof(contid), "%" PRIu64, list[i].contid);
                if (list[i].parent != CTL_CONTID_UNSET)
                        snprintf(parent, sizeof(parent), "%" PRIu64, list[i].parent);
                snprintf(leader, sizeof(leader), "%" PRIu32, list[i].leader);
                format_user(list[i].owner, false, owner, sizeof(owner));
                /* The registrant chose the name. */
                char *name = ctl_escape(list[i].name ? list[i].name : "-");
                const char *row[] = {contid, name, parent, leader, owner};
                r = name ? ctl_table_add_row(t, row) : -ENOMEM;
                free(name);
        }
        if (r >= 0) {
                if (n > 0 || !o->legend)
                        ctl_table_print(t, stdout, o->legend);
                if (o->legend && n == 0)
                        puts(_("No containers."));
                else if (o->legend)
                        printf(ngettext("\n%zu container listed.\n", "\n%zu containers listed.\n",
                                        n),
                               n);
        }
        ctl_table_free(t);
        ctl_containers_free(list, n);
        return r < 0 ? ctl_call_failed(_("Cannot list the containers"), r, NULL) : EXIT_OK;
}

int ctl_container_run(sd_bus *bus, char **args, const CtlContainerOptions *o)
{
        if (strcmp(args[0], "register") == 0)
                return cmd_register(bus, args + 1, o);
        if (strcmp(args[0], "show") == 0)
                return cmd_show(bus, args + 1, o);
        return cmd_list(bus, o);
}
