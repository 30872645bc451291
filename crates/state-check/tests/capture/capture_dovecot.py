#!/usr/bin/env python3
"""Records real sessions against a lab's Dovecot (or Cyrus) as one C:/S: transcript.

Three sessions of one account (a, b: the two under test; c: another client
that appends), interleaved in one deterministic order, with `! session`
directives and a `! checkpoint` where every session is quiet. The password is
written as PASSWORD. Used once to make tests/fixtures/dovecot/*.txt:

    peakhour lab up --lab-dir DIR --port-base 25000
    PASSWORD=$(peakhour lab status --lab-dir DIR --json | jq -r .password) \
        python3 capture_dovecot.py 127.0.0.1 25143 user1 OUT.txt [shared|sole]

`shared` (the default): a and b share the mailbox. `sole`: one session, the
account's only writer, whose own changes must hold in every later FETCH.
`mixed`: a and b share the mailbox for 150 seeded random commands (FETCH by
sequence number and UID, STORE of flags and keywords, SEARCH, EXPUNGE,
MOVE, NOOP, IDLE while c appends), with a checkpoint every 30; `SEED=n`
picks other commands (the committed fixture is seed 27); `CONCURRENT=1`
puts a's and b's FETCH or STORE on the wire together; `SOLE=1` has session a
alone, a sole writer, do all the commands. A new recording is
checked with

    STATE_CHECK_TRANSCRIPT=OUT.txt cargo test -p peakhour-state-check \
        --test real_servers -- --ignored any_transcript
"""

import os
import random
import re
import socket
import sys

HOST, PORT, USER, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
SCENARIO = sys.argv[5] if len(sys.argv) > 5 else "shared"
CONCURRENT = os.environ.get("CONCURRENT") == "1"
SOLE = os.environ.get("SOLE") == "1"
PASSWORD = os.environ["PASSWORD"]
BOX, ARCHIVE = "StateCheck", "StateCheckArchive"
lines = []


def escape(data: bytes) -> str:
    out = []
    for b in data:
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def record(side: str, data: bytes):
    data = data.replace(PASSWORD.encode(), b"PASSWORD")
    parts = data.split(b"\r\n")
    for part in parts[:-1]:
        lines.append("%s: %s" % (side, escape(part)))
    if parts[-1]:
        lines.append("%s| %s" % (side, escape(parts[-1])))


class Session:
    current = None

    def __init__(self, name):
        self.name, self.tag, self.buf = name, 0, b""
        self.sock = socket.create_connection((HOST, PORT), timeout=10)
        self.switch()
        self.read_response()

    def switch(self):
        if Session.current is not self:
            lines.append("! session %s" % self.name)
            Session.current = self

    def read_line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise SystemExit("%s: connection closed" % self.name)
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line + b"\r\n"

    def read_response(self):
        """One whole response, its literals included."""
        data = self.read_line()
        while True:
            m = re.search(rb"\{(\d+)\}\r\n$", data)
            if not m:
                break
            n = int(m.group(1))
            while len(self.buf) < n:
                self.buf += self.sock.recv(65536)
            data += self.buf[:n]
            self.buf = self.buf[n:]
            data += self.read_line()
        self.switch()
        record("S", data)
        return data

    def send(self, data: bytes):
        self.switch()
        record("C", data)
        self.sock.sendall(data)

    def start(self, text: str, literal: bytes = None):
        self.tag += 1
        tag = "A%04d" % self.tag
        if literal is None:
            self.send(("%s %s\r\n" % (tag, text)).encode())
        else:
            self.send(("%s %s {%d+}\r\n" % (tag, text, len(literal))).encode() + literal + b"\r\n")
        return tag

    def finish(self, tag: str):
        while True:
            data = self.read_response()
            if data.startswith(tag.encode() + b" "):
                return data

    def command(self, text: str, literal: bytes = None):
        return self.finish(self.start(text, literal))

    def idle_until(self, action, wanted: bytes):
        """IDLE, run `action` in another session, read until `wanted` arrives."""
        self.tag += 1
        tag = "A%04d" % self.tag
        self.send(("%s IDLE\r\n" % tag).encode())
        assert self.read_response().startswith(b"+")
        action()
        while wanted not in self.read_response():
            pass
        self.send(b"DONE\r\n")
        while not self.read_response().startswith(tag.encode() + b" "):
            pass


def message(n: int) -> bytes:
    return (
        "From: user2@bench.test\r\nTo: %s@bench.test\r\nSubject: state check %d\r\n"
        "Message-ID: <state-check-%d@bench.test>\r\nDate: Mon, 3 Mar 2025 10:00:0%d +0000\r\n"
        "\r\nBody of message %d.\r\n" % (USER, n, n, n, n)
    ).encode()




def setup():
    """Session c empties the two mailboxes and appends three messages."""
    c = Session("c")
    c.command('LOGIN %s "%s"' % (USER, PASSWORD))
    c.command("DELETE %s" % BOX)
    c.command("DELETE %s" % ARCHIVE)
    c.command("CREATE %s" % BOX)
    c.command("CREATE %s" % ARCHIVE)
    for n in (1, 2, 3):
        c.command("APPEND %s (\\Seen)" % BOX if n == 1 else "APPEND %s" % BOX, message(n))
    return c


def shared():
    c = setup()

    a, b = Session("a"), Session("b")
    a.command('LOGIN %s "%s"' % (USER, PASSWORD))
    b.command('LOGIN %s "%s"' % (USER, PASSWORD))
    a.command("SELECT %s" % BOX)
    b.command("SELECT %s (CONDSTORE)" % BOX)
    a.command("FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE BODYSTRUCTURE)")
    b.command("UID FETCH 1:* (UID FLAGS)")
    # a's own change, with a keyword the mailbox has not seen yet; b hears of it.
    a.command("STORE 1 +FLAGS (\\Flagged $Work)")
    b.command("NOOP")
    # Another client appends while b idles, then a polls.
    b.idle_until(lambda: c.command("APPEND %s" % BOX, message(4)), b"EXISTS")
    a.command("NOOP")
    a.command("FETCH 4 (UID FLAGS BODY.PEEK[])")
    a.command("FETCH 4 (UID RFC822.SIZE ENVELOPE BODY.PEEK[])")
    # b deletes message 2; a's FETCH by sequence number gets no EXPUNGE, its NOOP does.
    b.command("STORE 2 +FLAGS.SILENT (\\Deleted)")
    b.command("EXPUNGE")
    a.command("FETCH 1:* (FLAGS)")
    a.command("NOOP")
    # a moves its first message away; b hears of it.
    a.command("UID MOVE 1 %s" % ARCHIVE)
    b.command("NOOP")
    b.command("FETCH 1:* (UID FLAGS)")
    a.command("FETCH 1:* (UID FLAGS)")
    a.command("CHECK")
    b.command("CHECK")
    lines.append("! checkpoint %s" % BOX)
    c.command("SELECT %s" % ARCHIVE)
    c.command("FETCH 1:* (UID FLAGS ENVELOPE)")
    for s in (a, b, c):
        s.command("LOGOUT")



def sole():
    c = setup()
    c.command("LOGOUT")
    lines.append("! options sole-writer")
    a = Session("a")
    a.command('LOGIN %s "%s"' % (USER, PASSWORD))
    a.command("SELECT %s" % BOX)
    a.command("UID FETCH 1:* (UID FLAGS RFC822.SIZE)")
    a.command("STORE 2 +FLAGS.SILENT (\\Flagged $Todo)")
    a.command("FETCH 1:* (FLAGS)")
    a.command("STORE 1 -FLAGS (\\Seen)")
    # Reading the body sets \Seen again: the model must allow it.
    a.command("FETCH 1 (BODY[])")
    a.command("FETCH 1 (FLAGS)")
    a.command("UID STORE 3 FLAGS (\\Answered)")
    a.command("FETCH 1:* (UID FLAGS)")
    a.command("APPEND %s (\\Draft)" % BOX, message(4))
    a.command("NOOP")
    a.command("FETCH 4 (UID FLAGS)")
    a.command("STORE 4 +FLAGS.SILENT (\\Deleted)")
    a.command("EXPUNGE")
    a.command("MOVE 2 %s" % ARCHIVE)
    a.command("FETCH 1:* (UID FLAGS)")
    a.command("SELECT %s" % ARCHIVE)
    a.command("FETCH 1:* (UID FLAGS)")
    a.command("LOGOUT")


def mixed():
    rng = random.Random(int(os.environ.get("SEED", "27")))
    c = setup()
    if SOLE:
        # One session of the account, the only one to change flags (c only
        # appends new messages).
        lines.append("! options sole-writer")
        a = b = Session("a")
        a.command('LOGIN %s "%s"' % (USER, PASSWORD))
        a.command("SELECT %s (CONDSTORE)" % BOX)
    else:
        a, b = Session("a"), Session("b")
        for s in (a, b):
            s.command('LOGIN %s "%s"' % (USER, PASSWORD))
        # Both with CONDSTORE, so that the checkpoint compares MODSEQs too.
        a.command("SELECT %s (CONDSTORE)" % BOX)
        b.command("SELECT %s (CONDSTORE)" % BOX)
    flags = ["\\Seen", "\\Flagged", "\\Answered", "\\Draft", "$Work", "$Todo", "Later"]
    appended = 3
    for step in range(1, 151):
        s = rng.choice((a, b))
        op = rng.random()
        if CONCURRENT and not SOLE and op < 0.55:
            # Both sessions' commands are on the wire before either answer
            # is read: the server works on them at the same time.
            tags = []
            for t in (a, b):
                mode = rng.choice(("+FLAGS", "-FLAGS", "+FLAGS.SILENT", "FLAGS"))
                chosen = " ".join(rng.sample(flags, rng.randint(1, 2)))
                if rng.random() < 0.5:
                    tags.append((t, t.start("FETCH 1:* (UID FLAGS)")))
                else:
                    tags.append((t, t.start("STORE %d %s (%s)" % (rng.randint(1, 4), mode, chosen))))
            for t, tag in tags:
                t.finish(tag)
        elif op < 0.2:
            s.command("FETCH 1:* (UID FLAGS)")
        elif op < 0.3:
            s.command("UID FETCH 1:* (FLAGS RFC822.SIZE ENVELOPE)")
        elif op < 0.55:
            mode = rng.choice(("+FLAGS", "-FLAGS", "+FLAGS.SILENT", "-FLAGS.SILENT", "FLAGS"))
            chosen = " ".join(rng.sample(flags, rng.randint(1, 2)))
            s.command("STORE %d %s (%s)" % (rng.randint(1, 4), mode, chosen))
        elif op < 0.6:
            s.command("SEARCH UNSEEN")
        elif op < 0.7:
            appended += 1
            c.command("APPEND %s" % BOX, message(appended))
        elif op < 0.75:
            s.command("STORE %d +FLAGS.SILENT (\\Deleted)" % rng.randint(1, 3))
            s.command("EXPUNGE")
        elif op < 0.8:
            s.command("MOVE %d %s" % (rng.randint(1, 3), ARCHIVE))
        elif op < 0.9:
            s.command("NOOP")
        else:
            appended += 1
            s.idle_until(lambda: c.command("APPEND %s" % BOX, message(appended)), b"EXISTS")
        if step % 30 == 0:
            for s in dict.fromkeys((a, b)):
                s.command("CHECK")
            lines.append("! checkpoint %s" % BOX)
    for s in dict.fromkeys((a, b, c)):
        s.command("LOGOUT")


lines.append("# Real Dovecot sessions recorded by tests/capture/capture_dovecot.py (password replaced).")
{"shared": shared, "sole": sole, "mixed": mixed}[SCENARIO]()
with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print("%d lines to %s" % (len(lines), OUT))
