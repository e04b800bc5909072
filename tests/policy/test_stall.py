# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# test_stall.py: clients that stop reading must not stall ptagsd, on the real dbus-daemon with the
# real bus policy: a synchronous reader that never answers a ping, and a stopped signal subscriber.
#
# Run one case per meson test, inside `unshare --mount --propagation private`:
#   test_stall.py StoppedSubscriber.test_stopped_subscriber_does_not_stall_ptagsd

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

from gi.repository import Gio, GLib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy_world  # noqa: E402  (puts tests/lib on the path)
import ptags_harness  # noqa: E402
from policy_world import PolicyTestCase, PolicyWorld, unit_capabilities  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
# The template's copy of Debian's rule; the fallback tests remove it.
STATS_RULE = """  <policy user="root">
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Debug.Stats"/>
  </policy>
"""
MiB = 1024 * 1024
LIMIT = "org.ptags.Error.LimitExceeded"
# The end of the refusal of a change while the log's writer is behind.
LOG_BEHIND = "ptagsd makes no change it cannot log; try again later"


def bus_config(stats=True, limits=None):
    """The real policy's bus config, without root's Stats rule unless
    @stats, with {name: value} <limit>s added."""

    def make(socket_path):
        text = policy_world.real_bus_config(socket_path)
        if STATS_RULE not in text:
            raise ptags_harness.HarnessError("the bus template lost root's Stats rule")
        if not stats:
            text = text.replace(STATS_RULE, "")
        extra = "".join('  <limit name="%s">%d</limit>\n' % kv for kv in (limits or {}).items())
        return text.replace("</busconfig>", extra + "</busconfig>")

    return make


class StallWorld(PolicyWorld):
    def __init__(self, stats=True, limits=None, **kw):
        super().__init__(daemon_capabilities=unit_capabilities(), **kw)
        self.bus_config = bus_config(stats, limits)

    def big_target(self):
        """A root target holding 200 tags of 1000 bytes: each GetTags reply
        is about 200 KB."""
        target = self.spawn_target()
        reply = self.root_call("Apply", "uas", [
            target, ["+app:%03d:%s" % (i, "x" * 1000) for i in range(200)]])
        if not reply.ok:
            raise ptags_harness.HarnessError("Apply failed: %r" % (reply,))
        return target

    def sync_reads(self, pid, count, user="nobody"):
        """@count GetTags(@pid) by a libdbus client of @user that never
        dispatches; returns its outcomes."""
        script = os.path.join(self.tmp, "sync_reader.py")
        if not os.path.exists(script):
            shutil.copy(os.path.join(HERE, "sync_reader.py"), script)
            os.chmod(script, 0o644)
        prefix = policy_world.setpriv_argv(policy_world.pwd.getpwnam(user))
        out = subprocess.run(prefix + [ptags_harness.PYTHON, "-I", script, self.address,
                                       str(pid), str(count)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                             env=self.child_env())
        if out.returncode != 0:
            raise ptags_harness.HarnessError("sync_reader failed (%d): %s"
                                             % (out.returncode, out.stderr.decode()))
        return json.loads(out.stdout)

    def stuck_readers(self, pid, *args, stdin=None):
        """stuck_readers.py PID ARGS as nobody, its output piped."""
        script = os.path.join(self.tmp, "stuck_readers.py")
        if not os.path.exists(script):
            shutil.copy(os.path.join(HERE, "stuck_readers.py"), script)
            os.chmod(script, 0o644)
        prefix = policy_world.setpriv_argv(policy_world.pwd.getpwnam("nobody"))
        return self.spawn("stuck", prefix + [ptags_harness.PYTHON, "-I", script, self.address,
                                             str(pid)] + [str(a) for a in args],
                          stdin=stdin, stdout=subprocess.PIPE)


class StallTestCase(PolicyTestCase):
    stall_options = {}

    def setUp(self):
        self.world = StallWorld(**self.stall_options)
        self.addCleanup(self.world.stop)
        self.world.start()

    def unread_client(self, count, kind, user="nobody", per_second=None):
        """A client of @user's sending @count calls of @kind (@per_second
        of them, or in bursts), reading nothing (unread_flood.py)."""
        script = os.path.join(self.world.tmp, "unread_flood.py")
        if not os.path.exists(script):
            shutil.copy(os.path.join(HERE, "unread_flood.py"), script)
            os.chmod(script, 0o644)
        prefix = policy_world.setpriv_argv(policy_world.pwd.getpwnam(user))
        proc = self.world.spawn("flood", prefix + [ptags_harness.PYTHON, "-I", script,
                                                   self.world.address, str(count), kind]
                                + ([str(per_second)] if per_second else []),
                                log_name="flood-%s-%s.log" % (kind, user), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        self.addCleanup(proc.stdin.close)
        return proc

    def held_for_ptagsd(self):
        """Bytes of ptagsd's messages the bus holds (Debug.Stats)."""
        reply = self.world.conn.call_sync(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Debug.Stats",
            "GetConnectionStats", GLib.Variant("(s)", ("org.ptags.Manager",)), None,
            Gio.DBusCallFlags.NONE, 5000, None)
        return reply.unpack()[0]["IncomingBytes"]


class SyncReader(StallTestCase):
    def test_reader_that_never_dispatches_is_served(self):
        """A blocking client reads every reply but never answers the
        Peer.Ping ptagsd confirms reads with; under Debian's policy ptagsd
        asks the bus how much is queued for it instead."""
        target = self.world.big_target()
        outcomes = self.world.sync_reads(target, 40)  # 8 MB, twice MaxUnreadReplyBytes
        refused = [(i, o) for i, o in enumerate(outcomes) if "ok" not in o]
        self.assertEqual(refused, [], "reads refused although every reply was read")
        self.assertEqual(len(outcomes), 40)


class PingFallback(StallTestCase):
    # A bus whose policy keeps the Stats interface from root (or a bus
    # without it): ptagsd falls back to Peer.Ping.
    stall_options = {"stats": False}

    def test_without_stats_a_dispatching_reader_is_confirmed_by_ping(self):
        target = self.world.big_target()
        client = self.world.spawn_client_as("nobody")  # GDBus: answers pings
        for i in range(40):
            self.assertOk(client.call("GetTags", "u", [target]), "read %d" % i)
        # Without the bus's figures only an answered ping proves a read, so
        # a client that never answers is held to MaxUnreadReplyBytes.
        outcomes = self.world.sync_reads(target, 40)
        self.assertIn("ok", outcomes[0])
        self.assertEqual(outcomes[-1].get("error"), "org.ptags.Error.LimitExceeded", outcomes[-1])


class StuckPings(StallTestCase):
    # Without Stats ptagsd pings clients to confirm reads. dbus-daemon lets
    # a connection await at most max_replies_per_connection replies (128
    # by default, 32 here so the test needs fewer clients) and counts the
    # pings against ptagsd, the caller.
    stall_options = {"stats": False, "limits": {"max_replies_per_connection": 32}}

    def test_clients_that_never_answer_pings_leave_room_for_polkit(self):
        """Pings had no timeout and no bound: each connection that read a
        big reply and then stopped dispatching held one of ptagsd's reply
        slots for good, and with the slots gone ptagsd could neither ask
        polkit nor identify a new caller: every change needing polkit, by
        anyone, failed. Pings are now bounded, per uid too, and time out."""
        w = self.world
        target = w.big_target()
        stuck = w.stuck_readers(target, 40, stdin=subprocess.PIPE)
        self.assertEqual(stuck.stdout.readline().strip(), b"ready")
        time.sleep(1)  # the pings are sent
        # A caller the shipped rule allows (its tags grant the right).
        caller = w.spawn_client_as("nobody")
        self.assertOk(w.root_call("AddTag", "usb", [caller.pid, "ptags:app:add", False]))
        for i in range(3):
            self.assertOk(caller.call("AddTag", "usb", [0, "app:x%d" % i, False]))
        # Another user's reader that answers pings keeps being confirmed:
        # one uid's clients hold at most a few of the pings in flight.
        reader = w.spawn_client_as("daemon")
        for i in range(40):  # 8 MB, twice MaxUnreadReplyBytes
            self.assertOk(reader.call("GetTags", "u", [target]), "read %d" % i)
        stuck.stdin.close()

    def test_clients_that_never_answer_cannot_keep_the_ping_slots(self):
        """Four users' clients that never answer pings take all 8 ping
        slots, and call on and on, so each slot freed by a ping that timed
        out went back to them at once: another user's reader, asking again
        only now and then, never got a slot, and its replies stayed counted
        as unread (LimitExceeded). Freed slots now go first to the users
        with the fewest pings in flight, and a client asking again keeps
        its place."""
        w = self.world
        target = w.big_target()
        # 100 calls a second each: a slot freed is asked for again within
        # 10 ms, and the replies stay below the budget past which calls go
        # unanswered (and the bus stops passing them on).
        floods = [self.unread_client(2000, "getall", user, per_second=100)
                  for user in ("nobody", "bin", "sys", "games") for _ in range(2)]
        for proc in floods:
            self.assertEqual(proc.stdout.readline().strip(), b"sent")
        time.sleep(1.5)  # their pings hold every slot
        reader = w.spawn_client_as("daemon")  # GDBus: answers pings
        for i in range(40):  # 8 MB, twice MaxUnreadReplyBytes
            reply = reader.call("GetTags", "u", [target])
            if not reply.ok:
                break
        self.assertError(reply, "LimitExceeded")
        # A ping of its own is answered at once: the first slot freed (a
        # ping timing out after 5 s) confirms its reads.
        time.sleep(8)
        self.assertOk(reader.call("GetTags", "u", [target]),
                      "the reader that answers pings got no slot in 8 s")

    def test_a_ping_that_times_out_proves_nothing(self):
        """A client that never answers is held to MaxUnreadReplyBytes also
        after ptagsd's ping to it timed out."""
        w = self.world
        target = w.big_target()
        reader = w.stuck_readers(target, 40, 6.5)
        outcomes = json.loads(reader.stdout.readline())
        self.assertEqual(outcomes[-1].get("error"), "org.ptags.Error.LimitExceeded", outcomes[-1])
        later = json.loads(reader.stdout.readline())
        self.assertEqual(later.get("error"), "org.ptags.Error.LimitExceeded", later)


class UnreadReplies(StallTestCase):
    # dbus-daemon charges the replies it holds for a client that does not
    # read to ptagsd, their sender, and stops reading ptagsd past
    # max_incoming_bytes (127 MiB on Debian; 32 MiB here, so the test needs
    # less traffic).
    stall_options = {"limits": {"max_incoming_bytes": 32 * MiB, "max_outgoing_bytes": 32 * MiB}}

    def test_replies_to_any_call_are_bounded(self):
        """Only the replies to reads were counted against a connection's
        unread budget: not those to Introspect, Properties.GetAll or a
        refused change. Two clients that never read had the bus hold 32 MiB
        of them, after which it read nothing more from ptagsd and every
        call to it hung. Past the budget, such calls go unanswered."""
        w = self.world
        target = w.spawn_target()
        self.assertOk(w.root_call("AddTag", "usb", [target, "app:x", False]))
        kinds = ("introspect", "getall", "bad")
        floods = [self.unread_client(6000, kind) for kind in kinds]
        for proc, kind in zip(floods, kinds):
            self.assertEqual(proc.stdout.readline().strip(), b"sent",
                             w.read_log("flood-%s-nobody.log" % kind))
        # Until ptagsd has answered what it answers.
        held, last = self.held_for_ptagsd(), -1
        while held != last:
            time.sleep(1)
            held, last = self.held_for_ptagsd(), held
        print("the bus holds %.1f MiB of ptagsd's messages" % (held / MiB))
        reply = w.root_call("GetTags", "u", [target], timeout_ms=5000)
        self.assertOk(reply, "root's GetTags after three clients left the replies to %d "
                      "calls unread" % (6000 * len(floods)))
        # Three connections of one uid, each within its 4 MiB and one more,
        # well below the bus's limit.
        self.assertLess(held, 20 * MiB)
        # Another user's reader is served.
        self.assertOk(w.spawn_client_as("daemon").call("GetTags", "u", [target]))


class UnreadRepliesOfManyUsers(StallTestCase):
    # As UnreadReplies, with MaxUserUnreadReplyBytes at 4 MiB so that the
    # bus's 32 MiB here stand for Debian's 127 MiB against the default 16.
    stall_options = {"limits": {"max_incoming_bytes": 32 * MiB, "max_outgoing_bytes": 32 * MiB},
                     "daemon_args": ["--max-user-unread-reply-bytes=4194304"]}

    def test_the_replies_of_all_users_are_bounded_together(self):
        """Each uid had its own budget and nothing bounded their sum: 7
        users whose clients never read had the bus hold 7 x 5 MiB, past its
        limit, and it stopped reading ptagsd. All uids but 0 together now
        leave at most 4 times MaxUserUnreadReplyBytes unread."""
        w = self.world
        target = w.spawn_target()
        users = ("nobody", "daemon", "bin", "sys", "games", "man", "lp")
        floods = [self.unread_client(6000, "introspect", user) for user in users]
        for proc in floods:
            self.assertEqual(proc.stdout.readline().strip(), b"sent")
        held, last = self.held_for_ptagsd(), -1
        while held != last:
            time.sleep(1)
            held, last = self.held_for_ptagsd(), held
        print("the bus holds %.1f MiB of ptagsd's messages" % (held / MiB))
        self.assertOk(w.root_call("GetTags", "u", [target], timeout_ms=5000),
                      "root's GetTags after %d users left their replies unread" % len(users))
        self.assertLess(held, 24 * MiB)
        # Root's connections are bounded one by one only.
        self.assertOk(w.root_call("Apply", "uas", [target, ["+app:after"]]))
        # And a user holding little is served whatever the others hold:
        # only a uid holding a share of the bound is held back by it.
        self.assertOk(w.spawn_client_as("mail").call("GetTags", "u", [target]))


class StoppedSubscriber(StallTestCase):
    # dbus-daemon charges the messages it holds for receivers to their
    # SENDER (max_incoming_bytes) and stops reading a sender over it. Debian
    # keeps both limits at 127 MiB; this bus has them at 32 MiB (the same
    # ratio, and still far above ptagsd's 4 MiB message bound) so the test
    # needs less traffic.
    stall_options = {"limits": {"max_incoming_bytes": 32 * MiB, "max_outgoing_bytes": 32 * MiB}}

    def flood(self, target, count):
        """Up to @count Applys of ~240 KB each as root, each making a
        TagsChanged of 240-480 KB; stops at the first failure. Returns the
        failures and the slowest call's seconds."""
        add = ["+app:%03d:%s" % (i, "x" * 1000) for i in range(240)]
        slowest = 0.0
        for i in range(count):
            for attempt in range(50):
                start = time.monotonic()
                reply = self.world.root_call("Apply", "uas", [target, add if i % 2 == 0 else
                                                              ["-app:*"]], timeout_ms=5000)
                slowest = max(slowest, time.monotonic() - start)
                # Each Apply logs ~240 KB: on a loaded machine the log's
                # writer may fall 2 MiB behind, and ptagsd refuses changes
                # it cannot log until it catches up. That is no stall; a
                # client does as the error says and tries again.
                if reply.ok or reply.error != LIMIT or not reply.message.endswith(LOG_BEHIND):
                    break
                time.sleep(0.1)
            if not reply.ok:
                return [(i, reply)], slowest
        return [], slowest

    def test_subscribers_joining_a_pause_get_bounded_copies(self):
        """While signals are paused, each subscriber the bus holds under
        1 MiB for gets addressed copies, and those copies were not held to
        the bound that pauses broadcasts: 40 subscribers that joined during
        a pause and read nothing got about 1 MiB each, past the bus's limit,
        and the bus stopped reading ptagsd."""
        w = self.world
        target = w.spawn_target()
        subscriber = w.spawn_client_as("nobody")
        self.assertOk(subscriber.call(
            "AddMatch", "s", ["type='signal',sender='org.ptags.Manager'"], destination=BUS))
        os.kill(subscriber.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, subscriber.pid, signal.SIGCONT)
        failures, _ = self.flood(target, 80)
        self.assertEqual(failures, [])
        self.assertIn("signals paused", w.read_log("ptagsd.log", tail_lines=100000))
        joined = self.unread_client(40, "subscribe")
        self.assertEqual(joined.stdout.readline().strip(), b"sent")
        time.sleep(1)  # the next look at the subscribers finds them
        failures, slowest = self.flood(target, 80)
        held = self.held_for_ptagsd()
        print("the bus holds %.1f MiB of ptagsd's messages; slowest Apply %.2f s"
              % (held / MiB, slowest))
        self.assertEqual(failures, [], "ptagsd stalled behind the subscribers")
        reply = w.root_call("GetTags", "u", [target], timeout_ms=5000)
        self.assertOk(reply)
        self.assertLess(held, 31 * MiB, "within a message of the bus's limit")
        # Past the pause's 16 MiB: the subscribers that joined did get
        # copies (a look at the subscribers that came too late would leave
        # nothing to bound).
        self.assertGreater(held, 20 * MiB, "no copies went to the subscribers that joined")
        # Once they are gone, the pause ends and says how many signals
        # reached no one: those whose copies were all held back count.
        joined.stdin.close()
        joined.wait(timeout=10)
        os.kill(subscriber.pid, signal.SIGCONT)
        ptags_harness.wait_until(
            lambda: "signals resumed" in w.read_log("ptagsd.log", tail_lines=100000), 20,
            "the pause to end", interval=0.5)
        dropped = re.findall(r"signals resumed: .*; (\d+) signals were dropped",
                             w.read_log("ptagsd.log", tail_lines=100000))
        self.assertGreater(int(dropped[-1]), 0, "signals that reached no one, not counted")

    def test_stopped_subscriber_does_not_stall_ptagsd(self):
        w = self.world
        target = w.spawn_target()
        listener = w.record_signals()  # root, reading all along
        subscriber = w.spawn_client_as("nobody")
        self.assertOk(subscriber.call(
            "AddMatch", "s", ["type='signal',sender='org.ptags.Manager',"
                              "interface='org.ptags.Manager'"], destination=BUS))
        os.kill(subscriber.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, subscriber.pid, signal.SIGCONT)

        # 160 signals of 360 KB on average: 56 MB, well over the bus's limit.
        failures, slowest = self.flood(target, 160)
        start = time.monotonic()
        reply = w.root_call("GetTags", "u", [target], timeout_ms=5000)
        took = time.monotonic() - start
        print("flood: slowest Apply %.2f s; GetTags after it %.3f s" % (slowest, took))
        self.assertEqual(failures, [], "ptagsd stalled behind the stopped subscriber")
        self.assertOk(reply, "root's GetTags while the subscriber is stopped")
        self.assertLess(took, 2.0)
        log = w.read_log("ptagsd.log", tail_lines=100000)
        self.assertIn("signals paused", log)
        # Only the stopped subscriber goes without: the listener that reads
        # got its own copy of nearly every signal (ptagsd asks the bus who
        # reads from halfway to the pause on; a few may be lost if the pause
        # comes first, and copies wait while ptagsd's count of what the bus
        # holds, its last answer and what was sent since, reaches 28 MiB).
        got = [e for e in listener.drain(1.0) if e[0] == target]
        print("listener: %d of 160 TagsChanged during the pause" % len(got))
        self.assertGreaterEqual(len(got), 136, "the pause silenced a listener that reads")
        # The administrator learns who stopped reading.
        self.assertIn("connection %s (uid 65534, pid %d) is not reading"
                      % (subscriber.unique_name, subscriber.pid), log)

        # Once the subscriber reads again (or leaves), the pause ends and
        # signals are broadcast again.
        os.kill(subscriber.pid, signal.SIGCONT)
        ptags_harness.wait_until(
            lambda: "signals resumed" in w.read_log("ptagsd.log", tail_lines=200), 20,
            "the pause to end after the subscriber resumed", interval=0.5)
        before = len(listener.events)
        self.assertOk(w.root_call("Apply", "uas", [target, ["+app:after"]]))
        listener.drain(0.5)
        self.assertIn(["+app:after"], [e[1] for e in listener.events[before:]])


if __name__ == "__main__":
    unittest.main(verbosity=2)
