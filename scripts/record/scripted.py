"""A personality's cost per action at the same position in the session as its
recorded client's (issue 28 item 3; docs/clients.md, "The same position in the
session").

The replay measures a recorded window where the recording has it: neomutt's
first read after its start, Thunderbird's open_inbox with the start's folder
sweep running through it. A run with many actions of one kind measures the
3rd to the 12th in a long-warm process, with the sweep outside. So here the
personality does what the recorded user did, in the same order and at the
same times, and is measured window by window as the replay is:

* a profile in fixed mode with a `fixed.script`: the recording's open_inbox,
  read, move, delete and send (as check_inbox, read, move, delete, send), each
  at its recorded offset from the client's login; every --users user follows
  it, logged on together (`--start-at` an instant, --ramp-up 0.2 s unless
  cpu_per_action.py's --ramp-up says otherwise). Every user takes a step at the
  same instant (`at` counts from the steady phase's start), while a client's own
  timers (Thunderbird's sweep) count from each user's logon, spread by the
  ramp-up: the replay it is compared with must arrive alike (--stagger;
  docs/clients.md, "Together or spread out");
* Dovecot's CPU is read at every window's edges, on the wall clock the run
  started on: a window runs from its step's time to the next step's (the last
  one as long as the recorded one), each edge 50 ms early, so that a step's
  answer and the background after it (Thunderbird's delayed IDLE, its sweep)
  land in the window the recording puts them in; a first window, `logon`,
  holds the logons (Thunderbird's `launch`);
* the lab's background is read in a quiet stretch after the last window (all
  users logged on, nothing due) and taken off each window by its length;
* before each run every Inbox is set to --inbox messages and every other folder
  the recording saw cut back to its recorded size (`replay.reset_folders`);
* mbsync does not suit this: 20 syncs of 45 folders at once outlast its 1.1 s
  windows, so their CPU lands in the next windows (docs/clients.md);
* --rounds runs of --users users make a repeat; --repeats repeats give the
  spread, as the replay's.

The script's first step keeps its recorded distance from the login when the
recording has one (Thunderbird's open_inbox, 0.15 s after it: its sweep is
timed from the logon and must fall where the recording has it); a client whose
recorded start is itself the open_inbox (neomutt, Roundcube, mbsync) logs on
and then does open_inbox --lead seconds later, as its personality opens the
Inbox again (neomutt started again, the login form, a sync).
"""

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import replay

# The recordings' action names and peakhour's (profile actions).
PEAKHOUR_ACTION = {"open_inbox": "check_inbox", "read": "read", "move": "move", "delete": "delete",
                   "send": "send"}
RAMP_UP_S = 0.2
EDGE_S = 0.05
QUIET_S = 5.0


def login_time(recording):
    """When the recorded client first logged in (its first LOGIN or AUTHENTICATE)."""
    for item in recording.items:
        if item.name in ("LOGIN", "AUTHENTICATE"):
            return item.t
    raise replay.ReplayError(f"{recording.fixture}: no LOGIN or AUTHENTICATE in the transcript")


def script_of(recording, actions, lead, ramp_up=RAMP_UP_S):
    """[(recorded action, offset from the steady phase's start, window length)] for
    the recording's windows of `actions`, in their recorded order, for users who log
    on over `ramp_up` seconds before the steady phase."""
    windows = [(name, start, stop) for name, start, stop in recording.windows()
               if name in PEAKHOUR_ACTION and name in actions]
    if not windows:
        raise replay.ReplayError(f"{recording.fixture}: none of {', '.join(actions)} in manifest.json")
    since_login = windows[0][1] - login_time(recording)
    first = since_login if since_login > 0 else lead
    # The users log on over the ramp-up before the steady phase: half of it on average.
    shift = first - windows[0][1] - ramp_up / 2
    return [(name, max(0.0, start + shift), stop - start) for name, start, stop in windows]


def fixed_profile(base_text, counts, steps=None, pause=0.0):
    """mmb-medium in fixed mode: each action's count from `counts` (0 for the others),
    one recipient per message and no lists (the recordings sent to one); with `steps`,
    those as its `fixed.script` (the counts must then be the steps' tally), else with
    `pause`, that many seconds between a user's actions (`fixed.pause`)."""
    text = re.sub(r'^mode = "poisson"', 'mode = "fixed"', base_text, flags=re.M)
    out, section = [], None
    for line in text.splitlines():
        header = re.match(r"^\[(.*)\]\s*$", line)
        if header:
            section = header.group(1)
            if section == "users" and steps:
                script = ", ".join(f'{{ action = "{PEAKHOUR_ACTION[name]}", at = "{int(at * 1000)}ms" }}'
                                   for name, at, _ in steps)
                out += ["[fixed]", f"script = [{script}]", ""]
            elif section == "users" and pause:
                out += ["[fixed]", f'pause = "{int(pause * 1000)}ms"', ""]
        if section and section.startswith("actions.") and re.match(r"^per_day\s*=", line):
            line = f"count = {counts.get(section[len('actions.'):], 0)}"
        if section == "recipients" and re.match(r"^average\s*=", line):
            line = "average = 1"
        if section == "recipients" and re.match(r"^list_fraction\s*=", line):
            line = "list_fraction = 0"
        out.append(line)
    return "\n".join(out) + "\n"


def scripted_profile(base_text, steps):
    """mmb-medium with the steps as its `fixed.script`, each action's count its tally."""
    tally = {}
    for name, _, _ in steps:
        tally[PEAKHOUR_ACTION[name]] = tally.get(PEAKHOUR_ACTION[name], 0) + 1
    return fixed_profile(base_text, tally, steps)


class Edges:
    """Reads Dovecot's CPU at given wall-clock instants, in a thread of its own."""

    def __init__(self, meter, instants):
        self.meter, self.instants, self.readings = meter, instants, []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        for instant in self.instants:
            while True:
                left = instant - time.time()
                if left <= 0:
                    break
                time.sleep(min(left, 0.02) if left < 0.1 else left - 0.05)
            self.readings.append((time.time() - instant, self.meter()))

    def start(self):
        self.thread.start()

    def join(self, timeout):
        self.thread.join(timeout)
        return self.readings


def launches_of(personality, steps, args, work, base):
    """[(profile, extra options, out dir)] of one round: one run of --users users; for
    Thunderbird one shard per user (`--shard k/N` runs user k-1 of the same N, so the
    recipients are the same population), each at a run seed at which that user draws
    its folder sweep like the recording (the example `thunderbird_draws`), so that
    every user's Sent and move-target connections fall in the windows the recording
    has them in."""
    profile = os.path.join(work, f"scripted-{personality}.toml")
    with open(profile, "w", encoding="utf-8") as out:
        out.write(scripted_profile(base, steps))
    if personality != "thunderbird" or args.one_process:
        return [(profile, [], os.path.join(work, f"scripted-{personality}"))]
    draws = os.path.join(os.path.dirname(os.path.abspath(args.peakhour)), "examples", "thunderbird_draws")
    if not os.path.exists(draws):
        raise SystemExit(f"error: {draws} is missing: cargo build --example thunderbird_draws")
    lines = subprocess.run([draws, profile, str(args.users), "2"], capture_output=True, text=True,
                           check=True).stdout
    seeds = {int(user): int(seed) for user, seed, *_ in (line.split(" ") for line in lines.splitlines())}
    return [(profile, ["--shard", f"{user + 1}/{args.users}", "--seed", str(seeds[user])],
             os.path.join(work, f"scripted-{personality}-shard{user + 1}")) for user in range(args.users)]


def reset_mailboxes(lab, args, counts, reset_inboxes):
    """Outside the measurement: each user's Inbox at --inbox messages and every other
    folder the recording saw cut back to its recorded size, so that earlier runs'
    moves, deletes and copies to Sent do not make this run's folder connections dearer."""
    users = [f"user{n}" for n in range(args.first_user, args.first_user + args.users)]
    if args.inbox:
        reset_inboxes(lab, users, args.inbox, args.timeout)
    threads = [threading.Thread(target=replay.reset_folders, args=(lab, user, counts, args.timeout), daemon=True)
               for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(args.timeout)


def one_run(peakhour, personality, steps, launches, lab, meter, args, number, reset):
    """Per window: Dovecot's µs per user, the background taken off; and the runs' summaries."""
    last_name, last_at, last_length = steps[-1]
    quiet_from = last_at + last_length + 1.0
    duration = quiet_from + QUIET_S + 2.0
    reset()
    startup = args.startup * (1 if len(launches) == 1 else 3)
    start_at = time.time() + startup
    steady = start_at + args.ramp_up
    # The first window is the logon (from just before the first user logs on to the first step).
    edges = [start_at - EDGE_S] + [steady + at - EDGE_S for _, at, _ in steps]
    edges += [steady + last_at + last_length - EDGE_S]
    edges += [steady + quiet_from, steady + quiet_from + QUIET_S]
    stamp = datetime.datetime.fromtimestamp(start_at, datetime.timezone.utc).isoformat(timespec="milliseconds")
    reader = Edges(meter, edges)
    reader.start()
    running = []
    for profile, extra, out_dir in launches:
        out_dir = f"{out_dir}-{number}"
        shutil.rmtree(out_dir, ignore_errors=True)
        command = [peakhour, "run", "--lab-dir", args.lab_dir, "--profile", profile, "--users", str(args.users),
                   "--ramp-up", f"{int(args.ramp_up * 1000)}ms", "--drain", "1s", "--duration", f"{duration:.1f}s",
                   "--start-at", stamp.replace("+00:00", "Z"), "--out", out_dir] + extra
        if personality != "peakhour" or args.client_flag:
            command += ["--client", personality]
        # stderr to a file, not a pipe: twenty runs' progress lines must not fill a pipe no one reads yet.
        log = open(f"{out_dir}.stderr", "w+", encoding="utf-8")
        running.append((command, out_dir, log, subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)))
    summaries = []
    for command, out_dir, log, process in running:
        process.wait(timeout=startup + duration + 300)
        log.seek(0)
        stderr = log.read()
        log.close()
        if process.returncode > 1:
            raise SystemExit(f"error: {' '.join(command)} exited {process.returncode}: {stderr.strip()[-400:]}")
        if "late" in stderr.lower():
            print(f"warning: {stderr.strip()[-300:]}", file=sys.stderr)
        summaries.append(json.load(open(os.path.join(out_dir, "summary.json"), encoding="utf-8")))
    readings = reader.join(args.timeout)
    if len(readings) != len(edges):
        raise SystemExit(f"error: {len(readings)} of {len(edges)} CPU readings were taken")
    late = max(lateness for lateness, _ in readings)
    if late > 0.02:
        print(f"warning: a CPU reading came {late * 1000:.0f} ms after its edge", file=sys.stderr)
    values = [value for _, value in readings]
    meter.write_windows(f"{personality} scripted", ["logon"] + [name for name, _, _ in steps] + ["after", "quiet"])
    background_per_s = (values[-1] - values[-2]) / QUIET_S
    times = meter.times[-len(edges):]
    windows = []
    for i, name in enumerate(["logon"] + [name for name, _, _ in steps]):
        spent = values[i + 1] - values[i] - background_per_s * (edges[i + 1] - edges[i])
        windows.append((name, spent / args.users / 1000, meter.speed(times[i], times[i + 1])))
    return windows, summaries


def scripted_cost(peakhour, personality, client, lab, meter, args, work, reset_inboxes):
    """The personality's µs per user for each window, per repeat, against the
    recording `client`'s windows."""
    recording = replay.Recording(os.path.join(args.fixtures, client))
    steps = script_of(recording, args.actions.split(","), args.lead, args.ramp_up)
    base = subprocess.run([peakhour, "profiles", "show", "mmb-medium"], capture_output=True, text=True,
                          check=True).stdout
    launches = launches_of(personality, steps, args, work, base)
    counts = {folder: recording.recorded_count(folder) for folder in recording.folders
              if folder != "INBOX" and recording.recorded_count(folder) is not None}

    def reset():
        reset_mailboxes(lab, args, counts, reset_inboxes)

    per_repeat = {name: [] for name in ["logon"] + [name for name, _, _ in steps]}
    probes = {name: [] for name in per_repeat}
    problems, number = [], 0
    for _ in range(args.repeats):
        sums = {name: 0.0 for name in per_repeat}
        speeds = {name: [] for name in per_repeat}
        for _ in range(args.rounds):
            number += 1
            windows, summaries = one_run(peakhour, personality, steps, launches, lab, meter, args, number, reset)
            for name, us, cost in windows:
                sums[name] += us
                speeds[name].append(cost)
            for name, _, _ in steps:
                done = sum(s.get("actions", {}).get(PEAKHOUR_ACTION[name], {}).get("count", 0) for s in summaries)
                errors = sum(s.get("actions", {}).get(PEAKHOUR_ACTION[name], {}).get("errors", 0)
                             for s in summaries)
                if done < args.users or errors:
                    problems.append(f"run {number}: {name} done {done} of {args.users}, {errors} errors")
        for name in sums:
            per_repeat[name].append(sums[name] / args.rounds)
            probes[name].append(None if None in speeds[name] else sum(speeds[name]) / len(speeds[name]))
    for problem in problems[:5]:
        print(f"warning: {personality} scripted: {problem}", file=sys.stderr)
    label = " in one process" if args.one_process and personality == "thunderbird" else ""
    if args.ramp_up != RAMP_UP_S:
        label += f" (ramp-up {args.ramp_up:g} s)"
    return [{"client": f"peakhour run --client {personality} (scripted like {client}){label}",
             "personality": personality,
             "scripted": client, "action": name, "us": per_repeat[name], "probe_ns": probes[name],
             "at_s": round(at, 2),
             "window_s": round(length, 2), "reps": args.rounds * args.users, "problems": problems[:5],
             **({"ramp_up_s": args.ramp_up} if args.ramp_up != RAMP_UP_S else {}),
             "commands": None, "differing": None, "notes": []}
            for name, at, length in [("logon", -args.ramp_up, args.ramp_up)] + steps]
