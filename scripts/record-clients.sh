#!/usr/bin/env bash
# Records real mail clients against a lab with Dovecot's rawlog on (issue 28 item 1).
#
#   scripts/record-clients.sh [--idle SECONDS] [--warm-idle SECONDS]
#                             [--clients neomutt,mbsync,mbsync-synced,roundcube,thunderbird]
#                             [--lab-dir DIR] [--port-base N] [--work DIR] [--out DIR] [--keep-lab]
#
# Needs root, a debug build (target/debug/peakhour) and the recording packages
# (scripts/setup.sh --recording). Starts a lab (12 users, mmb-medium mailboxes),
# turns on Dovecot's rawlog (pre-login: `imap-login -R`; post-login:
# `rawlog_dir`), gives every client a user of its own (neomutt user1, mbsync
# user2, roundcube user3, thunderbird user4, mbsync-synced user5), drives the clients through the
# profile's actions at the same time, lets them sit idle for --idle seconds
# (default 3600). Thunderbird then starts again with the same profile
# (thunderbird-warm: a day's usual start, caches filled) and idles --warm-idle
# seconds (default 600); mbsync-synced syncs its Maildir once, unrecorded, then does
# the actions (a store in sync at open_inbox) and idles --warm-idle seconds.
# It writes --out/<client>/ (default tests/fixtures/clients; transcript with
# passwords replaced, manifest.json with the actions' timestamps). Slow by
# design: it is not part of the test suite. Every wait is bounded; everything
# it starts is stopped by PID; the lab is purged unless --keep-lab.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
idle=3600
warm_idle=600
clients=neomutt,mbsync,mbsync-synced,roundcube,thunderbird
lab=/work/peakhour-record-lab
port_base=26000
work=/work/peakhour-record-work
keep_lab=0
out=tests/fixtures/clients
while [ $# -gt 0 ]; do
  case "$1" in
    --idle) idle=$2; shift ;;
    --warm-idle) warm_idle=$2; shift ;;
    --clients) clients=$2; shift ;;
    --lab-dir) lab=$2; shift ;;
    --port-base) port_base=$2; shift ;;
    --work) work=$2; shift ;;
    --out) out=$2; shift ;;
    --keep-lab) keep_lab=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for seconds in "$idle" "$warm_idle"; do
  case "$seconds" in ''|*[!0-9]*) echo "error: --idle and --warm-idle take whole seconds, not $seconds" >&2; exit 2 ;; esac
done

say() { printf '==> %s\n' "$*"; }
peakhour=$repo/target/debug/peakhour
[ -x "$peakhour" ] || { echo "error: $peakhour is missing: nice -n 10 cargo build -p peakhour" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "error: run as root (the lab needs it)" >&2; exit 1; }

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$keep_lab" = 0 ]; then
    "$peakhour" lab down --lab-dir "$lab" --purge >/dev/null 2>&1 || true
    rmdir "$lab" 2>/dev/null || true   # made above, before `up`, so the purge keeps it
  fi
}
trap stop_all EXIT

# ---- the lab, with rawlog -------------------------------------------------
say "lab in $lab (port base $port_base)"
mkdir -p "$lab" && chmod 0755 "$lab"
"$peakhour" lab up --lab-dir "$lab" --port-base "$port_base" --users 12
"$peakhour" init --lab-dir "$lab" --users 12

PEAKHOUR_RECORD_PASSWORD=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["password"])' "$lab/state.json")
export PEAKHOUR_RECORD_PASSWORD
# About 100 messages in each recorded Inbox (mmb-medium leaves a handful), before the rawlog starts.
python3 scripts/record/fill_inbox.py --port $((port_base + 143)) user1 user2 user3 user4 user5

# Dovecot's rawlog: the login process writes the pre-login part of each
# connection (CAPABILITY, LOGIN/AUTHENTICATE) under base_dir/login/rawlogs, the
# imap process the rest under rawlog/<user>. Both prefix every line with its
# Unix time. The clients connect without TLS so that the pre-login part is
# readable (Dovecot does not decrypt TLS into a pre-login rawlog).
conf=$lab/dovecot/dovecot.conf
rawlog=$lab/dovecot/rawlog
prelogin=$lab/dovecot/run/login/rawlogs
mkdir -p "$rawlog" "$prelogin"
for n in $(seq 1 12); do mkdir -p "$rawlog/user$n"; done
chown -R 5000:5000 "$rawlog"
chown dovenull "$prelogin" && chmod 0700 "$prelogin"
cat >> "$conf" <<CONF

# Added by scripts/record-clients.sh: Dovecot's rawlog of every IMAP session.
protocol imap {
  rawlog_dir = $rawlog/%n
}
service imap-login {
  executable = imap-login -R rawlogs
}
CONF
doveadm -c "$conf" reload
sleep 2
mkdir -p "$work"

# ---- the clients, at the same time, each with a user of its own ----------
declare -A user=([neomutt]=user1 [mbsync]=user2 [roundcube]=user3 [thunderbird]=user4 [mbsync-synced]=user5)
IFS=, read -r -a wanted <<<"$clients"
for client in "${wanted[@]}"; do
  [ -n "${user[$client]:-}" ] || { echo "error: unknown client $client" >&2; exit 2; }
  mkdir -p "$work/$client"
  say "$client as ${user[$client]}"
  driver=(python3 "scripts/record/${client%-synced}.py" --lab-config "$lab/state.json" --user "${user[$client]}"
    --work "$work/$client" --to "user9@bench.test")
  if [ "$client" = thunderbird ]; then
    # The first start (account made, every folder downloaded), then a warm one.
    # timeout runs both in a process group of their own and passes a TERM on to it.
    timeout $((idle + warm_idle + 1800)) bash -c '"${@:3}" --idle "$1" && "${@:3}" --idle "$2" --warm' \
      _ "$idle" "$warm_idle" "${driver[@]}" >"$work/$client/driver.log" 2>&1 &
  elif [ "$client" = mbsync-synced ]; then
    # mbsync's usual day: the store in sync before the first action.
    timeout $((warm_idle + 900)) "${driver[@]}" --synced --idle "$warm_idle" >"$work/$client/driver.log" 2>&1 &
  else
    timeout $((idle + 900)) "${driver[@]}" --idle "$idle" >"$work/$client/driver.log" 2>&1 &
  fi
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then echo "warning: ${wanted[$i]} driver failed: $work/${wanted[$i]}/driver.log" >&2; status=1; fi
done
pids=()
sleep 5 # the last LOGOUTs reach the rawlog

# ---- the fixtures -----------------------------------------------------------
for client in "${wanted[@]}"; do
  notes=()
  if [ "$client" = mbsync-synced ]; then
    notes=(--note "the local Maildir was brought in sync by one mbsync -a that ended 10 s before open_inbox; it is left out of the transcript (its connection began before the first action)")
  fi
  python3 scripts/record/transcript.py --client "$client" --user "${user[$client]}" \
    --rawlog "$rawlog/${user[$client]}" --prelogin "$prelogin" --work "$work/$client" \
    --out "$out/$client" "${notes[@]}"
  if [ "$client" = thunderbird ]; then
    python3 scripts/record/transcript.py --client thunderbird-warm --user "${user[$client]}" \
      --rawlog "$rawlog/${user[$client]}" --prelogin "$prelogin" --work "$work/$client" \
      --actions actions-warm.json --out "$out/thunderbird-warm"
  fi
done
say "fixtures in $out/"
exit "$status"
