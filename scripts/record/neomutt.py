"""Drives neomutt through the profile's actions in a private tmux server.

neomutt is a terminal program; tmux gives it a terminal and lets us type
(`send-keys`) and read the screen (`capture-pane`). The tmux server runs on a
socket of its own (`-L`), so it is stopped by its own `kill-server`, never by
name. Every wait is bounded.
"""

import argparse
import json
import os
import subprocess
import time

from actions import ActionLog, wait_until

SOCKET = "peakhour-record-neomutt"  # the user is appended in main()


def tmux(*args, check=True):
    return subprocess.run(["tmux", "-L", SOCKET, *args], check=check, capture_output=True, text=True)


def screen():
    return tmux("capture-pane", "-p", "-t", "rec", check=False).stdout


def keys(*sequence):
    tmux("send-keys", "-t", "rec", *sequence)


def type_text(text):
    tmux("send-keys", "-t", "rec", "-l", text)


def wait_screen(text, timeout=60):
    return wait_until(lambda: text in screen(), timeout, what=f"neomutt to show {text!r}")


def write_config(work, lab, user, password):
    body = os.path.join(work, "write-body.sh")
    with open(body, "w", encoding="utf-8") as out:
        out.write('#!/bin/sh\nprintf "Hello,\\n\\nrecorded by scripts/record-clients.sh.\\n" >> "$1"\n')
    os.chmod(body, 0o755)
    ports = lab["ports"]
    rc = os.path.join(work, "neomuttrc")
    with open(rc, "w", encoding="utf-8") as out:
        out.write(f"""# Written by scripts/record/neomutt.py. Only what the lab needs is set;
# everything else (no header cache, mail_check 5 s, imap_keepalive 300 s,
# timeout 600 s, imap_idle off, no trash folder) is neomutt's default.
set folder = "imap://{user}@127.0.0.1:{ports['imap']}/"
set spoolfile = "+INBOX"
set imap_user = "{user}"
set imap_pass = "{password}"
# Plain IMAP so that Dovecot's pre-login rawlog can read the session too.
set ssl_starttls = no
set ssl_force_tls = no
set record = "+Sent"
set postponed = "+Drafts"
set smtp_url = "smtps://{user}@127.0.0.1:{ports['submissions']}/"
set smtp_pass = "{password}"
set ssl_ca_certificates_file = "{lab['dir']}/tls/ca.pem"
set from = "{user}@bench.test"
set realname = "Recorded neomutt user"
set editor = "{body}"
set edit_headers = no
set askcc = no
set delete = yes
set confirmappend = no
set wait_key = no
""")
    return rc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lab-config", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--idle", type=int, default=600)
    parser.add_argument("--to", required=True)
    args = parser.parse_args()
    global SOCKET
    SOCKET = f"{SOCKET}-{args.user}"

    lab = json.load(open(args.lab_config, encoding="utf-8"))
    password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
    rc = write_config(args.work, lab["config"], args.user, password)
    log = ActionLog(os.path.join(args.work, "actions.json"))
    try:
        with log.action("open_inbox", "start neomutt; it opens $spoolfile (INBOX)"):
            tmux("new-session", "-d", "-s", "rec", "-x", "160", "-y", "45", f"neomutt -n -F {rc}")
            wait_screen("Msgs:", 60)
            time.sleep(3)
        with log.action("read", "Enter on the current message, then q back to the index"):
            keys("Enter")
            wait_until(lambda: "Subject:" in screen(), 30, what="pager")
            time.sleep(2)
            keys("q")
            time.sleep(2)
        with log.action("move", "s =Folder1, then $ (sync: expunge)"):
            keys("j")
            keys("s")
            wait_screen("Save to mailbox", 20)
            keys("C-u")
            type_text("=Folder1")
            keys("Enter")
            time.sleep(2)
            keys("$")
            time.sleep(3)
        with log.action("delete", "d on the current message, then $ (sync: expunge)"):
            keys("d")
            time.sleep(1)
            keys("$")
            time.sleep(3)
        with log.action("send", f"m to {args.to}, subject, body by $editor, y: SMTP submission, copy to Sent"):
            keys("m")
            wait_screen("To:", 20)
            type_text(args.to)
            keys("Enter")
            wait_screen("Subject:", 20)
            type_text("Recorded from neomutt")
            keys("Enter")
            wait_until(lambda: "y:Send" in screen() or "Send" in screen() and "Compose" in screen(), 30,
                       what="compose menu")
            keys("y")
            wait_until(lambda: "Compose" not in screen(), 60, what="the message to be sent")
            time.sleep(3)
        with log.action("search", "/ ~b meeting (a body search: UID SEARCH on the server)"):
            keys("/")
            wait_screen("Search for", 20)
            type_text("~b meeting")
            keys("Enter")
            time.sleep(5)
        with log.action("idle", f"left at the index for {args.idle} s") as entry:
            deadline = time.monotonic() + args.idle
            while time.monotonic() < deadline:
                time.sleep(min(30, max(0, deadline - time.monotonic())))
            entry["seconds"] = args.idle
        with log.action("quit", "q: neomutt closes its connection (LOGOUT)"):
            keys("q")
            time.sleep(1)
            tmux("send-keys", "-t", "rec", "y", check=False)  # only if neomutt asks
            wait_until(lambda: tmux("has-session", "-t", "rec", check=False).returncode != 0, 30,
                       what="neomutt to exit")
    finally:
        with open(os.path.join(args.work, "last-screen.txt"), "w", encoding="utf-8") as out:
            out.write(screen())
        tmux("kill-server", check=False)


if __name__ == "__main__":
    main()
