# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# bench_world.py: the world the call benchmark runs in: a private system bus with our real
# policy, the real polkitd with an administrator's rule, ptagsd (bpf backend by default), a
# target with 10 tags, a target nobody owns, 1000 tagged processes and the two reference
# services (bench-echo-gdbus, bench-echo-sdbus); then bench-calls.
#
# Run as root inside `unshare --mount --propagation private` (meson does):
#   bench_world.py BENCH_CALLS [ROUNDS] [SECONDS]

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "policy"))
from policy_world import PolicyWorld  # noqa: E402

# nobody may add and remove bench: tags on its own processes.
RULE = """
polkit.addRule(function (action, subject) {
    if ((action.id == "org.ptags.tag.add" || action.id == "org.ptags.tag.remove") &&
        subject.user == "nobody" && action.lookup("prefix") == "bench" &&
        action.lookup("self") != "true" && action.lookup("target-uid") == "65534") {
        return polkit.Result.YES;
    }
});
"""


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# The reference services (bench-echo-*): root may own their names, and anyone
# may call them (the polkit rows call as nobody); ptagsd's own policy is not
# touched.
ECHO_NAMES = {"PTAGS_BENCH_ECHO_GDBUS": "org.ptags.BenchEcho.GDBus",
              "PTAGS_BENCH_ECHO_SDBUS": "org.ptags.BenchEcho.SdBus"}
ECHO_POLICY = "".join('<policy user="root"><allow own="%s"/></policy>'
                      '<policy context="default"><allow send_destination="%s"/></policy>'
                      % (n, n) for n in ECHO_NAMES.values())


def with_echo_policy(bus_config):
    return lambda socket_path: bus_config(socket_path).replace(
        "</busconfig>", ECHO_POLICY + "</busconfig>")


def start_echo(world, env_name):
    """Start one reference service; the name it owns, or None when not built."""
    exe = os.environ.get(env_name)
    if not exe:
        return None
    proc = world.spawn("bench-echo", [exe, world.address, ECHO_NAMES[env_name]],
                       log_name=env_name.lower() + ".log", stdout=subprocess.PIPE)
    if proc.stdout.readline().strip() != b"ready":
        raise RuntimeError("%s did not start" % exe)
    return ECHO_NAMES[env_name]


def main():
    bench_calls = sys.argv[1]
    rounds = sys.argv[2] if len(sys.argv) > 2 else "2000"
    seconds = sys.argv[3] if len(sys.argv) > 3 else "2"
    world = PolicyWorld(admin_rules={"40-bench.rules": RULE}, shipped_rule=True)
    world.bus_config = with_echo_policy(world.bus_config)
    world.daemon_verbose = False  # as deployed: no debug logging
    try:
        world.start()
        echo_env = dict(os.environ)
        for env_name in ECHO_NAMES:
            name = start_echo(world, env_name)
            if name is not None:
                echo_env[env_name + "_NAME"] = name
        time.sleep(0.5)
        idle = rss_kib(world.daemon.pid)
        target = world.spawn_target()
        reply = world.root_call("Apply", "uas", [target, ["+bench:t%d" % i for i in range(10)]])
        assert reply.ok, reply
        own = world.spawn_target(unprivileged=True)
        many = []

        def tag_more(count):
            """Start @count sleeps and tag them; the first 100 of all get
            group:hundred."""
            fresh = [world.spawn("tagged", ["sleep", "600"]).pid for _ in range(count)]
            time.sleep(0.5)  # every sleep has exec'd, so no exec drops the tags below
            for pid in fresh:
                lines = ["+group:all"] + ["+bench:x%d" % k for k in range(9)]
                if len(many) < 100:
                    lines.append("+group:hundred")
                reply = world.root_call("Apply", "uas", [pid, lines])
                assert reply.ok, reply
                many.append(pid)

        def bench(phase):
            sys.stdout.flush()
            subprocess.run([bench_calls, world.address, str(target), str(own), rounds, seconds]
                           + [str(p) for p in many[200:216]], check=True, timeout=900,
                           env=dict(echo_env, PTAGS_BENCH_PHASE=phase))

        print("ptags call benchmark: backend %s, %d cores, load average %s" % (
            world.backend, os.cpu_count(), open("/proc/loadavg").read().split()[0]))
        # A search with only its 100 matches tagged, then everything else
        # with 1000 tagged processes (the 100 among them), then the search
        # once more with a tag list of its own for each match.
        tag_more(100)
        bench("few")
        tag_more(900)
        loaded = rss_kib(world.daemon.pid)
        bench("rest")
        # The same 100 matches when no two share a tag list.
        for i, pid in enumerate(many[:100]):
            reply = world.root_call("Apply", "uas", [pid, ["!bench:x0=%d" % i]])
            assert reply.ok, reply
        bench("distinct")
        print("%-44s %9.1f MiB" % ("RSS idle", idle / 1024))
        print("%-44s %9.1f MiB" % ("RSS, 1000 processes x 10 tags", loaded / 1024))
    finally:
        world.stop()


if __name__ == "__main__":
    main()
