# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_faults.py: ptagsd when the others fail: polkitd killed or stopped
# during a check, ptagsd itself SIGKILLed under load and restarted, the bus
# going away. Every change fails closed or lands whole; service resumes.
#
# Tags live in the kernel fixture (or the bpf backend's pinned maps), which
# outlive ptagsd, so a restarted ptagsd must serve exactly what was there.

import os
import signal
import statistics
import time
import unittest

from gi.repository import Gio, GLib

from ptags_harness import DAEMON_SANITIZED, PtagsTestCase
import ptags_client

# How soon a restarted ptagsd must be back on the bus (median of the
# restarts). The bpf backend first has libbpf read and parse the kernel's
# BTF (5.5 MB on the CI machines: 35-55 ms) to load its programs, and reads
# back a set table that grows through the test: 150 ms there. On the
# kernel's attr files a restart takes 20-30 ms alone, but start-up scans
# every process for container IDs, and a test running beside this one may
# have a thousand: 110 ms was seen so (the scan alone 117 ms), so 150 ms
# there too. A daemon built with ASan or TSan starts its runtime and checks
# every access: twice the time. A wait that crept into start-up still
# shows: it is the median of 24 restarts.
RESTART_MEDIAN_S = 0.15 * (2 if DAEMON_SANITIZED else 1)

ADD = "org.ptags.tag.add"
NOT_AUTHORIZED = "org.ptags.Error.NotAuthorized"


def proc_of(world, label):
    for name, proc in world._procs:
        if name == label and proc.poll() is None:
            return proc
    raise AssertionError("no running %s" % label)


class PolkitFaultTests(PtagsTestCase):
    world_options = {"polkit_timeout": 3}

    def setUp(self):
        super().setUp()
        self.target = self.world.spawn_target(unprivileged=True)
        self.client = self.world.spawn_client()

    def test_polkit_killed_during_a_check_fails_closed(self):
        polkit = self.world.polkit
        polkit.set_allowed([ADD])
        polkit.set_hang([ADD])
        self.client.send("AddTag", "usb", [self.target, "app:during", False])
        polkit.wait_hanging(1)
        start = time.monotonic()
        self.world.stop_polkit_mock()
        # Denied, well before ptagsd's own polkit timeout: the bus tells it
        # the callee is gone.
        self.assertError(self.client.receive(timeout=10), "NotAuthorized")
        self.assertLess(time.monotonic() - start, 3.0, "the denial waited for the timeout")
        # Without polkit every change is refused, promptly.
        start = time.monotonic()
        self.assertError(self.client.call("AddTag", "usb", [self.target, "app:none", False],
                                          timeout=10), "NotAuthorized")
        self.assertLess(time.monotonic() - start, 3.0)
        self.assertEqual(self.world.get_tags(self.target), [])
        # polkit back: authorized changes work again.
        self.world.start_polkit_mock()
        self.world.polkit.set_allowed([ADD])
        self.assertOk(self.client.call("AddTag", "usb", [self.target, "app:after", False]))
        self.assertEqual(self.world.get_tags(self.target), [("app:after", False, "")])

    def test_polkit_stopped_others_served_timeout_denies(self):
        polkit = self.world.polkit
        polkit.set_allowed([ADD])
        mock = proc_of(self.world, "polkit-mock")
        mock.send_signal(signal.SIGSTOP)
        self.addCleanup(mock.send_signal, signal.SIGCONT)
        start = time.monotonic()
        self.client.send("AddTag", "usb", [self.target, "app:stuck", False])
        # Meanwhile ptagsd serves everyone else: reads by anyone, root's
        # changes (no polkit for uid 0).
        reader = self.world.spawn_client()
        for _ in range(20):
            t0 = time.monotonic()
            self.assertOk(reader.call("GetTags", "u", [self.target], timeout=5))
            self.assertLess(time.monotonic() - t0, 1.0, "a read waited for polkit")
        self.assertOk(self.world.root_call("AddTag", "usb", [self.target, "root", False],
                                           timeout_ms=2000))
        # The stuck check is denied at ptagsd's timeout (3 s), not later.
        reply = self.client.receive(timeout=15)
        elapsed = time.monotonic() - start
        self.assertError(reply, "NotAuthorized")
        self.assertIn("did not answer", reply.message)
        self.assertGreaterEqual(elapsed, 2.5)
        self.assertLess(elapsed, 6.0, "denied %.1f s after the call" % elapsed)
        self.assertEqual(self.world.get_tags(self.target), [("root", False, "")])
        # polkit resumes: service is normal again.
        mock.send_signal(signal.SIGCONT)
        self.assertOk(self.client.call("AddTag", "usb", [self.target, "app:later", False]))
        self.assertIn(("app:later", False, ""), self.world.get_tags(self.target))


class DaemonRestartTests(PtagsTestCase):
    def restart_daemon(self):
        """Start ptagsd again; returns seconds from exec to the name owned,
        taken from the bus's NameOwnerChanged rather than by polling, which
        would take CPU from the start it times."""
        owned = []

        def changed(conn, sender, path, iface, signal, args):
            if args[2] != "":
                owned.append(time.monotonic())

        conn = self.world.conn
        sub = conn.signal_subscribe("org.freedesktop.DBus", "org.freedesktop.DBus",
                                    "NameOwnerChanged", "/org/freedesktop/DBus",
                                    ptags_client.BUS_NAME, Gio.DBusSignalFlags.NONE, changed)
        ctx = GLib.MainContext.default()
        wake = GLib.timeout_add(50, lambda: True)  # to check on ptagsd meanwhile
        try:
            self.world.daemon_args = []
            start = time.monotonic()
            self.world.spawn_daemon()  # start_daemon polls every 20 ms: timed here
            while not owned:
                self.assertIsNone(self.world.daemon.poll(), "ptagsd exited at restart:\n%s"
                                  % self.world.read_log("ptagsd.log"))
                self.assertLess(time.monotonic() - start, 30, "ptagsd did not come back")
                ctx.iteration(True)
        finally:
            GLib.source_remove(wake)
            conn.signal_unsubscribe(sub)
        return owned[0] - start

    def test_sigkill_under_load_keeps_every_acknowledged_change(self):
        # Long tags make each batch several kernel pages, so a kill can land
        # between pages.
        def batch(c, n):
            return ["+k%d:b%03d:%02d:%s" % (c, n, i, "x" * 180) for i in range(40)]

        restarts, acked_total, whole_unacked, sent_total = [], 0, 0, 0
        # The callers outlive every ptagsd: each call cut by a kill is
        # answered by the bus with an error, so every send still gets its
        # one reply.
        clients = [self.world.spawn_client(unprivileged=False) for _ in range(4)]
        # Many kills at spread delays: some land between the pages of a
        # batch, where only crash-consistent storage keeps it whole.
        for delay_ms in list(range(2, 26, 2)) + list(range(27, 51, 2)):
            target = self.world.spawn_target(unprivileged=True)  # room for every batch
            acked, sent = set(), []
            for n in range(4):
                for c, client in enumerate(clients):
                    client.send("Apply", "uas", [target, batch(c, n)], timeout_ms=10000)
                    sent.append((c, n))
                if n == 3:  # the last round is cut by the kill
                    time.sleep(delay_ms / 1000.0)
                    self.world.daemon.kill()
                    self.world.daemon.wait(timeout=10)
                for c, client in enumerate(clients):
                    reply = client.receive(timeout=30)
                    if reply.ok:
                        acked.add((c, n))
                    elif n < 3:
                        self.fail("batch %d of caller %d failed: %r" % (n, c, reply))
            restarts.append(self.restart_daemon())
            tags = {t[0] for t in self.world.get_tags(target)}
            for c, n in sent:
                present = [t for t in batch(c, n) if t[1:] in tags]
                with self.subTest(batch=(c, n), kill_after_ms=delay_ms):
                    if (c, n) in acked:
                        self.assertEqual(len(present), 40, "an acknowledged change was lost")
                    else:
                        self.assertIn(len(present), (0, 40), "a half-applied change")
                        whole_unacked += len(present) == 40
            acked_total += len(acked)
            sent_total += len(sent)
        print("\nptagsd back on the bus after exec: %s ms; %d of %d batches acknowledged, "
              "%d unacknowledged found applied whole"
              % (", ".join("%.1f" % (t * 1000) for t in restarts), acked_total, sent_total,
                 whole_unacked))
        # The median restart, so one restart slowed by the machine's other
        # work is not a failure; none may take long (a wait or a walk crept
        # into start-up).
        typical = statistics.median(restarts)
        self.assertLess(typical, RESTART_MEDIAN_S, "ptagsd took %.1f ms to serve again (median)"
                        % (typical * 1000))
        self.assertLess(max(restarts), 5 * RESTART_MEDIAN_S,
                        "one restart took %.1f ms" % (max(restarts) * 1000))

    def test_bus_restart(self):
        target = self.world.spawn_target(unprivileged=True)
        self.assertOk(self.world.root_call("Apply", "uas", [target, ["+a", "!a=1", "+@b"]]))
        before = self.world.get_tags(target)
        bus = proc_of(self.world, "dbus-daemon")
        bus.kill()
        bus.wait(timeout=10)
        # ptagsd cannot serve without its bus: it exits, and not with 0, so
        # systemd's Restart=on-failure brings it back.
        code = self.world.daemon.wait(timeout=10)
        self.assertNotEqual(code, 0, "ptagsd exited 0 when its bus went away")
        self.world.conn = None
        os.unlink(os.path.join(self.world.tmp, "system_bus_socket"))
        self.world.start_bus()
        self.world.start_polkit_mock()
        self.world.start_daemon()
        self.assertEqual(self.world.get_tags(target), before)
        self.assertOk(self.world.root_call("AddTag", "usb", [target, "c", False]))


if __name__ == "__main__":
    unittest.main()
