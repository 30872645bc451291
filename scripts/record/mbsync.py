"""Drives mbsync (isync) through the profile's actions.

A synchronising client does nothing on the server by itself: the user reads,
moves and deletes in the local Maildir (with a mail reader such as neomutt or
mu4e), and every run of `mbsync -a` carries the changes to the server. So each
action here is a change to the Maildir followed by one `mbsync -a`; sending
goes by SMTP (what msmtp would do) plus a copy into the local Sent folder,
which the next run uploads; search is local (notmuch, mu) and costs the server
nothing, so it runs no sync. While idle, mbsync runs every --interval seconds,
as a systemd timer or cron job would run it (5 minutes by default).

With --synced the local Maildir is brought in sync by one `mbsync -a` before
the first action and --settle seconds before it begins (left out of the
transcript, which starts at the first action): open_inbox is then the sync of a
store already in sync, a user's usual day, not the first run's full download.
"""

import argparse
import json
import os
import smtplib
import ssl
import subprocess
import time
from email.message import EmailMessage

from actions import ActionLog


def write_config(work, port, user, password):
    maildir = os.path.join(work, "Maildir")
    os.makedirs(maildir, exist_ok=True)
    rc = os.path.join(work, "mbsyncrc")
    with open(rc, "w", encoding="utf-8") as out:
        out.write(f"""# Written by scripts/record/mbsync.py. Everything not set is isync's default.
IMAPAccount lab
Host 127.0.0.1
Port {port}
User {user}
Pass {password}
# Plain IMAP so that Dovecot's pre-login rawlog can read the session too.
SSLType None

IMAPStore lab-remote
Account lab

MaildirStore lab-local
Path {maildir}/
Inbox {maildir}/INBOX
SubFolders Verbatim

Channel lab
Far :lab-remote:
Near :lab-local:
Patterns *
Create Both
Expunge Both
SyncState *
""")
    os.chmod(rc, 0o600)
    return rc, maildir


def flags_of(name):
    return name.partition(":2,")[2]


def first_message(folder, without=None):
    """The oldest message of a Maildir folder (by file name); with `without`, the
    oldest that lacks that flag, else the oldest of all."""
    names = [(name, sub) for sub in ("cur", "new") for name in os.listdir(os.path.join(folder, sub))]
    if not names:
        raise RuntimeError(f"no message in {folder}")
    lacking = [n for n in names if without and without not in flags_of(n[0])]
    name, sub = min(lacking or names)
    return os.path.join(folder, sub, name)


def with_flags(path, add="", remove=""):
    """Maildir flags live in the file name after ':2,'; changing them renames the file."""
    directory, name = os.path.split(path)
    base, _, flags = name.partition(":2,")
    flags = "".join(sorted((set(flags) | set(add)) - set(remove)))
    target = os.path.join(os.path.dirname(directory), "cur", f"{base}:2,{flags}")
    os.rename(path, target)
    return target


# What a user does to the local copy before each action's sync, as the recording's
# manifest says it (the recorder's `how`).
HOW = {
    "read": "the oldest local INBOX message gets the S flag, then mbsync -a",
    "move": "a local INBOX message moved to Folder1 (a new file there), then mbsync -a",
    "delete": "a local INBOX message gets the T flag (trashed), then mbsync -a (Expunge Both)",
    "send": "SMTP submission (as msmtp would), a copy into the local Sent, then mbsync -a",
}


def local_change(maildir, action, sent=None, unseen_first=False):
    """The user's change to the Maildir that the next `mbsync -a` carries to the
    server: `read` flags a message seen (with `unseen_first` the oldest unseen one,
    so that a repeated read still changes something), `move` moves one to Folder1
    as a new file (mbsync uploads it there and expunges it from the Inbox), `delete`
    trashes one, `send` stores the `sent` bytes in the local Sent. open_inbox
    changes nothing."""
    inbox = os.path.join(maildir, "INBOX")
    if action == "read":
        with_flags(first_message(inbox, without="S" if unseen_first else None), "S")
    elif action == "move":
        source = first_message(inbox)
        name = os.path.basename(source).split(",U=")[0].split(":2,")[0] + ".moved:2,S"
        os.rename(source, os.path.join(maildir, "Folder1", "cur", name))
    elif action == "delete":
        with_flags(first_message(inbox, without="T"), "T")
    elif action == "send":
        path = os.path.join(maildir, "Sent", "cur", f"{time.time_ns()}.{os.getpid()}.local:2,S")
        with open(path, "wb") as out:
            out.write(sent)
    elif action != "open_inbox":
        raise ValueError(f"mbsync has no local change for {action!r}")


class LocalStore:
    """One user's mbsync: its own mbsyncrc and Maildir under `work`, synced on demand
    (the recorder's user here, and each user of cpu_per_action.py --itself mbsync)."""

    def __init__(self, work, port, user, password):
        os.makedirs(work, exist_ok=True)
        self.rc, self.maildir = write_config(work, port, user, password)
        self.log = os.path.join(work, "mbsync.log")
        self.user = user

    def sync(self, timeout=300):
        """One `mbsync -a`; an error quotes the end of mbsync's own output."""
        done = subprocess.run(["mbsync", "-c", self.rc, "-a"], capture_output=True, text=True, timeout=timeout)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"--- mbsync -a at {time.time():.3f}, exit {done.returncode}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            raise RuntimeError(f"{self.user}: mbsync -a exited {done.returncode}: "
                               f"{(done.stdout + done.stderr).strip()[-300:]}")

    def has_unseen(self):
        inbox = os.path.join(self.maildir, "INBOX")
        return any("S" not in flags_of(name) for sub in ("cur", "new")
                   for name in os.listdir(os.path.join(inbox, sub)))

    def mark_one_unseen(self):
        """Outside the measurement: the oldest Inbox message made unseen again, so that
        the next read has something to change."""
        with_flags(first_message(os.path.join(self.maildir, "INBOX")), remove="S")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab-config", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--idle", type=int, default=600)
    parser.add_argument("--interval", type=int, default=300)
    parser.add_argument("--to", required=True)
    parser.add_argument("--synced", action="store_true",
                        help="sync once before the first action (not recorded): the store is in sync at open_inbox")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds between that sync and the first action (transcript.py keeps what "
                             "began 2 s before the first action)")
    args = parser.parse_args()
    lab = json.load(open(args.lab_config, encoding="utf-8"))["config"]
    password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
    store = LocalStore(args.work, lab["ports"]["imap"], args.user, password)
    maildir = store.maildir
    log = ActionLog(os.path.join(args.work, "actions.json"))
    if args.synced:
        store.sync()
        time.sleep(args.settle)
    how = ("mbsync -a with the local Maildir already in sync (one unrecorded mbsync -a before it)" if args.synced
           else "first mbsync -a: every folder downloaded into an empty Maildir")
    with log.action("open_inbox", how):
        store.sync()
    for action in ("read", "move", "delete"):
        with log.action(action, HOW[action]):
            local_change(maildir, action)
            store.sync()
    with log.action("send", HOW["send"]):
        message = EmailMessage()
        message["From"] = f"{args.user}@bench.test"
        message["To"] = args.to
        message["Subject"] = "Recorded from mbsync"
        message.set_content("Hello,\n\nrecorded by scripts/record-clients.sh.\n")
        context = ssl.create_default_context(cafile=os.path.join(lab["dir"], "tls", "ca.pem"))
        with smtplib.SMTP_SSL("127.0.0.1", lab["ports"]["submissions"], context=context, timeout=30) as smtp:
            smtp.login(args.user, password)
            smtp.send_message(message)
        local_change(maildir, "send", sent=bytes(message))
        store.sync()
    with log.action("search", "local search (notmuch, mu): no IMAP traffic, so no sync") as entry:
        entry["outcome"] = "no server traffic by design"
    with log.action("idle", f"mbsync -a every {args.interval} s for {args.idle} s (a timer's job)") as entry:
        # A timer fires at fixed times from the start (OnUnitActiveSec-like),
        # not --interval after the previous run ended.
        begun = time.monotonic()
        deadline = begun + args.idle
        runs = 0
        while begun + (runs + 1) * args.interval <= deadline:
            time.sleep(max(0.0, begun + (runs + 1) * args.interval - time.monotonic()))
            store.sync()
            runs += 1
        time.sleep(max(0.0, deadline - time.monotonic()))
        entry["seconds"] = args.idle
        entry["syncs"] = runs


if __name__ == "__main__":
    main()
