"""The machine's speed while Dovecot's CPU is measured (cpu_per_action.py --speed-probe).

On a shared virtual machine the CPU time of the same work can change with the
load of the host, and a repeat of the replay and one of the personality taken
minutes apart would then differ by the host, not by what they sent. This probe
runs a fixed piece of work of the kind Dovecot does (system calls through a
pipe, stat calls, hashing) every --every seconds in a process of its own, and
writes the CPU time it took, with the wall-clock time, one line per sample. A
window's speed is its samples' mean cost; dividing a window's CPU by it (times
a reference) takes the host's part off. When the probe stays flat and a
window's cost still jumps (on 26 November the first repeat of Thunderbird's
replayed read window on a fresh lab cost 5.5 ms a user, the next ones 1.6-2.9
ms, with the probe within 10%), the jump is the server's state, not the host.

    python3 scripts/record/speed.py --out FILE [--every 0.25] [--max-seconds 7200]
"""

import argparse
import hashlib
import os
import statistics
import time

BLOCK = b"x" * 512
HASHED = b"y" * 32768


def work():
    """The fixed piece of work; its CPU time in ns."""
    read_end, write_end = os.pipe()
    try:
        started = time.process_time_ns()
        for _ in range(100):
            os.write(write_end, BLOCK)
            os.read(read_end, len(BLOCK))
        for _ in range(100):
            os.stat("/proc/self")
        for _ in range(20):
            hashlib.sha256(HASHED).digest()
        return time.process_time_ns() - started
    finally:
        os.close(read_end)
        os.close(write_end)


def samples(path):
    """[(wall-clock time, ns)] from a probe's file."""
    out = []
    with open(path, encoding="ascii") as saved:
        for line in saved:
            fields = line.split()
            if len(fields) == 2:
                out.append((float(fields[0]), int(fields[1])))
    return out


def cost_within(points, start, stop):
    """The mean cost of the samples taken in [start, stop]; the nearest sample's
    when none was (a window shorter than the probe's period)."""
    inside = [ns for t, ns in points if start <= t <= stop]
    if inside:
        return statistics.mean(inside)
    if not points:
        return None
    middle = (start + stop) / 2
    return min(points, key=lambda point: abs(point[0] - middle))[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--every", type=float, default=0.25)
    parser.add_argument("--max-seconds", type=float, default=7200.0, help="stops by itself after this long")
    args = parser.parse_args()
    deadline = time.monotonic() + args.max_seconds
    with open(args.out, "a", encoding="ascii") as out:
        while time.monotonic() < deadline:
            out.write(f"{time.time():.3f} {work()}\n")
            out.flush()
            time.sleep(args.every)


if __name__ == "__main__":
    main()
