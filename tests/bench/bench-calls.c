// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* bench-calls.c: what each org.ptags.Manager call costs a client, as ratios to the bus floor
 * (Peer.Ping to ptagsd) measured interleaved in the same run. Started by bench_world.py. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define NAME  "org.ptags.Manager"
#define PATH  "/org/ptags/Manager"
#define IFACE "org.ptags.Manager"

typedef struct {
        const char *address;
        uint32_t target;     /* 10 tags, changed by the root rows */
        uint32_t own_target; /* nobody's own process, for the polkit row */
        int rounds;
        double seconds; /* throughput rows */
} options;

static options opt;

/* Where the calls go: ptagsd, or a reference service (bench-echo-*). */
static const char *dest = NAME;

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static sd_bus *connect_bus(void)
{
        sd_bus *bus = NULL;
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, opt.address) < 0 ||
            sd_bus_set_bus_client(bus, 1) < 0 || sd_bus_start(bus) < 0) {
                fprintf(stderr, "bench-calls: cannot connect to %s\n", opt.address);
                exit(1);
        }
        return bus;
}

static void must(int r, sd_bus_error *e, const char *what)
{
        if (r < 0) {
                fprintf(stderr, "bench-calls: %s: %s\n", what,
                        e && e->message ? e->message : strerror(-r));
                exit(1);
        }
}

/* One call; the reply is dropped. */
typedef void (*call_fn)(sd_bus *bus, int i);

static void call_ping(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        must(sd_bus_call_method(bus, dest, PATH, "org.freedesktop.DBus.Peer", "Ping", &e, NULL, ""),
             &e, "Ping");
}

static void call_version(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        char *v = NULL;
        must(sd_bus_get_property_string(bus, dest, PATH, IFACE, "Version", &e, &v), &e,
             "Get Version");
        free(v);
}

static void call_get_tags(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL;
        must(sd_bus_call_method(bus, dest, PATH, IFACE, "GetTags", &e, &m, "u", opt.target), &e,
             "GetTags");
        sd_bus_message_unref(m);
}

static void call_has_tag(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        must(sd_bus_call_method(bus, dest, PATH, IFACE, "HasTag", &e, NULL, "us", opt.target,
                                "bench:t5"),
             &e, "HasTag");
}

static void call_peer_has_tag(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *me = NULL;
        sd_bus_get_unique_name(bus, &me);
        must(sd_bus_call_method(bus, dest, PATH, IFACE, "PeerHasTag", &e, NULL, "ss", me,
                                "app:camera"),
             &e, "PeerHasTag");
}

static void find_tagged(sd_bus *bus, const char *pattern)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL;
        must(sd_bus_call_method(bus, dest, PATH, IFACE, "FindTagged", &e, &m, "s", pattern), &e,
             "FindTagged");
        sd_bus_message_unref(m);
}

static void call_find_100(sd_bus *bus, int i)
{
        find_tagged(bus, "group:hundred");
}

/* Tasks (threads) on the machine: what a search walks. */
static int count_tasks(void)
{
        DIR *proc = opendir("/proc");
        struct dirent *de;
        int n = 0;
        while (proc && (de = readdir(proc)) != NULL) {
                char path[300];
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/task", de->d_name);
                DIR *tasks = opendir(path);
                while (tasks && (de = readdir(tasks)) != NULL)
                        n += de->d_name[0] != '.';
                if (tasks)
                        closedir(tasks);
        }
        if (proc)
                closedir(proc);
        return n;
}

static void call_find_none(sd_bus *bus, int i)
{
        find_tagged(bus, "group:nobody");
}

static void call_find_1000(sd_bus *bus, int i)
{
        find_tagged(bus, "group:all");
}

/* Alternating add and remove, so every call is a real change. */
static void change(sd_bus *bus, uint32_t pid, int i, const char *tag)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = i % 2 == 0 ? sd_bus_call_method(bus, dest, PATH, IFACE, "AddTag", &e, NULL, "usb",
                                                pid, tag, 0)
                           : sd_bus_call_method(bus, dest, PATH, IFACE, "RemoveTag", &e, NULL, "us",
                                                pid, tag);
        must(r, &e, i % 2 == 0 ? "AddTag" : "RemoveTag");
}

static void call_root_change(sd_bus *bus, int i)
{
        change(bus, opt.target, i, "bench:flip");
}

static void call_apply(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        char lines[10][32];
        const char *v[10];
        for (int k = 0; k < 10; k++) {
                snprintf(lines[k], sizeof(lines[k]), "%sbench:a%d", i % 2 == 0 ? "+" : "-", k);
                v[k] = lines[k];
        }
        must(sd_bus_call_method(bus, dest, PATH, IFACE, "Apply", &e, NULL, "uas", opt.target, 10,
                                v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]),
             &e, "Apply");
}

static void call_polkit_change(sd_bus *bus, int i)
{
        change(bus, opt.own_target, i, "bench:mine");
}

/* polkitd itself answering a check about this caller: the polkit floor.
 * Only trusted callers may pass details, so this one passes none (the rule
 * then says no, at about the same cost). */
static void call_polkit_floor(sd_bus *bus, int i)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *me = NULL;
        sd_bus_get_unique_name(bus, &me);
        must(sd_bus_call_method(bus, "org.freedesktop.PolicyKit1",
                                "/org/freedesktop/PolicyKit1/Authority",
                                "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization", &e,
                                NULL, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", me,
                                "org.ptags.tag.add", 0, 0, ""),
             &e, "CheckAuthorization");
}

/* The polkit rows' floor, taken in one go so it stays interleaved with the
 * measured call: polkitd's own answer (whose speed drifts over a run), and
 * a Ping to the service measured. */
static void call_polkit_floor_and_ping(sd_bus *bus, int i)
{
        call_polkit_floor(bus, i);
        call_ping(bus, i);
}

/* Answer what the daemon sent us meanwhile (its Peer.Ping, by which it
 * learns that we read our replies), as any client with an event loop does. */
static void dispatch(sd_bus *bus)
{
        while (sd_bus_process(bus, NULL) > 0)
                ;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
        return v[(int)floor(p * (n - 1))];
}

/* PTAGS_BENCH_ROWS=TEXT runs only the rows whose label contains TEXT (for a
 * profiler attached to ptagsd); unset, every row runs. */
static bool wanted(const char *label)
{
        const char *only = getenv("PTAGS_BENCH_ROWS");
        return only == NULL || *only == '\0' || strstr(label, only) != NULL;
}

/* Floor and measured call alternate, so both see the same load. */
static void row(sd_bus *bus, const char *label, call_fn floor_fn, call_fn fn, int rounds)
{
        if (!wanted(label))
                return;
        double *f = calloc(rounds, sizeof(double)), *m = calloc(rounds, sizeof(double));
        for (int i = 0; i < rounds / 20 + 2; i++) { /* warm-up */
                floor_fn(bus, i);
                fn(bus, i);
                dispatch(bus);
        }
        for (int i = 0; i < rounds; i++) {
                double t0 = now_us();
                floor_fn(bus, i);
                double t1 = now_us();
                fn(bus, i);
                double t2 = now_us();
                f[i] = t1 - t0;
                m[i] = t2 - t1;
                dispatch(bus); /* outside the timed calls */
        }
        qsort(f, rounds, sizeof(double), cmp_double);
        qsort(m, rounds, sizeof(double), cmp_double);
        double floor_med = pct(f, rounds, 0.5);
        printf("%-44s %9.1f %9.1f %9.1f %9.1f %7.2fx\n", label, pct(m, rounds, 0.5),
               pct(m, rounds, 0.1), pct(m, rounds, 0.9), floor_med,
               pct(m, rounds, 0.5) / floor_med);
        fflush(stdout);
        free(f);
        free(m);
}

/* The median of @fn alone. */
static double median_of(sd_bus *bus, call_fn fn, int rounds)
{
        double *v = calloc(rounds, sizeof(double));
        for (int i = 0; i < rounds; i++) {
                double t0 = now_us();
                fn(bus, i);
                v[i] = now_us() - t0;
                dispatch(bus);
        }
        qsort(v, rounds, sizeof(double), cmp_double);
        double med = pct(v, rounds, 0.5);
        free(v);
        return med;
}

/* CPU seconds a process has used so far (every thread), or -1. */
static double cpu_seconds(pid_t pid)
{
        char path[64], text[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        if (f == NULL)
                return -1;
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        const char *p = strrchr(text, ')'); /* the name may hold spaces */
        unsigned long utime = 0, stime = 0;
        if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                                &utime, &stime) != 2)
                return -1;
        return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

static double children_cpu_seconds(void)
{
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The pid of the connection owning @name, or 0. */
static pid_t owner_pid(sd_bus *bus, const char *name)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL;
        uint32_t pid = 0;
        if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "GetConnectionUnixProcessID", &e, &m, "s",
                               name) >= 0)
                sd_bus_message_read(m, "u", &pid);
        sd_bus_message_unref(m);
        sd_bus_error_free(&e);
        return (pid_t)pid;
}

/* What one throughput run measured: calls per second, and the CPU each
 * party spent per call, in microseconds (where the throughput goes). */
typedef struct {
        double rate;
        double server_us, bus_us, clients_us;
} load;

static pid_t ptagsd_pid, bus_pid;
static pid_t server_pid; /* whose CPU the throughput rows count: dest's */

/* Calls per second of @clients processes each looping @fn (each on its own
 * connection; @distinct: each client its own target pid, from @pids). */
static load throughput(call_fn fn, int clients, const uint32_t *pids)
{
        uint64_t *counts = mmap(NULL, sizeof(uint64_t) * clients, PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        int go[2];
        if (pipe(go) < 0)
                exit(1);
        pid_t kids[64];
        for (int c = 0; c < clients; c++) {
                kids[c] = fork();
                if (kids[c] == 0) {
                        close(go[1]);
                        if (pids)
                                opt.target = pids[c];
                        sd_bus *bus = connect_bus();
                        char x;
                        if (read(go[0], &x, 1) < 0)
                                _exit(1);
                        double end = now_us() + opt.seconds * 1e6;
                        uint64_t n = 0;
                        while (now_us() < end) {
                                fn(bus, (int)n++);
                                dispatch(bus);
                        }
                        counts[c] = n;
                        sd_bus_flush_close_unref(bus);
                        _exit(0);
                }
        }
        close(go[0]);
        usleep(200000); /* every client connected */
        double d0 = cpu_seconds(server_pid), b0 = cpu_seconds(bus_pid);
        double c0 = children_cpu_seconds();
        close(go[1]);
        uint64_t total = 0;
        for (int c = 0; c < clients; c++) {
                int st;
                waitpid(kids[c], &st, 0);
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        fprintf(stderr, "bench-calls: a throughput client failed\n");
                        exit(1);
                }
                total += counts[c];
        }
        /* Clients' connection set-up and teardown count too; both are small
         * against seconds of calls. */
        double calls = total > 0 ? (double)total : 1;
        load l = {
                .rate = total / opt.seconds,
                .server_us = (cpu_seconds(server_pid) - d0) * 1e6 / calls,
                .bus_us = (cpu_seconds(bus_pid) - b0) * 1e6 / calls,
                .clients_us = (children_cpu_seconds() - c0) * 1e6 / calls,
        };
        munmap(counts, sizeof(uint64_t) * clients);
        return l;
}

static void throughput_row(const char *label, call_fn fn, const uint32_t *pids, const char *server)
{
        if (!wanted(label))
                return;
        load floor = throughput(call_ping, 16, NULL);
        load measured = throughput(fn, 16, pids);
        printf("%-44s %9.0f/s %9.0f/s %25.2fx\n", label, measured.rate, floor.rate,
               measured.rate / floor.rate);
        printf("  CPU per call (us), this / Ping: %s %.1f / %.1f, bus %.1f / %.1f, "
               "clients %.1f / %.1f\n",
               server, measured.server_us, floor.server_us, measured.bus_us, floor.bus_us,
               measured.clients_us, floor.clients_us);
        fflush(stdout);
}

/* The same calls to a reference service that owns @name (bench-echo-*):
 * canned replies and signal, no work, each row against that service's own
 * Ping. What remains of a ratio here is the bus library's alone. */
static void echo_rows(sd_bus *bus, const char *service, const char *name)
{
        char label[5][64];
        if (name == NULL)
                return;
        dest = name;
        server_pid = owner_pid(bus, name);
        snprintf(label[0], sizeof(label[0]), "%s: GetTags", service);
        snprintf(label[1], sizeof(label[1]), "%s: FindTagged reply, 100", service);
        snprintf(label[2], sizeof(label[2]), "%s: FindTagged reply, 1000", service);
        snprintf(label[3], sizeof(label[3]), "%s: AddTag/RemoveTag + signal", service);
        snprintf(label[4], sizeof(label[4]), "%s: changes", service);
        row(bus, label[0], call_ping, call_get_tags, opt.rounds);
        row(bus, label[1], call_ping, call_find_100, opt.rounds / 4);
        row(bus, label[2], call_ping, call_find_1000, opt.rounds / 10);
        row(bus, label[3], call_ping, call_root_change, opt.rounds);
        throughput_row(label[0], call_get_tags, NULL, service);
        throughput_row(label[4], call_root_change, NULL, service);
        dest = NAME;
        server_pid = ptagsd_pid;
}

/* The polkit row against a reference service owning @name, with its own
 * Ping in the floor. */
static void polkit_relay_row(sd_bus *bus, const char *label, const char *name, int rounds)
{
        if (name == NULL)
                return;
        dest = name;
        row(bus, label, call_polkit_floor_and_ping, call_polkit_change, rounds);
        dest = NAME;
}

int main(int argc, char **argv)
{
        if (argc < 6) {
                fprintf(stderr, "usage: bench-calls ADDRESS TARGET OWN_TARGET ROUNDS SECONDS "
                                "[16 distinct targets...]\n");
                return 2;
        }
        opt.address = argv[1];
        opt.target = (uint32_t)strtoul(argv[2], NULL, 10);
        opt.own_target = (uint32_t)strtoul(argv[3], NULL, 10);
        opt.rounds = atoi(argv[4]);
        opt.seconds = atof(argv[5]);
        uint32_t distinct[16];
        int n_distinct = 0;
        for (int i = 6; i < argc && n_distinct < 16; i++)
                distinct[n_distinct++] = (uint32_t)strtoul(argv[i], NULL, 10);

        sd_bus *bus = connect_bus();
        ptagsd_pid = server_pid = owner_pid(bus, NAME);
        bus_pid = owner_pid(bus, "org.freedesktop.DBus");
        /* The world runs three phases: "few" while only the first 100 of its
         * processes are tagged, "rest" with all 1000, then "distinct" once
         * each of the 100 has a value of its own (100 distinct lists). */
        const char *phase = getenv("PTAGS_BENCH_PHASE");
        phase = phase ? phase : "";
        if (strcmp(phase, "rest") != 0)
                printf("%-44s %9s %9s %9s %9s %8s\n", "call (microseconds)", "median", "p10", "p90",
                       "floor", "ratio");
        if (strcmp(phase, "few") == 0) {
                char label[64];
                snprintf(label, sizeof(label), "FindTagged, 100 tagged of %d tasks", count_tasks());
                row(bus, label, call_ping, call_find_100, opt.rounds / 4);
                return 0;
        }
        if (strcmp(phase, "distinct") == 0) {
                row(bus, "FindTagged, 100 of 1000, each its own list", call_ping, call_find_100,
                    opt.rounds / 4);
                return 0;
        }
        row(bus, "floor: Peer.Ping", call_ping, call_ping, opt.rounds);
        row(bus, "Properties.Get Version", call_ping, call_version, opt.rounds);
        row(bus, "GetTags (10 tags)", call_ping, call_get_tags, opt.rounds);
        row(bus, "HasTag", call_ping, call_has_tag, opt.rounds);
        row(bus, "PeerHasTag (own name)", call_ping, call_peer_has_tag, opt.rounds);
        row(bus, "FindTagged, 100 of 1000 tagged processes", call_ping, call_find_100,
            opt.rounds / 4);
        row(bus, "FindTagged, 1000 tagged processes", call_ping, call_find_1000, opt.rounds / 10);
        row(bus, "FindTagged, a tag nobody holds", call_ping, call_find_none, opt.rounds / 4);
        row(bus, "AddTag/RemoveTag from root", call_ping, call_root_change, opt.rounds);
        row(bus, "Apply, 10 lines, from root", call_ping, call_apply, opt.rounds / 2);

        /* The polkit row runs as nobody, whose rule allows bench: tags on
         * its own target; the floor is polkitd's own answer plus a Ping,
         * both interleaved with the change. */
        fflush(stdout);
        pid_t kid = wanted("AddTag/RemoveTag through a polkit rule") ||
                                    wanted("PeerHasTag (own name, as nobody)")
                            ? fork()
                            : -1;
        if (kid == 0) {
                /* Dumpable again, as a process nobody started would be:
                 * ptagsd proves a connection's process through it. */
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
                    prctl(PR_SET_DUMPABLE, 1) < 0)
                        _exit(1);
                sd_bus *nb = connect_bus();
                /* What a service asks of its clients, most of which are not
                 * root: ptagsd checks the client's process for privilege on
                 * each call. */
                row(nb, "PeerHasTag (own name, as nobody)", call_ping, call_peer_has_tag,
                    opt.rounds);
                if (!wanted("AddTag/RemoveTag through a polkit rule"))
                        _exit(0);
                int n = opt.rounds / 4;
                /* Where the time goes: polkitd's CPU per check, asked
                 * directly and through ptagsd; ptagsd's per change (plus
                 * the Ping interleaved with it). */
                pid_t polkitd = owner_pid(nb, "org.freedesktop.PolicyKit1");
                double p0 = cpu_seconds(polkitd);
                double polkit_floor = median_of(nb, call_polkit_floor, n);
                double p1 = cpu_seconds(polkitd), d1 = cpu_seconds(ptagsd_pid);
                row(nb, "AddTag/RemoveTag through a polkit rule", call_polkit_floor_and_ping,
                    call_polkit_change, n);
                double p2 = cpu_seconds(polkitd), d2 = cpu_seconds(ptagsd_pid);
                int calls = n + n / 20 + 2; /* with the warm-up; each with a floor's check */
                printf("  (floor = polkit CheckAuthorization + Ping, interleaved; "
                       "CheckAuthorization alone before: %.1f us)\n",
                       polkit_floor);
                printf("  CPU per call (us): polkitd %.1f per check in the row / %.1f asked "
                       "directly, ptagsd %.1f with a Ping\n",
                       (p2 - p1) * 1e6 / (2.0 * calls), (p1 - p0) * 1e6 / n,
                       (d2 - d1) * 1e6 / calls);
                fflush(stdout);
                /* For scale: the same change through a service that only
                 * asks polkitd (the same check), then signals and replies. */
                polkit_relay_row(nb, "GDBus, polkit relay: AddTag/RemoveTag",
                                 getenv("PTAGS_BENCH_ECHO_GDBUS_NAME"), n);
                polkit_relay_row(nb, "sd-bus, polkit relay: AddTag/RemoveTag",
                                 getenv("PTAGS_BENCH_ECHO_SDBUS_NAME"), n);
                _exit(0);
        }
        int st = 0;
        if (kid > 0)
                waitpid(kid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "bench-calls: the polkit row failed\n");
                return 1;
        }
        printf("%-44s %11s %11s %25s\n", "throughput, 16 clients", "measured", "Ping", "ratio");
        throughput_row("GetTags", call_get_tags, NULL, "ptagsd");
        if (n_distinct == 16)
                throughput_row("root changes, distinct targets", call_root_change, distinct,
                               "ptagsd");
        /* For scale: the bus libraries alone. */
        const char *gdbus = getenv("PTAGS_BENCH_ECHO_GDBUS_NAME");
        const char *sdbus = getenv("PTAGS_BENCH_ECHO_SDBUS_NAME");
        if (gdbus != NULL || sdbus != NULL)
                printf("reference services: the same calls answered with canned replies, "
                       "each against its own Ping\n");
        echo_rows(bus, "GDBus, no work", gdbus);
        echo_rows(bus, "sd-bus, no work", sdbus);
        sd_bus_flush_close_unref(bus);
        return 0;
}
