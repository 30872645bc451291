"""What one paced command costs Dovecot when the users' commands come together
and when they are spread out: a diagnostic for cpu_per_action.py's --stagger
(issue 28 item 3; docs/clients.md, "Together or spread out").

Each of --users lab users logs in on one connection, does what Thunderbird's
folder connection did before its sweep (NAMESPACE, ID, the subscribed LIST,
LIST "" "INBOX"), and then sends 20 `STATUS "FolderN" (UIDNEXT MESSAGES UNSEEN
RECENT)`, one every --pace seconds: the recorded sweep. User k starts its sweep
k/N of the spread after the first, for each spread given. Dovecot's CPU
(cpu_per_action.py's /proc meter) over the sweeps, per STATUS, is printed per
spread and repeat, taken in turns.

    python3 scripts/record/wakeup_cost.py --lab-dir DIR [--users 20] [--pace 0.4] [--spreads 0,0.2,0.4] [--repeats 3]
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_action  # noqa: E402
import replay  # noqa: E402

HISTORY = ["namespace", 'ID ("name" "Thunderbird" "version" "153.7.0")',
           'list (subscribed) "" "*" return (special-use)', 'list "" "INBOX"']
FOLDERS = [f"Folder{n}" for n in range(2, 22)]
SETTLE_S = 0.5


def sweep(lab, user, delay, pace, barrier, errors, timeout):
    try:
        connection = replay.Connection(*lab["imap"], f"{user} (sweep)", timeout)
        replay.plain(connection, f"LOGIN {replay.quote(user)} {replay.quote(lab['password'])}")
        for command in HISTORY:
            replay.plain(connection, command)
        barrier.wait()  # logged in
        barrier.wait()  # the CPU is read
        time.sleep(delay)
        start = time.monotonic()
        for n, folder in enumerate(FOLDERS):
            replay.plain(connection, f'STATUS "{folder}" (UIDNEXT MESSAGES UNSEEN RECENT)')
            time.sleep(max(0.0, start + (n + 1) * pace - time.monotonic()))
        barrier.wait()  # swept
        barrier.wait()  # the CPU is read again
        replay.plain(connection, "LOGOUT")
        connection.close()
    except (replay.ReplayError, OSError, threading.BrokenBarrierError) as error:
        errors.append(f"{user}: {error}")
        barrier.abort()


def per_status_us(lab, master, users, spread, pace, timeout):
    """Dovecot's µs per STATUS over one sweep of every user, spread over `spread` s."""
    barrier = threading.Barrier(len(users) + 1, timeout=timeout)
    errors = []
    threads = [threading.Thread(target=sweep, args=(lab, user, delay, pace, barrier, errors, timeout), daemon=True)
               for user, delay in zip(users, cpu_per_action.start_offsets(len(users), spread))]
    for thread in threads:
        thread.start()
    try:
        barrier.wait()
        time.sleep(SETTLE_S)
        before = cpu_per_action.dovecot_cpu_ns(master)
        barrier.wait()
        barrier.wait()
        time.sleep(SETTLE_S)
        spent = cpu_per_action.dovecot_cpu_ns(master) - before
        barrier.wait()
    except threading.BrokenBarrierError:
        raise SystemExit(f"error: a sweep failed: {'; '.join(errors[:3])}") from None
    for thread in threads:
        thread.join(timeout)
    return spent / len(users) / len(FOLDERS) / 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab-dir", required=True)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--first-user", type=int, default=1)
    parser.add_argument("--pace", type=float, default=0.4, help="seconds between a user's STATUS commands")
    parser.add_argument("--spreads", default="0,0.2,0.4", help="seconds the users' starts are spread over")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if not 1 <= args.users <= 500 or not 1 <= args.repeats <= 20 or not 0.0 < args.pace <= 5.0:
        parser.error("--users takes 1 to 500, --repeats 1 to 20, --pace up to 5 s")
    spreads = [float(spread) for spread in args.spreads.split(",")]
    lab = replay.lab_of(args.lab_dir)
    master = cpu_per_action.dovecot_master(lab)
    users = [f"user{n}" for n in range(args.first_user, args.first_user + args.users)]
    print("| repeat | spread (s) | Dovecot µs per STATUS |\n|---|---|---|")
    for repeat in range(args.repeats):
        for spread in spreads:
            cost = per_status_us(lab, master, users, spread, args.pace, args.timeout)
            print(f"| {repeat + 1} | {spread:g} | {cost:.0f} |", flush=True)


if __name__ == "__main__":
    main()
