// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptagsctl.c: the command line of ptags: reads and changes process tags
 * through ptagsd (org.ptags.Manager); options, commands and exit codes. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <libintl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-agent.h"
#include "ctl-bus.h"
#include "ctl-container.h"
#include "ctl-error.h"
#include "ctl-output.h"

#define _(s) gettext(s)

static struct {
        const char *address;
        bool json;
        bool legend;
        bool ask_password;
        bool keep;
        char **tags; /* exec --tag, NULL-terminated */
        size_t n_tags;
        const char *uuid; /* container register --uuid */
        const char *name; /* container register --name */
} arg = {.legend = true};

/* Whether all that was printed reached standard output, as coreutils'
 * close_stdout asks at exit: 0, or the errno of the failure (EIO when the
 * stream only knows that one happened). A full disk, or a pipe whose reader
 * is gone while SIGPIPE is ignored (as systemd starts services), would
 * otherwise look like success. */
static int stdout_error(void)
{
        errno = 0;
        if (fflush(stdout) == 0 && !ferror(stdout))
                return 0;
        return errno ? errno : EIO;
}

/* Says that standard output failed with @error; returns EXIT_FAILED. */
static int write_failed(int error)
{
        fprintf(stderr, "ptagsctl: %s: %s\n", _("Cannot write the output"), strerror(error));
        return EXIT_FAILED;
}

static int open_bus(sd_bus **ret)
{
        int r = ctl_bus_open(arg.address, arg.ask_password, ret);

        if (r < 0 && arg.address == NULL) {
                fprintf(stderr, "ptagsctl: %s: %s\n", _("Cannot connect to the system bus"),
                        strerror(-r));
                return EXIT_UNREACHABLE;
        }
        if (r < 0) {
                /* The bus the user named, malformed or empty included: sd-bus
                 * tells those apart from a bus that is not there only by an
                 * errno, so they are unreachable too, the address named. */
                char *shown = ctl_escape(arg.address);
                fputs("ptagsctl: ", stderr);
                fprintf(stderr, _("Cannot connect to the bus at '%s'"), shown ? shown : "?");
                fprintf(stderr, ": %s\n", strerror(-r));
                free(shown);
                return EXIT_UNREACHABLE;
        }
        return EXIT_OK;
}

static void print_json_tags(uint32_t pid, const CtlTagList *tags)
{
        printf("{\"pid\": %" PRIu32 ", \"tags\": ", pid);
        ctl_json_tag_list(stdout, tags);
        fputs("}\n", stdout);
}

static int print_tag_table(const CtlTagList *tags)
{
        const char *headers[] = {_("TAG"), _("KEEP"), _("VALUE")};
        CtlTable *t = ctl_table_new(3, headers);

        if (t == NULL || ctl_table_add_tags(t, NULL, tags) < 0) {
                ctl_table_free(t);
                fprintf(stderr, "ptagsctl: %s\n", strerror(ENOMEM));
                return EXIT_FAILED;
        }
        if (tags->n > 0 || !arg.legend)
                ctl_table_print(t, stdout, arg.legend);
        if (arg.legend) {
                if (tags->n == 0)
                        puts(_("No tags."));
                else
                        printf(ngettext("\n%zu tag listed.\n", "\n%zu tags listed.\n", tags->n),
                               tags->n);
        }
        ctl_table_free(t);
        return EXIT_OK;
}

/* The process the command line names in @s, opened into @ret (see
 * CtlTarget): EXIT_OK, or the exit code after saying why. */
static int open_target(sd_bus *bus, const char *s, bool allow_self, const char *what,
                       CtlTarget *ret)
{
        uint32_t pid;
        int r = ctl_parse_pid(s, allow_self, &pid);

        if (r)
                return r;
        r = ctl_target_open(bus, pid, ret);
        return r < 0 ? ctl_call_failed(what, r, NULL) : EXIT_OK;
}

/* --json after a change: the target's tags as read right after it. */
static int report_change(sd_bus *bus, const CtlTarget *target)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlTagList tags = {0};

        /* pid 0 is exec's own process, whose output is the command's. */
        if (!arg.json || target->pid == 0)
                return EXIT_OK;
        int r = ctl_get_tags(bus, target, &tags, &error);
        if (r < 0) {
                int code = ctl_call_failed(_("Cannot read the tags back"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        print_json_tags(target->pid, &tags);
        ctl_tag_list_clear(&tags);
        return EXIT_OK;
}

static int cmd_status(sd_bus *bus, char **args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlStatus s;
        int r = ctl_get_status(bus, &s, &error);

        if (r < 0) {
                int code = ctl_call_failed(_("Cannot read ptagsd's properties"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (arg.json) {
                fputs("{\"version\": ", stdout);
                ctl_json_string(stdout, s.version);
                fputs(", \"backend\": ", stdout);
                ctl_json_string(stdout, s.backend);
                fputs(", \"features\": [", stdout);
                for (size_t i = 0; s.features[i]; i++) {
                        fputs(i ? ", " : "", stdout);
                        ctl_json_string(stdout, s.features[i]);
                }
                printf("], \"max_tags\": %" PRIu32 ", \"max_tag_length\": %" PRIu32
                       ", \"max_value_length\": %" PRIu32 "}\n",
                       s.max_tags, s.max_tag_length, s.max_value_length);
        } else {
                char features[4096] = "", max_tags[16], max_tag[32], max_value[32];
                for (size_t i = 0; s.features[i]; i++) {
                        if (i)
                                strncat(features, " ", sizeof(features) - strlen(features) - 1);
                        strncat(features, s.features[i], sizeof(features) - strlen(features) - 1);
                }
                snprintf(max_tags, sizeof(max_tags), "%" PRIu32, s.max_tags);
                snprintf(max_tag, sizeof(max_tag), _("%" PRIu32 " bytes"), s.max_tag_length);
                snprintf(max_value, sizeof(max_value), _("%" PRIu32 " bytes"), s.max_value_length);
                const char *labels[] = {_("Version"),  _("Backend"),        _("Features"),
                                        _("Max tags"), _("Max tag length"), _("Max value length")};
                const char *values[] = {s.version, s.backend, features,
                                        max_tags,  max_tag,   max_value};
                ctl_print_fields(stdout, 6, labels, values);
        }
        ctl_status_clear(&s);
        return EXIT_OK;
}

static int cmd_list(sd_bus *bus, char **args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlTagList tags = {0};
        CtlTarget target;
        int r = open_target(bus, args[0], true, _("Cannot read the tags"), &target);

        if (r)
                return r;
        r = ctl_get_tags(bus, &target, &tags, &error);
        ctl_target_close(&target);
        if (r < 0) {
                int code = ctl_call_failed(_("Cannot read the tags"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (arg.json)
                print_json_tags(target.pid ? target.pid : (uint32_t)getpid(), &tags);
        else
                r = print_tag_table(&tags);
        ctl_tag_list_clear(&tags);
        return r;
}

static int cmd_peer(sd_bus *bus, char **args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlTagList tags = {0};
        int r = ctl_get_peer_tags(bus, args[0], &tags, &error);

        if (r < 0) {
                int code = ctl_call_failed(_("Cannot read the peer's tags"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (arg.json) {
                fputs("{\"bus_name\": ", stdout);
                ctl_json_string(stdout, args[0]);
                fputs(", \"tags\": ", stdout);
                ctl_json_tag_list(stdout, &tags);
                fputs("}\n", stdout);
        } else {
                r = print_tag_table(&tags);
        }
        ctl_tag_list_clear(&tags);
        return r;
}

/* An empty PATTERN means every tag to ptagsd, so an unset shell variable
 * ("ptagsctl remove $pid $tag") would remove them all: ptagsctl refuses
 * it, and a batch says "every tag" in so many words. */
static int pattern_arg_ok(const char *what, size_t len)
{
        if (len == 0)
                return ctl_invalid(what, _("an empty pattern would match every tag; to mean that, "
                                           "give the line to 'ptagsctl apply'"));
        return EXIT_OK;
}

static int cmd_check(sd_bus *bus, char **args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlTarget target;
        bool match = false;
        int r = ctl_check_utf8(_("Cannot check the tags"), args[1]);

        if (r == EXIT_OK)
                r = pattern_arg_ok(_("Cannot check the tags"), strlen(args[1]));

        if (r == EXIT_OK)
                r = open_target(bus, args[0], true, _("Cannot check the tags"), &target);
        if (r)
                return r;
        uint32_t pid = target.pid;
        r = ctl_has_tag(bus, &target, args[1], &match, &error);
        ctl_target_close(&target);
        if (r < 0) {
                int code = ctl_call_failed(_("Cannot check the tags"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (arg.json) {
                printf("{\"pid\": %" PRIu32 ", \"pattern\": ", pid ? pid : (uint32_t)getpid());
                ctl_json_string(stdout, args[1]);
                printf(", \"match\": %s}\n", match ? "true" : "false");
        }
        return match ? EXIT_OK : EXIT_NO_MATCH;
}

static int cmd_find(sd_bus *bus, char **args)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        CtlProcess *procs = NULL;
        size_t n = 0;
        int r = args[0] ? ctl_check_utf8(_("Cannot find tagged processes"), args[0]) : EXIT_OK;

        if (r)
                return r;
        r = ctl_find_tagged(bus, args[0] ? args[0] : "", &procs, &n, &error);
        if (r < 0) {
                int code = ctl_call_failed(_("Cannot find tagged processes"), r, &error);
                sd_bus_error_free(&error);
                return code;
        }
        if (arg.json) {
                fputs("{\"pattern\": ", stdout);
                ctl_json_string(stdout, args[0] ? args[0] : "");
                fputs(", \"processes\": [", stdout);
                for (size_t i = 0; i < n; i++) {
                        printf("%s{\"pid\": %" PRIu32 ", \"tags\": ", i ? ", " : "", procs[i].pid);
                        ctl_json_tag_list(stdout, &procs[i].tags);
                        fputc('}', stdout);
                }
                fputs("]}\n", stdout);
                ctl_processes_free(procs, n);
                return EXIT_OK;
        }
        const char *headers[] = {_("PID"), _("TAG"), _("KEEP"), _("VALUE")};
        CtlTable *t = ctl_table_new(4, headers);
        r = t ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char pid[16];
                snprintf(pid, sizeof(pid), "%" PRIu32, procs[i].pid);
                r = ctl_table_add_tags(t, pid, &procs[i].tags);
        }
        if (r >= 0) {
                if (n > 0 || !arg.legend)
                        ctl_table_print(t, stdout, arg.legend);
                if (arg.legend && n == 0)
                        puts(_("No process holds a matching tag."));
                else if (arg.legend)
                        printf(ngettext("\n%zu process listed.\n", "\n%zu processes listed.\n", n),
                               n);
        }
        ctl_table_free(t);
        ctl_processes_free(procs, n);
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

/* Runs one change of @lines on @target with the polkit agent up; reports it
 * under --json. */
static int change(sd_bus *bus, const CtlTarget *target, const char *what, char *const *lines)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;

        ctl_agent_open(arg.ask_password, arg.address);
        int r = ctl_apply(bus, target, lines, &error);
        ctl_agent_close();
        r = r < 0 ? ctl_call_failed(what, r, &error) : report_change(bus, target);
        sd_bus_error_free(&error);
        return r;
}

/* change() on the process the command line names in @pid_arg. */
static int change_named(sd_bus *bus, const char *pid_arg, const char *what, char *const *lines)
{
        CtlTarget target;
        int r = open_target(bus, pid_arg, false, what, &target);

        if (r)
                return r;
        r = change(bus, &target, what, lines);
        ctl_target_close(&target);
        return r;
}

/* Whether @given (its first @len bytes), a TAG (@is_tag) or PATTERN
 * argument, keeps its meaning as part of a command line. ptagsctl sends
 * lines (ApplyFd takes a pidfd, the single-change methods do not), and the
 * line grammar reads more into an argument than those methods do: a
 * leading '@' turns "-x" into clearing a keep flag, and "+@" takes what
 * follows for a pattern, so an empty TAG or one with '*' would set the keep
 * flag of every matching tag; an '=' in set's TAG would move the split
 * between tag and value. None of these is a valid tag, and ptagsd refuses
 * each in the arguments of its single-change methods: so does ptagsctl. */
static int line_arg_ok(const char *what, const char *given, size_t len, bool is_tag)
{
        if (len > 0 && given[0] == '@')
                return ctl_invalid(what,
                                   _("'%.*s' starts with '@', which no tag or pattern does (the "
                                     "keep flag is --keep's, keep's and unkeep's)"),
                                   (int)len, given);
        if (!is_tag)
                return pattern_arg_ok(what, len);
        if (len == 0)
                return ctl_invalid(what, _("a tag cannot be empty"));
        for (const char *c = "*="; *c; c++)
                if (memchr(given, *c, len) != NULL)
                        return ctl_invalid(what, _("'%.*s' contains '%c', which no tag does"),
                                           (int)len, given, *c);
        return EXIT_OK;
}

/* One change of a single line: @prefix, the TAG (@is_tag) or PATTERN
 * argument and, when @value is not NULL, "=" @value. */
static int single_change(sd_bus *bus, char **args, const char *what, const char *prefix,
                         bool is_tag, const char *value)
{
        const char *given = args[1];
        char *line = NULL;
        int r = ctl_check_utf8(what, given);

        if (r == EXIT_OK && value != NULL)
                r = ctl_check_utf8(what, value);
        if (r == EXIT_OK)
                r = line_arg_ok(what, given, strlen(given), is_tag);
        if (r)
                return r;
        if ((value ? asprintf(&line, "%s%s=%s", prefix, given, value)
                   : asprintf(&line, "%s%s", prefix, given)) < 0)
                return ctl_call_failed(what, -ENOMEM, NULL);
        char *lines[] = {line, NULL};
        r = change_named(bus, args[0], what, lines);
        free(line);
        return r;
}

static int cmd_add(sd_bus *bus, char **args)
{
        const char *what = _("Cannot add the tag");
        char *tag = args[1], *eq = strchr(tag, '=');

        if (eq == NULL)
                return single_change(bus, args, what, arg.keep ? "+@" : "+", true, NULL);
        /* TAG=VALUE: one atomic batch, so the tag never exists without it. */
        int r = ctl_check_utf8(what, tag);
        if (r == EXIT_OK)
                r = line_arg_ok(what, tag, (size_t)(eq - tag), true);
        if (r)
                return r;
        char *add = NULL, *set = NULL;
        if (asprintf(&add, "+%s%.*s", arg.keep ? "@" : "", (int)(eq - tag), tag) < 0)
                add = NULL;
        if (asprintf(&set, "!%s", tag) < 0)
                set = NULL;
        if (add == NULL || set == NULL) {
                free(add);
                free(set);
                return ctl_call_failed(what, -ENOMEM, NULL);
        }
        char *lines[] = {add, set, NULL};
        r = change_named(bus, args[0], what, lines);
        free(add);
        free(set);
        return r;
}

static int cmd_remove(sd_bus *bus, char **args)
{
        return single_change(bus, args, _("Cannot remove the tags"), "-", false, NULL);
}

static int cmd_set(sd_bus *bus, char **args)
{
        return single_change(bus, args, _("Cannot set the value"), "!", true, args[2]);
}

static int cmd_keep(sd_bus *bus, char **args)
{
        return single_change(bus, args, _("Cannot set the keep flag"), "+@", false, NULL);
}

static int cmd_unkeep(sd_bus *bus, char **args)
{
        return single_change(bus, args, _("Cannot clear the keep flag"), "-@", false, NULL);
}

/* The lines of @path ("-": stdin), without their newlines. */
static int read_lines(const char *path, char ***ret)
{
        FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
        char *text = NULL, **lines = NULL;
        size_t size = 0, n = 0;
        long nonchar = 0;

        if (f == NULL) {
                fprintf(stderr, "ptagsctl: %s: %s\n", path, strerror(errno));
                return EXIT_INVALID;
        }
        /* The daemon takes 1 MiB at most; read a little more so it, not
         * we, says what is too big, yet never swallow an endless stream. */
        const size_t limit = 2u << 20;
        int error = ENOMEM;
        text = malloc(limit + 1);
        if (text != NULL) {
                size = fread(text, 1, limit + 1, f);
                /* Why the read failed (a directory: EISDIR), before fclose. */
                error = ferror(f) ? (errno ? errno : EIO) : 0;
        }
        if (f != stdin)
                fclose(f);
        if (error != 0 || size > limit) {
                free(text);
                fprintf(stderr, "ptagsctl: %s: %s\n", path,
                        error ? strerror(error) : _("more than 2 MiB of commands"));
                return EXIT_INVALID;
        }
        if (memchr(text, '\0', size) != NULL) {
                free(text);
                fprintf(stderr, "ptagsctl: %s: %s\n", path, _("the commands contain a NUL byte"));
                return EXIT_INVALID;
        }
        text[size] = '\0';
        size_t max_lines = 2;
        for (size_t i = 0; i < size; i++)
                max_lines += text[i] == '\n';
        lines = calloc(max_lines, sizeof(char *));
        for (char *p = text; lines != NULL && p < text + size;) {
                char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                lines[n] = strndup(p, len);
                if (lines[n++] == NULL) {
                        ctl_strv_free(lines);
                        lines = NULL;
                } else if (!ctl_utf8_valid(lines[n - 1])) {
                        /* ptagsd's errors name the line: so does this one. */
                        char *shown = ctl_escape(lines[n - 1]);
                        int r = ctl_invalid(path, _("line %zu (\"%s\") is not valid UTF-8"), n,
                                            shown ? shown : "?");
                        free(shown);
                        free(text);
                        ctl_strv_free(lines);
                        return r;
                } else if ((nonchar = ctl_noncharacter(lines[n - 1])) != 0) {
                        char *shown = ctl_escape(lines[n - 1]);
                        int r = ctl_invalid(path,
                                            _("line %zu (\"%s\") holds U+%04lX, a Unicode "
                                              "noncharacter, which ptagsd does not take"),
                                            n, shown ? shown : "?", nonchar);
                        free(shown);
                        free(text);
                        ctl_strv_free(lines);
                        return r;
                }
                p += len + 1;
        }
        free(text);
        if (lines == NULL)
                return ctl_call_failed(path, -ENOMEM, NULL);
        *ret = lines;
        return EXIT_OK;
}

static int cmd_apply(sd_bus *bus, char **args)
{
        char **lines = NULL;
        int r = read_lines(args[1] ? args[1] : "-", &lines);

        if (r)
                return r;
        r = change_named(bus, args[0], _("Cannot apply the commands"), lines);
        ctl_strv_free(lines);
        return r;
}

static void monitor_ready(void *userdata)
{
        fprintf(stderr, "%s\n", _("Monitoring tag and container changes; press Ctrl+C to stop."));
}

/* Each event is flushed as it happens, one per line even through a pipe;
 * one that cannot be written ends the monitor (@userdata: its errno). */
static int monitor_flush(void *userdata)
{
        int error = stdout_error();

        *(int *)userdata = error;
        return -error;
}

static int monitor_tags_changed(const CtlTagsChanged *event, void *userdata)
{
        if (arg.json) {
                printf("{\"event\": \"tags-changed\", \"pid\": %" PRIu32 ", \"lines\": [",
                       event->pid);
                for (size_t i = 0; event->lines[i]; i++) {
                        fputs(i ? ", " : "", stdout);
                        ctl_json_string(stdout, event->lines[i]);
                }
                fputs("], \"tags\": ", stdout);
                ctl_json_tag_list(stdout, &event->tags);
                fputs("}\n", stdout);
        } else {
                printf("%" PRIu32 ":", event->pid);
                for (size_t i = 0; event->lines[i]; i++) {
                        putchar(' ');
                        /* No change is spelled with '#': ptagsd wrote it. */
                        if (event->lines[i][0] == '#')
                                ctl_print_comment(stdout, event->lines[i]);
                        else
                                ctl_print_escaped(stdout, event->lines[i]);
                }
                putchar('\n');
        }
        return monitor_flush(userdata);
}

static int monitor_container_registered(uint64_t contid, uint32_t pid,
                                        const CtlContainer *container, void *userdata)
{
        if (arg.json) {
                printf("{\"event\": \"container-registered\", \"contid\": %" PRIu64
                       ", \"pid\": %" PRIu32 ", \"container\": ",
                       contid, pid);
                ctl_json_container(stdout, container);
                fputs("}\n", stdout);
        } else {
                printf(_("%" PRIu32 ": registered in container %" PRIu64 "\n"), pid, contid);
        }
        return monitor_flush(userdata);
}

static int monitor_container_removed(uint64_t contid, void *userdata)
{
        if (arg.json)
                printf("{\"event\": \"container-removed\", \"contid\": %" PRIu64 "}\n", contid);
        else
                printf(_("Container %" PRIu64 " removed\n"), contid);
        return monitor_flush(userdata);
}

static int cmd_monitor(sd_bus *bus, char **args)
{
        static const CtlMonitorHandlers handlers = {
                .ready = monitor_ready,
                .tags_changed = monitor_tags_changed,
                .container_registered = monitor_container_registered,
                .container_removed = monitor_container_removed,
        };
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int write_error = 0;
        /* Runs until interrupted; returning means ptagsd was not there, the
         * bus went away, or standard output did. */
        int r = ctl_monitor(bus, &handlers, &write_error, &error);

        if (write_error != 0)
                return write_failed(write_error);
        r = ctl_call_failed(_("Cannot monitor tag changes"), r < 0 ? r : -ECONNRESET, &error);
        sd_bus_error_free(&error);
        return r;
}

static CtlContainerOptions container_options(void)
{
        return (CtlContainerOptions){arg.json,    arg.legend, arg.ask_password,
                                     arg.address, arg.uuid,   arg.name};
}

static int cmd_container(sd_bus *bus, char **args)
{
        CtlContainerOptions o = container_options();

        return ctl_container_run(bus, args, &o);
}

/* exec: tag this very process through ptagsd, named by its own pidfd (the
 * bus peer may be a bridge process, which pid 0 would name; ptagsd still
 * tells polkit "self" when the caller is this process), with kept tags,
 * which survive the exec. */
static int cmd_exec(sd_bus *bus, char **command)
{
        char **lines = calloc(2 * arg.n_tags + 1, sizeof(char *));
        size_t n = 0;
        int r = EXIT_OK;

        for (size_t i = 0; lines != NULL && i < arg.n_tags; i++) {
                const char *tag = arg.tags[i], *eq = strchr(tag, '=');
                int len = eq ? (int)(eq - tag) : (int)strlen(tag);
                if ((r = ctl_check_utf8(_("Cannot tag this process"), tag)) ||
                    (r = line_arg_ok(_("Cannot tag this process"), tag, (size_t)len, true))) {
                        ctl_strv_free(lines);
                        return r;
                }
                if (asprintf(&lines[n++], "+@%.*s", len, tag) < 0 ||
                    (eq && asprintf(&lines[n++], "!%s", tag) < 0)) {
                        lines[n - 1] = NULL;
                        ctl_strv_free(lines);
                        lines = NULL;
                }
        }
        if (lines == NULL)
                return ctl_call_failed(_("Cannot tag this process"), -ENOMEM, NULL);
        CtlTarget self = {0, -1};
        int opened = n > 0 ? ctl_target_open(bus, (uint32_t)getpid(), &self) : 0;
        if (opened == -EOPNOTSUPP) {
                fprintf(stderr, "ptagsctl: %s\n",
                        _("Cannot tag this process: the bus connection cannot carry a file "
                          "descriptor naming it (a bridge?); COMMAND was not run"));
                r = EXIT_FAILED;
        } else if (opened < 0) {
                r = ctl_call_failed(_("Cannot tag this process"), opened, NULL);
        } else if (n > 0) {
                self.pid = 0; /* as the command line named it: no --json report */
                r = change(bus, &self, _("Cannot tag this process"), lines);
        }
        ctl_target_close(&self);
        ctl_strv_free(lines);
        if (r != EXIT_OK)
                return r;
        /* The bus socket is close-on-exec; the call has been answered. */
        fflush(NULL);
        execvp(command[0], command);
        fprintf(stderr, "ptagsctl: %s: %s\n", command[0], strerror(errno));
        return errno == ENOENT ? EXIT_EXEC_NOT_FOUND : EXIT_EXEC_FAILED;
}

static void help(void)
{
        fputs(_("ptagsctl [OPTIONS...] COMMAND ...\n"
                "\n"
                "Read and change the secure tags of processes through ptagsd.\n"
                "\n"
                "Commands:\n"
                "  status                      Show ptagsd's version, backend and limits\n"
                "  list PID|self               List the tags of a process\n"
                "  add PID TAG[=VALUE]         Add a tag (with --keep: kept across exec)\n"
                "  remove PID PATTERN          Remove the matching tags\n"
                "  set PID TAG VALUE           Set the value of a tag (\"\" clears it)\n"
                "  keep PID PATTERN            Set the keep flag of the matching tags\n"
                "  unkeep PID PATTERN          Clear the keep flag of the matching tags\n"
                "  apply PID [FILE|-]          Apply kernel command lines, all or nothing\n"
                "  check PID|self PATTERN      Exit 0 when a matching tag is held, else 1\n"
                "  peer BUS_NAME               List the tags of a bus peer's process\n"
                "  find [PATTERN]              List the processes holding a matching tag\n"
                "  monitor                     Print every tag and container change\n"
                "  exec [--tag TAG[=VALUE]]... -- COMMAND [ARG...]\n"
                "                              Tag this process (kept tags), run COMMAND\n"
                "  container register PID CONTID [--uuid=UUID] [--name=NAME]\n"
                "                              Give a process an audit container ID\n"
                "  container show CONTID|pid:PID|self\n"
                "                              Show a container, or a process's container\n"
                "  container list              List the containers\n"
                "\n"
                "Options:\n"
                "  -h --help                   Show this help\n"
                "     --version                Show the version\n"
                "     --json                   Print JSON (see ptagsctl(1) for each shape)\n"
                "     --no-legend              Print no column headers and no footer\n"
                "     --no-ask-password        Never ask for a password\n"
                "     --address=ADDRESS        Use this bus instead of the system bus\n"
                "     --keep                   add: set the keep flag\n"
                "     --tag=TAG[=VALUE]        exec: give COMMAND this kept tag\n"
                "     --uuid=UUID              container register: the container's UUID\n"
                "     --name=NAME              container register: the container's name\n"
                "\n"
                "See the ptagsctl(1) and ptags(7) manual pages for details.\n"),
              stdout);
}

/* Long options have codes above any character, so optopt tells an
 * unusable long option (its code, or 0 when unknown) from a short one. */
enum {
        OPT_HELP = 0x100,
        OPT_VERSION,
        OPT_JSON,
        OPT_NO_LEGEND,
        OPT_NO_ASK_PASSWORD,
        OPT_ADDRESS,
        OPT_KEEP,
        OPT_TAG,
        OPT_UUID,
        OPT_NAME,
};

/* parse_options(): --help or --version was answered; nothing to run. */
#define PARSED_ANSWERED (-1)

typedef int (*CommandFunc)(sd_bus *bus, char **args);

/* What the first argument is, checked before connecting, so a bad command
 * line fails with EXIT_USAGE whether or not a bus is there. */
typedef enum {
        FIRST_ANY,
        FIRST_PID,
        FIRST_PID_OR_SELF,
} FirstArg;

static const struct {
        const char *name;
        int min_args, max_args;
        FirstArg first;
        CommandFunc func;
} commands[] = {
        {"status", 0, 0, FIRST_ANY, cmd_status},
        {"list", 1, 1, FIRST_PID_OR_SELF, cmd_list},
        {"add", 2, 2, FIRST_PID, cmd_add},
        {"remove", 2, 2, FIRST_PID, cmd_remove},
        {"set", 3, 3, FIRST_PID, cmd_set},
        {"keep", 2, 2, FIRST_PID, cmd_keep},
        {"unkeep", 2, 2, FIRST_PID, cmd_unkeep},
        {"apply", 1, 2, FIRST_PID, cmd_apply},
        {"check", 2, 2, FIRST_PID_OR_SELF, cmd_check},
        {"peer", 1, 1, FIRST_ANY, cmd_peer},
        {"find", 0, 1, FIRST_ANY, cmd_find},
        {"monitor", 0, 0, FIRST_ANY, cmd_monitor},
        {"exec", 1, -1, FIRST_ANY, cmd_exec},
        {"container", 0, -1, FIRST_ANY, cmd_container},
};

/* Parses the options of @argv with @optstring; @after_command: argv[0] is
 * the command word, and these options come after it. */
static int parse_some_options(int argc, char **argv, const char *optstring, bool after_command)
{
        static const struct option options[] = {
                {"help", no_argument, NULL, OPT_HELP},
                {"version", no_argument, NULL, OPT_VERSION},
                {"json", no_argument, NULL, OPT_JSON},
                {"no-legend", no_argument, NULL, OPT_NO_LEGEND},
                {"no-ask-password", no_argument, NULL, OPT_NO_ASK_PASSWORD},
                {"address", required_argument, NULL, OPT_ADDRESS},
                {"keep", no_argument, NULL, OPT_KEEP},
                {"tag", required_argument, NULL, OPT_TAG},
                {"uuid", required_argument, NULL, OPT_UUID},
                {"name", required_argument, NULL, OPT_NAME},
                {},
        };
        int c, r;

        opterr = 0;
        while ((c = getopt_long(argc, argv, optstring, options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                case OPT_HELP:
                case OPT_VERSION:
                        /* After the command, most likely a TAG or PATTERN
                         * from a variable: answering would exit 0, which
                         * means "match" to check and "done" to remove. */
                        if (after_command)
                                return ctl_usage_error(
                                        _("Option '%s' must come before the command; a TAG or "
                                          "PATTERN that starts with '-' goes after '--'."),
                                        c == 'h' ? "-h" : argv[optind - 1]);
                        if (c == OPT_VERSION)
                                printf("ptagsctl %s\n", PACKAGE_VERSION);
                        else
                                help();
                        return PARSED_ANSWERED;
                case OPT_JSON:
                        arg.json = true;
                        break;
                case OPT_NO_LEGEND:
                        arg.legend = false;
                        break;
                case OPT_NO_ASK_PASSWORD:
                        arg.ask_password = false;
                        break;
                case OPT_ADDRESS:
                        arg.address = optarg;
                        break;
                case OPT_KEEP:
                        arg.keep = true;
                        break;
                case OPT_UUID:
                        arg.uuid = optarg;
                        break;
                case OPT_NAME:
                        arg.name = optarg;
                        break;
                case OPT_TAG: {
                        char **tags = reallocarray(arg.tags, arg.n_tags + 2, sizeof(char *));
                        if (tags == NULL)
                                return ctl_call_failed("--tag", -ENOMEM, NULL);
                        arg.tags = tags;
                        arg.tags[arg.n_tags++] = optarg;
                        arg.tags[arg.n_tags] = NULL;
                        break;
                }
                case '?': {
                        if (optopt > 0 && optopt < 0x7f && optopt > ' ')
                                return ctl_usage_error(_("Option '-%c' is unknown or lacks its "
                                                         "argument."),
                                                       optopt);
                        /* A short option byte that does not print (glibc gives
                         * one from 0x80 up as a negative char). */
                        if (optopt < 0 || (optopt > 0 && optopt < OPT_HELP)) {
                                char shown[8];
                                snprintf(shown, sizeof(shown), "-\\x%02x",
                                         (unsigned)(unsigned char)optopt);
                                return ctl_usage_error(_("Option '%s' is unknown or lacks its "
                                                         "argument."),
                                                       shown);
                        }
                        const char *given = argv[optind - 1];
                        /* A long option: optopt holds its code, no character to
                         * print, so name it as typed, without any "=VALUE". */
                        char *name = strndup(given, strcspn(given, "="));
                        if (name == NULL)
                                return ctl_call_failed(given, -ENOMEM, NULL);
                        r = optopt != 0 && strchr(given, '=') != NULL
                                    ? ctl_usage_error(_("Option '%s' takes no argument."), name)
                                    : ctl_usage_error(_("Option '%s' is unknown or lacks its "
                                                        "argument."),
                                                      name);
                        free(name);
                        return r;
                }
                default:
                        return ctl_usage_error(_("Unexpected option."));
                }
        }
        return EXIT_OK;
}

/* The options of @argv up to @argc (the first "--"); the command word and
 * its operands go to @args (@n_args of them). Options may follow the
 * command, as GNU getopt allows and ptagsctl(1) shows ("add PID TAG
 * --keep"), except --help and --version, which are answered before the
 * command only. */
static int parse_options(int argc, char **argv, char **args, size_t *n_args)
{
        /* Up to the command word ('+': stop at the first operand). */
        optind = 0;
        int r = parse_some_options(argc, argv, "+h", false);
        if (r || optind >= argc)
                return r;
        int command = optind;
        /* The rest, options taken from among the operands; getopt skips
         * the command word as the argv[0] of this second run. */
        optind = 0;
        r = parse_some_options(argc - command, argv + command, "h", true);
        if (r)
                return r;
        args[(*n_args)++] = argv[command];
        for (int i = command + optind; i < argc; i++)
                args[(*n_args)++] = argv[i];
        return EXIT_OK;
}

/* Checks the command line @args (@n_args of them; the first @tail before
 * any "--", and whether a command follows it: @after_dash) before
 * connecting, then runs the command. */
static int run_command(char **args, size_t n_args, size_t tail, bool after_dash)
{
        int r;

        if (n_args == 0)
                return ctl_usage_error(_("A command is needed."));
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                if (strcmp(args[0], commands[i].name) != 0)
                        continue;
                int given = (int)n_args - 1;
                if (given < commands[i].min_args ||
                    (commands[i].max_args >= 0 && given > commands[i].max_args))
                        return ctl_usage_error(_("Wrong number of arguments for '%s'."), args[0]);
                if (arg.keep && commands[i].func != cmd_add)
                        return ctl_usage_error(_("--keep belongs to 'add'."));
                if (arg.n_tags > 0 && commands[i].func != cmd_exec)
                        return ctl_usage_error(_("--tag belongs to 'exec'."));
                if (commands[i].func == cmd_exec && (tail != 1 || !after_dash))
                        return ctl_usage_error(_("exec runs the command given after '--'."));
                if ((arg.uuid || arg.name) && commands[i].func != cmd_container)
                        return ctl_usage_error(
                                _("--uuid and --name belong to 'container register'."));
                CtlContainerOptions o = container_options();
                if (commands[i].func == cmd_container && (r = ctl_container_check(args + 1, &o)))
                        return r;
                uint32_t pid;
                if (commands[i].first != FIRST_ANY &&
                    (r = ctl_parse_pid(args[1], commands[i].first == FIRST_PID_OR_SELF, &pid)))
                        return r;
                sd_bus *bus = NULL;
                r = open_bus(&bus);
                if (r == EXIT_OK)
                        r = commands[i].func(bus, args + 1);
                sd_bus_flush_close_unref(bus);
                return r;
        }
        return ctl_usage_error(_("Unknown command '%s'."), args[0]);
}

/* The exit code @r of a command that printed its answer, unless standard
 * output failed (checked last, as coreutils' close_stdout does): a command
 * that failed otherwise has said why already. */
static int finish(int r)
{
        int error = r == EXIT_OK || r == EXIT_NO_MATCH ? stdout_error() : 0;

        return error ? write_failed(error) : r;
}

int main(int argc, char **argv)
{
        char **args;
        size_t n_args = 0;
        int r;

        setlocale(LC_ALL, "");
        bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
        textdomain(GETTEXT_PACKAGE);
        /* Asking needs someone to answer: a terminal, as systemctl decides. */
        arg.ask_password = isatty(STDIN_FILENO);

        /* Options end at the first "--": what follows is exec's command (or
         * operands that look like options, e.g. a tag starting with '-'). */
        int dash = 1;
        while (dash < argc && strcmp(argv[dash], "--") != 0)
                dash++;
        args = calloc(argc + 1, sizeof(char *));
        if (args == NULL)
                return EXIT_FAILED;
        r = parse_options(dash, argv, args, &n_args);
        if (r) {
                free(args);
                return r == PARSED_ANSWERED ? finish(EXIT_OK) : r;
        }
        size_t tail = n_args;
        for (int i = dash + 1; i < argc; i++)
                args[n_args++] = argv[i];
        r = run_command(args, n_args, tail, dash < argc - 1);
        free(args);
        return finish(r);
}
