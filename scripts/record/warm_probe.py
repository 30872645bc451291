"""Dovecot's CPU for the same command group done several times in one `imap`
process: the first time (a process fresh from its login, as a replayed window
finds it) against the next times (a session that has worked a while, as a
peakhour run's repeated actions find it). Outside the test suite; needs root
(the cpuacct group of cpu_per_action.py).

    sudo python3 scripts/record/warm_probe.py --lab-dir DIR [--users 20] [--times 4]
"""

import argparse
import imaplib
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_per_action  # noqa: E402
import replay  # noqa: E402

GROUPS = {
    # neomutt's move, delete and read (its recorded windows' commands).
    "neomutt move": lambda imap, uid, k: [
        imap.status(f"Folder{k + 1}", "(UIDNEXT UIDVALIDITY UNSEEN RECENT MESSAGES)"),
        imap.uid("COPY", str(uid), f"Folder{k + 1}"),
        imap.uid("STORE", str(uid), "+FLAGS.SILENT", "(\\Deleted)"),
        imap.expunge()],
    "neomutt move of an old message": lambda imap, uid, k: [
        imap.status(f"Folder{k + 1}", "(UIDNEXT UIDVALIDITY UNSEEN RECENT MESSAGES)"),
        imap.uid("COPY", str(uid), f"Folder{k + 1}"),
        imap.uid("STORE", str(uid), "+FLAGS.SILENT", "(\\Deleted)"),
        imap.expunge()],
    "neomutt delete": lambda imap, uid, k: [
        imap.uid("STORE", str(uid), "+FLAGS.SILENT", "(\\Deleted)"), imap.expunge()],
    "neomutt read": lambda imap, uid, k: [imap.uid("FETCH", str(uid), "(BODY.PEEK[])")],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab-dir", required=True)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--times", type=int, default=4)
    parser.add_argument("--settle", type=float, default=0.5)
    args = parser.parse_args()
    lab = replay.lab_of(args.lab_dir)
    meter = cpu_per_action.DovecotMeter(lab)
    try:
        for name, group in GROUPS.items():
            users = [f"user{n}" for n in range(1, args.users + 1)]
            barrier = threading.Barrier(len(users) + 1, timeout=300)

            def worker(user):
                imap = imaplib.IMAP4(*lab["imap"])
                imap.login(user, lab["password"])
                imap.select("INBOX")
                uids = imap.uid("SEARCH", None, "ALL")[1][0].split()
                barrier.wait()
                for k in range(args.times):
                    barrier.wait()
                    # The newest messages, or (as the neomutt recording moved UID 3) the oldest.
                    uid = uids[k + 2] if "old" in name else uids[-(k + 1)]
                    group(imap, int(uid), k)
                    barrier.wait()
                barrier.wait()  # the last reading is taken: LOGOUT outside it
                imap.logout()

            threads = [threading.Thread(target=worker, args=(u,), daemon=True) for u in users]
            for thread in threads:
                thread.start()
            barrier.wait()
            spent = []
            for _ in range(args.times):
                time.sleep(args.settle)
                before = meter()
                barrier.wait()
                barrier.wait()
                time.sleep(args.settle)
                spent.append((meter() - before) / len(users) / 1000)
            barrier.wait()
            for thread in threads:
                thread.join(60)
            print(f"{name}: " + ", ".join(f"{n + 1}. {us:.0f} µs" for n, us in enumerate(spent)), flush=True)
    finally:
        meter.close()


if __name__ == "__main__":
    main()
