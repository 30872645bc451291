#!/usr/bin/env bash
# 5,000 users end to end on this machine (issue 16, point 3).
#
# Starts a lab of its own (private directory and ports, loopback only; one Dovecot
# imap process per 100 connections), fills every mailbox with `peakhour init`
# (mmb-medium's starting state), runs mmb-medium for every user at a speed the lab
# sustains, with the reconciliation of deliveries after the drain, and tears the
# lab down. It prints:
#
#   * init rate: messages/s, from init's own summary line (and its wall and CPU time);
#   * logon rate: users logged on per second over the ramp-up, from record.json's
#     intervals (the time the last user was logged on), and logon errors;
#   * steady p95: the weighted p95 score and each action's p95 (summary.json);
#   * reconciliation time: the run's `reconcile_ms` counter (record.json), the
#     copies it searched for, and the lost ones;
#   * generator RSS per user: (VmRSS in the steady phase - VmRSS at launch) / users;
#   * CPU per action: the generator's CPU time (user + system, /proc/PID/stat) over
#     the steady phase (its first 2 s and last 1 s skipped) / the actions in it;
#   * the machine's load average at each step: other work on the machine slows
#     everything here, so read the figures with it.
#
#   scripts/bench-5000.sh [--users 5000] [--speed 4] [--ramp-up 120] [--secs 120]
#                         [--drain 30] [--port-base 29000] [--dir DIR] [--keep-lab]
#                         [--init-limit 3600]
#
# Needs root (the lab) and target/release/peakhour (cargo build --release -p
# peakhour; PEAKHOUR=... for another binary). Every step is bounded: init by
# --init-limit seconds, the run by its phases plus 15 minutes (the reconciliation
# stops at 10); a step past its bound is stopped with SIGTERM. The lab is torn down
# (--purge) at the end unless --keep-lab, also on failure or Ctrl-C. Disk: the
# mailboxes of 5,000 mmb-medium users take about 6.5 GB while the lab is up.
set -euo pipefail
cd "$(dirname "$0")/.."

users=5000
speed=4
ramp_up=120
secs=120
drain=30
port_base=29000
dir=""
keep_lab=0
init_limit=3600
peakhour=${PEAKHOUR:-target/release/peakhour}

while [ $# -gt 0 ]; do
  case "$1" in
    --users) users=$2; shift 2 ;;
    --speed) speed=$2; shift 2 ;;
    --ramp-up) ramp_up=$2; shift 2 ;;
    --secs) secs=$2; shift 2 ;;
    --drain) drain=$2; shift 2 ;;
    --port-base) port_base=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --keep-lab) keep_lab=1; shift ;;
    --init-limit) init_limit=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-5000: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root: the lab runs as root"
[ -x "$peakhour" ] || die "$peakhour is missing: cargo build --release -p peakhour"

if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/peakhour-5000.XXXXXX)
  # mktemp makes 0700, which the lab refuses: the servers' users must reach it.
  chmod 755 "$dir"
fi
lab_dir=$dir/lab
run_dir=$dir/run
watchdog=""
running=""

cleanup() {
  stop_watchdog
  if [ -n "$running" ] && kill -0 "$running" 2>/dev/null; then
    kill -TERM "$running" 2>/dev/null || true
    wait "$running" 2>/dev/null || true
  fi
  if [ "$keep_lab" -eq 0 ]; then
    say "tearing the lab down"
    "$peakhour" lab down --lab-dir "$lab_dir" --purge >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

load_avg() { cut -d' ' -f1-3 /proc/loadavg; }
proc_cpu_ns() {
  local ticks
  ticks=$(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null) || return 1
  echo $(( ticks * 1000000000 / $(getconf CLK_TCK) ))
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
now_ns() { date +%s%N; }

# Starts "$@" in the background as $running, with a watchdog that sends SIGTERM
# after $1 seconds.
start_bounded() {
  local limit=$1; shift
  "$@" &
  running=$!
  ( sleep "$limit" & echo $! > "$dir/watchdog-sleep.pid"; wait $!; kill -TERM "$running" 2>/dev/null ) &
  watchdog=$!
}
# Ends the watchdog, then its sleep (both started by this script, by pid).
stop_watchdog() {
  [ -n "$watchdog" ] || return 0
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  if [ -f "$dir/watchdog-sleep.pid" ]; then
    kill "$(cat "$dir/watchdog-sleep.pid")" 2>/dev/null || true
    rm -f "$dir/watchdog-sleep.pid"
  fi
  watchdog=""
}
# Waits for $running and its watchdog; its exit status goes to $bounded_rc (not
# in a subshell: only this shell can wait for its children).
finish_bounded() {
  bounded_rc=0
  wait "$running" || bounded_rc=$?
  stop_watchdog
  running=""
}

say "machine: $(nproc) cores, load average $(load_avg) (other work shares this machine)"
say "lab in $lab_dir: $users users, ports from $port_base, 100 connections per imap process"
"$peakhour" lab up --lab-dir "$lab_dir" --users "$users" --port-base "$port_base" \
  --imap-client-limit 100 >"$dir/lab-up.log" 2>&1 || { cat "$dir/lab-up.log" >&2; die "lab up failed"; }

say "init: mmb-medium's starting state into $users mailboxes (bounded by ${init_limit} s); load $(load_avg)"
init_load=$(load_avg)
init_t0=$(now_ns)
start_bounded "$init_limit" "$peakhour" init --profile mmb-medium --lab-dir "$lab_dir" --users "$users" \
  >"$dir/init.log" 2>&1
init_pid=$running
init_cpu=0
while kill -0 "$init_pid" 2>/dev/null; do
  init_cpu=$(proc_cpu_ns "$init_pid" || echo "$init_cpu")
  sleep 1
done
finish_bounded; init_rc=$bounded_rc
init_secs=$(( ($(now_ns) - init_t0) / 1000000 ))
[ "$init_rc" -eq 0 ] || { tail -5 "$dir/init.log" >&2; die "init failed or was stopped (exit $init_rc)"; }
init_line=$(grep -h 'init done' "$dir/init.log" | tail -1)
say "$init_line"

run_limit=$(( ramp_up + secs + drain + 900 ))
say "run: mmb-medium, $users users, speed $speed, ${ramp_up} s ramp-up, ${secs} s steady, ${drain} s drain; load $(load_avg)"
run_load_start=$(load_avg)
start_bounded "$run_limit" "$peakhour" run --profile mmb-medium --target lab --lab-dir "$lab_dir" \
  --users "$users" --speed "$speed" --ramp-up "${ramp_up}s" --duration "${secs}s" --drain "${drain}s" \
  --interval 5s --out "$run_dir" >"$dir/run.log" 2>"$dir/run.err"
run_pid=$running
sleep 1
rss0=$(rss_kb "$run_pid")
# The steady phase starts ramp_up after the run's clock (right after the
# preflight): skip its first 2 s and its last 1 s.
sleep $(( ramp_up + 1 ))
cpu0=$(proc_cpu_ns "$run_pid" || echo 0); t0=$(now_ns)
sleep $(( secs / 2 ))
rss1=$(rss_kb "$run_pid")
run_load_steady=$(load_avg)
sleep $(( secs - secs / 2 - 3 ))
cpu1=$(proc_cpu_ns "$run_pid" || echo 0); t1=$(now_ns)
finish_bounded; run_rc=$bounded_rc
run_load_end=$(load_avg)
[ -f "$run_dir/summary.json" ] || { tail -5 "$dir/run.err" >&2; die "the run wrote no results (exit $run_rc)"; }

python3 - "$run_dir" "$users" "$speed" "$init_line" "$init_secs" "$init_cpu" "$init_load" \
  "$rss0" "$rss1" "$cpu0" "$cpu1" "$t0" "$t1" "$run_rc" \
  "$run_load_start" "$run_load_steady" "$run_load_end" <<'EOF'
import json, re, sys
(run_dir, users, speed, init_line, init_ms, init_cpu_ns, init_load,
 rss0, rss1, cpu0, cpu1, t0, t1, run_rc, load_start, load_steady, load_end) = sys.argv[1:18]
users = int(users)
s = json.load(open(f"{run_dir}/summary.json"))
r = json.load(open(f"{run_dir}/record.json"))

m = re.search(r"added \(([\d.]+) MB\) in ([\d.]+) s = (\d+) messages/s", init_line)
added = re.search(r"(\d+) added", init_line)
print(f"init:           {m.group(3) if m else '?'} messages/s ({added.group(1) if added else '?'} messages, "
      f"{m.group(1) if m else '?'} MB, {int(init_ms)/1000:.0f} s wall, {int(init_cpu_ns)/1e9:.1f} s peakhour CPU; "
      f"load {init_load} at its start)")

# Logon: the first interval whose end finds every user logged on.
full = next((i for i in r["intervals"] if i["users_logged_on"] >= users), None)
logon_errors = sum(sum(i["actions"].get("logon", {}).get("errors", {}).values()) for i in r["intervals"])
ramp = r["meta"]["phases"]["logon_ms"] / 1000
if full:
    at = (full["start_us"] + full["length_us"]) / 1e6
    print(f"logon:          {users} users logged on by {at:.0f} s (5 s intervals) = {users/at:.1f} users/s "
          f"(ramp-up {ramp:.0f} s asks for {users/ramp:.1f}/s); {logon_errors} logon errors")
else:
    most = max(i["users_logged_on"] for i in r["intervals"])
    print(f"logon:          only {most} of {users} users were ever logged on at once; {logon_errors} logon errors")

steady = s["steady"]["length_s"]
actions = sum(a.get("count", 0) for a in s["actions"].values())
errors = sum(a.get("errors", 0) for a in s["actions"].values())
per_action = ", ".join(f"{k} {a.get('p95_ms')}" for k, a in sorted(s["actions"].items()))
print(f"steady:         {actions/steady:.1f} actions/s over {steady:.0f} s (speed {speed}), {errors} errors; "
      f"weighted p95 {s['score'].get('weighted_p95_ms')} ms; p95 ms: {per_action}; verdict {s['verdict']}")

reconcile_ms = sum(i["counters"].get("reconcile_ms", 0) for i in r["intervals"])
d = r["delivery"]
lost = len(d["lost"]) + d.get("lost_not_listed", 0)
print(f"reconciliation: {reconcile_ms/1000:.1f} s; {d['submitted_recipients']} recipients submitted, "
      f"{d['delivered_recipients']} seen, {lost} lost, mail queue at end {s['delivery'].get('mail_queue_at_end')}")

rss0, rss1 = int(rss0), int(rss1)
print(f"generator RSS:  {rss0/1024:.1f} MiB at launch, {rss1/1024:.1f} MiB in the steady phase = "
      f"{(rss1-rss0)/users:.1f} KiB per user")
window = (int(t1) - int(t0)) / 1e9
cpu = (int(cpu1) - int(cpu0)) / 1e9
window_actions = actions / steady * window
print(f"generator CPU:  {cpu:.2f} s over {window:.0f} s of steady state ({cpu/window:.1%} of a core) = "
      f"{cpu/window_actions*1e6:.0f} µs per action")
print(f"load average:   {load_start} at the run's start, {load_steady} mid-steady, {load_end} at its end; "
      f"run exit {run_rc}; client_bound {s['client_bound']} {s.get('client_bound_reasons', [])}")
EOF
say "logs and the run in $dir"
