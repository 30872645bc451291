#!/usr/bin/env python3
"""Independent check of a running peakhour lab with Python's own clients.

Sends a message over SMTP (with AUTH) to user42@bench.test and reads it back
over IMAP and POP3, using only the password from `peakhour lab status --json`.
Exits non-zero with a message on any failure.

    python3 tests/lab_smoke.py --peakhour target/debug/peakhour --dir .peakhour/lab
"""
import argparse
import imaplib
import json
import poplib
import smtplib
import subprocess
import sys
import time
import uuid
from email.message import EmailMessage


def host_port(endpoint):
    host, port = endpoint.rsplit(":", 1)
    return host, int(port)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peakhour", default="target/debug/peakhour")
    parser.add_argument("--dir", default=".peakhour/lab")
    parser.add_argument("--user", type=int, default=42)
    args = parser.parse_args()

    status = json.loads(subprocess.run(
        [args.peakhour, "lab", "status", "--dir", args.dir, "--json"],
        check=True, capture_output=True, text=True).stdout)
    assert status["healthy"], f"lab not healthy: {status}"
    address = f"user{args.user}@{status['domain']}"
    password = status["password"]
    token = uuid.uuid4().hex
    body = f"independent check {token}\r\n..a line that needs dot-stuffing\r\n"

    message = EmailMessage()
    message["From"] = f"user1@{status['domain']}"
    message["To"] = address
    message["Subject"] = f"lab smoke {token}"
    message["Message-ID"] = f"<{token}@{status['domain']}>"
    message.set_content(body)

    started = time.monotonic()
    with smtplib.SMTP(*host_port(status["endpoints"]["smtp"]), timeout=10) as smtp:
        smtp.ehlo("smoke.test")
        smtp.login(f"user1@{status['domain']}", password)
        refused = smtp.send_message(message)
        assert not refused, f"recipients refused: {refused}"

    imap = imaplib.IMAP4(*host_port(status["endpoints"]["imap"]), timeout=10)
    imap.login(address, password)
    deadline = time.monotonic() + 15
    found = []
    while not found:
        imap.select("INBOX")
        typ, data = imap.search(None, "HEADER", "Message-ID", token)
        assert typ == "OK", data
        found = data[0].split()
        if not found:
            assert time.monotonic() < deadline, "message did not arrive over IMAP within 15 s"
            time.sleep(0.05)
    latency_ms = (time.monotonic() - started) * 1000
    typ, data = imap.fetch(found[-1], "(BODY.PEEK[TEXT])")
    assert typ == "OK", data
    imap_body = data[0][1]
    assert token.encode() in imap_body, imap_body
    imap.logout()

    pop = poplib.POP3(*host_port(status["endpoints"]["pop3"]), timeout=10)
    pop.user(address)
    pop.pass_(password)
    count, _ = pop.stat()
    matches = []
    for n in range(1, count + 1):
        _, lines, _ = pop.retr(n)
        if any(token.encode() in line for line in lines):
            matches.append(lines)
    pop.quit()
    assert matches, "message not found over POP3"

    print(f"ok: SMTP -> Postfix -> LMTP -> Dovecot -> IMAP/POP3 for {address}, "
          f"visible over IMAP after {latency_ms:.0f} ms")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
