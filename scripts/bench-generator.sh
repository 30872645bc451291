#!/usr/bin/env bash
# What the load generator costs, beside the server it loads (issue 16).
#
# Starts a lab of its own (Dovecot and Postfix on loopback, private directory and
# ports), fills the Inboxes, puts Dovecot's processes in a cpuacct cgroup, then runs
# peakhour's read-heavy profile (benches/read-heavy.toml: Check Inbox and Read
# Message only) at about RATE actions/s for SECS seconds of steady state, REPEAT
# times. For each run it prints:
#
#   * the generator's CPU time (user + system, from /proc/PID/stat) over the steady
#     phase, and per IMAP command sent: every command on the wire, IDLE and DONE
#     included, counted by the run itself (summary.json's per-command counts);
#   * Dovecot's CPU time over the same window (the cgroup's cpuacct.usage), and
#     the generator's as a share of it.
#
# With IMAPTEST=/path/to/imaptest (Dovecot's imaptest, built by you: this repo does
# not ship it), it then runs imaptest against the same lab, the same users and for
# the same time, with logout=0 (sessions stay logged in, as peakhour's users do),
# and measures it the same way. The machine's load average is printed with every
# run: other work on the machine makes CPU time per command noisy, so compare
# figures from one quiet session only.
#
#   scripts/bench-generator.sh [--users 200] [--rate 1000] [--secs 60] [--repeat 3]
#                              [--port-base 27000] [--dir DIR] [--keep-lab]
#                              [--profile PROFILE --actions-per-day N] [--no-imaptest]
#                              [--imaptest-args 'fetch=100 append=0 ...']
#
# --profile runs another profile instead (a file or a built-in name, e.g.
# mmb-medium, whose actions per user per day are 161.28: give them with
# --actions-per-day so that --rate holds). --no-imaptest skips imaptest even
# with IMAPTEST set. For a profile that sends mail it also prints the SMTP
# commands on the wire and the µs per command counting them, the actions
# skipped (due, but with nothing to act on: an empty Inbox) and how far the
# deliveries kept up (docs/PERFORMANCE.md, "Third round"). --imaptest-args adds
# imaptest settings after the script's own, e.g. a mix of commands close to
# read-heavy's instead of its default mix: 'select=100 list=0 status=0 fetch=100
# fetch2=100 search=0 copy=0 store=0 delete=0 expunge=0 append=0' (imaptest's
# states, in % per session loop: FETCH of envelopes and FETCH of bodies only;
# with select=0 it never selects and sends LIST and STATUS alone).
# docs/PERFORMANCE.md, "Fifth round".
#
# Needs root (the lab and the cgroup), target/release/peakhour (cargo build
# --release -p peakhour; PEAKHOUR=... to use another binary) and cgroup v1's
# cpuacct controller at /sys/fs/cgroup/cpuacct. Loopback only; every run is
# bounded by --secs plus a fixed margin.
set -euo pipefail
cd "$(dirname "$0")/.."

users=200
rate=1000
secs=60
repeat=3
port_base=27000
dir=""
keep_lab=0
ramp_up=10
imaptest_warmup=20
peakhour=${PEAKHOUR:-target/release/peakhour}
imaptest=${IMAPTEST:-}
imaptest_args=""
profile=benches/read-heavy.toml
# Actions per user per simulated 8-hour day in the profile (12 + 81.3).
actions_per_day=93.3
day_secs=28800

while [ $# -gt 0 ]; do
  case "$1" in
    --users) users=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --secs) secs=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --port-base) port_base=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --keep-lab) keep_lab=1; shift ;;
    --profile) profile=$2; shift 2 ;;
    --actions-per-day) actions_per_day=$2; shift 2 ;;
    --no-imaptest) imaptest=""; shift ;;
    --imaptest-args) imaptest_args=$2; shift 2 ;;
    -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-generator: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root: the lab runs as root and the cgroup is created under /sys/fs/cgroup"
[ -x "$peakhour" ] || die "$peakhour is missing: cargo build --release -p peakhour"
cpuacct_root=/sys/fs/cgroup/cpuacct
[ -w "$cpuacct_root" ] || die "cgroup v1 cpuacct is not writable at $cpuacct_root"
if [ -n "$imaptest" ] && [ ! -x "$imaptest" ]; then die "IMAPTEST=$imaptest is not executable"; fi

if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/peakhour-bench.XXXXXX)
  # mktemp makes 0700, which the lab refuses: the servers' users must reach it.
  chmod 755 "$dir"
fi
lab_dir=$dir/lab
out_dir=$dir/runs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out_dir"
cgroup=$cpuacct_root/peakhour-bench-$$

cleanup() {
  if [ -d "$cgroup" ]; then
    # A cgroup is removed once empty: hand its processes back to the root group.
    while read -r pid; do echo "$pid" > "$cpuacct_root/cgroup.procs" 2>/dev/null || true; done < "$cgroup/cgroup.procs"
    rmdir "$cgroup" 2>/dev/null || true
  fi
  if [ "$keep_lab" -eq 0 ]; then
    "$peakhour" lab down --lab-dir "$lab_dir" --purge >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# CPU time of a process in ns (user + system, from /proc/PID/stat).
proc_cpu_ns() {
  local ticks
  ticks=$(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null) || return 1
  echo $(( ticks * 1000000000 / $(getconf CLK_TCK) ))
}
cgroup_cpu_ns() { cat "$cgroup/cpuacct.usage"; }
# Context switches (voluntary + involuntary) of every thread of a process, and of
# every process in the cgroup: a build that wakes more often per command costs
# both sides CPU time that its own instructions do not show.
switches() {
  cat "$@" 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'
}
proc_switches() { switches /proc/"$1"/task/*/status; }
cgroup_switches() {
  local pids
  pids=$(sed 's|.*|/proc/&/status|' "$cgroup/cgroup.procs")
  # shellcheck disable=SC2086
  switches $pids
}
now_ns() { date +%s%N; }
load1() { cut -d' ' -f1 /proc/loadavg; }

say "lab in $lab_dir: $users users, ports from $port_base"
"$peakhour" lab up --lab-dir "$lab_dir" --users "$users" --port-base "$port_base" >/dev/null
status=$("$peakhour" lab status --lab-dir "$lab_dir" --json)
field() { python3 -c "import json,sys; s=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$status" "$1"; }
imap_port=$(field "s['endpoints']['imap'].rsplit(':',1)[1]")
domain=$(field "s['domain']")
dovecot_master=$(field "[x['master_pid'] for x in s['servers'] if x['name']=='dovecot'][0]")
say "filling the Inboxes ($profile)"
"$peakhour" init --profile "$profile" --lab-dir "$lab_dir" --users "$users" >/dev/null

# Every Dovecot process goes in the group: the master (whose later children, one
# imap process per session, are born in it) and the children it already has.
mkdir "$cgroup"
dovecot_tree() {
  local pid=$1
  echo "$pid"
  for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do dovecot_tree "$child"; done
}
for pid in $(dovecot_tree "$dovecot_master"); do echo "$pid" > "$cgroup/cgroup.procs"; done

speed=$(python3 -c "print(round($rate * $day_secs / ($users * $actions_per_day), 1))")
printf '%-10s %5s %8s %9s %9s %10s %9s %9s %7s\n' tool run "load1" "actions/s" "cmds/s" "gen CPU s" "µs/cmd" "Dovecot s" "share" >&2

peakhour_run() {
  local n=$1 run_dir=$out_dir/peakhour-$1 log=$out_dir/peakhour-$1.log
  "$peakhour" run --profile "$profile" --target lab --lab-dir "$lab_dir" --users "$users" \
    --speed "$speed" --ramp-up "${ramp_up}s" --duration "${secs}s" --drain 1s \
    --interval 5s --out "$run_dir" >"$log" 2>&1 &
  local pid=$! load_before
  load_before=$(load1)
  # The steady phase starts ramp_up after the run's clock (a few ms after the
  # launch, after the lab's preflight); skip its first 2 s and its last 1 s.
  sleep $((ramp_up + 2))
  local g0 d0 t0 g1 d1 t1
  g0=$(proc_cpu_ns $pid); d0=$(cgroup_cpu_ns); t0=$(now_ns)
  local gs0 ds0 gs1 ds1
  gs0=$(proc_switches $pid); ds0=$(cgroup_switches)
  sleep $((secs - 3))
  g1=$(proc_cpu_ns $pid); d1=$(cgroup_cpu_ns); t1=$(now_ns)
  gs1=$(proc_switches $pid); ds1=$(cgroup_switches)
  wait $pid || true
  python3 - "$run_dir/summary.json" "$n" "$load_before" "$g0" "$g1" "$d0" "$d1" "$t0" "$t1" \
    "$gs0" "$gs1" "$ds0" "$ds1" <<'EOF'
import json, sys
path, n, load = sys.argv[1], sys.argv[2], sys.argv[3]
g0, g1, d0, d1, t0, t1 = map(int, sys.argv[4:10])
gs0, gs1, ds0, ds1 = map(int, sys.argv[10:14])
s = json.load(open(path))
steady = s["steady"]["length_s"]
commands = sum(c["count"] for name, c in s["commands"].items() if name.startswith("imap."))
actions = sum(a.get("count", 0) for a in s["actions"].values())
window = (t1 - t0) / 1e9
gen_rate = (g1 - g0) / 1e9 / window          # CPU seconds per second
dov_rate = (d1 - d0) / 1e9 / window
cmd_rate = commands / steady
us_per_cmd = gen_rate / cmd_rate * 1e6 if cmd_rate else float("nan")
# Scaled to the whole steady phase so that the seconds read like the issue's table.
print(f"{'peakhour':<10} {n:>5} {load:>8} {actions/steady:9.0f} {cmd_rate:9.0f} "
      f"{gen_rate*steady:10.2f} {us_per_cmd:9.1f} {dov_rate*steady:9.2f} {gen_rate/dov_rate:7.1%}")
per = {k: v["count"] for k, v in s["commands"].items()}
print(f"    commands in the steady phase: {per}", file=sys.stderr)
client = s.get("client", {})
print(f"    the run's own CPU meter: {client.get('cpu_percent_mean')} % of a core", file=sys.stderr)
cmds_in_window = cmd_rate * window
# Dovecot's count covers the processes alive at both ends of the window (a
# session that ended inside it takes its switches with it): a floor, not a total.
print(f"    context switches per IMAP command: generator {(gs1 - gs0) / cmds_in_window:.3f}, "
      f"Dovecot {(ds1 - ds0) / cmds_in_window:.3f}", file=sys.stderr)
# A profile that sends mail (mmb-medium) also speaks SMTP. Two ways to count its
# commands (docs/PERFORMANCE.md, "Third round"): IMAP only, as above, and IMAP
# plus every SMTP command on the wire: EHLO, STARTTLS, AUTH, MAIL, one RCPT per
# recipient, DATA and QUIT (the summary records a transaction as one entry).
counters = s.get("counters", {})
smtp_recorded = sum(c["count"] for name, c in s["commands"].items() if name.startswith("smtp."))
if smtp_recorded:
    per = lambda name: s["commands"].get(name, {}).get("count", 0)
    transactions = per("smtp.TRANSACTION")
    rcpt = counters.get("recipients_submitted", 0) + counters.get("recipients_refused", 0)
    smtp = per("smtp.EHLO") + per("smtp.STARTTLS") + per("smtp.AUTH") + 2 * transactions + rcpt + per("smtp.QUIT")
    smtp_rate = smtp / steady
    both = gen_rate / (cmd_rate + smtp_rate) * 1e6
    print(f"    SMTP: {smtp_rate:.0f} commands/s on the wire ({transactions / steady:.1f} sends/s, "
          f"{rcpt / max(transactions, 1):.1f} RCPT each); µs per command counting them: {both:.1f}; "
          f"µs per action: {gen_rate / (actions / steady) * 1e6:.0f}", file=sys.stderr)
# Actions due but skipped (a move, delete or read on an empty Inbox) are not in
# actions/s: their sum is the rate the schedule asked for.
skipped = sum(v for k, v in counters.items() if k.startswith("skipped_"))
if skipped:
    print(f"    skipped: {skipped / steady:.0f} actions/s ({ {k: v for k, v in counters.items() if k.startswith('skipped_')} }); "
          f"done + skipped: {(actions + skipped) / steady:.0f} actions/s", file=sys.stderr)
d = s.get("delivery") or {}
if d.get("submitted_recipients"):
    mta = d.get("mta") or {}
    print(f"    delivery: {counters.get('recipients_submitted', 0) / steady:.0f} recipients/s submitted, "
          f"{counters.get('recipients_delivered', 0) / steady:.0f}/s seen delivered in the steady phase; "
          f"latency p50 {d.get('p50_ms')} ms p95 {d.get('p95_ms')} ms (MTA's own p50 {mta.get('p50_ms')} ms)",
          file=sys.stderr)
EOF
  grep -h '^monitor:' "$log" | sed 's/^/    /' >&2 || true
}

imaptest_mbox() {
  # imaptest APPENDs from an mbox; a few messages of the profile's sizes will do.
  local mbox=$dir/imaptest.mbox i
  : > "$mbox"
  for i in 1 2 3 4 5 6 7 8; do
    printf 'From bench@%s Thu Jan  1 00:00:00 2026\nFrom: bench@%s\nTo: user1@%s\nSubject: imaptest %d\nMessage-ID: <imaptest.%d@%s>\nDate: Thu, 01 Jan 2026 00:00:00 +0000\n\n' \
      "$domain" "$domain" "$domain" "$i" "$i" "$domain" >> "$mbox"
    head -c $((i * 1024)) /dev/zero | tr '\0' 'x' | fold -w 76 >> "$mbox"
    printf '\n\n' >> "$mbox"
  done
  echo "$mbox"
}

imaptest_run() {
  local n=$1 log=$out_dir/imaptest-$1.log mbox=$2 password
  password=$(field "s['password']")
  # $imaptest_args is split into words on purpose: each setting is one argument.
  LD_LIBRARY_PATH=/usr/lib/dovecot "$imaptest" host=127.0.0.1 port="$imap_port" \
    user="user%d@$domain" users=1-"$users" pass="$password" clients="$users" \
    secs="$((imaptest_warmup + secs + 1))" logout=0 mbox="$mbox" no_tracking \
    $imaptest_args >"$log" 2>&1 &
  local pid=$! load_before
  load_before=$(load1)
  # Its clients connect at once but log in over several seconds (one imap process
  # is forked per session): measure once they all work, as peakhour's steady phase.
  sleep "$imaptest_warmup"
  local g0 d0 t0 g1 d1 t1
  g0=$(proc_cpu_ns $pid); d0=$(cgroup_cpu_ns); t0=$(now_ns)
  sleep "$secs"
  g1=$(proc_cpu_ns $pid); d1=$(cgroup_cpu_ns); t1=$(now_ns)
  wait $pid || true
  python3 - "$log" "$n" "$load_before" "$g0" "$g1" "$d0" "$d1" "$t0" "$t1" "$secs" "$imaptest_warmup" <<'EOF'
import re, sys
log, n, load = sys.argv[1], sys.argv[2], sys.argv[3]
g0, g1, d0, d1, t0, t1, secs, warmup = map(int, sys.argv[4:12])
window = (t1 - t0) / 1e9
lines = open(log, errors="replace").read().splitlines()
# imaptest prints a header of command names, then one line of counts per second,
# and a "Totals:" line at the end; the per-second lines in our window are summed.
header = next((l.split() for l in lines if l.lstrip().startswith("Logi")), None)
rows = [l for l in lines if re.match(r"^\s*\d+(\s+\d+)+\s+\d+/\s*\d+", l)]
if header is None or not rows:
    print(f"imaptest   {n:>5}: could not read its output, see {log}")
    sys.exit()
per_second = []
for row in rows:
    counts = [int(x) for x in row.split()[: len(header)]]
    per_second.append(sum(counts))
# The lines of the seconds after the warm-up: our sampling window.
window_rows = per_second[warmup : warmup + round(window)]
commands = sum(window_rows)
cmd_rate = commands / len(window_rows)
gen_rate = (g1 - g0) / 1e9 / window
dov_rate = (d1 - d0) / 1e9 / window
print(f"{'imaptest':<10} {n:>5} {load:>8} {'-':>9} {cmd_rate:9.0f} {gen_rate*secs:10.2f} "
      f"{gen_rate/cmd_rate*1e6:9.1f} {dov_rate*secs:9.2f} {gen_rate/dov_rate:7.1%}")
EOF
}

say "peakhour: $profile, $users users, ~$rate actions/s (speed $speed), ${secs} s steady, $repeat runs"
for n in $(seq 1 "$repeat"); do peakhour_run "$n"; done
if [ -n "$imaptest" ]; then
  mbox=$(imaptest_mbox)
  say "imaptest: ${imaptest_args:-default mix}, logout=0, $users clients over the same users, ${secs} s, $repeat runs"
  for n in $(seq 1 "$repeat"); do imaptest_run "$n" "$mbox"; done
fi
say "results and logs in $out_dir"
