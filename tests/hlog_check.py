#!/usr/bin/env python3
"""Checks what HdrHistogram's own HistogramLogProcessor read from a run's
latency.hlog against the run's intervals.csv: the same number of actions in
all, and the same slowest one. The input is the processor's -csv percentile
distribution of the whole log (values in ms with -outputValueUnitRatio 1000):
"Value","Percentile","TotalCount","1/(1-Percentile)", its last row at
percentile 1 holding the maximum and the total count.

    python3 tests/hlog_check.py HLOG_PROCESSOR.csv intervals.csv
"""
import csv
import sys


def main(processor_csv: str, intervals_csv: str) -> int:
    rows = [r for r in csv.reader(open(processor_csv)) if r and not r[0].startswith("#")]
    header, data = rows[0], rows[1:]
    if header[:3] != ["Value", "Percentile", "TotalCount"] or not data:
        print(f"error: unexpected HistogramLogProcessor output: {rows[:2]}", file=sys.stderr)
        return 1
    last = dict(zip(header, data[-1]))
    java_count = int(float(last["TotalCount"]))
    java_max_ms = float(last["Value"])

    actions = [r for r in csv.DictReader(open(intervals_csv)) if r["action"]]
    ours_count = sum(int(r["count"]) for r in actions)
    ours_max_ms = max(float(r["max_ms"]) for r in actions if r["max_ms"])

    if java_count != ours_count or ours_count == 0:
        print(f"error: HistogramLogProcessor counted {java_count} actions, "
              f"intervals.csv {ours_count}", file=sys.stderr)
        return 1
    # Both come from the same histograms, but intervals.csv rounds to 3 significant
    # digits (15047 us is 15.0 ms there): up to half a unit of the third digit, 0.5%
    # for a value starting with 1, plus HdrHistogram's own 0.1% bucket width.
    if abs(java_max_ms - ours_max_ms) > 0.006 * ours_max_ms + 0.01:
        print(f"error: HistogramLogProcessor's max is {java_max_ms} ms, "
              f"intervals.csv's {ours_max_ms} ms", file=sys.stderr)
        return 1
    print(f"ok: HistogramLogProcessor read {java_count} actions, "
          f"max {java_max_ms:.1f} ms, as intervals.csv says")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
