"""Adds messages to each recorded user's INBOX so that the header lists the
clients fetch span more than one page (Roundcube shows 50 a page).

mmb-medium's starting state leaves only a few messages in the INBOX; the
clients' behaviour with a realistic Inbox (about 100 messages) is what is
recorded. Every fifth message mentions a meeting, which the search action
looks for.
"""

import argparse
import imaplib
import os
import time
from email.utils import formatdate

WORDS = "quarter note target backup work could discuss budget review draft plan".split()


def message(user, n):
    subject = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(4)).capitalize()
    if n % 5 == 0:
        subject += " meeting"
    body = "\r\n".join(f"Line {i} of message {n}: {' '.join(WORDS[i % 7:])}." for i in range(20))
    if n % 5 == 0:
        body += "\r\nThe meeting is on Thursday.\r\n"
    sender = f"user{(n % 8) + 5}@bench.test"
    return (
        f"From: {sender}\r\nTo: {user}@bench.test\r\nSubject: {subject}\r\n"
        f"Date: {formatdate(time.time() - (200 - n) * 3600)}\r\n"
        f"Message-ID: <fill-{user}-{n}@bench.test>\r\n\r\n{body}\r\n"
    ).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--subscribe-only", action="store_true")
    parser.add_argument("users", nargs="+")
    args = parser.parse_args()
    password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
    for user in args.users:
        if args.subscribe_only:
            imap = imaplib.IMAP4("127.0.0.1", args.port)
            imap.login(user, password)
            for line in imap.list()[1]:
                imap.subscribe(line.decode().split(' "/" ', 1)[1])
            imap.logout()
            continue
        imap = imaplib.IMAP4("127.0.0.1", args.port)
        imap.login(user, password)
        for n in range(args.count):
            flags = "(\\Seen)" if n < args.count - 10 else None
            imap.append("INBOX", flags, imaplib.Time2Internaldate(time.time() - (200 - n) * 3600), message(user, n))
        # `peakhour init` creates folders without subscribing them; a real
        # user's folders are subscribed, and Thunderbird (like Roundcube's
        # folder list) shows only subscribed folders by default.
        for line in imap.list()[1]:
            name = line.decode().split(' "/" ', 1)[1]
            imap.subscribe(name)
        imap.logout()


if __name__ == "__main__":
    main()
