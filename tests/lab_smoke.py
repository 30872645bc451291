#!/usr/bin/env python3
"""Independent check of a running peakhour lab with Python's own clients.

Sends a message over SMTP (with AUTH) to user42@bench.test and reads it back
over IMAP and POP3, using only the password from `peakhour lab status --json`.
If the lab offers an SMTP port without AUTH (`smtp_noauth`), a second message
goes in there without logging in and is read back too. With
--expect-namespace PREFIX, checks that the IMAP server puts every folder under
PREFIX (NAMESPACE, LIST, and CREATE of a top-level folder refused).
If the lab runs Radicale (`endpoints.caldav`), user1 makes a calendar and puts
an event in it over plain HTTP (http.client), lists it back, and user2 is
refused both. If it runs Samba (`endpoints.smb`), smbclient lists user1's
directory and a file put there comes back the same; a wrong password is refused.
Exits non-zero with a message on any failure.

    python3 tests/lab_smoke.py --peakhour target/debug/peakhour --dir .peakhour/lab
    python3 tests/lab_smoke.py --status-file status.json --expect-namespace INBOX.
"""
import argparse
import base64
import http.client
import imaplib
import os
import re
import json
import poplib
import smtplib
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
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


def imap_session(status, address, password):
    """A logged-in IMAP session on the lab's imap port."""
    session = imaplib.IMAP4(*host_port(status["endpoints"]["imap"]), timeout=10)
    session.login(address, password)
    return session


def wait_in_inbox(connect, token):
    """Polls INBOX until the message with this token is there; returns its body and the session.

    `connect` opens a logged-in session. A session the server drops is opened
    again, as a mail client would: Dovecot's imap process can panic when its
    first SELECT creates the INBOX while lmtp delivers into it ("fcntl ...
    Resource deadlock avoided", crates/lab/src/render.rs), and the delivery
    it raced is retried, so the message still arrives."""
    deadline = time.monotonic() + 15
    imap = connect()
    found = []
    while not found:
        try:
            typ, data = imap.select("INBOX")
        except imaplib.IMAP4.abort as dropped:
            assert time.monotonic() < deadline, f"IMAP session kept dropping: {dropped}"
            time.sleep(0.05)
            imap = connect()
            continue
        if typ != "OK":
            # Say what the server said instead of failing on the next command.
            assert time.monotonic() < deadline, f"SELECT INBOX kept failing: {typ} {data}"
            time.sleep(0.05)
            continue
        typ, data = imap.search(None, "HEADER", "Message-ID", token)
        assert typ == "OK", data
        found = data[0].split()
        if not found:
            assert time.monotonic() < deadline, "message did not arrive over IMAP within 15 s"
            time.sleep(0.05)
    typ, data = imap.fetch(found[-1], "(BODY.PEEK[TEXT])")
    assert typ == "OK", data
    return data[0][1], imap


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
    body, imap = wait_in_inbox(lambda: imap_session(status, address, password), token)
    assert token.encode() in body, body
    imap.logout()


def dav(endpoint, user, password, method, path, body=None, headers=None):
    """One request to Radicale on a fresh connection (it speaks HTTP/1.0 and closes after
    every response). Returns (status, body)."""
    url = urllib.parse.urlsplit(endpoint)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    conn.request(method, path, body=body,
                 headers={"Authorization": f"Basic {token}", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def check_caldav(status, password):
    """user1 makes a calendar and an event in it and lists it back; user2 can read neither;
    a wrong password is refused."""
    endpoint = status["endpoints"]["caldav"]
    xml = {"Content-Type": "application/xml; charset=utf-8"}
    code, body = dav(endpoint, "user1", password, "PROPFIND", "/", headers={"Depth": "0", **xml},
                     body='<?xml version="1.0"?><propfind xmlns="DAV:"><prop>'
                          '<current-user-principal/></prop></propfind>')
    assert code == 207, f"PROPFIND / as user1: {code} {body[:200]}"
    principal = ET.fromstring(body).find(".//{DAV:}current-user-principal/{DAV:}href")
    assert principal is not None and principal.text == "/user1/", body
    token = uuid.uuid4().hex[:12]
    calendar = f"/user1/smoke-{token}/"
    code, body = dav(endpoint, "user1", password, "MKCALENDAR", calendar)
    assert code == 201, f"MKCALENDAR {calendar}: {code} {body[:200]}"
    event = (f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//peakhour//lab smoke//EN\r\n"
             f"BEGIN:VEVENT\r\nUID:{token}@bench.test\r\nDTSTAMP:20260105T090000Z\r\n"
             f"DTSTART:20260105T090000Z\r\nDTEND:20260105T093000Z\r\n"
             f"SUMMARY:lab smoke {token}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    href = f"{calendar}{token}.ics"
    code, body = dav(endpoint, "user1", password, "PUT", href, body=event.encode(),
                     headers={"Content-Type": "text/calendar; charset=utf-8",
                              "If-None-Match": "*"})
    assert code == 201, f"PUT {href}: {code} {body[:200]}"
    listing = '<?xml version="1.0"?><propfind xmlns="DAV:"><prop><getetag/></prop></propfind>'
    code, body = dav(endpoint, "user1", password, "PROPFIND", calendar,
                     headers={"Depth": "1", **xml}, body=listing)
    assert code == 207, f"PROPFIND {calendar} as user1: {code}"
    hrefs = [h.text for h in ET.fromstring(body).iter("{DAV:}href")]
    assert href in hrefs, f"{href} not listed: {hrefs}"
    code, body = dav(endpoint, "user1", password, "GET", href)
    assert code == 200 and token.encode() in body, f"GET {href} as user1: {code} {body[:200]}"
    # Owner-only rights: user2 can neither list nor read user1's calendar.
    code, body = dav(endpoint, "user2", password, "PROPFIND", calendar,
                     headers={"Depth": "1", **xml}, body=listing)
    assert code == 403, f"PROPFIND {calendar} as user2: {code} {body[:200]}"
    code, body = dav(endpoint, "user2", password, "GET", href)
    assert code == 403 and token.encode() not in body, f"GET {href} as user2: {code}"
    code, _ = dav(endpoint, "user1", password + "x", "PROPFIND", "/user1/",
                  headers={"Depth": "0"})
    assert code == 401, f"a wrong password got {code}"
    return href


def smbclient(status, user, password, command):
    """Runs smbclient on the lab's share with credentials from a private file (not the
    command line, where `ps` would show them). Returns (exit code, output)."""
    url = urllib.parse.urlsplit(status["endpoints"]["smb"])
    share = url.path.strip("/")
    with tempfile.NamedTemporaryFile("w", prefix="lab-smoke-auth-") as auth:
        os.chmod(auth.name, 0o600)
        auth.write(f"username = {user}\npassword = {password}\n")
        auth.flush()
        done = subprocess.run(
            ["smbclient", f"//{url.hostname}/{share}", "-p", str(url.port), "-A", auth.name,
             "-c", command], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def check_smb(status, password):
    """user1 lists its directory, puts a file there and gets the same bytes back; a wrong
    password is refused."""
    code, out = smbclient(status, "user1", password, "ls user1")
    assert code == 0 and "user1" in out, f"ls user1: {out}"
    token = uuid.uuid4().hex[:12]
    with tempfile.TemporaryDirectory(prefix="lab-smoke-") as scratch:
        sent = os.path.join(scratch, "sent.txt")
        back = os.path.join(scratch, "back.txt")
        content = f"lab smoke {token}\n".encode() * 1000
        with open(sent, "wb") as file:
            file.write(content)
        name = f"user1/smoke-{token}.txt"
        code, out = smbclient(status, "user1", password,
                              f'put "{sent}" {name}; get {name} "{back}"; ls user1/*')
        assert code == 0, f"put/get: {out}"
        with open(back, "rb") as file:
            assert file.read() == content, "the file came back different"
        assert f"smoke-{token}.txt" in out, f"not listed: {out}"
    code, out = smbclient(status, "user1", password + "x", "ls")
    assert code != 0 and "LOGON_FAILURE" in out, f"a wrong password: {code} {out}"
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peakhour", default="target/debug/peakhour")
    parser.add_argument("--lab-dir", "--dir", dest="dir", default=".peakhour/lab")
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
            [args.peakhour, "lab", "status", "--lab-dir", args.dir, "--json"],
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

    imap_body, imap = wait_in_inbox(lambda: imap_session(status, address, password), token)
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

    extra_notes = ""
    if status["endpoints"].get("caldav"):
        href = check_caldav(status, password)
        extra_notes += f"; CalDAV event {href} stored, user2 refused"
    if status["endpoints"].get("smb"):
        name = check_smb(status, password)
        extra_notes += f"; SMB put/get of {name} round-tripped"

    print(f"ok: SMTP -> Postfix -> LMTP -> Dovecot -> IMAP/POP3 for {address}, "
          f"visible over IMAP after {latency_ms:.0f} ms{namespace_note}{noauth_note}{extra_notes}")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
