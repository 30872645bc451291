"""Replays a recorded client's IMAP sessions against a lab's Dovecot (issue 28 item 3).

A recording (tests/fixtures/clients/<client>/, made by scripts/record-clients.sh)
is replayed as the client sent it: the same connections, the same commands in
the same order per connection, with these changes, each needed to run it on
another mailbox:

* tags are renumbered (`p0001`, `p0002`, ... per connection);
* LOGIN and AUTHENTICATE PLAIN (inline or as a continuation) carry the lab
  user's credentials, in the form the client used;
* literals (APPEND's message) are sent with their recorded size and the
  recorded synchronising (`{N}`, wait for `+`) or non-synchronising (`{N+}`)
  form; an APPEND's literal is a generated message of exactly that size;
* UIDs are mapped onto the lab mailbox's UIDs (see UidMap): a recorded UID is
  the message at the same rank in the folder's recorded list, and a UID the
  recording's server made (COPYUID, APPENDUID) is the UID the lab's server
  made for the same command; message sequence numbers are held to the
  connection's current EXISTS;
* time is compressed: commands go back to back (each waits for its tagged
  answer), except that an IDLE is held min(recorded, --idle-bound) seconds
  (default 0.2 s) before its DONE. Dovecot spends almost nothing while a
  connection idles, so what the compression leaves out is its "* OK Still
  here" every 2 minutes per idling connection.

Commands are replayed one at a time in the recording's time order across the
user's connections. A command the lab answers NO or BAD where the recording got
OK is counted and reported (`differing`), never hidden.

    python3 scripts/record/replay.py tests/fixtures/clients/neomutt --lab-dir DIR [--users 4] [--action read]

replays the whole recording (or one action's slice, see cpu_per_action.py)
for --users lab users in parallel (user1.. by default, --first-user N), each
bounded by --timeout seconds.
"""

import argparse
import base64
import bisect
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure  # noqa: E402  (the transcript parser and the action windows)

LITERAL = re.compile(r"\{(\d+)(\+?)\}<(\d+) bytes>")
SET = re.compile(r"^[0-9:,*]+$")
CODE = re.compile(r"\[([A-Z-]+)( [^\]]*)?\]")


class ReplayError(Exception):
    """A replay that cannot go on: says which connection and command."""


# ---------------------------------------------------------------- the recording (pure)

def split_args(text):
    """Top-level arguments: quoted strings and parenthesised groups stay whole."""
    args, current, depth, quoted, escaped = [], "", 0, False, False
    for char in text:
        if quoted:
            current += char
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == " " and depth == 0:
            if current:
                args.append(current)
            current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


def mailbox_name(arg):
    """The folder an astring names: quotes removed, INBOX in any case is INBOX."""
    if arg.startswith('"') and arg.endswith('"'):
        arg = arg[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return "INBOX" if arg.upper() == "INBOX" else arg


def command_name(text):
    """('UID FETCH', [args]) of a tagged command line."""
    words = split_args(text)
    if len(words) < 2:
        return "", []
    name, rest = words[1].upper(), words[2:]
    if name == "UID" and rest:
        name, rest = f"UID {rest[0].upper()}", rest[1:]
    return name, rest


def target_folder(name, args):
    """The folder a command creates messages in (COPYUID/APPENDUID), or selects."""
    if name in ("APPEND", "SELECT", "EXAMINE", "STATUS") and args:
        return mailbox_name(args[0])
    if name in ("COPY", "MOVE", "UID COPY", "UID MOVE") and len(args) >= 2:
        return mailbox_name(args[1])
    return None


def codes(text):
    """Response codes of one server line: [('COPYUID', '1 3 6'), ...]."""
    return [(m.group(1), (m.group(2) or "").strip()) for m in CODE.finditer(text)]


def expand_uids(spec):
    """'3,5:7' -> [3, 5, 6, 7] (a COPYUID/APPENDUID uid set)."""
    out = []
    for part in spec.split(","):
        low, _, high = part.partition(":")
        low, high = int(low), int(high or low)
        out += list(range(min(low, high), max(low, high) + 1))
    return out


def created_uids(response_codes):
    """The (destination UIDs) a COPYUID or APPENDUID in a command's answers names."""
    for code, value in response_codes:
        words = value.split(" ")
        if code == "COPYUID" and len(words) == 3:
            return expand_uids(words[2])
        if code == "APPENDUID" and len(words) == 2:
            return expand_uids(words[1])
    return []


class Item:
    """One client step on one connection: a tagged command with its continuation
    lines (SASL), or the DONE that ends an IDLE."""

    def __init__(self, conn, t, text):
        self.conn, self.t, self.text = conn, t, text
        self.done = text.upper() == "DONE"
        self.tag = None if self.done else text.split(" ")[0]
        self.name, self.args = ("DONE", []) if self.done else command_name(text)
        self.continuations = []  # client lines sent after a `+` (SASL credentials)
        self.status = None  # the recorded tagged answer: OK, NO or BAD
        self.codes = []  # response codes seen between the command and its tagged answer
        self.line = 0  # transcript line, for error messages

    def __repr__(self):
        return f"{self.conn}@{self.t:.3f} {self.text[:60]}"


class Recording:
    """A fixture: its items per connection, connections' open/close times, the
    recorded folders' sizes (first UIDNEXT seen, first EXISTS of a SELECT)."""

    def __init__(self, fixture):
        self.fixture = fixture
        with open(os.path.join(fixture, "manifest.json"), encoding="utf-8") as manifest:
            self.manifest = json.load(manifest)
        self.items, self.opened, self.closed = [], {}, {}
        self.uidnext, self.exists = {}, {}
        self.folders = []  # every folder a LIST answer named, in order
        self._read(measure.parse(os.path.join(fixture, "transcript.txt")))

    def _read(self, events):
        in_flight = {}  # conn -> [items awaiting their tagged answer]
        last = {}  # conn -> last item (continuations attach to it)
        for number, (t, conn, kind, text) in enumerate(events, start=1):
            if kind == "open":
                self.opened.setdefault(conn, t)
            elif kind == "close":
                self.closed[conn] = t
            elif kind == "C":
                if text in ("<credentials>", "<password>") or (text.startswith("<") and last.get(conn)
                                                              and last[conn].name == "AUTHENTICATE"):
                    last[conn].continuations.append(text)
                    continue
                item = Item(conn, t, text)
                item.line = number
                self.items.append(item)
                last[conn] = item
                if not item.done:
                    in_flight.setdefault(conn, []).append(item)
            else:
                self._answer(conn, text, in_flight.get(conn, []))

    def _answer(self, conn, text, waiting):
        words = text.split(" ")
        if text.startswith("* LIST ") or text.startswith("* LSUB "):
            name = mailbox_name(split_args(text)[-1])
            if name not in self.folders:
                self.folders.append(name)
        if text.startswith("* STATUS "):
            args = split_args(text[len("* STATUS "):])
            if len(args) >= 2:
                fields = args[1].strip("()").split(" ")
                pairs = dict(zip(fields[::2], fields[1::2]))
                if "UIDNEXT" in pairs:
                    self.uidnext.setdefault(mailbox_name(args[0]), int(pairs["UIDNEXT"]))
        for item in waiting:
            if words[0] == item.tag and len(words) > 1 and words[1] in ("OK", "NO", "BAD"):
                item.status = words[1]
                item.codes += codes(text)
                waiting.remove(item)
                if item.status == "OK" and item.name in ("SELECT", "EXAMINE"):
                    folder = target_folder(item.name, item.args)
                    for code, value in item.codes:
                        if code == "UIDNEXT":
                            self.uidnext.setdefault(folder, int(value))
                    if "_exists" in item.__dict__:
                        self.exists.setdefault(folder, item._exists)
                return
        if waiting:
            newest = waiting[-1]
            newest.codes += codes(text)
            if len(words) == 3 and words[0] == "*" and words[2] == "EXISTS":
                newest._exists = int(words[1])

    def windows(self):
        """Each action's window, as measure.py cuts it: [(name, start, stop)]."""
        actions = sorted(self.manifest["actions"], key=lambda a: a["start"])
        out = []
        for i, action in enumerate(actions):
            stop = actions[i + 1]["start"] if i + 1 < len(actions) else action["end"] + 5
            out.append((action["action"], action["start"], stop))
        return out

    def slice(self, action=None, all_open=False):
        """The items of one action's window (all items if action is None); with
        all_open, every connection open at its start is set up, not only its own."""
        if action is None:
            return Slice(self, list(self.items), float("-inf"))
        for name, start, stop in self.windows():
            if name == action:
                piece = Slice(self, [i for i in self.items if start <= i.t < stop], start, all_open)
                piece.stop = stop
                return piece
        raise ReplayError(f"{self.fixture}: no action {action!r} in manifest.json "
                          f"(it has {', '.join(n for n, _, _ in self.windows())})")

    def recorded_count(self, folder):
        """How many messages the recorded folder held (UIDs 1..N: the lab that
        recorded filled them in order), from the first UIDNEXT seen."""
        if folder in self.exists:
            return self.exists[folder]
        return self.uidnext[folder] - 1 if folder in self.uidnext else None


class ConnectionState:
    """What a connection had done before a slice starts: logged in, ENABLEd,
    which folder it had selected, and whether it sat in IDLE."""

    def __init__(self):
        self.logged_in, self.enable, self.selected, self.select_verb, self.idling = False, [], None, None, False


class Slice:
    """The items of one window, and each connection's state at its start."""

    def __init__(self, recording, items, start, all_open=False):
        self.recording, self.items, self.start = recording, items, start
        used = []
        for item in items:
            if item.conn not in used:
                used.append(item.conn)
        self.connections = used
        self.before = {}  # conn -> ConnectionState, for connections opened before the window
        # With all_open, also the connections open at the start that the window does not
        # use (Thunderbird's Inbox in IDLE beside its sweep): set up, quiet through it.
        others = [c for c in recording.opened if c not in used and recording.closed.get(c, float("inf")) >= start]
        for conn in used + (others if all_open else []):
            if recording.opened.get(conn, float("inf")) < start:
                self.before[conn] = self._state_at(conn, start)

    def _state_at(self, conn, start):
        state = ConnectionState()
        for item in self.recording.items:
            if item.conn != conn or item.t >= start:
                continue
            if item.done:
                state.idling = False
            elif item.name == "IDLE":
                state.idling = True
            elif item.status != "OK":
                continue
            elif item.name in ("LOGIN", "AUTHENTICATE"):
                state.logged_in = True
            elif item.name == "ENABLE":
                state.enable.append(" ".join(item.args))
            elif item.name in ("SELECT", "EXAMINE"):
                state.selected, state.select_verb = target_folder(item.name, item.args), item.name
            elif item.name in ("CLOSE", "UNSELECT"):
                state.selected = None
        return state

    def history(self):
        """What the recording did before the window on the connections open at its
        start, in order: replayed, it leaves each `imap` process as the client's was."""
        return [i for i in self.recording.items if i.conn in self.before and i.t < self.start]

    def closed_within(self):
        """The window's connections the recording closed before the window's end
        (the others it kept open past the window)."""
        stop = getattr(self, "stop", float("inf"))
        return [c for c in self.connections if self.recording.closed.get(c, float("inf")) < stop]

    def folders(self):
        """Every folder the window names or has selected at its start."""
        names = [s.selected for s in self.before.values() if s.selected]
        names += [target_folder(i.name, i.args) for i in self.items]
        out = []
        for name in names:
            if name and name not in out:
                out.append(name)
        return out


# ---------------------------------------------------------------- rewriting (pure)

class UidMap:
    """Recorded UIDs -> the lab's. The recording lab filled each folder in
    order, so recorded UID u (u <= the folder's recorded count N) is the u-th
    message; it maps to the lab folder's u-th UID (the last one if the lab
    folder is shorter). A UID above N is new mail that came later: it maps
    to the lab's last UID plus (u - N), so `N+1:*` stays "what is new".
    UIDs the recording's server made (COPYUID/APPENDUID) map to the ones the
    lab's server made for the same command."""

    def __init__(self, recorded_count, lab_uids):
        self.recorded_count = recorded_count  # folder -> N (or absent)
        self.lab_uids = lab_uids  # folder -> sorted list of the lab's UIDs
        self.made = {}  # (folder, recorded uid) -> lab uid

    def learn(self, folder, recorded, lab):
        for rec, new in zip(recorded, lab):
            self.made[(folder, rec)] = new
            bisect.insort(self.lab_uids.setdefault(folder, []), new)

    def uid(self, folder, uid):
        if (folder, uid) in self.made:
            return self.made[(folder, uid)]
        count, lab = self.recorded_count.get(folder), self.lab_uids.get(folder)
        if count is None or not lab:
            return uid
        if uid <= count:
            return lab[min(uid, len(lab)) - 1]
        return lab[-1] + (uid - count)

    def uid_set(self, folder, spec):
        return map_set(spec, lambda n: self.uid(folder, n))


def map_set(spec, one):
    """Applies `one` to every number of an IMAP sequence set; `*` stays."""
    parts = []
    for part in spec.split(","):
        ends = [end if end == "*" else str(one(int(end))) for end in part.split(":")]
        parts.append(":".join(ends))
    return ",".join(parts)


def clamp_sequence(spec, exists):
    """Holds message sequence numbers to the mailbox's current size."""
    if not exists:
        return spec
    return map_set(spec, lambda n: max(1, min(n, exists)))


def plain_credentials(user, password):
    return base64.b64encode(f"\0{user}\0{password}".encode()).decode()


def plain(connection, command):
    """Sends one command of our own (not the recording's) and waits for its OK."""
    tag = connection.next_tag()
    connection.send(f"{tag} {command}\r\n".encode())
    status, _ = connection.until_tagged(tag)
    if status != "OK":
        raise ReplayError(f"{connection.name}: {command.split(' ')[0]} answered {status}")


def quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rewrite(item, tag, user, password, uids, selected, exists):
    """The command line to send for a recorded item: new tag, the lab user's
    credentials, UIDs and sequence numbers mapped. Literals stay as the
    `{N}<N bytes>` markers (see segments()). Returns (line, continuation lines)."""
    if item.done:
        return "DONE", []
    name, args = item.name, list(item.args)
    verb = split_args(item.text)[1]
    continuations = [plain_credentials(user, password) if c in ("<credentials>",) else c
                     for c in item.continuations]
    if name == "LOGIN":
        args = [quote(user), quote(password)]
    elif name == "AUTHENTICATE":
        if args[0].upper() != "PLAIN":
            raise ReplayError(f"{item!r}: only AUTHENTICATE PLAIN is replayed, not {args[0]}")
        if len(args) > 1:
            args = [args[0], plain_credentials(user, password)]
    elif name in ("UID FETCH", "UID STORE", "UID COPY", "UID MOVE", "UID EXPUNGE") and args:
        args[0] = uids.uid_set(selected, args[0]) if SET.match(args[0]) else args[0]
    elif name in ("FETCH", "STORE", "COPY", "MOVE") and args and SET.match(args[0]):
        args[0] = clamp_sequence(args[0], exists)
    elif name in ("SEARCH", "UID SEARCH"):
        out, previous = [], ""
        for arg in args:
            if SET.match(arg):
                arg = uids.uid_set(selected, arg) if previous.upper() == "UID" else clamp_sequence(arg, exists)
            out.append(arg)
            previous = arg
        args = out
    head = [tag, verb] + ([split_args(item.text)[2]] if name.startswith("UID ") else [])
    return " ".join(head + args), continuations


def message_of_size(size, serial):
    """An RFC 5322 message of exactly `size` bytes (an APPEND literal)."""
    head = (f"From: replay@bench.test\r\nTo: replay@bench.test\r\nSubject: replayed message {serial}\r\n"
            f"Message-ID: <replay-{serial}-{time.time_ns()}@bench.test>\r\n\r\n").encode()
    if size <= len(head):
        return (b"X-R: " + b"x" * size)[:size] if size < 8 else head[: size - 2] + b"\r\n"
    body = size - len(head)
    line = b"replayed body text " * 4 + b"\r\n"
    data = (line * (body // len(line) + 1))[:body]
    return head + data[:-2] + b"\r\n" if body >= 2 else head + b" " * body


def segments(line, is_append, serial):
    """[(bytes to send, wait for '+' before the next part)] of one command line with
    literals: the text up to and including `{N}` / `{N+}`, then the N bytes."""
    out, position = [], 0
    for match in LITERAL.finditer(line):
        size, plus = int(match.group(1)), match.group(2)
        out.append((line[position:match.start()].encode() + f"{{{size}{plus}}}\r\n".encode(), not plus))
        out.append((message_of_size(size, serial) if is_append else b"x" * size, False))
        position = match.end()
    out.append((line[position:].encode() + b"\r\n", False))
    return out


# ---------------------------------------------------------------- the wire

class Connection:
    """One replayed IMAP connection: reads whole responses (literals included),
    tracks the selected folder and EXISTS the way a client does."""

    def __init__(self, host, port, name, timeout):
        self.name = name
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buffer = b""
        self.selected, self.exists, self.idle_tag, self.idle_since, self.alive = None, 0, None, 0.0, True
        self.serial = 0
        greeting = self.read_line()
        if not greeting.startswith(b"* OK"):
            raise ReplayError(f"{name}: the server greeted with {greeting[:80]!r}")

    def next_tag(self):
        self.serial += 1
        return f"p{self.serial:04d}"

    def read_line(self):
        """One response line with its literals joined in."""
        line = b""
        while True:
            while b"\r\n" not in self.buffer:
                data = self.sock.recv(65536)
                if not data:
                    self.alive = False
                    raise ReplayError(f"{self.name}: the server closed the connection")
                self.buffer += data
            part, self.buffer = self.buffer.split(b"\r\n", 1)
            line += part
            match = re.search(rb"\{(\d+)\}$", part)
            if not match:
                return line
            size = int(match.group(1))
            while len(self.buffer) < size:
                data = self.sock.recv(65536)
                if not data:
                    self.alive = False
                    raise ReplayError(f"{self.name}: the server closed the connection in a literal")
                self.buffer += data
            line += b"<literal>"
            self.buffer = self.buffer[size:]

    def _track(self, line):
        words = line.split(b" ")
        if len(words) >= 3 and words[0] == b"*" and words[1].isdigit():
            if words[2] == b"EXISTS":
                self.exists = int(words[1])
            elif words[2] == b"EXPUNGE":
                self.exists = max(0, self.exists - 1)

    def until_continuation(self):
        while True:
            line = self.read_line()
            if line.startswith(b"+"):
                return
            self._track(line)
            if line.split(b" ")[0] not in (b"*",):
                raise ReplayError(f"{self.name}: expected '+', got {line[:80]!r}")

    def until_tagged(self, tag):
        """(status, [codes]) of the command `tag`; untagged lines update the state."""
        found = []
        while True:
            line = self.read_line()
            self._track(line)
            text = line.decode("utf-8", "replace")
            found += codes(text)
            words = text.split(" ")
            if words[0] == tag and len(words) > 1:
                return words[1], found
            if words[0] == "*" and len(words) > 1 and words[1] == "BYE":
                self.alive = False

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Replayer:
    """Replays one slice of a recording as one lab user."""

    def __init__(self, recording, piece, lab, user, idle_bound, timeout, uids, warm=False, paced=False):
        self.recording, self.piece, self.lab, self.user = recording, piece, lab, user
        self.idle_bound, self.timeout, self.uids = idle_bound, timeout, uids
        self.warm = warm
        # Each command at its recorded offset into the window, not back to back: a
        # command that wakes a process asleep for 0.4 s (Thunderbird's sweep) costs
        # more than the same command right after another.
        self.paced = paced
        self.connections = {}  # recorded conn -> Connection
        self.commands = self.differing = 0
        self.differences = []

    def connect(self, conn):
        host, port = self.lab["imap"]
        connection = Connection(host, port, f"{self.user}@{host}:{port} ({conn})", self.timeout)
        self.connections[conn] = connection
        return connection

    def setup(self):
        """Brings the connections that were open before the window to their state
        at its start: logged in, ENABLEd, the folder selected, in IDLE. With
        `warm`, by replaying everything the recording did on them before the
        window instead, so that each `imap` process has done what the client's
        had (its indexes opened, its first writes made) and the window does not
        pay what the session paid once."""
        if self.warm:
            self._replay_history()
            return
        for conn, state in self.piece.before.items():
            connection = self.connect(conn)
            if not state.logged_in:
                continue
            plain(connection, f"LOGIN {quote(self.user)} {quote(self.lab['password'])}")
            for enable in state.enable:
                plain(connection, f"ENABLE {enable}")
            if state.selected:
                plain(connection, f"{state.select_verb} {quote(state.selected)}")
                connection.selected = state.selected
            if state.idling:
                tag = connection.next_tag()
                connection.send(f"{tag} IDLE\r\n".encode())
                connection.until_continuation()
                connection.idle_tag, connection.idle_since = tag, time.monotonic()

    def _replay_history(self):
        previous = {}
        for item in self.piece.history():
            connection = self.connections.get(item.conn) or self.connect(item.conn)
            self.step(connection, item, previous.get(item.conn))
            previous[item.conn] = item
        if self.differing:
            raise ReplayError(f"{self.user}: the history before the window: {'; '.join(self.differences[:2])}")
        self.commands = self.differing = 0

    def run(self, deadline, keep=False):
        """Replays the window's items in order, then logs out every connection still
        open; with `keep`, only those the recording closed within the window (the
        others stay for `logout()` later, as the client kept them)."""
        previous = {}
        origin = time.monotonic()
        for item in self.piece.items:
            if self.paced:
                wait = origin + (item.t - self.piece.start) - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            if time.monotonic() > deadline:
                raise ReplayError(f"{self.user}: the replay passed its time bound at {item!r}")
            connection = self.connections.get(item.conn) or self.connect(item.conn)
            if not connection.alive:
                continue
            try:
                self.step(connection, item, previous.get(item.conn))
            except ReplayError as error:
                self.differing += 1
                self.differences.append(str(error))
                connection.alive = False
            previous[item.conn] = item
        if not keep:
            self.logout(list(self.connections.values()))
            return
        ended = [c for c in self.piece.closed_within() if c in self.connections]
        self.logout([self.connections.pop(c) for c in ended])

    def step(self, connection, item, previous):
        if item.done:
            if connection.idle_tag is None:
                return
            held = min(self.idle_bound, max(0.0, item.t - (previous.t if previous else item.t)))
            # Paced, the DONE is already at its recorded time.
            remaining = 0 if self.paced else held - (time.monotonic() - connection.idle_since)
            if remaining > 0:
                time.sleep(remaining)
            connection.send(b"DONE\r\n")
            status, _ = connection.until_tagged(connection.idle_tag)
            connection.idle_tag = None
            self.count(item, status)
            return
        tag = connection.next_tag()
        line, continuations = rewrite(item, tag, self.user, self.lab["password"], self.uids,
                                      connection.selected, connection.exists)
        self.commands += 1
        for data, wait in segments(line, item.name == "APPEND", self.commands):
            connection.send(data)
            if wait:
                connection.until_continuation()
        for continuation in continuations:
            connection.until_continuation()
            connection.send(continuation.encode() + b"\r\n")
        if item.name == "IDLE":
            connection.until_continuation()
            connection.idle_tag, connection.idle_since = tag, time.monotonic()
            return
        status, found = connection.until_tagged(tag)
        self.count(item, status)
        if status == "OK":
            self.track(connection, item, found)
        if item.name == "LOGOUT":
            connection.alive = False

    def track(self, connection, item, found):
        folder = target_folder(item.name, item.args)
        if item.name in ("SELECT", "EXAMINE"):
            connection.selected = folder
        elif item.name in ("CLOSE", "UNSELECT"):
            connection.selected = None
        recorded, lab = created_uids(item.codes), created_uids(found)
        if folder and recorded and lab:
            self.uids.learn(folder, recorded, lab)

    def count(self, item, status):
        if item.status == "OK" and status != "OK":
            self.differing += 1
            if len(self.differences) < 5:
                self.differences.append(f"{item.text[:70]!r} (transcript line {item.line}): the lab answered {status}")

    def logout(self, connections=None):
        """LOGOUT of `connections` (every one still held when None)."""
        if connections is None:
            connections = list(self.connections.values())
        for connection in connections:
            if connection.alive:
                try:
                    if connection.idle_tag:
                        connection.send(b"DONE\r\n")
                        connection.until_tagged(connection.idle_tag)
                    tag = connection.next_tag()
                    connection.send(f"{tag} LOGOUT\r\n".encode())
                    connection.until_tagged(tag)
                except (ReplayError, OSError):
                    pass
            connection.close()
        self.connections = {c: k for c, k in self.connections.items() if k not in connections}


# ---------------------------------------------------------------- the lab mailbox

def lab_of(lab_dir):
    if not os.path.exists(os.path.join(lab_dir, "state.json")):
        raise SystemExit(f"error: {lab_dir}/state.json is missing: no lab there (peakhour lab up --lab-dir {lab_dir})")
    with open(os.path.join(lab_dir, "state.json"), encoding="utf-8") as state_file:
        state = json.load(state_file)
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "debug", "peakhour")
    status = subprocess.run([os.environ.get("PEAKHOUR", default), "lab", "status", "--lab-dir", lab_dir, "--json"],
                            capture_output=True, text=True).stdout
    if not status:
        raise SystemExit(f"error: `peakhour lab status --lab-dir {lab_dir} --json` said nothing: is the lab up?")
    endpoints = json.loads(status)["endpoints"]
    host, port = endpoints.get("imap", "127.0.0.1:143").rsplit(":", 1)
    smtp_host, smtp_port = endpoints.get("submissions", "127.0.0.1:465").rsplit(":", 1)
    return {"imap": (host, int(port)), "submissions": (smtp_host, int(smtp_port)),
            "password": state["password"], "ca": os.path.join(lab_dir, "tls", "ca.pem"),
            "status": json.loads(status)}


def prepare_mailbox(recording, piece, lab, user, timeout):
    """Outside the measurement: the recording's folders exist, the Inbox holds
    at least the recording's count (topped up with fill_inbox's messages), and
    the lab's UIDs of every folder the slice uses. Returns a UidMap."""
    import fill_inbox  # noqa: E402  (same directory)

    host, port = lab["imap"]
    connection = Connection(host, port, f"{user}@{host}:{port} (setup)", timeout)
    plain(connection, f"LOGIN {quote(user)} {quote(lab['password'])}")
    wanted = recording.recorded_count("INBOX") or 0
    lab_uids, counts = {}, {}
    for folder in piece.folders() + (["INBOX"] if "INBOX" not in piece.folders() else []):
        tag = connection.next_tag()
        connection.send(f"{tag} EXAMINE {quote(folder)}\r\n".encode())
        status, _ = connection.until_tagged(tag)
        if status != "OK":
            plain(connection, f"CREATE {quote(folder)}")
            plain(connection, f"EXAMINE {quote(folder)}")
        cut_to_recorded(connection, folder, recording.recorded_count(folder))
        if folder == "INBOX" and connection.exists < wanted:
            for n in range(connection.exists, wanted):
                data = fill_inbox.message(user, n)
                tag = connection.next_tag()
                connection.send(f"{tag} APPEND INBOX (\\Seen) {{{len(data)}+}}\r\n".encode() + data + b"\r\n")
                connection.until_tagged(tag)
        tag = connection.next_tag()
        connection.send(f"{tag} UID SEARCH ALL\r\n".encode())
        found = []
        while True:
            line = connection.read_line().decode()
            if line.startswith("* SEARCH"):
                found = sorted(int(w) for w in line.split(" ")[2:] if w.isdigit())
            elif line.startswith(tag + " "):
                break
        lab_uids[folder] = found
        counts[folder] = recording.recorded_count(folder)
    plain(connection, "LOGOUT")
    connection.close()
    return UidMap({k: v for k, v in counts.items() if v is not None}, lab_uids)


def cut_to_recorded(connection, folder, count):
    """Expunges the newest messages of `folder` above the recorded `count`: the
    moves, copies to Sent and deletes of earlier rounds must not make the next
    round's SELECT or `UID FETCH 1:*` of the folder dearer than the recording's.
    Leaves the folder EXAMINEd."""
    if count is None or connection.exists <= count:
        return
    plain(connection, f"SELECT {quote(folder)}")
    plain(connection, f"STORE {count + 1}:* +FLAGS.SILENT (\\Deleted)")
    plain(connection, "EXPUNGE")
    plain(connection, f"EXAMINE {quote(folder)}")


def reset_folders(lab, user, counts, timeout):
    """Outside the measurement: every folder of `counts` cut back to its count (see
    cut_to_recorded); for a personality's runs, the recording's folder sizes."""
    host, port = lab["imap"]
    connection = Connection(host, port, f"{user}@{host}:{port} (reset)", timeout)
    plain(connection, f"LOGIN {quote(user)} {quote(lab['password'])}")
    for folder, count in counts.items():
        tag = connection.next_tag()
        connection.send(f"{tag} EXAMINE {quote(folder)}\r\n".encode())
        if connection.until_tagged(tag)[0] == "OK":
            cut_to_recorded(connection, folder, count)
    plain(connection, "LOGOUT")
    connection.close()


def submit(lab, user, size, timeout):
    """The SMTP half of a send, which the client made and the IMAP transcript
    does not hold: one message of `size` bytes to the user itself, over the
    lab's implicit-TLS submission port with AUTH (Dovecot delivers it over LMTP)."""
    import smtplib
    import ssl

    context = ssl.create_default_context(cafile=lab["ca"])
    host, port = lab["submissions"]
    with smtplib.SMTP_SSL(host, port, context=context, timeout=timeout) as smtp:
        smtp.login(user, lab["password"])
        address = f"{user}@bench.test"
        smtp.sendmail(address, [address], message_of_size(max(size, 200), 0))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixture")
    parser.add_argument("--lab-dir", required=True)
    parser.add_argument("--action", help="one action's window (default: the whole recording)")
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--first-user", type=int, default=1)
    parser.add_argument("--idle-bound", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    if not 1 <= args.users <= 1000:
        parser.error("--users takes 1 to 1000")
    recording = Recording(args.fixture)
    piece = recording.slice(args.action)
    lab = lab_of(args.lab_dir)
    results, threads = {}, []

    def one(user):
        try:
            uids = prepare_mailbox(recording, piece, lab, user, args.timeout)
            replayer = Replayer(recording, piece, lab, user, args.idle_bound, args.timeout, uids)
            replayer.setup()
            replayer.run(time.monotonic() + args.timeout)
            results[user] = (replayer.commands, replayer.differing, replayer.differences)
        except (ReplayError, OSError) as error:
            results[user] = (0, 0, [f"error: {error}"])

    started = time.monotonic()
    for n in range(args.first_user, args.first_user + args.users):
        thread = threading.Thread(target=one, args=(f"user{n}",))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(args.timeout + 30)
    failed = 0
    for user, (commands, differing, notes) in sorted(results.items()):
        print(f"{user}: {commands} commands replayed, {differing} answered otherwise than recorded")
        for note in notes:
            print(f"  {note}")
        failed += any(n.startswith("error:") for n in notes)
    print(f"{len(results)} users, {len(piece.connections)} connections each, "
          f"{time.monotonic() - started:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
