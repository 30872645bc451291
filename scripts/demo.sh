#!/usr/bin/env bash
# The main job on a fresh Debian machine: install, build, bring the lab up
# (Postfix + Dovecot on loopback, 200 users) and push a message through it
# with peakhour's own clients.
#
#   ./scripts/demo.sh
#
# Leaves the lab running in .peakhour/lab; stop it with
#   target/release/peakhour lab down
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh --release
peakhour=target/release/peakhour

printf '==> %s\n' "starting the lab"
$peakhour lab up --users 200
printf '==> %s\n' "one message through SMTP -> Postfix -> LMTP -> Dovecot -> IMAP and POP3"
$peakhour lab check --starttls
printf '==> %s\n' "lab status"
$peakhour lab status
