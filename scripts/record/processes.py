"""Where Dovecot's CPU in a measured window went, process by process: a
diagnostic for cpu_per_action.py (`--by-process FILE`), for a window whose
cost differs between a personality and its recorded client although the
commands do not (issue 28 item 3; docs/clients.md).

At every reading of Dovecot's CPU the meter also takes a snapshot of every
live process below Dovecot's master: its name (/proc/PID/comm: imap,
imap-login, auth, stats, log, anvil, ...), its run time and its number of
time slices
(/proc/PID/schedstat: ns on the CPU, and how many times it was scheduled,
which counts its wake-ups). A window's rows are the differences between its
two edges' snapshots; a process born in the window counts from zero, one that
ended in it is listed as lost (its CPU is in the total, not in a row).

    python3 scripts/record/processes.py FILE [FILE...]   # the breakdown per window, mean of the runs
"""

import json
import os
import sys
from collections import defaultdict


def _schedstat(pid):
    with open(f"/proc/{pid}/schedstat", encoding="ascii") as schedstat:
        run_ns, _, slices = schedstat.read().split()
    return int(run_ns), int(slices)


def descendants(master):
    """The master's pid, then every live process below it (a process that ends
    meanwhile may still be named)."""
    children = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    text = stat.read()
                children[int(text[text.rindex(")") + 2:].split(" ")[1])].append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    out, stack = [master], list(children.get(master, []))
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack += children.get(pid, [])
    return out


def snapshot(master):
    """{pid: [name, run ns, slices]} of the master and every process below it."""
    out = {}
    for pid in descendants(master):
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as comm:
                name = comm.read().strip()
            run_ns, slices = _schedstat(pid)
        except (OSError, ValueError):
            continue  # ended meanwhile
        out[pid] = [name, run_ns, slices]
    return out


def window(name, before, after):
    """One window's record: the processes that ran in it, with their CPU and slices."""
    rows = []
    for pid, (process, run_ns, slices) in after.items():
        start = before.get(pid)
        if start and start[0] != process:
            start = None  # the pid was reused
        spent = run_ns - (start[1] if start else 0)
        woke = slices - (start[2] if start else 0)
        if spent or woke:
            rows.append({"pid": pid, "name": process, "us": spent / 1000, "slices": woke,
                         "born": start is None})
    lost = [pid for pid, (process, *_) in before.items() if pid not in after]
    return {"window": name, "processes": rows, "lost": len(lost)}


def write(path, label, names, snapshots, times):
    """Appends one run's windows (names[i] between snapshots i and i+1, taken at the
    wall-clock `times[i]` and `times[i + 1]`) to `path`, one JSON line each. The
    times let a system-wide profile (`perf record -k realtime`) be cut to a window."""
    with open(path, "a", encoding="utf-8") as out:
        for i, name in enumerate(names):
            record = window(name, snapshots[i], snapshots[i + 1])
            record["run"] = label
            record["from"], record["to"] = times[i], times[i + 1]
            out.write(json.dumps(record) + "\n")


def summary(records):
    """Per (run label, window): the mean over runs of each process name's CPU (ms),
    processes that ran, and slices."""
    groups = defaultdict(list)
    for record in records:
        groups[(record["run"], record["window"])].append(record)
    lines = []
    for (label, name), runs in groups.items():
        lines.append(f"{label} · {name} · {len(runs)} runs")
        per_name = defaultdict(lambda: [0.0, 0, 0, 0])
        for run in runs:
            for row in run["processes"]:
                entry = per_name[row["name"]]
                entry[0] += row["us"] / 1000
                entry[1] += 1
                entry[2] += row["slices"]
                entry[3] += row["born"]
        lines.append(f"  {'process':<12} {'ms':>9} {'ran':>6} {'slices':>8} {'born':>5} {'µs/slice':>9}")
        for process, (ms, ran, slices, born) in sorted(per_name.items(), key=lambda item: -item[1][0]):
            n = len(runs)
            lines.append(f"  {process:<12} {ms / n:9.2f} {ran / n:6.1f} {slices / n:8.1f} {born / n:5.1f} "
                         f"{ms * 1000 / max(slices, 1):9.1f}")
        lines.append(f"  lost (ended in the window): {sum(r['lost'] for r in runs) / len(runs):.1f}")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__.split("\n\n")[-1].strip())
    records = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as saved:
            records += [json.loads(line) for line in saved if line.strip()]
    print(summary(records))


if __name__ == "__main__":
    main()
