#!/usr/bin/env python3
"""Independent check of a running peakhour lab with Python's own clients.

Sends a message over SMTP (with AUTH) to user42@bench.test and reads it back
over IMAP and POP3, using only the password from `peakhour lab status --json`.
If the lab offers an SMTP port without AUTH (`smtp_noauth`), a second message
goes in there without logging in and is read back too. With
--expect-namespace PREFIX, checks that the IMAP server puts every folder under
PREFIX (NAMESPACE, LIST, and CREATE of a top-level folder refused).
Exits non-zero with a message on any failure.

    python3 tests/lab_smoke.py --peakhour target/debug/peakhour --dir .peakhour/lab
    python3 tests/lab_smoke.py --status-file status.json --expect-namespace INBOX.
"""
import argparse
import imaplib
import re
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


def test_message(status, address, token):
    message = EmailMessage()
    message["From"] = f"user1@{status['domain']}"
    message["To"] = address
    message["Subject"] = f"lab smoke {token}"
    message["Message-ID"] = f"<{token}@{status['domain']}>"
    message.set_content(f"independent check {token}\r\n..a line that needs dot-stuffing\r\n")
    return message


def wait_in_inbox(imap, token):
    """Polls INBOX until the message with this token is there; returns its body."""
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
    typ, data = imap.fetch(found[-1], "(BODY.PEEK[TEXT])")
    assert typ == "OK", data
    return data[0][1]


def check_namespace(imap, prefix):
    """Every folder but INBOX lives under prefix, as on Courier- or Cyrus-like servers."""
    typ, data = imap.namespace()
    assert typ == "OK", data
    assert f'(("{prefix}" '.encode() in data[0], f"NAMESPACE does not show {prefix!r}: {data}"
    separator = re.search(rb'\(\("[^"]*" "(.)"\)', data[0]).group(1).decode()
    typ, data = imap.list()
    assert typ == "OK", data
    names = [line.rsplit(b" ", 1)[-1].decode().strip('"') for line in data]
    for folder in ("Sent", "Trash", "Drafts"):
        assert f"{prefix}{folder}" in names, f"LIST does not show {prefix}{folder}: {names}"
    typ, data = imap.create("Sent")
    assert typ == "NO", f"CREATE Sent at the top level was accepted: {typ} {data}"
    folder = f"Smoke{uuid.uuid4().hex[:8]}"
    typ, data = imap.create(folder)
    assert typ == "NO", f"CREATE {folder} at the top level was accepted: {typ} {data}"
    typ, data = imap.create(f"{prefix}{folder}")
    assert typ == "OK", f"CREATE {prefix}{folder} was refused: {data}"
    typ, data = imap.list('""', f"{prefix}*")
    assert any(f"{prefix}{folder}".encode() in line for line in data), data
    typ, data = imap.delete(f"{prefix}{folder}")
    assert typ == "OK", data
    return separator


def check_noauth(status, address, password):
    """The smtp_noauth port takes mail from loopback without AUTH (and offers neither AUTH
    nor STARTTLS), and the mail arrives."""
    token = uuid.uuid4().hex
    with smtplib.SMTP(*host_port(status["endpoints"]["smtp_noauth"]), timeout=10) as smtp:
        smtp.ehlo("smoke.test")
        assert not smtp.has_extn("auth"), f"AUTH offered: {smtp.esmtp_features}"
        assert not smtp.has_extn("starttls"), f"STARTTLS offered: {smtp.esmtp_features}"
        refused = smtp.send_message(test_message(status, address, token))
        assert not refused, f"recipients refused: {refused}"
    imap = imaplib.IMAP4(*host_port(status["endpoints"]["imap"]), timeout=10)
    imap.login(address, password)
    body = wait_in_inbox(imap, token)
    assert token.encode() in body, body
    imap.logout()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peakhour", default="target/debug/peakhour")
    parser.add_argument("--dir", default=".peakhour/lab")
    parser.add_argument("--status-file",
                        help="read the lab's status from this JSON file instead of running peakhour")
    parser.add_argument("--user", type=int, default=42)
    parser.add_argument("--expect-namespace", metavar="PREFIX",
                        help="check that every folder lives under PREFIX (e.g. INBOX.)")
    args = parser.parse_args()

    if args.status_file:
        with open(args.status_file) as file:
            status = json.load(file)
    else:
        status = json.loads(subprocess.run(
            [args.peakhour, "lab", "status", "--dir", args.dir, "--json"],
            check=True, capture_output=True, text=True).stdout)
    assert status["healthy"], f"lab not healthy: {status}"
    address = f"user{args.user}@{status['domain']}"
    password = status["password"]
    token = uuid.uuid4().hex

    started = time.monotonic()
    with smtplib.SMTP(*host_port(status["endpoints"]["smtp"]), timeout=10) as smtp:
        smtp.ehlo("smoke.test")
        smtp.login(f"user1@{status['domain']}", password)
        refused = smtp.send_message(test_message(status, address, token))
        assert not refused, f"recipients refused: {refused}"

    imap = imaplib.IMAP4(*host_port(status["endpoints"]["imap"]), timeout=10)
    imap.login(address, password)
    imap_body = wait_in_inbox(imap, token)
    latency_ms = (time.monotonic() - started) * 1000
    assert token.encode() in imap_body, imap_body
    namespace_note = ""
    if args.expect_namespace is not None:
        separator = check_namespace(imap, args.expect_namespace)
        namespace_note = f"; folders under {args.expect_namespace!r} (separator {separator!r})"
    imap.logout()

    noauth_note = ""
    if status["endpoints"].get("smtp_noauth"):
        check_noauth(status, address, password)
        noauth_note = "; SMTP without AUTH delivered"

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
          f"visible over IMAP after {latency_ms:.0f} ms{namespace_note}{noauth_note}")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
