#!/usr/bin/env bash
# Dovecot's CPU per action on one lab: every recorded client replayed, and
# peakhour's own user (or its client personalities) run, then compared
# (issue 28 item 3; docs/clients.md, "Server cost per action").
#
#   scripts/record/cpu-per-action.sh [--personalities peakhour,thunderbird,...]
#                                    [--lab-dir DIR] [--port-base N] [--keep-lab]
#                                    [-- more options for cpu_per_action.py]
#
# Starts a lab (40 users, `peakhour init` with mmb-medium, about 104 messages
# in every Inbox and every folder subscribed: the recordings' mailbox, by
# scripts/record/fill_inbox.py), runs scripts/record/cpu_per_action.py with
# target/debug/peakhour and each personality, prints the tables and writes
# them with the JSON to --out (default /tmp/peakhour-cpu-per-action), and
# stops the lab (`lab down --purge`) unless --keep-lab. Needs root (Dovecot's
# processes go into a cpuacct group of their own while they are measured).
# About 20 minutes for the replays, 3 minutes per personality and action.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
personalities=peakhour
lab=/work/peakhour-cpu-lab
port_base=27000
out=/tmp/peakhour-cpu-per-action
keep_lab=0
while [ $# -gt 0 ]; do
  case "$1" in
    --personalities) personalities=$2; shift ;;
    --lab-dir) lab=$2; shift ;;
    --port-base) port_base=$2; shift ;;
    --out) out=$2; shift ;;
    --keep-lab) keep_lab=1 ;;
    --) shift; break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
peakhour=$(pwd)/target/debug/peakhour
[ -x "$peakhour" ] || { echo "error: $peakhour is missing: nice -n 10 cargo build -p peakhour" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "error: run as root (the lab and the cpuacct group need it)" >&2; exit 1; }

stop_lab() {
  if [ "$keep_lab" = 0 ]; then
    "$peakhour" lab down --lab-dir "$lab" --purge >/dev/null 2>&1 || true
  fi
}
trap stop_lab EXIT
mkdir -p "$lab" "$out" && chmod 0755 "$lab"
"$peakhour" lab up --lab-dir "$lab" --port-base "$port_base" --users 40 >/dev/null
"$peakhour" init --lab-dir "$lab" --users 40 >/dev/null
PEAKHOUR_RECORD_PASSWORD=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["password"])' "$lab/state.json")
export PEAKHOUR_RECORD_PASSWORD
# The recordings' Inbox (about 104 messages); only users without it yet.
python3 - "$lab" "$port_base" <<'PY'
import imaplib, json, os, subprocess, sys
lab, base = sys.argv[1], int(sys.argv[2])
password = os.environ["PEAKHOUR_RECORD_PASSWORD"]
short = []
for n in range(1, 41):
    imap = imaplib.IMAP4("127.0.0.1", base + 143)
    imap.login(f"user{n}", password)
    if int(imap.select("INBOX", readonly=True)[1][0]) < 100:
        short.append(f"user{n}")
    imap.logout()
if short:
    subprocess.run([sys.executable, "scripts/record/fill_inbox.py", "--port", str(base + 143)] + short, check=True)
PY
args=(--lab-dir "$lab" --peakhour "$peakhour" --json "$out/results.json")
IFS=, read -r -a names <<<"$personalities"
for name in "${names[@]}"; do args+=(--personality "$name"); done
PEAKHOUR=$peakhour python3 scripts/record/cpu_per_action.py "${args[@]}" "$@" | tee "$out/tables.md"
echo "==> $out/tables.md, $out/results.json"
