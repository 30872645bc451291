#!/usr/bin/env bash
# The main job on a fresh Debian machine: install, build, bring the lab up
# (Postfix + Dovecot on loopback, 200 users), fill the mailboxes to the MMB
# Medium starting state, and run the MMB Medium profile for two minutes of
# steady state with the simulated day compressed 60 times. It ends with the
# summary and the path of the results.
#
#   ./scripts/demo.sh
#
# Leaves the lab running in .peakhour/lab; stop it with
#   target/release/peakhour lab down
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh --release
peakhour=target/release/peakhour
say() { printf '==> %s\n' "$*"; }

say "starting the lab"
$peakhour lab up --users 200
say "one message through SMTP -> Postfix -> LMTP -> Dovecot -> IMAP and POP3"
$peakhour lab check --starttls
say "filling 200 mailboxes to LoadSim's Medium starting state (idempotent)"
$peakhour init --profile mmb-medium --target lab
say "running mmb-medium: 200 users, 8-hour day at speed 60, 120 s measured"
status=0
$peakhour run --profile mmb-medium --target lab --users 200 --speed 60 --duration 120s || status=$?
if [ "$status" -eq 1 ]; then
  say "the run finished, and its QoS verdict failed (see above)"
elif [ "$status" -ne 0 ]; then
  exit "$status"
fi
