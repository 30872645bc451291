"""Dovecot's CPU per action: recorded clients replayed, and peakhour's own runs (issue 28 item 3).

Dovecot's CPU is the lab's Dovecot master (from `lab status --json`) and every
process below it; Postfix is not counted. Where a cgroup v1 `cpuacct`
hierarchy is mounted on its own and the lab is not shaped, the script moves
Dovecot's processes into a cpuacct group of its own for the measurement
(children Dovecot forks later are born in it) and reads `cpuacct.usage`, in
ns, ended processes included; it moves them back and removes the group at the
end. Otherwise it reads /proc: live processes' run time (/proc/PID/schedstat,
ns) plus the master's cutime + cstime (the CPU of the `imap` processes it has
reaped), which the kernel prints in clock ticks, so each reading is then
exact only to 10 ms and a cheap action needs many more repetitions.

**Replays.** For each client and action, the action's window of the recording
(the same cut as measure.py) is replayed by --users lab users at once, --rounds
times. A round has two measured phases, each after an unmeasured setup (the
Inbox topped up to the recording's count, the lab's UIDs read, and the
connections that were open before the window logged in, ENABLEd, with their
folder selected and in IDLE if they were):

  action:   the window's commands, then LOGOUT of every connection still open
  baseline: LOGOUT of the connections the setup opened, nothing else

Dovecot's CPU in (action - baseline), over users x rounds, is the action's
cost: what the window's commands cost, plus the connections and logins the
window itself opened. A send also submits one message of the APPEND's size over
SMTP to the user itself, as the recorded client did (Dovecot's LMTP delivery
counts; --no-smtp leaves it out). Each phase ends with --settle seconds of
quiet so that deliveries and exits land inside it. The whole is done
--repeats times: the table shows the mean and the spread (min-max).

With --warm a window is replayed inside the client's session: the setup
replays what the recording did on the connections open before the window
(not a fresh LOGIN and SELECT), the action phase is the window's commands
only, and the connections the recording kept past the window log out after
the reading; the baseline phase then holds nothing but the lab's background.
A long session's window (neomutt, Thunderbird) then does not pay a fresh
process's first writes and the closing LOGOUT's index writes once more.

**peakhour runs.** With --peakhour BIN and --personality NAME (repeatable),
each action is run alone: a copy of the mmb-medium profile in fixed mode with
one action's count at --low and then --high per user and every other action
at 0, one recipient per message (as the recordings sent), `peakhour run
--client NAME` (no --client for `peakhour` itself when the binary has none).
The cost is Dovecot's CPU over the two runs' difference divided by the
difference of the action's counts in summary.json, so logins, logouts and
idle time, equal in both runs, cancel out. Before each run every user's
Inbox is set to --inbox messages (the recordings' 104), and a warning says
when a run did not finish its actions within --run-seconds. Every user starts
its actions at the steady phase's start, back to back, so the users' sessions
run side by side; --pause P puts P seconds between a user's actions, and the
users' actions then come in a burst every P seconds (docs/clients.md, "Side by
side": a session among 20 others costs Dovecot more than one alone).

**The client itself.** With --itself mbsync the real program does each action
(mbsync is a batch program; the others need a user at the keyboard): each user
has an mbsyncrc and a Maildir of its own, kept from round to round; the setup
cuts the server's folders back as for a replay and runs one unmeasured `mbsync
-a`; the action phase is the user's local change (the recorder's, mbsync.py)
and one `mbsync -a`, spread by --stagger like a replay; the baseline phase lasts
as long and does nothing. It is compared as the recording it made
(mbsync-synced), so the comparison says how a personality's run stands against
the real client, without a replay's Python in between.

With --scripted, each personality is instead measured window by window at the
same position in the session as its recorded client (scripts/record/scripted.py):
the recording's actions as a `fixed.script`, Dovecot's CPU read at each window's
edges. Compare it with the --warm replays.

With --interleave the repeats are taken in turns (every client and personality
once, then again), and the comparison pairs them: the geometric mean of the
pairs' ratios with its 95% interval, so that the machine's load, which changes
between repeats on a shared machine and raises the CPU time of every request,
falls on both sides of a pair. --by-process FILE also records each window's CPU
process by process (processes.py prints the breakdown), and --speed-probe times a
fixed piece of work beside the measurement (speed.py) for a second,
speed-normalised row per comparison. --exits FILE records every process that
ends meanwhile (exits.py: the short-lived `imap` processes of a login per
action, with their CPU, their wait for a CPU and their context switches), and
--pin runs Dovecot on the first CPU and every client (replaying users, peakhour
runs) on the others, so that both sides' commands reach an `imap` process that
sleeps between them, as over a network (docs/clients.md, "Side by side").

    python3 scripts/record/cpu_per_action.py --lab-dir DIR [--clients neomutt,mbsync] [--json OUT]
    python3 scripts/record/cpu_per_action.py --lab-dir DIR --peakhour target/debug/peakhour --personality peakhour
    python3 scripts/record/cpu_per_action.py --lab-dir DIR --clients= --peakhour target/debug/peakhour \
        --personality neomutt --scripted --rounds 3 --repeats 4
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exits  # noqa: E402
import mbsync  # noqa: E402
import processes  # noqa: E402
import replay  # noqa: E402
import scripted  # noqa: E402
import speed  # noqa: E402

CLIENTS = ["neomutt", "mbsync", "mbsync-synced", "roundcube", "thunderbird", "thunderbird-warm"]
# The recording a personality is scripted like (--scripted): the usual day's, Thunderbird's
# warm start and mbsync's store in sync.
SCRIPTED_LIKE = {"thunderbird": "thunderbird-warm", "mbsync": "mbsync-synced"}
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "clients")
TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
# The recordings' action names and peakhour's (profile actions).
PEAKHOUR_ACTION = scripted.PEAKHOUR_ACTION
# The --low/--high runs' --ramp-up unless --ramp-up says otherwise.
RUNS_RAMP_UP_S = 1.0


# ---------------------------------------------------------------- Dovecot's CPU

def dovecot_master(lab):
    for server in lab["status"].get("servers", []):
        if server.get("name") == "dovecot":
            for process in server.get("processes", []):
                if process.get("name") == "dovecot":
                    return process["pid"]
    raise SystemExit("error: the lab's status names no Dovecot master process (is the lab up, with Dovecot?)")


def _stat(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
        text = stat.read()
    return text[text.rindex(")") + 2:].split(" ")


def _run_ns(pid):
    with open(f"/proc/{pid}/schedstat", encoding="ascii") as schedstat:
        return int(schedstat.read().split(" ")[0])


def dovecot_cpu_ns(master):
    """Dovecot's CPU so far, in ns: every live process below the master and the
    master itself (schedstat), plus the children it has reaped (cutime + cstime)."""
    total = 0
    for pid in processes.descendants(master)[1:]:
        try:
            total += _run_ns(pid)
        except (OSError, ValueError):
            continue  # ended meanwhile: the master's cutime has it
    fields = _stat(master)  # last, so a child reaped during the walk is counted at most once
    return total + _run_ns(master) + (int(fields[13]) + int(fields[14])) * TICK_NS


class CpuacctGroup:
    """Dovecot's processes in a cpuacct group of their own (cgroup v1), for
    `cpuacct.usage`. Only cpuacct moves: limits (cpu, memory) stay where they were."""

    def __init__(self, master):
        mount = None
        with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
            for line in mountinfo:
                fields = line.split(" ")
                dash = fields.index("-")
                if fields[dash + 1] == "cgroup" and fields[dash + 3].strip().split(",")[-1] == "cpuacct" and \
                        "cpu" not in fields[dash + 3].split(",")[:-1]:
                    mount = fields[4]
        if mount is None:
            raise OSError("no cgroup v1 cpuacct hierarchy mounted on its own")
        with open(f"/proc/{master}/cgroup", encoding="utf-8") as own:
            path = next(line.strip().split(":", 2)[2] for line in own if line.split(":")[1] == "cpuacct")
        self.home = os.path.join(mount, path.lstrip("/"))
        name = f"peakhour-dovecot-cpu-{master}"
        if os.path.basename(self.home) == name:
            # Left by an interrupted run: measure in it again rather than in a group nested in it.
            self.home = os.path.dirname(self.home)
        self.dir = os.path.join(self.home, name)
        os.makedirs(self.dir, exist_ok=True)
        self.master = master
        self._move(self.dir)

    def _move(self, directory):
        for pid in processes.descendants(self.master):  # the master first: what it forks from now on is born there
            try:
                with open(os.path.join(directory, "cgroup.procs"), "w", encoding="ascii") as procs:
                    procs.write(str(pid))
            except OSError:
                continue  # ended meanwhile

    def usage_ns(self):
        with open(os.path.join(self.dir, "cpuacct.usage"), encoding="ascii") as usage:
            return int(usage.read())

    def close(self):
        for _ in range(5):
            self._move(self.home)
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.2)
        print(f"warning: could not remove {self.dir}: a process is still in it", file=sys.stderr)


class DovecotMeter:
    """Dovecot's CPU so far, in ns: the cpuacct group where it can, /proc otherwise.
    With `by_process` (a file), each reading also takes a snapshot of Dovecot's
    processes (processes.py) for the breakdown of the windows between readings."""

    def __init__(self, lab, by_process=None, probe=None):
        self.master = dovecot_master(lab)
        self.by_process, self.snapshots = by_process, []
        # The wall-clock time of every reading, and the speed probe's file (speed.py), if any.
        self.times, self.probe = [], probe
        self.group, self.source = None, "/proc (schedstat + the master's cutime, 10 ms ticks)"
        if not lab["status"].get("limits", {}).get("cgroup"):
            try:
                self.group = CpuacctGroup(self.master)
                self.source = f"cpuacct.usage of {self.group.dir}"
            except (OSError, StopIteration) as error:
                print(f"note: reading /proc, not a cgroup: {error}", file=sys.stderr)

    def __call__(self):
        value = self.group.usage_ns() if self.group else dovecot_cpu_ns(self.master)
        self.times.append(time.time())
        if self.by_process:
            self.snapshots.append(processes.snapshot(self.master))
        return value

    def speed(self, start, stop):
        """The speed probe's mean cost (ns) between two wall-clock times; None without a probe."""
        if not self.probe:
            return None
        return speed.cost_within(speed.samples(self.probe), start, stop)

    def write_windows(self, label, names):
        """With --by-process: the windows between the readings since the last call, to the file."""
        if self.by_process and len(self.snapshots) == len(names) + 1:
            processes.write(self.by_process, label, names, self.snapshots, self.times[-len(self.snapshots):])
        self.snapshots = []

    def close(self):
        if self.group:
            self.group.close()


class Pinning:
    """Dovecot on the first CPU, this script and everything it starts (the replaying
    users, the peakhour runs, the speed probe) on the others, for the measurement;
    put back as they were by close().

    On one machine a client and the server it talks to share the CPUs, and where the
    client runs decides what each command costs the server: a client woken on the
    CPU the `imap` process just answered on preempts it, sends the next command and
    the process finds it waiting, while a client on another CPU leaves the process to
    go to sleep and be woken for every command, as a client across a network always
    does. A single-threaded replay and a multi-threaded peakhour run land differently
    (docs/clients.md, "Side by side"); pinned, both are served the second way."""

    def __init__(self, master):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("error: --pin needs two CPUs at least (one for Dovecot, one for its clients)")
        self.master, self.server, self.clients = master, {cpus[0]}, set(cpus[1:])
        self.own = os.sched_getaffinity(0)
        self.before = {}
        for tid in self._dovecot_tasks():
            try:
                self.before[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, self.server)
            except OSError:
                continue  # ended meanwhile
        if os.sched_getaffinity(master) != self.server:
            self.close()
            raise SystemExit(f"error: --pin: Dovecot's master ({master}) cannot run on CPU {cpus[0]} alone "
                             "(a shaped lab's cpuset?)")
        os.sched_setaffinity(0, self.clients)

    def _dovecot_tasks(self):
        # The master first: what it forks from now on inherits its CPU.
        for pid in processes.descendants(self.master):
            try:
                yield from (int(tid) for tid in os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue

    def describe(self):
        return f"Dovecot pinned to CPU {min(self.server)}, its clients to CPU(s) " \
               f"{','.join(str(c) for c in sorted(self.clients))}"

    def close(self):
        everywhere = set().union(*self.before.values()) if self.before else self.own
        for tid in self._dovecot_tasks():
            try:
                os.sched_setaffinity(tid, self.before.get(tid, everywhere))
            except OSError:
                continue
        os.sched_setaffinity(0, self.own)


# ---------------------------------------------------------------- replays

class Round:
    """One measured round: --users workers and the main thread meet at a barrier
    between setup, measurement and settling."""

    def __init__(self, recording, piece, lab, users, args, smtp_size, label=""):
        self.recording, self.piece, self.lab, self.users, self.args = recording, piece, lab, users, args
        self.label = label
        self.smtp_size = smtp_size
        self.barrier = threading.Barrier(len(users) + 1, timeout=args.timeout)
        self.errors, self.commands, self.differing, self.notes = [], 0, 0, []
        self.lock = threading.Lock()

    # What a failing user's worker reports (and aborts the round on).
    FAILURES = (replay.ReplayError, OSError, threading.BrokenBarrierError)

    def worker(self, user, offset):
        try:
            for phase in ("action", "baseline"):
                state = self.set_up(user)
                self.barrier.wait()  # set up
                self.barrier.wait()  # the main thread has read the CPU
                # This user's place in the spread (--stagger), in both phases: the baseline
                # then lasts as long as the action phase and its background cancels out.
                time.sleep(offset)
                self.perform(user, phase, state)
                self.barrier.wait()  # done
                self.barrier.wait()  # the main thread has read the CPU again: the next setup may start
                self.clean_up(state)
        except self.FAILURES as error:
            with self.lock:
                self.errors.append(f"{user}: {error}")
            self.barrier.abort()

    def set_up(self, user):
        """Before a phase, unmeasured: the mailbox as the recording had it, and the
        connections open before the window; returns the phase's replayer."""
        uids = replay.prepare_mailbox(self.recording, self.piece, self.lab, user, self.args.timeout)
        replayer = replay.Replayer(self.recording, self.piece, self.lab, user, self.args.idle_bound,
                                   self.args.timeout, uids, warm=self.args.warm, paced=self.args.paced)
        replayer.setup()
        return replayer

    def perform(self, user, phase, replayer):
        """The measured part of a phase."""
        if phase == "action":
            replayer.run(time.monotonic() + self.args.timeout, keep=self.args.warm)
            if self.smtp_size is not None:
                replay.submit(self.lab, user, self.smtp_size, self.args.timeout)
            with self.lock:
                self.commands += replayer.commands
                self.differing += replayer.differing
                self.notes += replayer.differences[:2]
        elif not self.args.warm:
            replayer.logout()
        if phase == "baseline" and self.args.paced:
            # As long as the paced window: the lab's background over it cancels out.
            time.sleep(max(0.0, self.piece.stop - self.piece.start))

    def clean_up(self, replayer):
        """After the reading, unmeasured: --warm's connections the client kept open."""
        replayer.logout()

    def measure(self, master):
        """(action ns, baseline ns) of this round."""
        offsets = start_offsets(len(self.users), self.args.stagger)
        threads = [threading.Thread(target=self.worker, args=(u, offset), daemon=True)
                   for u, offset in zip(self.users, offsets)]
        for thread in threads:
            thread.start()
        spent, self.speeds = [], []
        try:
            for _ in ("action", "baseline"):
                self.barrier.wait()
                time.sleep(self.args.settle)
                before = master()
                self.barrier.wait()
                self.barrier.wait()
                time.sleep(self.args.settle)
                spent.append(master() - before)
                self.speeds.append(master.speed(master.times[-2], master.times[-1]))
                self.barrier.wait()
        except threading.BrokenBarrierError:
            pass
        for thread in threads:
            thread.join(self.args.timeout)
        master.write_windows(self.label, ["action", "between", "baseline"])
        if self.errors or len(spent) != 2:
            raise SystemExit(f"error: {self.recording.fixture} round failed: {'; '.join(self.errors[:3])}")
        return spent[0], spent[1]


def start_offsets(users, stagger):
    """Each user's delay into a measured phase: evenly over `stagger` seconds, user k
    at k/N of it, as a peakhour run's --ramp-up spreads its logons (Plan::logon_offset)
    and with them every command a client's own timers time from its logon. Commands
    that come together meet an awake, warm CPU: Thunderbird's replayed read window (a
    paced sweep, one STATUS a user every 0.4 s) cost Dovecot 3.2 ms a user at one
    instant and 4.9 spread over 0.2 s (docs/clients.md, "Together or spread out"), so
    both sides of a comparison must arrive alike."""
    return [stagger * k / users for k in range(users)]


def appended_size(piece):
    """The size of the first APPEND's literal in a recording's window (a send's copy to
    Sent, a move's upload), 1024 when it has none."""
    appends = [i for i in piece.items if i.name == "APPEND"]
    found = replay.LITERAL.search(appends[0].text) if appends else None
    return int(found.group(1)) if found else 1024


def measure_repeats(args, rounds, users, master, make_round):
    """--repeats repeats of `rounds` rounds made by make_round(): per repeat, µs of
    Dovecot's CPU per action (action minus baseline, over the rounds' users) and the
    speed probe's mean cost; and every round measured."""
    per_repeat, probes, done = [], [], []
    for _ in range(args.repeats):
        spent_action = spent_base = 0
        speeds = []
        for _ in range(rounds):
            measured = make_round()
            action_ns, base_ns = measured.measure(master)
            spent_action += action_ns
            spent_base += base_ns
            speeds.append(measured.speeds[0])
            done.append(measured)
        per_repeat.append((spent_action - spent_base) / (rounds * len(users)) / 1000)
        probes.append(None if None in speeds else statistics.mean(speeds))
    return per_repeat, probes, done


def replay_cost(client, action, lab, master, args):
    """Per repeat: µs of Dovecot CPU per action; with the commands replayed and answered otherwise."""
    recording = replay.Recording(os.path.join(args.fixtures, client))
    piece = recording.slice(action, all_open=args.all_open)
    if not piece.items:
        return None
    size = appended_size(piece)
    smtp_size = size if action == "send" and args.smtp else None
    rounds = args.idle_rounds if action == "idle" else args.rounds
    users = [f"user{n}" for n in range(args.first_user, args.first_user + args.users)]
    per_repeat, probes, done = measure_repeats(
        args, rounds, users, master,
        lambda: Round(recording, piece, lab, users, args, smtp_size, label=f"{client} {action}"))
    window = next(stop - start for name, start, stop in recording.windows() if name == action)
    return {"client": client, "action": action, "us": per_repeat, "probe_ns": probes, "reps": rounds * len(users),
            "warm": args.warm, "paced": args.paced, **({"all_open": True} if args.all_open else {}),
            **({"stagger_s": args.stagger} if args.stagger else {}),
            "window_s": round(window, 1), "commands": sum(r.commands for r in done),
            "differing": sum(r.differing for r in done), "notes": [n for r in done for n in r.notes][:3]}


# ---------------------------------------------------------------- the client itself

class MbsyncRound(Round):
    """One measured round of the real mbsync (--itself mbsync): each user's own
    mbsyncrc and Maildir (mbsync.LocalStore). Setup, outside the measurement: the
    server's folders cut back to the recording's counts and the Inbox topped up (as
    for a replay), then one `mbsync -a` so that the local copy is in step. Action
    phase: the user's local change (mbsync.local_change), then `mbsync -a`; a send
    then submits its message over SMTP, as a replayed send does. Baseline phase: as
    long as this user's action phase took, nothing."""

    FAILURES = Round.FAILURES + (RuntimeError, subprocess.SubprocessError)

    def __init__(self, stores, action, size, *rest, **named):
        super().__init__(*rest, **named)
        # `size`: the recorded APPEND's, for a send's copy in the local Sent.
        self.stores, self.action, self.size = stores, action, size
        # Each user's action phase's length, which its baseline phase lasts too.
        self.took = {}

    def set_up(self, user):
        store = self.stores[user]
        replay.prepare_mailbox(self.recording, self.piece, self.lab, user, self.args.timeout)
        store.sync(self.args.timeout)
        if self.action == "read" and not store.has_unseen():
            store.mark_one_unseen()
            store.sync(self.args.timeout)
        return store

    def perform(self, user, phase, store):
        if phase == "baseline":
            time.sleep(self.took.get(user, 0.0))
            return
        began = time.monotonic()
        mbsync.local_change(store.maildir, self.action, sent=replay.message_of_size(self.size, 0),
                            unseen_first=True)
        store.sync(self.args.timeout)
        if self.smtp_size is not None:
            replay.submit(self.lab, user, self.smtp_size, self.args.timeout)
        self.took[user] = time.monotonic() - began

    def clean_up(self, store):
        pass


# The real clients --itself can run, and the recording each is compared as.
ITSELF = {"mbsync": "mbsync-synced"}


def itself_cost(name, action, lab, master, args):
    """Per repeat: µs of Dovecot CPU per action with the real client doing it (only
    mbsync, a batch program: see MbsyncRound); each user's local copy (in
    args.stores, under args.itself_work) is kept from round to round."""
    if action not in mbsync.HOW and action != "open_inbox":
        return None
    recording = replay.Recording(os.path.join(args.fixtures, ITSELF[name]))
    piece = recording.slice(action)
    size = appended_size(piece)
    users = [f"user{n}" for n in range(args.first_user, args.first_user + args.users)]
    for user in users:
        if user not in args.stores:
            args.stores[user] = mbsync.LocalStore(os.path.join(args.itself_work, user), lab["imap"][1], user,
                                                  lab["password"])
    smtp_size = size if action == "send" and args.smtp else None
    per_repeat, probes, _ = measure_repeats(
        args, args.rounds, users, master,
        lambda: MbsyncRound(args.stores, action, size, recording, piece, lab, users, args, smtp_size,
                            label=f"{name} itself {action}"))
    return {"client": f"{name}-itself", "action": action, "us": per_repeat, "probe_ns": probes,
            "reps": args.rounds * len(users), "itself": True,
            **({"stagger_s": args.stagger} if args.stagger else {}),
            "commands": None, "differing": None, "notes": []}


# ---------------------------------------------------------------- peakhour runs

def action_profile(base_text, action, count, pause=0.0):
    """mmb-medium in fixed mode: `count` of one action per user, 0 of the others,
    `pause` seconds between a user's actions (fixed.pause; 0: back to back)."""
    return scripted.fixed_profile(base_text, {action: count}, pause=pause)


def run_count(summary_path, action):
    """The action's count in a run's summary.json (`actions.<name>.count`)."""
    summary = json.load(open(summary_path, encoding="utf-8"))
    return summary.get("actions", {}).get(action, {}).get("count", 0)


def reset_inboxes(lab, users, wanted, timeout):
    """Outside the measurement: each user's Inbox holds exactly `wanted` messages
    (the recordings' count), topped up with fill_inbox's messages or cut by
    expunging the newest (mail the previous runs delivered), so that every run
    starts from the mailbox the replays had and moves, deletes and deliveries of
    earlier runs do not change what a check or a list costs."""
    import imaplib
    import fill_inbox  # noqa: E402  (same directory)

    def one(user):
        imap = imaplib.IMAP4(*lab["imap"], timeout=timeout)
        imap.login(user, lab["password"])
        exists = int(imap.select("INBOX")[1][0])
        for n in range(exists, wanted):
            imap.append("INBOX", "(\\Seen)", None, fill_inbox.message(user, n))
        if exists > wanted:
            imap.store(f"{wanted + 1}:*", "+FLAGS.SILENT", "(\\Deleted)")
            imap.expunge()
        imap.logout()

    threads = [threading.Thread(target=one, args=(u,), daemon=True) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)


def peakhour_cost(peakhour, personality, action, lab, master, args, work):
    lab_dir = args.lab_dir
    base = subprocess.run([peakhour, "profiles", "show", "mmb-medium"], capture_output=True, text=True,
                          check=True).stdout
    results, probes = [], []
    ramp_up = RUNS_RAMP_UP_S if args.ramp_up is None else args.ramp_up
    for _ in range(args.repeats):
        measured, speeds = [], []
        for count in (args.low, args.high):
            profile = os.path.join(work, f"{action}-{count}.toml")
            with open(profile, "w", encoding="utf-8") as out:
                out.write(action_profile(base, PEAKHOUR_ACTION[action], count, args.pause))
            out_dir = os.path.join(work, f"run-{personality}-{action}-{count}")
            shutil.rmtree(out_dir, ignore_errors=True)
            command = [peakhour, "run", "--lab-dir", lab_dir, "--profile", profile, "--users", str(args.users),
                       "--ramp-up", f"{int(ramp_up * 1000)}ms", "--drain", "1s", "--duration", f"{args.run_seconds}s",
                       "--out", out_dir]
            if personality != "peakhour" or args.client_flag:
                command += ["--client", personality]
            if args.inbox:
                reset_inboxes(lab, [f"user{n}" for n in range(1, args.users + 1)], args.inbox, args.timeout)
            time.sleep(args.settle)
            before = master()
            finished = subprocess.run(command, capture_output=True, text=True, timeout=args.run_seconds + 300)
            time.sleep(args.settle)
            spent = master() - before
            speeds.append(master.speed(master.times[-2], master.times[-1]))
            if finished.returncode > 1:
                raise SystemExit(f"error: {' '.join(command)} exited {finished.returncode}: "
                                 f"{finished.stderr.strip()[-400:]}")
            measured.append((spent, run_count(os.path.join(out_dir, "summary.json"), PEAKHOUR_ACTION[action])))
        (low_ns, low_n), (high_ns, high_n) = measured
        if high_n < args.high * args.users:
            print(f"warning: {personality} {action}: the run did {high_n} of {args.high * args.users} actions "
                  "(an action cut off at the end counts its CPU but not itself): raise --run-seconds",
                  file=sys.stderr)
        if high_n <= low_n:
            raise SystemExit(f"error: {personality} {action}: the runs did {low_n} and {high_n} actions; "
                             "raise --run-seconds or --high")
        results.append((high_ns - low_ns) / (high_n - low_n) / 1000)
        probes.append(None if None in speeds else statistics.mean(speeds))
    with_flag = personality != "peakhour" or args.client_flag
    label = f"peakhour run --client {personality}" if with_flag else "peakhour run (today's user)"
    if args.pause:
        label += f" (paused {args.pause:g} s, ramp-up {ramp_up:g} s)"
    return {"client": label, "personality": personality, "action": action, "us": results, "probe_ns": probes,
            "reps": f"{args.high - args.low}/user", "commands": None, "differing": None, "notes": [],
            **({"pause_s": args.pause, "ramp_up_s": ramp_up} if args.pause else {})}


# ---------------------------------------------------------------- the table

def row(result):
    values = result["us"]
    mean = statistics.mean(values)
    spread = f"{min(values):.0f}–{max(values):.0f}" if len(values) > 1 else "-"
    return mean, spread


def table(results):
    lines = ["| client | action | Dovecot CPU µs/action (mean) | spread (min–max) | reps each | "
             "commands answered otherwise |", "|---|---|---|---|---|---|"]
    for result in results:
        mean, spread = row(result)
        differing = "-" if result["differing"] is None else f"{result['differing']} of {result['commands']}"
        action = result["action"]
        if action == "idle" and result.get("window_s"):
            # The idle window is long and varies per client: say what an hour of it costs.
            action = f"idle ({result['window_s']:.0f} s; {mean * 3600 / result['window_s'] / 1000:.0f} ms/hour)"
        client = result["client"] + (" (warm)" if result.get("warm") else "") + (
            " (paced)" if result.get("paced") else "") + (
            f" (spread {result['stagger_s']:g} s)" if result.get("stagger_s") else "") + (
            " (pinned)" if result.get("pinned") else "")
        lines.append(f"| {client} | {action} | {mean:.0f} | {spread} | {result['reps']} | "
                     f"{differing} |")
    return "\n".join(lines)


# Student's t, two-sided 95%, by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}


def ratio_interval(mine, reference):
    """The ratio of the means and its 95% confidence interval (the delta method: the
    relative standard errors of the two means added in quadrature, with Student's t
    at the smaller sample's degrees of freedom, which errs wide)."""
    ratio = statistics.mean(mine) / statistics.mean(reference)
    if len(mine) < 2 or len(reference) < 2:
        return ratio, None
    relative = [statistics.stdev(x) / statistics.mean(x) / len(x) ** 0.5 for x in (mine, reference)]
    t = T95.get(min(len(mine), len(reference)) - 1, 2.0)
    half = t * (relative[0] ** 2 + relative[1] ** 2) ** 0.5
    return ratio, (ratio * (1 - half), ratio * (1 + half))


def paired_interval(mine, reference):
    """For repeats taken in turns (--interleave), pair by pair: the geometric mean of
    the pairs' ratios and its 95% confidence interval (Student's t on the logarithms).
    A change in the machine's load between pairs falls on both sides of a pair, so it
    cancels, where the unpaired interval counts it as spread."""
    logs = [math.log(a / b) for a, b in zip(mine, reference)]
    mean = statistics.mean(logs)
    half = T95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / len(logs) ** 0.5
    return math.exp(mean), (math.exp(mean - half), math.exp(mean + half))


def verdict(mine, reference, paired=False):
    """The ratio of the means with its 95% confidence interval and the range the
    repeats allow (lowest over highest, highest over lowest), and whether the interval
    lies within 20%: `yes`, `no` when it lies wholly outside, `undecided` when it
    straddles a bound (more repeats decide it). The range, any repeat against any
    other, is shown for a reader who wants the stricter reading. `paired` (both sides'
    repeats taken in turns, as many a side): the paired ratio and interval instead,
    marked so."""
    if min(reference) <= 0 or min(mine) <= 0:
        return f"- | undecided: a repeat measured {min(min(mine), min(reference)):.0f} µs (too few actions) "
    paired = paired and len(mine) == len(reference) >= 2
    ratio, interval = paired_interval(mine, reference) if paired else ratio_interval(mine, reference)
    low, high = min(mine) / max(reference), max(mine) / min(reference)
    if interval is None:
        return f"{ratio:.2f} (one repeat) | undecided: more repeats"
    if 0.8 <= interval[0] and interval[1] <= 1.2:
        answer = "yes"
    elif interval[1] < 0.8 or interval[0] > 1.2:
        answer = "no"
    else:
        answer = "undecided: more repeats"
    kind = "paired " if paired else ""
    return f"{ratio:.2f} ({kind}{interval[0]:.2f}–{interval[1]:.2f}; {low:.2f}–{high:.2f}) | {answer}"


def normalised(result, reference_ns):
    """The result's repeats at the speed probe's reference cost: each repeat's µs
    times reference_ns over the probe's mean cost in its windows; None without a
    probe for every repeat."""
    probes = result.get("probe_ns") or []
    if not reference_ns or len(probes) != len(result["us"]) or None in probes:
        return None
    return [us * reference_ns / probe for us, probe in zip(result["us"], probes)]


def lines_for(who, action, client, mine, reference, paired, reference_ns):
    """A comparison row from two results ({"us": [...], "probe_ns": [...]}), and a
    second, speed-normalised row when both sides had the probe."""
    lines = [f"| {who} | {action} | {client} | {statistics.mean(mine['us']):.0f} | "
             f"{statistics.mean(reference['us']):.0f} | {verdict(mine['us'], reference['us'], paired)} |"]
    mine_n, reference_n = normalised(mine, reference_ns), normalised(reference, reference_ns)
    if mine_n and reference_n:
        lines.append(f"| {who} | {action} (speed-normalised) | {client} | {statistics.mean(mine_n):.0f} | "
                     f"{statistics.mean(reference_n):.0f} | {verdict(mine_n, reference_n, paired)} |")
    return lines


def joined(first, second):
    """Two windows' results as one, repeat by repeat; its probe is the one at which
    the sum normalises to the sum of the two windows normalised each at its own."""
    us = [a + b for a, b in zip(first["us"], second["us"])]
    missing = [None] * len(us)
    probes = []
    for total, a, b, pa, pb in zip(us, first["us"], second["us"], first.get("probe_ns") or missing,
                                   second.get("probe_ns") or missing):
        probes.append(None if None in (pa, pb) else total / (a / pa + b / pb))
    return {"us": us, "probe_ns": probes}


def launch_and_open(results, open_inbox, warm, reference_ns):
    """Thunderbird's launch and open_inbox together, repeat by repeat: under many
    logons at once the personality's logon runs past the 0.15 s the recording has
    between its login and its open_inbox, so the two windows are compared as one."""
    client = open_inbox["scripted"]
    logon = next((r for r in results if r.get("scripted") == client and r["action"] == "logon"
                  and r["personality"] == open_inbox["personality"]), None)
    if logon is None or (client, "launch") not in warm or (client, "open_inbox") not in warm:
        return []
    mine = joined(logon, open_inbox)
    reference = joined(warm[(client, "launch")], warm[(client, "open_inbox")])
    paired = all(r.get("interleaved") for r in (logon, open_inbox, warm[(client, "launch")],
                                                 warm[(client, "open_inbox")]))
    return lines_for(f"{open_inbox['personality']} (scripted)", "launch + open_inbox", f"{client} (warm)",
                     mine, reference, paired, reference_ns)


def comparison(results):
    """Per personality and action, its cost against the recorded client's (the
    replay's): `thunderbird` against thunderbird's recording, and so on;
    `peakhour` (today's user, which imitates no client) against every one. Where
    both sides ran with the speed probe, a second row gives the ratio with each
    repeat normalised to the probe's median cost over all the results."""
    replays = {(r["client"], r["action"]): r for r in results if "personality" not in r}
    # A scripted personality keeps the client's pace: the paced warm replay first.
    warm = {(r["client"], r["action"]): r for r in sorted(
        (r for r in results if "personality" not in r and r.get("warm")), key=lambda r: bool(r.get("paced")))}
    probes = [p for r in results for p in (r.get("probe_ns") or []) if p]
    reference_ns = statistics.median(probes) if probes else None
    clients = sorted({client for client, _ in replays})
    lines = ["| personality | action | recorded client | peakhour µs | recorded client µs | "
             "ratio (95% CI; range) | "
             "within 20% |", "|---|---|---|---|---|---|---|"]
    for result in results:
        if "personality" not in result:
            continue
        name = result["personality"]
        if result.get("scripted"):
            # The same position in the session: against the window replayed inside its session.
            # The logon window is the recording's launch (Thunderbird's; the others' start is
            # their open_inbox window).
            key = (result["scripted"], "launch" if result["action"] == "logon" else result["action"])
            reference = warm.get(key) or replays.get(key)
            if reference is not None:
                label = result["scripted"] + (" (warm" + (", paced)" if warm[key].get("paced") else ")")
                                              if key in warm else "")
                paired = bool(result.get("interleaved") and reference.get("interleaved"))
                lines += lines_for(f"{name} (scripted)", result["action"], label, result, reference, paired,
                                   reference_ns)
            if result["action"] == "open_inbox":
                lines += launch_and_open(results, result, warm, reference_ns)
            continue
        # Thunderbird's personality follows the warm start and mbsync's a
        # store in sync (the usual day); their first starts (the full
        # downloads) are shown too, and mbsync itself run (--itself) first.
        own = [c for c in (name + "-itself", name + "-warm", name + "-synced", name)
               if (c, result["action"]) in replays]
        for client in clients if name == "peakhour" else own:
            reference = replays.get((client, result["action"]))
            if reference is None:
                continue
            paired = bool(result.get("interleaved") and reference.get("interleaved"))
            lines += lines_for(name, result["action"], client, result, reference, paired, reference_ns)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab-dir", help="the lab (required unless --table-from)")
    parser.add_argument("--table-from", nargs="+", metavar="JSON",
                        help="print the tables from results saved with --json, measuring nothing")
    parser.add_argument("--fixtures", default=FIXTURES)
    parser.add_argument("--clients", default=",".join(CLIENTS), help="recordings to replay ('' for none)")
    parser.add_argument("--actions", default="open_inbox,read,move,delete,send,search,idle")
    parser.add_argument("--users", type=int, default=20, help="lab users at once (user<first>..)")
    parser.add_argument("--first-user", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5, help="rounds per repeat (reps = users x rounds)")
    parser.add_argument("--idle-rounds", type=int, default=1, help="rounds per repeat for the idle window")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle-bound", type=float, default=0.2)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--no-smtp", dest="smtp", action="store_false")
    parser.add_argument("--warm", action="store_true",
                        help="replay each window inside the client's session as it was: the connections open "
                             "before it set up by replaying their history (not a fresh LOGIN and SELECT), and "
                             "those still open after it logged out outside the measurement (the baseline phase "
                             "then measures nothing but the lab's own background)")
    parser.add_argument("--paced", action="store_true",
                        help="replay each command at its recorded offset into the window (the client's own "
                             "pace, IDLE held as long as recorded) instead of back to back")
    parser.add_argument("--stagger", type=float, default=0.0,
                        help="spread the replaying users' starts evenly over this many seconds (default: 0, one "
                             "instant). Match how the personality's commands arrive: a client's own timers (its "
                             "sweep) are spread by the run's --ramp-up, a fixed.script's steps come at one instant "
                             "whatever the ramp-up, and so do the actions of a --low/--high run (every user starts "
                             "them at the steady phase's start: back to back, or with --pause P one each P seconds, "
                             "the users' one after another as the CPUs serve them, about 0.2 s for 20 mbsync syncs); "
                             "how commands arrive changes what they cost Dovecot (docs/clients.md)")
    parser.add_argument("--ramp-up", type=float,
                        help="the runs' --ramp-up in seconds (0: every user logs on at one instant, and its own "
                             f"timers fire together too, as a replay with --stagger 0); default {scripted.RAMP_UP_S:g} "
                             f"with --scripted, {RUNS_RAMP_UP_S:g} for the --low/--high runs")
    parser.add_argument("--pause", type=float, default=0.0,
                        help="for the --low/--high runs: seconds between one action of a user and its next "
                             "(fixed.pause; default 0, back to back). With 0 every user does all its actions at "
                             "once at the start, 20 mbsync syncs side by side on the lab's two CPUs, each dearer "
                             "than alone; with P, every P seconds each user does one, about 0.2 s for the 20, as "
                             "a replay with --stagger 0.2 (docs/clients.md, \"Side by side\")")
    parser.add_argument("--pin", action="store_true",
                        help="Dovecot on the first CPU, the replaying users and the peakhour runs on the others, "
                             "so that both sides' commands reach a process that sleeps between them, as over a "
                             "network (docs/clients.md, \"Side by side\")")
    parser.add_argument("--exits", metavar="FILE",
                        help="record every process that ends during the measurement, with its CPU, its wait "
                             "for a CPU and its context switches (exits.py; root)")
    parser.add_argument("--all-open", action="store_true",
                        help="with --warm: set up every connection the recording held open at the window's start "
                             "(its Inbox in IDLE beside Thunderbird's sweep), not only those the window uses")
    parser.add_argument("--itself", default="", metavar="CLIENTS",
                        help="real clients to run for each action, compared as their recording (only mbsync: "
                             "a local change and one `mbsync -a` a user, in a Maildir of its own)")
    parser.add_argument("--peakhour", help="a peakhour binary: also measure its runs")
    parser.add_argument("--personality", action="append", default=[],
                        help="peakhour run --client NAME (repeatable); 'peakhour' is today's user")
    parser.add_argument("--client-flag", action="store_true",
                        help="pass --client peakhour too (a binary that has --client)")
    parser.add_argument("--low", type=int, default=2)
    parser.add_argument("--high", type=int, default=12)
    parser.add_argument("--run-seconds", type=int, default=20)
    parser.add_argument("--inbox", type=int, default=104,
                        help="each run starts with this many messages in every Inbox (the recordings'; 0: as it is)")
    parser.add_argument("--scripted", action="store_true",
                        help="measure each personality window by window at its recorded client's positions "
                             "(a fixed.script of the recording's actions; scripts/record/scripted.py)")
    parser.add_argument("--against", help="with --scripted: the recording to script after (default: the "
                                          "personality's own; thunderbird-warm for thunderbird)")
    parser.add_argument("--lead", type=float, default=1.5,
                        help="with --scripted: seconds from the logon to the first step, for a client whose "
                             "recorded start is its open_inbox")
    parser.add_argument("--one-process", action="store_true",
                        help="with --scripted: Thunderbird's users in one peakhour process, not one shard each "
                             "(their folder draws then fall anywhere: a diagnosis of what the 20 processes cost "
                             "the server, not a verdict)")
    parser.add_argument("--startup", type=float, default=4.0,
                        help="with --scripted: seconds between launching peakhour and its --start-at")
    parser.add_argument("--interleave", action="store_true",
                        help="take the repeats in turns: each repeat measures every client and personality once "
                             "before the next begins, so that a change in the machine's load falls on both sides")
    parser.add_argument("--speed-probe", action="store_true",
                        help="run scripts/record/speed.py beside the measurement (a fixed piece of work timed "
                             "every 0.25 s) and give each comparison a second, speed-normalised row as well")
    parser.add_argument("--json", help="also write the results as JSON here")
    parser.add_argument("--by-process", metavar="FILE",
                        help="also append each measured window's CPU process by process to FILE (JSON lines; "
                             "scripts/record/processes.py FILE prints the breakdown)")
    args = parser.parse_args()
    for name, value, low, high in (("--users", args.users, 1, 500), ("--rounds", args.rounds, 1, 100),
                                   ("--idle-rounds", args.idle_rounds, 1, 100), ("--repeats", args.repeats, 1, 20)):
        if not low <= value <= high:
            parser.error(f"{name} takes {low} to {high}")
    if args.pause < 0 or (args.ramp_up is not None and args.ramp_up < 0):
        parser.error("--pause and --ramp-up take seconds >= 0")
    if args.scripted and args.ramp_up is None:
        args.ramp_up = scripted.RAMP_UP_S
    if args.scripted and args.pause:
        parser.error("--pause is for the --low/--high runs; a --scripted run's steps keep their recorded times")
    unknown = [c for c in args.itself.split(",") if c and c not in ITSELF]
    if unknown:
        parser.error(f"--itself: {', '.join(unknown)}: only {', '.join(ITSELF)} can be run here")
    if args.itself and not shutil.which("mbsync"):
        parser.error("--itself mbsync: no mbsync here (scripts/setup.sh --recording installs isync)")
    if args.table_from:
        results = []
        for path in args.table_from:
            with open(path, encoding="utf-8") as saved:
                results += json.load(saved)
        results = merged(results)
        print(table(results))
        if any("personality" in r for r in results):
            print()
            print(comparison(results))
        return
    if not args.lab_dir:
        parser.error("--lab-dir is required")
    lab = replay.lab_of(args.lab_dir)
    # Each user's local copy for --itself, kept from round to round and repeat to repeat.
    args.itself_work, args.stores = tempfile.mkdtemp(prefix="peakhour-itself-"), {}
    # Pinned before anything starts, so that the speed probe and every run inherit it.
    pinning = Pinning(dovecot_master(lab)) if args.pin else None
    recorder = prober = None
    try:
        if pinning:
            print(f"# {pinning.describe()}", file=sys.stderr)
        try:
            recorder = exits.Recorder(args.exits) if args.exits else None
        except OSError as error:
            raise SystemExit(f"error: --exits: {error}")
        probe = None
        if args.speed_probe:
            probe = (args.json or os.path.join(tempfile.gettempdir(), "peakhour-cpu")) + ".speed"
            open(probe, "w", encoding="ascii").close()
            prober = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                    "speed.py"), "--out", probe, "--max-seconds",
                                       "43200"])
        master = DovecotMeter(lab, args.by_process, probe)
        print(f"# Dovecot's CPU from {master.source}" + (f"; the speed probe in {probe}" if probe else ""),
              file=sys.stderr)
        try:
            if args.interleave:
                results, repeats = [], args.repeats
                args.repeats = 1
                for repeat in range(repeats):
                    print(f"# repeat {repeat + 1} of {repeats}", file=sys.stderr, flush=True)
                    results = merged(results + measure_all(args, lab, master, earlier=results))
                    save_partial(args, results)
                args.repeats = repeats
            else:
                results = measure_all(args, lab, master)
        finally:
            master.close()
    finally:
        if prober:
            prober.terminate()
            prober.wait(10)
        if recorder:
            recorder.close()
        if pinning:
            pinning.close()
        shutil.rmtree(args.itself_work, ignore_errors=True)
    print(table(results))
    if args.peakhour:
        print()
        print(comparison(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)


# What a result's repeats are: not part of what was measured.
PER_REPEAT = ("us", "probe_ns", "commands", "differing", "notes", "problems")


def merged(results):
    """Results of the same measurement (client or personality, action, options) made one,
    their repeats joined in order: what several files, or an --interleave run, hold."""
    out, by_key = [], {}
    for result in results:
        key = json.dumps({k: v for k, v in result.items() if k not in PER_REPEAT}, sort_keys=True)
        if key not in by_key:
            by_key[key] = dict(result, us=list(result["us"]), notes=list(result.get("notes") or []),
                               problems=list(result.get("problems") or []),
                               probe_ns=list(result.get("probe_ns") or [None] * len(result["us"])))
            out.append(by_key[key])
            continue
        into = by_key[key]
        into["us"] += result["us"]
        into["probe_ns"] += list(result.get("probe_ns") or [None] * len(result["us"]))
        for field in ("commands", "differing"):
            if into.get(field) is not None and result.get(field) is not None:
                into[field] += result[field]
        into["notes"] = (into["notes"] + list(result.get("notes") or []))[:3]
        into["problems"] = (into["problems"] + list(result.get("problems") or []))[:5]
    return out


def save_partial(args, results):
    """The results so far to --json, so that a run cut short keeps what it measured
    (and --table-from can join it to a later run's)."""
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)


def measure_all(args, lab, master, earlier=()):
    """Every client's and personality's results; `earlier` (the repeats before this
    one, with --interleave) is saved with them to --json as they come. With --interleave
    each result is marked so, which lets the comparison pair the repeats (and keeps
    them apart from repeats taken one side after the other)."""

    def mark(results):
        marks = {**({"interleaved": True} if args.interleave else {}), **({"pinned": True} if args.pin else {})}
        return [dict(result, **marks) for result in results]

    results = []

    def keep(result, label, started):
        if result:
            results.append(result)
            save_partial(args, merged(list(earlier) + mark(results)))
            mean, spread = row(result)
            print(f"# {label}: {mean:.0f} µs ({spread}), {time.monotonic() - started:.0f} s", file=sys.stderr,
                  flush=True)

    for client in [c for c in args.clients.split(",") if c]:
        for action in args.actions.split(","):
            started = time.monotonic()
            try:
                keep(replay_cost(client, action, lab, master, args), f"{client} {action}", started)
            except replay.ReplayError as error:
                print(f"# {client} {action}: {error}", file=sys.stderr)
    for name in [c for c in args.itself.split(",") if c]:
        for action in args.actions.split(","):
            started = time.monotonic()
            keep(itself_cost(name, action, lab, master, args), f"{name} itself {action}", started)
    if args.peakhour:
        work = tempfile.mkdtemp(prefix="peakhour-cpu-")
        os.chmod(work, 0o755)
        try:
            for personality in args.personality or ["peakhour"]:
                if args.scripted:
                    client = args.against or SCRIPTED_LIKE.get(personality, personality)
                    for result in scripted.scripted_cost(args.peakhour, personality, client, lab, master, args,
                                                         work, reset_inboxes):
                        results.append(result)
                        mean, spread = row(result)
                        print(f"# peakhour {personality} scripted like {client} {result['action']}: "
                              f"{mean:.0f} µs ({spread})", file=sys.stderr, flush=True)
                    save_partial(args, merged(list(earlier) + mark(results)))
                    continue
                for action in [a for a in args.actions.split(",") if a in PEAKHOUR_ACTION]:
                    result = peakhour_cost(args.peakhour, personality, action, lab, master, args, work)
                    results.append(result)
                    save_partial(args, merged(list(earlier) + mark(results)))
                    mean, spread = row(result)
                    print(f"# peakhour {personality} {action}: {mean:.0f} µs ({spread})", file=sys.stderr,
                          flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return mark(results)


if __name__ == "__main__":
    main()
