#!/usr/bin/env bash
# Soak benchmark (issue 11; not a test): one long run at many users on a lab of
# its own, sampling peakhour's resident memory (VmRSS) to see whether it grows
# once the run has warmed up. Prints the RSS at the end of the warm-up, at the
# end and its peak, the growth after warm-up in percent, and the run's verdict
# (p95 of each action against its QoS limit, errors, client-bound or not), so
# that the figures are read only when the lab held the load within QoS.
#
#   scripts/soak.sh [--users 2000] [--speed 4] [--secs 3600] [--warmup 600]
#                   [--logon-rate 10] [--port-base 28000] [--dir DIR] [--keep-lab]
#
# --secs is the whole run (ramp-up + steady; the ramp-up logs --logon-rate
# users on per second, at least 60 s); --warmup counts from the start of the
# steady phase. On a busy machine keep the logon rate low: at 25 logons/s with
# a load average of 30, Dovecot's logins timed out and were retried for 20
# minutes (docs/PERFORMANCE.md).
# RSS is sampled every 10 s from /proc/PID/status into DIR/rss.csv.
#
# Bounded: the run ends by itself after --secs plus a 60 s drain and its
# reconciliation (at most 10 min); if it has not ended 15 minutes after that,
# the script kills it (by its PID). Loopback only. Needs root (the lab) and
# target/release/peakhour (cargo build --release -p peakhour; PEAKHOUR=... for
# another binary).
set -euo pipefail
cd "$(dirname "$0")/.."

users=2000
speed=4
secs=3600
warmup=600
logon_rate=10
port_base=28000
dir=""
keep_lab=0
peakhour=${PEAKHOUR:-target/release/peakhour}

while [ $# -gt 0 ]; do
  case "$1" in
    --users) users=$2; shift 2 ;;
    --speed) speed=$2; shift 2 ;;
    --secs) secs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --logon-rate) logon_rate=$2; shift 2 ;;
    --port-base) port_base=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --keep-lab) keep_lab=1; shift ;;
    *) echo "usage: $0 [--users N] [--speed S] [--secs S] [--warmup S] [--logon-rate N] [--port-base N] [--dir DIR] [--keep-lab]" >&2; exit 2 ;;
  esac
done

[ -x "$peakhour" ] || { echo "error: $peakhour not found (cargo build --release -p peakhour)" >&2; exit 1; }
if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/peakhour-soak.XXXXXX)
fi
mkdir -p "$dir"
chmod 755 "$dir" # the lab's servers must reach it (mktemp makes it 0700)
lab_dir="$dir/lab"
run_dir="$dir/run"
rss_csv="$dir/rss.csv"
ramp_up=$(( users / logon_rate > 60 ? users / logon_rate : 60 ))
steady=$(( secs - ramp_up ))
[ "$steady" -gt "$warmup" ] || { echo "error: --secs leaves no steady phase after the warm-up" >&2; exit 2; }

cleanup() {
  if [ -n "${run_pid:-}" ] && kill -0 "$run_pid" 2>/dev/null; then kill -9 "$run_pid" || true; fi
  if [ "$keep_lab" = 0 ]; then "$peakhour" lab down --lab-dir "$lab_dir" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

echo "soak: $users users of mmb-medium at speed $speed, ramp-up ${ramp_up}s, steady ${steady}s, warm-up ${warmup}s; files in $dir"
"$peakhour" lab up --lab-dir "$lab_dir" --users "$users" --port-base "$port_base" --imap-client-limit 100 >/dev/null

"$peakhour" run --profile mmb-medium --lab-dir "$lab_dir" --users "$users" --speed "$speed" \
  --ramp-up "${ramp_up}s" --duration "${steady}s" --drain 60s --interval 10s --out "$run_dir" \
  >"$dir/run.out" 2>"$dir/run.err" &
run_pid=$!
started=$(date +%s)
hard_stop=$(( started + secs + 60 + 600 + 900 ))
echo "elapsed_s,rss_kb,rss_anon_kb,load1" >"$rss_csv"
while kill -0 "$run_pid" 2>/dev/null; do
  now=$(date +%s)
  if [ "$now" -gt "$hard_stop" ]; then
    echo "error: the run did not end by itself; killing it" >&2
    kill -9 "$run_pid" || true
    break
  fi
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$run_pid/status" 2>/dev/null || true)
  # Anonymous memory apart: VmRSS also counts the binary's own pages, which
  # come and go with the page cache (docs/PERFORMANCE.md, "What grew").
  anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$run_pid/status" 2>/dev/null || true)
  load1=$(cut -d' ' -f1 /proc/loadavg)
  [ -n "$rss" ] && echo "$(( now - started )),$rss,$anon,$load1" >>"$rss_csv"
  sleep 10
done
set +e
wait "$run_pid"
code=$?
set -e
echo "run exit code: $code (1 = the verdict failed)"

python3 - "$rss_csv" "$run_dir/summary.json" "$ramp_up" "$warmup" "$steady" <<'PY'
import csv, json, sys
rss_csv, summary_path, ramp_up, warmup, steady = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
rows = [(int(r["elapsed_s"]), int(r["rss_kb"]), float(r["load1"]), int(r["rss_anon_kb"])) for r in csv.DictReader(open(rss_csv))]
warm_at, end_at = ramp_up + warmup, ramp_up + steady
after = [r for r in rows if warm_at <= r[0] <= end_at]
if not after:
    sys.exit("no RSS sample after the warm-up")
warm, last = after[0][1], after[-1][1]
peak = max(r[1] for r in after)
loads = [r[2] for r in rows]
print(f"RSS after warm-up ({after[0][0]} s): {warm / 1024:.1f} MiB; at the end of steady ({after[-1][0]} s): {last / 1024:.1f} MiB; peak after warm-up: {peak / 1024:.1f} MiB")
print(f"RSS growth after warm-up: {100 * (last - warm) / warm:+.2f}% (end), {100 * (peak - warm) / warm:+.2f}% (peak); samples: {len(after)}")
anon_warm, anon_last = after[0][3], after[-1][3]
anon_peak = max(r[3] for r in after)
print(f"anonymous RSS after warm-up: {anon_warm / 1024:.1f} MiB; at the end: {anon_last / 1024:.1f} MiB ({100 * (anon_last - anon_warm) / anon_warm:+.2f}%); peak {100 * (anon_peak - anon_warm) / anon_warm:+.2f}%")
print(f"load1 over the run: min {min(loads):.1f}, mean {sum(loads) / len(loads):.1f}, max {max(loads):.1f}")
try:
    s = json.load(open(summary_path))
except OSError:
    sys.exit("no summary.json: the run did not finish")
print(f"verdict: {s['verdict']}; interrupted: {s['interrupted']}; client-bound: {s['client_bound']} {s['client_bound_reasons']}")
for f in s["qos"]["failures"]:
    print(f"  QoS failure: {f['subject']}: {f['reason']}")
print(f"steady: {s['steady']['length_s']:.0f} s, {s['throughput']['actions_per_second']:.1f} actions/s")
for name, a in sorted(s["actions"].items()):
    print(f"  {name:<14} count {a['count']:>8}  errors {a['errors']:>6}  p95 {a['p95_ms']} ms (limit {a['p95_limit_ms']:.0f})")
d = s["delivery"]
print(f"delivery: {d['submitted_recipients']} submitted, {d['delivered_recipients']} delivered, {d['failed_recipients']} failed, {d['lost']} lost")
PY
