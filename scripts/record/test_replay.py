"""Checks replay.py's rewriting on a short transcript, without a server,
cpu_per_action.py's verdicts and speed normalisation, and mbsync.py's changes
to a local Maildir (issue 28 item 3).

Run by crates/lab/tests/client_recordings.rs
(`issue_28_item_3_replay_renumbers_tags_substitutes_logins_and_maps_uids`), or
directly: python3 scripts/record/test_replay.py
"""

import base64
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay  # noqa: E402

TRANSCRIPT = """\
# a short recording: two connections, the second one in IDLE across the window
0.000000 c1 open
0.000100 c1 S: * OK ready
0.001000 c1 C: a1 LOGIN alice <password>
0.002000 c1 S: a1 OK Logged in
0.003000 c1 C: a2 ENABLE UTF8=ACCEPT
0.003100 c1 S: a2 OK Enabled
0.004000 c1 C: a3 SELECT "INBOX"
0.004100 c1 S: * 5 EXISTS
0.004200 c1 S: * OK [UIDNEXT 6] Predicted next UID
0.004300 c1 S: a3 OK [READ-WRITE] Select completed
0.005000 c2 open
0.005100 c2 S: * OK ready
0.006000 c2 C: 7 authenticate PLAIN
0.006100 c2 S: +
0.006200 c2 C: <credentials>
0.006300 c2 S: 7 OK Logged in
0.007000 c2 C: 8 SELECT Sent
0.007100 c2 S: * 0 EXISTS
0.007200 c2 S: * OK [UIDNEXT 1] Predicted next UID
0.007300 c2 S: 8 OK Select completed
0.008000 c2 C: 9 IDLE
0.008100 c2 S: + idling
10.000000 c1 C: a4 UID FETCH 2:4 (FLAGS BODY.PEEK[])
10.000100 c1 S: a4 OK Fetch completed
10.100000 c1 C: a5 UID MOVE 3 "Folder1"
10.100100 c1 S: * OK [COPYUID 1795686059 3 6] Moved UIDs.
10.100200 c1 S: * 4 EXPUNGE
10.100300 c1 S: a5 OK Move completed
10.200000 c1 C: a6 FETCH 1:104 (UID FLAGS)
10.200100 c1 S: a6 OK Fetch completed
10.300000 c1 C: a7 UID FETCH 6:* (FLAGS)
10.300100 c1 S: a7 OK Fetch completed
10.400000 c1 C: a8 APPEND "Sent" (\\Seen) {120}<120 bytes>
10.400100 c1 S: + OK
10.400200 c1 S: a8 OK [APPENDUID 1795686100 1] Append completed
70.000000 c2 C: DONE
70.000100 c2 S: 9 OK Idle completed
70.100000 c3 open
70.100100 c3 S: * OK ready
70.200000 c3 C: b1 AUTHENTICATE PLAIN <credentials>
70.200100 c3 S: b1 OK Logged in
70.300000 c3 close
"""

MANIFEST = {"client": "test", "actions": [
    {"action": "open_inbox", "start": 0.0, "end": 1.0},
    {"action": "move", "start": 9.0, "end": 11.0},
    {"action": "idle", "start": 60.0, "end": 70.5},
]}


class ReplayRewriting(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        with open(os.path.join(cls.dir.name, "transcript.txt"), "w", encoding="utf-8") as out:
            out.write(TRANSCRIPT)
        with open(os.path.join(cls.dir.name, "manifest.json"), "w", encoding="utf-8") as out:
            json.dump(MANIFEST, out)
        cls.recording = replay.Recording(cls.dir.name)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def item(self, text):
        return next(i for i in self.recording.items if i.text.startswith(text))

    def rewrite(self, text, uids=None, selected="INBOX", exists=5, tag="p0001"):
        uids = uids or replay.UidMap({}, {})
        return replay.rewrite(self.item(text), tag, "user7", "s3cret", uids, selected, exists)

    def test_a_windows_append_gives_the_size_of_a_sends_copy(self):
        import cpu_per_action
        self.assertEqual(cpu_per_action.appended_size(self.recording.slice("move")), 120)
        self.assertEqual(cpu_per_action.appended_size(self.recording.slice("open_inbox")), 1024)

    def test_tags_are_renumbered_and_the_rest_of_the_command_kept(self):
        line, _ = self.rewrite("a2 ENABLE", tag="p0042")
        self.assertEqual(line, "p0042 ENABLE UTF8=ACCEPT")
        line, _ = self.rewrite("8 SELECT", tag="p0002")
        self.assertEqual(line, "p0002 SELECT Sent")

    def test_login_carries_the_lab_users_credentials(self):
        line, more = self.rewrite("a1 LOGIN")
        self.assertEqual(line, 'p0001 LOGIN "user7" "s3cret"')
        self.assertEqual(more, [])

    def test_authenticate_plain_as_a_continuation_and_inline(self):
        expected = base64.b64encode(b"\0user7\0s3cret").decode()
        line, more = self.rewrite("7 authenticate")
        self.assertEqual(line, "p0001 authenticate PLAIN")
        self.assertEqual(more, [expected])
        line, more = self.rewrite("b1 AUTHENTICATE")
        self.assertEqual(line, f"p0001 AUTHENTICATE PLAIN {expected}")
        self.assertEqual(more, [])

    def test_recorded_uids_map_by_rank_onto_the_lab_folder(self):
        # The recording's INBOX held UIDs 1..5; the lab's holds these five.
        self.assertEqual(self.recording.recorded_count("INBOX"), 5)
        uids = replay.UidMap({"INBOX": 5}, {"INBOX": [10, 11, 12, 20, 21]})
        self.assertEqual(self.rewrite("a4 UID FETCH", uids)[0], "p0001 UID FETCH 11:20 (FLAGS BODY.PEEK[])")
        self.assertEqual(self.rewrite("a5 UID MOVE", uids)[0], 'p0001 UID MOVE 12 "Folder1"')
        # Above the recorded count: new mail, past the lab's last UID.
        self.assertEqual(self.rewrite("a7 UID FETCH", uids)[0], "p0001 UID FETCH 22:* (FLAGS)")
        # A shorter lab folder: the rank is held to its last message.
        short = replay.UidMap({"INBOX": 5}, {"INBOX": [30, 31]})
        self.assertEqual(self.rewrite("a4 UID FETCH", short)[0], "p0001 UID FETCH 31:31 (FLAGS BODY.PEEK[])")

    def test_uids_the_servers_made_are_paired_by_command(self):
        move = self.item("a5 UID MOVE")
        self.assertEqual(replay.created_uids(move.codes), [6])
        uids = replay.UidMap({"Folder1": 5}, {"Folder1": [1, 2, 3, 4, 5]})
        uids.learn("Folder1", replay.created_uids(move.codes),
                   replay.created_uids(replay.codes("* OK [COPYUID 99 12 44] Moved UIDs.")))
        self.assertEqual(uids.uid("Folder1", 6), 44)
        self.assertEqual(uids.uid("Folder1", 2), 2)
        append = self.item("a8 APPEND")
        self.assertEqual(replay.created_uids(append.codes), [1])

    def test_sequence_numbers_are_held_to_the_mailbox_size(self):
        self.assertEqual(self.rewrite("a6 FETCH", exists=3)[0], "p0001 FETCH 1:3 (UID FLAGS)")

    def test_literals_keep_their_size_and_form(self):
        line, _ = self.rewrite("a8 APPEND")
        parts = replay.segments(line, True, 1)
        self.assertEqual(parts[0], (b'p0001 APPEND "Sent" (\\Seen) {120}\r\n', True))
        self.assertEqual(len(parts[1][0]), 120)
        self.assertTrue(parts[1][0].startswith(b"From: "))
        self.assertEqual(parts[2], (b"\r\n", False))
        plus = replay.segments("t APPEND x {9+}<9 bytes>", False, 1)
        self.assertEqual(plus[0], (b"t APPEND x {9+}\r\n", False))

    def test_a_window_knows_each_connections_state_at_its_start(self):
        piece = self.recording.slice("move")
        self.assertEqual(piece.connections, ["c1"])
        state = piece.before["c1"]
        self.assertTrue(state.logged_in)
        self.assertEqual((state.selected, state.enable, state.idling), ("INBOX", ["UTF8=ACCEPT"], False))
        self.assertEqual(piece.folders(), ["INBOX", "Folder1", "Sent"])
        idle = self.recording.slice("idle")
        self.assertEqual(idle.connections, ["c2", "c3"])
        self.assertTrue(idle.before["c2"].idling)
        self.assertEqual(idle.before["c2"].selected, "Sent")
        self.assertNotIn("c3", idle.before)  # opened inside the window: connected there

    def test_a_warm_replay_sets_up_with_the_history_and_keeps_what_the_client_kept(self):
        # cpu_per_action.py --warm: the connections open at the window's start
        # replay what they did before it; those still open at its end stay open.
        piece = self.recording.slice("move")
        self.assertEqual([i.tag for i in piece.history()], ["a1", "a2", "a3"])
        self.assertEqual(piece.closed_within(), [])
        idle = self.recording.slice("idle")
        self.assertEqual([i.tag for i in idle.history()], ["7", "8", "9"])
        self.assertEqual(idle.closed_within(), ["c3"])

    def test_all_open_sets_up_the_connections_the_window_does_not_use(self):
        # c2 sits in IDLE on Sent through the move window, which uses c1 only.
        piece = self.recording.slice("move")
        wide = self.recording.slice("move", all_open=True)
        self.assertEqual(piece.connections, wide.connections, "the window's own commands are the same")
        self.assertEqual(sorted(piece.before), ["c1"])
        self.assertEqual(sorted(wide.before), ["c1", "c2"])
        self.assertTrue(wide.before["c2"].idling)
        self.assertEqual([i.tag for i in wide.history() if i.conn == "c2"], ["7", "8", "9"])
        self.assertNotIn("c3", wide.before, "opened after the window's start: not set up")

    def test_a_script_keeps_the_recorded_spacing_from_the_users_average_logon(self):
        import scripted
        # The recorded start is the open_inbox itself, so the first step comes --lead (1.5 s)
        # after the logon; users log on over the ramp-up, on average half of it before the
        # steady phase's start, from which a fixed.script's `at` counts.
        for ramp_up, first in ((0.2, 1.4), (0.0, 1.5)):
            steps = scripted.script_of(self.recording, ["open_inbox", "move"], 1.5, ramp_up)
            self.assertEqual([name for name, _, _ in steps], ["open_inbox", "move"])
            self.assertAlmostEqual(steps[0][1], first)
            self.assertAlmostEqual(steps[1][1], first + 9.0)
            self.assertAlmostEqual(steps[1][2], 51.0)  # up to the next recorded action (idle)

    def test_no_recorded_password_reaches_a_rewritten_command(self):
        for item in self.recording.items:
            line, more = replay.rewrite(item, "p1", "user7", "s3cret", replay.UidMap({}, {}), "INBOX", 5)
            self.assertNotIn("<password>", line + " ".join(more))
            self.assertNotIn("<credentials>", line + " ".join(more))


class Verdicts(unittest.TestCase):
    """cpu_per_action.py's joining of repeats and its paired verdict."""

    def setUp(self):
        import cpu_per_action
        self.cpu = cpu_per_action

    def test_repeats_of_one_measurement_are_joined_and_interleaved_ones_kept_apart(self):
        first = {"client": "neomutt", "action": "read", "us": [100.0], "commands": 4, "differing": 0, "notes": []}
        second = dict(first, us=[110.0], commands=4)
        apart = dict(first, us=[90.0], interleaved=True)
        joined = self.cpu.merged([first, apart, second])
        self.assertEqual([r["us"] for r in joined], [[100.0, 110.0], [90.0]])
        self.assertEqual(joined[0]["commands"], 8)
        self.assertEqual(first["us"], [100.0], "the inputs are left as they were")

    def test_pairs_cancel_a_load_that_both_sides_of_a_pair_share(self):
        # The machine's load doubles the cost of the third and fourth pairs on both sides:
        # unpaired the spread hides a ratio of 1.1, paired it is decided.
        mine = [110.0, 112.0, 220.0, 218.0]
        reference = [100.0, 101.0, 200.0, 199.0]
        self.assertIn("undecided", self.cpu.verdict(mine, reference))
        paired = self.cpu.verdict(mine, reference, paired=True)
        self.assertIn("yes", paired)
        self.assertIn("paired", paired)
        ratio, (low, high) = self.cpu.paired_interval(mine, reference)
        self.assertAlmostEqual(ratio, 1.1, delta=0.005)
        self.assertTrue(1.08 < low < ratio < high < 1.12)

    def test_the_speed_probe_takes_the_hosts_mood_off_each_repeat(self):
        # The second repeat ran on a host twice as slow: the probe took twice as long too.
        replayed = {"us": [100.0, 200.0], "probe_ns": [1000.0, 2000.0]}
        self.assertEqual(self.cpu.normalised(replayed, 1000.0), [100.0, 100.0])
        self.assertIsNone(self.cpu.normalised({"us": [1.0, 2.0], "probe_ns": [1000.0, None]}, 1000.0))
        rows = self.cpu.lines_for("p", "read", "c", {"us": [110.0, 220.0], "probe_ns": [1000.0, 2000.0]},
                                  replayed, True, 1000.0)
        self.assertEqual(len(rows), 2)
        self.assertIn("read (speed-normalised)", rows[1])
        self.assertIn("1.10", rows[1])

    def test_two_windows_joined_normalise_as_their_sum(self):
        launch = {"us": [300.0, 310.0], "probe_ns": [1000.0, 1500.0]}
        open_inbox = {"us": [100.0, 90.0], "probe_ns": [2000.0, 1000.0]}
        both = self.cpu.joined(launch, open_inbox)
        self.assertEqual(both["us"], [400.0, 400.0])
        apart = [a + b for a, b in zip(self.cpu.normalised(launch, 1000.0), self.cpu.normalised(open_inbox, 1000.0))]
        for together, summed in zip(self.cpu.normalised(both, 1000.0), apart):
            self.assertAlmostEqual(together, summed)

    def test_a_windows_speed_is_its_samples_mean_or_the_nearest_one(self):
        import speed
        points = [(10.0, 600), (10.5, 800), (11.0, 1000), (20.0, 5000)]
        self.assertEqual(speed.cost_within(points, 10.2, 11.2), 900)
        self.assertEqual(speed.cost_within(points, 19.0, 19.1), 5000)
        self.assertIsNone(speed.cost_within([], 1.0, 2.0))

    def test_replaying_users_are_spread_as_a_runs_ramp_up_spreads_its_users(self):
        # peakhour's Plan::logon_offset: user k of N at k/N of the ramp-up.
        self.assertEqual(self.cpu.start_offsets(4, 0.2), [0.0, 0.05, 0.1, 0.15000000000000002])
        self.assertEqual(self.cpu.start_offsets(3, 0.0), [0.0, 0.0, 0.0])

    def test_a_paused_runs_profile_waits_between_a_users_actions(self):
        base = ('name = "m"\nmode = "poisson"\n\n[users]\ncount = 5\n\n[actions.read]\nper_day = 20\n\n'
                '[actions.send]\nper_day = 10\n\n[recipients]\naverage = 4.7\nlist_fraction = 0.1\n')
        paused = self.cpu.action_profile(base, "read", 9, 6.0)
        self.assertIn('mode = "fixed"', paused)
        self.assertIn('[fixed]\npause = "6000ms"\n\n[users]', paused)
        self.assertIn("[actions.read]\ncount = 9", paused)
        self.assertIn("[actions.send]\ncount = 0", paused)
        self.assertNotIn("[fixed]", self.cpu.action_profile(base, "read", 9), "back to back: no [fixed] table")

    def test_an_exit_record_is_read_at_the_taskstats_offsets(self):
        import exits
        import struct
        stats = bytearray(288)
        struct.pack_into("Q", stats, 16, 150)  # slices
        struct.pack_into("Q", stats, 24, 4_500_000)  # run-queue wait, ns
        struct.pack_into("Q", stats, 72, 12_345_000)  # CPU, ns
        struct.pack_into("32s", stats, 80, b"imap")
        struct.pack_into("II", stats, 128, 4242, 5829)
        struct.pack_into("Q", stats, 144, 19_700)  # lifetime, µs
        struct.pack_into("QQ", stats, 272, 15, 132)
        row = exits.Listener.decode(bytes(stats))
        self.assertEqual((row["comm"], row["pid"], row["ppid"]), ("imap", 4242, 5829))
        self.assertEqual((row["cpu_us"], row["wait_us"], row["slices"]), (12_345.0, 4_500.0, 150))
        self.assertEqual((row["voluntary"], row["involuntary"], row["life_us"]), (15, 132, 19_700))
        line = exits.summary([row, dict(row, comm="auth")], "imap", ppid=5829)
        self.assertTrue(line.startswith("imap: 1 ended; each: CPU 12345 µs"), line)

    def test_pinning_puts_the_server_on_one_cpu_its_clients_on_the_others_and_then_back(self):
        import processes
        import subprocess
        import time
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            self.skipTest("one CPU: nothing to pin apart")
        # A stand-in for Dovecot's master with a child of its own.
        server = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
        children = []
        try:
            for _ in range(100):
                children = processes.descendants(server.pid)[1:]
                if children:
                    break
                time.sleep(0.01)
            self.assertTrue(children, "the stand-in's child did not start")
            own = os.sched_getaffinity(0)
            pinning = self.cpu.Pinning(server.pid)
            try:
                self.assertEqual(os.sched_getaffinity(server.pid), {cpus[0]})
                self.assertEqual(os.sched_getaffinity(children[0]), {cpus[0]})
                self.assertEqual(os.sched_getaffinity(0), set(cpus[1:]))
            finally:
                pinning.close()
            self.assertEqual(os.sched_getaffinity(server.pid), set(cpus))
            self.assertEqual(os.sched_getaffinity(children[0]), set(cpus))
            self.assertEqual(os.sched_getaffinity(0), own)
        finally:
            for pid in [server.pid] + children:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            server.wait()

    def test_each_windows_processes_carry_the_times_of_its_edges(self):
        import processes
        before = {7: ["imap", 1_000, 2], 8: ["auth", 5_000, 1]}
        after = {7: ["imap", 4_000, 5], 9: ["imap", 2_000, 1]}
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "windows.jsonl")
            processes.write(path, "run", ["read"], [before, after], [100.0, 108.5])
            with open(path, encoding="utf-8") as saved:
                record = json.loads(saved.read())
        self.assertEqual((record["from"], record["to"]), (100.0, 108.5))
        rows = {row["pid"]: row for row in record["processes"]}
        self.assertEqual((rows[7]["us"], rows[7]["slices"], rows[7]["born"]), (3.0, 3, False))
        self.assertEqual((rows[9]["us"], rows[9]["born"]), (2.0, True))
        self.assertEqual(record["lost"], 1)


class MbsyncLocalChanges(unittest.TestCase):
    """mbsync.py's local changes (what the recorder and --itself mbsync do to a Maildir
    before a sync), on a Maildir of files, without mbsync."""

    def setUp(self):
        import mbsync
        self.mbsync = mbsync
        self.work = tempfile.TemporaryDirectory()
        self.store = mbsync.LocalStore(self.work.name, 143, "alice", "secret")
        self.maildir = self.store.maildir
        for folder in ("INBOX", "Folder1", "Sent"):
            for sub in ("cur", "new", "tmp"):
                os.makedirs(os.path.join(self.maildir, folder, sub))
        for name in ("100.a,U=1:2,S", "101.b,U=2:2,", "102.c,U=3:2,S"):
            open(os.path.join(self.maildir, "INBOX", "cur", name), "w").close()

    def tearDown(self):
        self.work.cleanup()

    def names(self, folder):
        return sorted(os.listdir(os.path.join(self.maildir, folder, "cur")))

    def test_a_repeated_read_flags_the_oldest_unseen_message(self):
        self.mbsync.local_change(self.maildir, "read", unseen_first=True)
        self.assertEqual(self.names("INBOX"), ["100.a,U=1:2,S", "101.b,U=2:2,S", "102.c,U=3:2,S"])
        self.assertFalse(self.store.has_unseen())
        # The recorder's read: the oldest, seen or not.
        self.mbsync.local_change(self.maildir, "read")
        self.assertEqual(self.names("INBOX")[0], "100.a,U=1:2,S")

    def test_a_move_is_a_new_file_in_folder1_and_a_delete_trashes_the_next_one(self):
        self.mbsync.local_change(self.maildir, "move")
        self.assertEqual(self.names("Folder1"), ["100.a.moved:2,S"], "no U=: mbsync uploads it as new")
        self.assertEqual(len(self.names("INBOX")), 2)
        self.mbsync.local_change(self.maildir, "delete")
        self.mbsync.local_change(self.maildir, "delete")
        self.assertEqual(self.names("INBOX"), ["101.b,U=2:2,T", "102.c,U=3:2,ST"])

    def test_the_users_mbsyncrc_points_at_the_lab_and_is_private(self):
        with open(self.store.rc, encoding="utf-8") as rc:
            text = rc.read()
        self.assertIn("Port 143\nUser alice\nPass secret\n", text)
        self.assertIn(f"Path {self.maildir}/\n", text)
        self.assertEqual(os.stat(self.store.rc).st_mode & 0o777, 0o600)

    def test_a_send_keeps_its_copy_in_the_local_sent_and_open_inbox_changes_nothing(self):
        self.mbsync.local_change(self.maildir, "send", sent=b"Subject: x\r\n\r\nhi\r\n")
        (copy,) = self.names("Sent")
        with open(os.path.join(self.maildir, "Sent", "cur", copy), "rb") as saved:
            self.assertEqual(saved.read(), b"Subject: x\r\n\r\nhi\r\n")
        before = self.names("INBOX")
        self.mbsync.local_change(self.maildir, "open_inbox")
        self.assertEqual(self.names("INBOX"), before)
        with self.assertRaises(ValueError):
            self.mbsync.local_change(self.maildir, "search")

    def test_an_inbox_all_seen_gets_one_unseen_back(self):
        self.mbsync.local_change(self.maildir, "read", unseen_first=True)
        self.store.mark_one_unseen()
        self.assertTrue(self.store.has_unseen())
        self.assertEqual(self.names("INBOX")[0], "100.a,U=1:2,")

    def test_the_real_client_is_compared_first_as_its_own(self):
        import cpu_per_action
        run = {"client": "peakhour run --client mbsync", "personality": "mbsync", "action": "move",
               "us": [90.0, 92.0], "commands": None, "differing": None, "notes": []}
        itself = {"client": "mbsync-itself", "action": "move", "us": [100.0, 100.0], "itself": True}
        replayed = {"client": "mbsync-synced", "action": "move", "us": [120.0, 118.0]}
        rows = cpu_per_action.comparison([run, itself, replayed]).splitlines()[2:]
        self.assertEqual([r.split(" | ")[2] for r in rows], ["mbsync-itself", "mbsync-synced"])
        self.assertIn("0.91", rows[0])


if __name__ == "__main__":
    unittest.main()
