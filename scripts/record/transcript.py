"""Turns Dovecot's rawlog of one recorded client into a committed fixture.

Input: the post-login rawlog of the client's user (rawlog/<user>/*.in|.out,
one pair per connection), the shared pre-login rawlog (login/rawlogs/, one
pair per connection, before LOGIN/AUTHENTICATE), and the driver's
actions.json. Output, in tests/fixtures/clients/<client>/:

  transcript.txt  one line per IMAP command or response, both directions and
                  every connection merged in time order:
                      <seconds since the first connection> c<N> C|S: <line>
                  Literals are elided in place, with their exact size:
                  `{336}<336 bytes>`. `c<N> open` and `c<N> close` mark each
                  connection's first and last byte seen. Passwords and SASL
                  payloads are replaced by <password> / <credentials>.
  manifest.json   the client and its exact Debian version, when and how it was
                  recorded, its configuration, the actions with their times
                  (same clock as the transcript), the idle time, and per
                  connection its bytes each way.

It refuses to write a fixture that still holds the password, or its base64
in any of the SASL forms, anywhere.
"""

import argparse
import base64
import datetime
import glob
import json
import os
import re
import shutil
import subprocess

LITERAL = re.compile(rb"\{(\d+)\+?\}\r?\n$")


def read_rawlog(path):
    """Returns [(timestamp, bytes)] with the timestamps rawlog put at each line start."""
    chunks = []
    with open(path, "rb") as raw:
        for line in raw.read().splitlines(keepends=True):
            stamp, _, rest = line.partition(b" ")
            try:
                chunks.append((float(stamp), rest))
            except ValueError:
                # A line continued after a partial write carries no stamp.
                if chunks:
                    chunks[-1] = (chunks[-1][0], chunks[-1][1] + line)
    return chunks


def logical_lines(chunks):
    """Joins literal data into the line that announced it: [(t, text, wire_bytes)]."""
    out = []
    pending = None  # [t, text, bytes, literal_left]
    for stamp, data in chunks:
        if pending and pending[3] > 0:
            take = data[: pending[3]]
            pending[3] -= len(take)
            pending[2] += len(take)
            data = data[len(take):]
            if pending[3] > 0 or not data:
                continue
        if pending is None:
            pending = [stamp, b"", 0, 0]
        pending[1] += data
        pending[2] += len(data)
        match = LITERAL.search(pending[1])
        if match:
            size = int(match.group(1))
            pending[1] = pending[1][: match.end(1) + (2 if b"+}" in match.group(0) else 1)] + f"<{size} bytes>".encode()
            pending[3] = size
            continue
        if pending[1].endswith(b"\n"):
            out.append((pending[0], pending[1].rstrip(b"\r\n").decode("utf-8", "replace"), pending[2]))
            pending = None
    if pending:
        out.append((pending[0], pending[1].rstrip(b"\r\n").decode("utf-8", "replace"), pending[2]))
    return out


class Redactor:
    """Replaces LOGIN passwords and SASL payloads on the client side of a connection."""

    def __init__(self):
        self.in_sasl = False

    def client(self, text):
        words = text.split(" ")
        if self.in_sasl:
            self.in_sasl = False
            return "<credentials>"
        if len(words) >= 2 and words[1].upper() == "LOGIN" and len(words) >= 4:
            return " ".join(words[:3] + ["<password>"])
        if len(words) >= 3 and words[1].upper() == "AUTHENTICATE":
            if len(words) >= 4:
                return " ".join(words[:3] + ["<credentials>"])
            self.in_sasl = True
        return text

    def server(self, text):
        if not text.startswith("+"):
            self.in_sasl = False
        return text


def user_of_prelogin(path):
    """The user a pre-login connection logged in as (LOGIN or SASL PLAIN), or None."""
    lines = [text for _, text, _ in logical_lines(read_rawlog(path))]
    for i, text in enumerate(lines):
        words = text.split(" ")
        if len(words) >= 3 and words[1].upper() == "LOGIN":
            return words[2].strip('"').split("@")[0]
        if len(words) >= 3 and words[1].upper() == "AUTHENTICATE" and words[2].upper() == "PLAIN":
            payload = words[3] if len(words) > 3 else (lines[i + 1] if i + 1 < len(lines) else "")
            try:
                parts = base64.b64decode(payload).split(b"\0")
                return parts[1].decode().split("@")[0]
            except (ValueError, IndexError, UnicodeDecodeError):
                return None
    return None


def logged_in(text):
    """A server line that answers LOGIN or AUTHENTICATE: `TAG OK [CAPABILITY ...] Logged in`."""
    words = text.split(" ")
    return len(words) > 2 and words[1] == "OK" and text.endswith("Logged in")


def login_tag(lines):
    """The tag of the connection's last LOGIN or AUTHENTICATE: the post-login part answers it."""
    tag = None
    for _, text, _ in lines:
        words = text.split(" ")
        if len(words) >= 2 and words[1].upper() in ("LOGIN", "AUTHENTICATE"):
            tag = words[0]
    return tag


def connections(rawlog_dir, prelogin_dir, user, since):
    """Pairs each post-login connection of `user` with its pre-login part."""
    pre = []
    for path in sorted(glob.glob(os.path.join(prelogin_dir, "*.in"))):
        if user_of_prelogin(path) == user:
            chunks_in = read_rawlog(path)
            if chunks_in and chunks_in[-1][0] >= since:
                pre.append({"in": path, "out": path[:-3] + ".out", "last": chunks_in[-1][0],
                            "tag": login_tag(logical_lines(chunks_in))})
    result = []
    for path in sorted(glob.glob(os.path.join(rawlog_dir, "*.in"))):
        out_path = path[:-3] + ".out"
        out_lines = logical_lines(read_rawlog(out_path))
        if not out_lines or out_lines[0][0] < since:
            continue
        first_stamp = out_lines[0][0]
        # The login's tagged OK: first, or after an untagged CAPABILITY.
        tag = next((text.split(" ")[0] for _, text, _ in out_lines[:3] if not text.startswith("*")), None)
        match = None
        for candidate in pre:
            if candidate.get("used") or candidate["tag"] != tag:
                continue
            if -1.0 <= first_stamp - candidate["last"] <= 10.0:
                if match is None or abs(first_stamp - candidate["last"]) < abs(first_stamp - match["last"]):
                    match = candidate
        if match:
            match["used"] = True
        result.append({"pre": match, "in": path, "out": out_path})
    for candidate in pre:  # connections that never logged in: pre-login only
        if not candidate.get("used"):
            result.append({"pre": candidate, "in": None, "out": None})
    return result


def events_of(connection):
    """[(t, 'C'|'S', text, bytes)] of one connection, pre-login first."""
    events = []
    for part in ([connection["pre"]["in"], connection["pre"]["out"]] if connection["pre"] else []) + [
            connection["in"], connection["out"]]:
        if part is None or not os.path.exists(part):
            continue
        side = "C" if part.endswith(".in") else "S"
        events += [(t, side, text, size) for t, text, size in logical_lines(read_rawlog(part))]
    # A command and its response can carry the same microsecond: client first.
    events.sort(key=lambda e: (e[0], 0 if e[1] == "C" else 1))
    redactor = Redactor()
    return [(t, side, redactor.client(text) if side == "C" else redactor.server(text), size)
            for t, side, text, size in events]


def secret_forms(user, password):
    forms = {password, base64.b64encode(password.encode()).decode()}
    for identity in (user, f"{user}@bench.test"):
        for authz in ("", identity):
            forms.add(base64.b64encode(f"{authz}\0{identity}\0{password}".encode()).decode())
    return forms


def package_version(package):
    result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return result.stdout.strip() or None


PACKAGES = {"neomutt": ["neomutt"], "mbsync": ["isync"], "mbsync-synced": ["isync"],
            "roundcube": ["roundcube-core", "php8.2-cli", "chromium"],
            "thunderbird": ["thunderbird"], "thunderbird-warm": ["thunderbird"]}
CONFIGS = {"neomutt": ["neomuttrc"], "mbsync": ["mbsyncrc"], "mbsync-synced": ["mbsyncrc"],
           "roundcube": ["config/config.inc.php"],
           "thunderbird": ["profile/user.js"], "thunderbird-warm": ["profile/user.js"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--rawlog", required=True)
    parser.add_argument("--prelogin", required=True)
    parser.add_argument("--work", required=True, help="the driver's directory (actions.json, configuration)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--actions", default="actions.json", help="the actions file in --work")
    parser.add_argument("--note", action="append", default=[])
    parser.add_argument("--exclude-window", nargs=2, type=float, metavar=("START", "END"),
                        help="drop connections opened in this Unix time window that logged in with LOGIN "
                             "(the recording's own helper, e.g. subscribing folders; the clients use AUTHENTICATE)")
    args = parser.parse_args()
    password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
    actions = json.load(open(os.path.join(args.work, args.actions), encoding="utf-8"))
    since = actions[0]["start"] - 2
    conns = connections(args.rawlog, args.prelogin, args.user, since)
    per_connection = [events_of(c) for c in conns]
    per_connection = [e for e in per_connection if e]
    if args.exclude_window:
        start, end = args.exclude_window
        kept = [e for e in per_connection if not (start <= e[0][0] <= end and any(
            side == "C" and len(text.split(" ")) > 1 and text.split(" ")[1].upper() == "LOGIN"
            for _, side, text, _ in e))]
        if len(kept) != len(per_connection):
            args.note.append(f"{len(per_connection) - len(kept)} connection(s) of the recording's own helper "
                             "(LOGIN, then SUBSCRIBE of every folder) were left out")
        per_connection = kept
    # Connections opened after the last action belong to whatever runs next
    # (Thunderbird's warm start); the last action's LOGOUTs are on older ones.
    last = actions[-1]["end"] + 1
    per_connection = [e for e in per_connection if e[0][0] <= last]
    per_connection.sort(key=lambda e: e[0][0])
    origin = per_connection[0][0][0] if per_connection else actions[0]["start"]
    merged, summary = [], []
    for number, events in enumerate(per_connection, start=1):
        name = f"c{number}"
        merged.append((events[0][0], -1, f"{name} open"))
        merged += [(t, 0, f"{name} {side}: {text}") for t, side, text, _ in events]
        merged.append((events[-1][0], 1, f"{name} close"))
        summary.append({
            "connection": name,
            "opened": round(events[0][0] - origin, 6), "last_seen": round(events[-1][0] - origin, 6),
            "logged_in": any(side == "S" and logged_in(text) for _, side, text, _ in events),
            "bytes_from_client": sum(size for _, side, _, size in events if side == "C"),
            "bytes_from_server": sum(size for _, side, _, size in events if side == "S"),
        })
    merged.sort(key=lambda e: (e[0], e[1]))
    os.makedirs(args.out, exist_ok=True)
    lines = [f"# peakhour client recording: {args.client}. Format: seconds since the first connection, "
             "connection, C: client / S: server; literals elided as {N}<N bytes>; see docs/clients.md."]
    lines += [f"{t - origin:.6f} {text}" for t, _, text in merged]
    transcript = "\n".join(lines) + "\n"
    configs = {}
    for relative in CONFIGS[args.client]:
        path = os.path.join(args.work, relative)
        if os.path.exists(path):
            configs[os.path.basename(relative)] = open(path, encoding="utf-8").read().replace(password, "<password>")
    manifest = {
        "client": args.client,
        "packages": {p: package_version(p) for p in PACKAGES[args.client]},
        "debian": open("/etc/debian_version", encoding="utf-8").read().strip(),
        "recorded_at": datetime.datetime.fromtimestamp(origin, datetime.timezone.utc).isoformat(timespec="seconds"),
        "origin_unix": round(origin, 6),
        "user": args.user,
        "server": "Dovecot " + (package_version("dovecot-imapd") or "?") + " (peakhour lab, sdbox)",
        "mailbox": "mmb-medium starting state (44 folders, all subscribed) plus 100 messages in INBOX "
                   "(scripts/record/fill_inbox.py): about 104 in INBOX, 10 of them unread",
        "notes": args.note,
        "configuration": configs,
        "actions": [dict(a, start=round(a["start"] - origin, 6), end=round(a["end"] - origin, 6),
                         start_unix=a["start"]) for a in actions],
        "idle_seconds": next((round(a["end"] - a["start"]) for a in actions if a["action"] == "idle"), None),
        "connections": summary,
    }
    manifest_text = json.dumps(manifest, indent=1) + "\n"
    for form in secret_forms(args.user, password):
        if form in transcript or form in manifest_text:
            raise SystemExit(f"error: {args.client}: the password (or a SASL form of it) is still in the fixture")
    with open(os.path.join(args.out, "transcript.txt"), "w", encoding="utf-8") as out:
        out.write(transcript)
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as out:
        out.write(manifest_text)
    print(f"{args.client}: {len(per_connection)} connections, {len(lines) - 1} lines -> {args.out}")


if __name__ == "__main__":
    main()
