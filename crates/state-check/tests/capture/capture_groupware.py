#!/usr/bin/env python3
"""Records real JMAP, CalDAV and delivery exchanges against a Cyrus lab (or
CalDAV against Radicale) as JSON fixtures for tests/jmap.rs, tests/caldav.rs
and tests/delivery.rs. The password is written as PASSWORD. Used once:

    peakhour lab up --lab-dir DIR --port-base 28000 --users 3 \
        --mail-server cyrus --with caldav
    PASSWORD=$(peakhour lab status --lab-dir DIR --json | jq -r .password) \
        python3 capture_groupware.py jmap http://127.0.0.1:28081 user1@bench.test OUT.jsonl
    ... caldav http://127.0.0.1:28081/dav/calendars/user/user2@bench.test/Default/ user2@bench.test OUT.jsonl
    ... delivery 127.0.0.1:28026 127.0.0.1:28143 user3@bench.test OUT.json

`jmap`: one session imports two messages, flags one, moves it, destroys the
other, asks `Email/changes` from its first state (whole, then one change a
page), then the audit's `Email/get` of every message's `mailboxIds`, a
clean-up that destroys every message, and the clean-up's audit. Each line
is {"request": .., "response": ..}, or {"audit": ..} / {"cleanup": ..}.

`jmap-mixed`: 80 seeded random calls (`SEED=n`, 27 by default) of one
session: import into a random mailbox, flag, move, destroy, get, and
`Email/changes` from a random earlier state, whole or two changes a page;
then the audit's `Email/get`. `SHARED=1`: two sessions of the account
(each line's "session", a or b) take the calls in turn at random, each
acting on what either made (a shared account).

`caldav`: PUT a new event, GET it, PUT it again with If-Match, a
calendar-multiget REPORT, DELETE, GET (404) and the REPORT again; each line
is one exchange as CalDavExchange has it (the multistatus read here).

`caldav-mixed`: 80 seeded requests (`SEED=n`) over five events of one
collection: PUT (new, with the If-Match last seen, or a stale one), GET,
DELETE, calendar-multiget and calendar-query REPORTs, PROPFIND Depth 1.

`delivery`: submits one message in peakhour's shape over SMTP, then finds
it over IMAP (SEARCH HEADER X-Peakhour-Run, FETCH RFC822.SIZE
BODY.PEEK[HEADER]); writes {"submitted": .., "found": [..]}.
"""

import base64
import json
import os
import re
import smtplib
import socket
import sys
import time
import urllib.request
import urllib.error
import xml.etree.ElementTree as ET

PASSWORD = os.environ["PASSWORD"]


def scrub(text: str) -> str:
    return text.replace(PASSWORD, "PASSWORD")


class Http:
    def __init__(self, base, user):
        self.base = base.rstrip("/")
        token = base64.b64encode(("%s:%s" % (user, PASSWORD)).encode()).decode()
        self.auth = "Basic " + token

    def call(self, method, url, body=None, headers=None):
        if url.startswith("/"):
            url = re.match(r"https?://[^/]+", self.base).group(0) + url
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Authorization", self.auth)
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()


def message(run, nth, to):
    return (
        "Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n"
        "From: user1@bench.test\r\n"
        "To: %s\r\n"
        "Subject: state check %d\r\n"
        "Message-ID: <s0.%d.%s@bench.test>\r\n"
        "MIME-Version: 1.0\r\n"
        "X-Peakhour-Run: %s\r\n"
        "X-Peakhour-Id: s0.%d\r\n"
        "X-Mailer: peakhour\r\n"
        "Content-Type: text/plain; charset=us-ascii\r\n"
        "\r\n"
        "Quarterly figures attached as discussed.\r\n" % (to, nth, nth, run, run, nth)
    ).encode()


def jmap_mixed(base, user, out):
    """SEED-seeded random session: 80 calls of import, flag, move, destroy,
    get and /changes from a random earlier state (paged or whole)."""
    import random

    rng = random.Random(int(os.environ.get("SEED", "27")))
    # SHARED=1: two sessions, a and b, of the one account take turns at
    # random (their own generator, so the calls stay those of the seed).
    shared = os.environ.get("SHARED") == "1"
    turns = random.Random(int(os.environ.get("SEED", "27")) + 1000)
    http = Http(base, user)
    _, _, body = http.call("GET", base + "/.well-known/jmap")
    session = json.loads(body)
    account = next(iter(session["accounts"]))
    api = session["apiUrl"]
    upload = session["uploadUrl"].replace("{accountId}", account)
    lines = []
    using = ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"]

    def call(*calls):
        request = {"using": using, "methodCalls": [list(c) for c in calls]}
        _, _, body = http.call("POST", api, json.dumps(request).encode(), {"Content-Type": "application/json"})
        response = json.loads(body)
        line = {"request": request, "response": response}
        if shared:
            line["session"] = turns.choice("ab")
        lines.append(line)
        return response["methodResponses"]

    boxes = call(["Mailbox/get", {"accountId": account, "ids": None}, "0"])[0][1]["list"]
    box_ids = [b["id"] for b in boxes]
    states = [boxes and call(["Email/get", {"accountId": account, "ids": [], "properties": ["id"]}, "0"])[0][1]["state"]]
    where = {}
    for nth in range(80):
        op = rng.choice(["import", "import", "flag", "move", "move", "destroy", "get", "changes", "changes"])
        if op == "import" or not where:
            _, _, body = http.call("POST", upload, message("mixed", 100 + nth, user), {"Content-Type": "message/rfc822"})
            box = rng.choice(box_ids)
            answer = call(["Email/import", {"accountId": account, "emails": {"m": {
                "blobId": json.loads(body)["blobId"], "mailboxIds": {box: True}}}}, "0"])[0]
            if answer[0] == "Email/import" and answer[1].get("created"):
                where[answer[1]["created"]["m"]["id"]] = box
        elif op == "flag":
            email = rng.choice(sorted(where))
            call(["Email/set", {"accountId": account, "update": {email: {"keywords/$flagged": rng.choice([True, None])}}}, "0"])
        elif op == "move":
            email = rng.choice(sorted(where))
            to = rng.choice([b for b in box_ids if b != where[email]])
            call(["Email/set", {"accountId": account, "update": {email: {"mailboxIds/" + where[email]: None, "mailboxIds/" + to: True}}}, "0"])
            where[email] = to
        elif op == "destroy":
            email = rng.choice(sorted(where))
            call(["Email/set", {"accountId": account, "destroy": [email]}, "0"])
            del where[email]
        elif op == "get":
            ids = rng.sample(sorted(where), min(3, len(where)))
            answer = call(["Email/get", {"accountId": account, "ids": ids, "properties": ["id", "mailboxIds", "keywords"]}, "0"])[0]
            states.append(answer[1].get("state"))
        else:
            since = rng.choice([s for s in states if s])
            paged = rng.random() < 0.5
            for _ in range(100):
                args = {"accountId": account, "sinceState": since}
                if paged:
                    args["maxChanges"] = 2
                answer = call(["Email/changes", args, "0"])[0]
                if answer[0] != "Email/changes" or not answer[1]["hasMoreChanges"]:
                    break
                since = answer[1]["newState"]
    everything = call(
        ["Email/query", {"accountId": account}, "0"],
        ["Email/get", {"accountId": account, "#ids": {"resultOf": "0", "name": "Email/query", "path": "/ids"}, "properties": ["id", "mailboxIds"]}, "1"],
    )
    lines.append({"audit": everything[1][1]})
    with open(out, "w") as f:
        for line in lines:
            f.write(scrub(json.dumps(line, sort_keys=True)) + "\n")


def jmap(base, user, out):
    http = Http(base, user)
    _, _, body = http.call("GET", base + "/.well-known/jmap")
    session = json.loads(body)
    account = next(iter(session["accounts"]))
    api = session["apiUrl"]
    upload = session["uploadUrl"].replace("{accountId}", account)
    lines = []
    using = ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"]

    def call(*calls):
        request = {"using": using, "methodCalls": [list(c) for c in calls]}
        _, _, body = http.call(
            "POST", api, json.dumps(request).encode(), {"Content-Type": "application/json"}
        )
        response = json.loads(body)
        lines.append({"request": request, "response": response})
        return response["methodResponses"]

    boxes = call(["Mailbox/get", {"accountId": account, "ids": None}, "0"])[0][1]["list"]
    by_role = {b.get("role") or b["name"]: b["id"] for b in boxes}
    inbox, trash = by_role["inbox"], by_role.get("trash")
    first = call(
        ["Email/query", {"accountId": account, "filter": {"inMailbox": inbox}}, "0"],
        ["Email/get", {"accountId": account, "#ids": {"resultOf": "0", "name": "Email/query", "path": "/ids"}, "properties": ["id", "mailboxIds"]}, "1"],
    )
    state0 = first[1][1]["state"]
    blobs = []
    for nth in (1, 2):
        _, _, body = http.call("POST", upload, message("capture", nth, user), {"Content-Type": "message/rfc822"})
        blobs.append(json.loads(body)["blobId"])
    imported = call(
        ["Email/import", {"accountId": account, "emails": {
            "m%d" % i: {"blobId": b, "mailboxIds": {inbox: True}, "keywords": {}} for i, b in enumerate(blobs)
        }}, "0"]
    )[0][1]["created"]
    a, b = imported["m0"]["id"], imported["m1"]["id"]
    call(["Email/set", {"accountId": account, "update": {a: {"keywords/$seen": True}}}, "0"])
    call(["Email/set", {"accountId": account, "update": {a: {"mailboxIds/%s" % inbox: None, "mailboxIds/%s" % trash: True}}}, "0"])
    call(["Email/set", {"accountId": account, "destroy": [b]}, "0"])
    call(["Email/changes", {"accountId": account, "sinceState": state0}, "0"])
    since = state0
    for _ in range(10):
        page = call(["Email/changes", {"accountId": account, "sinceState": since, "maxChanges": 1}, "0"])[0]
        if page[0] != "Email/changes" or not page[1]["hasMoreChanges"]:
            break
        since = page[1]["newState"]
    call(["Email/get", {"accountId": account, "ids": [a, b], "properties": ["id", "mailboxIds"]}, "0"])
    call(["Mailbox/changes", {"accountId": account, "sinceState": "not-a-state"}, "0"])
    # The audit: every message of the account, with its mailboxes.
    everything = call(
        ["Email/query", {"accountId": account}, "0"],
        ["Email/get", {"accountId": account, "#ids": {"resultOf": "0", "name": "Email/query", "path": "/ids"}, "properties": ["id", "mailboxIds"]}, "1"],
    )
    lines.append({"audit": everything[1][1]})
    ids = everything[0][1]["ids"]
    if ids:
        call(["Email/set", {"accountId": account, "destroy": ids}, "0"])
    after = call(
        ["Email/query", {"accountId": account}, "0"],
        ["Email/get", {"accountId": account, "#ids": {"resultOf": "0", "name": "Email/query", "path": "/ids"}, "properties": ["id", "mailboxIds"]}, "1"],
    )
    lines.append({"cleanup": after[1][1]})
    with open(out, "w") as f:
        for line in lines:
            f.write(scrub(json.dumps(line, sort_keys=True)) + "\n")


EVENT = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//peakhour//state-check//EN\r\n"
    "BEGIN:VEVENT\r\nUID:%s\r\nDTSTAMP:20261126T100000Z\r\n"
    "DTSTART:20261201T090000Z\r\nDTEND:20261201T100000Z\r\nSUMMARY:%s\r\n"
    "END:VEVENT\r\nEND:VCALENDAR\r\n"
)

MULTIGET = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<C:calendar-multiget xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
    "<D:prop><D:getetag/></D:prop><D:href>%s</D:href></C:calendar-multiget>"
)


def multistatus(body):
    entries = []
    if not body:
        return entries
    root = ET.fromstring(body)
    for response in root.iter("{DAV:}response"):
        href = response.findtext("{DAV:}href")
        status = response.findtext("{DAV:}status") or ""
        etag = None
        for propstat in response.iter("{DAV:}propstat"):
            value = propstat.findtext("{DAV:}prop/{DAV:}getetag")
            if value and " 200 " in (propstat.findtext("{DAV:}status") or ""):
                etag = value
                status = propstat.findtext("{DAV:}status")
        code = int(status.split()[1]) if status else 0
        entries.append({"href": href, "status": code, "etag": etag})
    return entries


def caldav(collection, user, out):
    http = Http(collection, user)
    collection = collection.rstrip("/") + "/"
    path = re.sub(r"^https?://[^/]+", "", collection)
    uid = "state-check-%d" % int(time.time())
    href = path + uid + ".ics"
    lines = []

    def exchange(method, target, body=None, headers=None):
        status, answer_headers, answer = http.call(method, target, body, headers)
        etag = next((v for k, v in answer_headers.items() if k.lower() == "etag"), None)
        if_match = (headers or {}).get("If-Match")
        report = multistatus(answer) if status == 207 else []
        lines.append({"method": method, "href": re.sub(r"^https?://[^/]+", "", target), "if_match": if_match,
                      "status": status, "etag": etag, "report": report})
        return status, etag

    ics = {"Content-Type": "text/calendar; charset=utf-8"}
    exchange("PUT", href, (EVENT % (uid, "first")).encode(), dict(ics, **{"If-None-Match": "*"}))
    _, etag = exchange("GET", href)
    exchange("PUT", href, (EVENT % (uid, "second")).encode(), dict(ics, **{"If-Match": etag}))
    xml = {"Content-Type": "application/xml; charset=utf-8", "Depth": "1"}
    exchange("REPORT", collection, (MULTIGET % href).encode(), xml)
    _, etag = exchange("GET", href)
    exchange("DELETE", href, None, {"If-Match": etag})
    exchange("GET", href)
    exchange("REPORT", collection, (MULTIGET % href).encode(), xml)
    with open(out, "w") as f:
        for line in lines:
            f.write(scrub(json.dumps(line, sort_keys=True)) + "\n")


QUERY = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">'
    "<D:prop><D:getetag/></D:prop><C:filter><C:comp-filter name=\"VCALENDAR\">"
    '<C:comp-filter name="VEVENT"/></C:comp-filter></C:filter></C:calendar-query>'
)


def caldav_mixed(collection, user, out):
    """SEED-seeded: 80 requests over five events: PUT (new, or with the
    If-Match last seen, sometimes a stale one), GET, DELETE, multiget and
    calendar-query REPORTs, PROPFIND Depth 1."""
    import random

    rng = random.Random(int(os.environ.get("SEED", "27")))
    http = Http(collection, user)
    collection = collection.rstrip("/") + "/"
    path = re.sub(r"^https?://[^/]+", "", collection)
    stamp = int(time.time())
    hrefs = [path + "mixed-%d-%d.ics" % (stamp, n) for n in range(5)]
    etags = {}
    lines = []

    def exchange(method, target, body=None, headers=None):
        status, answer_headers, answer = http.call(method, target, body, headers)
        etag = next((v for k, v in answer_headers.items() if k.lower() == "etag"), None)
        report = multistatus(answer) if status == 207 else []
        lines.append({"method": method, "href": re.sub(r"^https?://[^/]+", "", target),
                      "if_match": (headers or {}).get("If-Match"), "status": status, "etag": etag,
                      "report": report})
        return status, etag, report

    ics = {"Content-Type": "text/calendar; charset=utf-8"}
    xml = {"Content-Type": "application/xml; charset=utf-8", "Depth": "1"}
    for nth in range(80):
        href = rng.choice(hrefs)
        uid = href.rsplit("/", 1)[1][:-4]
        op = rng.choice(["put", "put", "get", "get", "delete", "multiget", "query", "propfind"])
        if op == "put":
            headers = dict(ics)
            if href in etags and rng.random() < 0.8:
                headers["If-Match"] = etags[href] if rng.random() < 0.8 else '"stale"'
            status, etag, _ = exchange("PUT", href, (EVENT % (uid, "v%d" % nth)).encode(), headers)
            if 200 <= status < 300:
                etags.pop(href, None)
                if etag:
                    etags[href] = etag
        elif op == "get":
            status, etag, _ = exchange("GET", href)
            if status == 200 and etag:
                etags[href] = etag
        elif op == "delete":
            headers = {"If-Match": etags[href]} if href in etags and rng.random() < 0.5 else {}
            status, _, _ = exchange("DELETE", href, None, headers)
            if 200 <= status < 300:
                etags.pop(href, None)
        else:
            if op == "multiget":
                body = MULTIGET.replace("<D:href>%s</D:href>", "".join("<D:href>%s</D:href>" % h for h in hrefs))
                _, _, report = exchange("REPORT", collection, body.encode(), xml)
            elif op == "query":
                _, _, report = exchange("REPORT", collection, QUERY.encode(), xml)
            else:
                body = b'<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>'
                _, _, report = exchange("PROPFIND", collection, body, xml)
            for entry in report:
                if entry["etag"]:
                    etags[re.sub(r"^https?://[^/]+", "", entry["href"])] = entry["etag"]
    with open(out, "w") as f:
        for line in lines:
            f.write(scrub(json.dumps(line, sort_keys=True)) + "\n")


def delivery(smtp, imap, user, out):
    run = "capture%d" % int(time.time())
    submitted = message(run, 1, user)
    host, port = smtp.split(":")
    with smtplib.SMTP(host, int(port)) as client:
        client.sendmail("user1@bench.test", [user], submitted)
    host, port = imap.split(":")
    found = []
    for _ in range(30):
        time.sleep(1)
        found = imap_find(host, int(port), user, run)
        if found:
            break
    with open(out, "w") as f:
        json.dump({"submitted": submitted.decode(), "found": found}, f, indent=1, sort_keys=True)
        f.write("\n")


def imap_find(host, port, user, run):
    import imaplib

    imap = imaplib.IMAP4(host, port)
    imap.login(user, PASSWORD)
    imap.select("INBOX", readonly=True)
    _, data = imap.uid("SEARCH", None, "HEADER", "X-Peakhour-Run", run)
    found = []
    for uid in data[0].split():
        _, parts = imap.uid("FETCH", uid, "(RFC822.SIZE BODY.PEEK[HEADER])")
        meta, header = parts[0]
        size = int(re.search(rb"RFC822\.SIZE (\d+)", meta).group(1))
        found.append({"folder": "INBOX", "uid": int(uid), "size": size, "header": header.decode()})
    imap.logout()
    return found


if __name__ == "__main__":
    {"jmap": jmap, "jmap-mixed": jmap_mixed, "caldav": caldav, "caldav-mixed": caldav_mixed, "delivery": delivery}[sys.argv[1]](*sys.argv[2:])
