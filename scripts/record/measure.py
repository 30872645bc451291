"""Measures a recorded client (issue 28 item 3, the measuring half).

Reads tests/fixtures/clients/<client>/{transcript.txt,manifest.json} and cuts
the transcript at the manifest's action times: each action owns what the
client sent from its start to the next action's start (background traffic in
that window included, as the server sees it). For each action it gives the
multiset of commands (`UID FETCH`, `IDLE`, ...), the multiset of FETCH items
(`BODY.PEEK[HEADER.FIELDS]`, `FLAGS`, ...), connections opened, logins and
bytes each way; for the idle action also the rates per hour. The same
function will measure peakhour's own transcript for the similarity score.

    python3 scripts/record/measure.py tests/fixtures/clients/thunderbird [--markdown]
    python3 scripts/record/measure.py REFERENCE --compare OTHER   # weighted Jaccard per action
"""

import argparse
import collections
import json
import os
import re
import sys

LINE = re.compile(r"^(\d+\.\d+) (c\d+) (?:(open|close)|(C|S): (.*))$")
LITERAL = re.compile(r"\{(\d+)\+?\}<\d+ bytes>")


def wire_bytes(text):
    """Bytes on the wire for one logical line: the elided literals count their full size."""
    size = len(text.encode()) + 2
    for match in LITERAL.finditer(text):
        size += int(match.group(1)) - len(f"<{match.group(1)} bytes>") + 2
    return size


def parse(path):
    events = []
    with open(path, encoding="utf-8") as transcript:
        for number, line in enumerate(transcript, start=1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            match = LINE.match(line)
            if not match:
                raise SystemExit(f"error: {path}:{number}: not a transcript line: {line[:80]!r}")
            t, conn, marker, side, text = match.groups()
            events.append((float(t), conn, marker or side, text or ""))
    return events


def command_of(text):
    """('UID FETCH', [items]) for a tagged client command; None for continuations (DONE, SASL)."""
    words = text.split(" ")
    if len(words) < 2 or words[0] in ("DONE", "<credentials>") or text.startswith("+"):
        return None
    name = words[1].upper()
    rest = words[2:]
    if name == "UID" and rest:
        name, rest = f"UID {rest[0].upper()}", rest[1:]
    items = []
    if name.endswith("FETCH") and len(rest) >= 2:
        items = fetch_items(" ".join(rest[1:]))
    return name, items


def fetch_items(spec):
    """Top-level FETCH items, section arguments dropped: BODY.PEEK[HEADER.FIELDS (A B)] -> BODY.PEEK[HEADER.FIELDS]."""
    spec = spec.strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    items, depth, current = [], 0, ""
    for char in spec:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == " " and depth == 0:
            if current:
                items.append(current)
            current = ""
        else:
            current += char
    if current:
        items.append(current)
    normal = []
    for item in items:
        item = item.upper()
        item = re.sub(r" \(.*?\)", "", item)  # the header list of HEADER.FIELDS
        item = re.sub(r"<\d+\.\d+>", "<PARTIAL>", item)
        normal.append(item)
    return normal


def measure(fixture):
    manifest = json.load(open(os.path.join(fixture, "manifest.json"), encoding="utf-8"))
    events = parse(os.path.join(fixture, "transcript.txt"))
    actions = sorted(manifest["actions"], key=lambda a: a["start"])
    result = []
    for i, action in enumerate(actions):
        start = action["start"]
        # The last action owns what follows it until its end (plus the LOGOUTs in flight).
        stop = actions[i + 1]["start"] if i + 1 < len(actions) else action["end"] + 5
        window = [e for e in events if start <= e[0] < stop]
        commands, items = collections.Counter(), collections.Counter()
        opened = logins = sent = received = 0
        for _, _, kind, text in window:
            if kind == "open":
                opened += 1
            elif kind == "C":
                sent += wire_bytes(text)
                parsed = command_of(text)
                if parsed:
                    commands[parsed[0]] += 1
                    items.update(parsed[1])
            elif kind == "S":
                received += wire_bytes(text)
                words = text.split(" ")
                if len(words) > 2 and words[1] == "OK" and text.endswith("Logged in"):
                    logins += 1
        seconds = max(stop - start, 1e-9)
        entry = {"action": action["action"], "seconds": round(seconds, 3), "commands": dict(commands.most_common()),
                 "fetch_items": dict(items.most_common()), "connections_opened": opened, "logins": logins,
                 "bytes_from_client": sent, "bytes_from_server": received}
        if action["action"] == "idle":
            # Bursts: client activity separated by more than 5 s of silence
            # from the client; their spacing is the poll (or IDLE renewal) interval.
            times = sorted(t for t, _, kind, _ in window if kind == "C")
            bursts = [t for k, t in enumerate(times) if k == 0 or t - times[k - 1] > 5]
            gaps = sorted(b - a for a, b in zip(bursts, bursts[1:]))
            entry["bursts"] = len(bursts)
            entry["median_burst_interval_s"] = round(gaps[len(gaps) // 2], 1) if gaps else None
            entry["uses_idle"] = commands.get("IDLE", 0) > 0
            hours = seconds / 3600
            entry["per_hour"] = {"connections": round(opened / hours, 1), "logins": round(logins / hours, 1),
                                 "commands": round(sum(commands.values()) / hours, 1),
                                 "bytes_from_client": round(sent / hours), "bytes_from_server": round(received / hours)}
        result.append(entry)
    return {"client": manifest["client"], "packages": manifest["packages"], "actions": result}


def weighted_jaccard(a, b):
    """Sum of the smaller counts over the sum of the larger ones: 1.0 for equal multisets."""
    keys = set(a) | set(b)
    larger = sum(max(a.get(k, 0), b.get(k, 0)) for k in keys)
    return 1.0 if larger == 0 else sum(min(a.get(k, 0), b.get(k, 0)) for k in keys) / larger


def compare(reference, candidate):
    """Per action: the similarity of commands and of FETCH items, and what differs (reference - candidate)."""
    theirs = {a["action"]: a for a in candidate["actions"]}
    rows = []
    for action in reference["actions"]:
        other = theirs.get(action["action"])
        if other is None:
            rows.append({"action": action["action"], "missing": True})
            continue
        rows.append({
            "action": action["action"],
            "commands": round(weighted_jaccard(action["commands"], other["commands"]), 3),
            "fetch_items": round(weighted_jaccard(action["fetch_items"], other["fetch_items"]), 3),
            "differences": {k: action["commands"].get(k, 0) - other["commands"].get(k, 0)
                            for k in set(action["commands"]) | set(other["commands"])
                            if action["commands"].get(k, 0) != other["commands"].get(k, 0)},
        })
    return rows


def markdown(measured):
    rows = [f"| {measured['client']} action | commands | fetch items | conns | logins | bytes C→S / S→C |",
            "|---|---|---|---|---|---|"]
    for a in measured["actions"]:
        commands = ", ".join(f"{k}×{v}" for k, v in a["commands"].items()) or "none"
        items = ", ".join(f"{k}×{v}" for k, v in a["fetch_items"].items()) or "-"
        rows.append(f"| {a['action']} ({a['seconds']:.0f} s) | {commands} | {items} | {a['connections_opened']} | "
                    f"{a['logins']} | {a['bytes_from_client']} / {a['bytes_from_server']} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fixture")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--compare", metavar="FIXTURE", help="score another recording (or peakhour's) against this one")
    args = parser.parse_args()
    measured = measure(args.fixture)
    if args.compare:
        json.dump(compare(measured, measure(args.compare)), sys.stdout, indent=1)
        print()
    elif args.markdown:
        print(markdown(measured))
    else:
        json.dump(measured, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
