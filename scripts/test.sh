#!/usr/bin/env bash
# Sets up and runs every check: formatting, lints, docs, unit and transcript
# tests, live tests against the real lab, an independent check of the lab with
# Python's own mail clients, and the fuzz targets. This is what CI runs.
#
#   ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*"; }

./scripts/setup.sh

say "cargo fmt --check"
cargo fmt --all -- --check
say "size rules (a thin binary, no function over 120 lines)"
./scripts/check-size.sh
say "edge rules (cargo tree: which crate may depend on which)"
./scripts/check-edges.sh
say "cargo clippy -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings
say "cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps --quiet

say "cargo test (unit, transcript and live lab tests)"
cargo test --locked --workspace

say "independent check: Python's smtplib/imaplib/poplib against a fresh lab"
lab_dir=$(mktemp -d /tmp/peakhour-ci-lab.XXXXXX)
# mktemp makes 0700, which the lab refuses (its servers could not reach it) and does not change.
chmod 755 "$lab_dir"
cleanup() {
  target/debug/peakhour lab down --lab-dir "$lab_dir" --purge >/dev/null 2>&1 || true
  rm -rf "$lab_dir"
}
trap cleanup EXIT
# A port base of its own, so a developer's lab on the default ports is left alone.
target/debug/peakhour lab up --lab-dir "$lab_dir" --users 200 --port-base 30000
target/debug/peakhour lab status --lab-dir "$lab_dir" >/dev/null
python3 tests/lab_smoke.py --peakhour target/debug/peakhour --lab-dir "$lab_dir"
target/debug/peakhour lab check --lab-dir "$lab_dir" --starttls >/dev/null

say "independent check: HdrHistogram's own HistogramLogProcessor (Java) reads a run's latency.hlog"
run_dir="$lab_dir/hlog-run"
run_status=0
target/debug/peakhour run --lab-dir "$lab_dir" --profile mmb-medium --users 20 --speed 120 \
  --ramp-up 2s --duration 10s --drain 5s --out "$run_dir" >"$lab_dir/hlog-run.log" 2>&1 || run_status=$?
if [ "$run_status" -gt 1 ]; then  # 1 is a failed QoS verdict: the mailboxes are empty, that is fine here
  cat "$lab_dir/hlog-run.log" >&2
  echo "error: the short run for the hlog check failed (exit $run_status)" >&2
  exit 1
fi
hdr_version=2.2.2
# Maven prints colour codes even in batch mode: show its output only when it fails.
if ! mvn -q -B dependency:get -Dartifact="org.hdrhistogram:HdrHistogram:$hdr_version" >"$lab_dir/mvn.log" 2>&1; then
  cat "$lab_dir/mvn.log" >&2
  echo "error: could not fetch HdrHistogram $hdr_version from Maven Central" >&2
  exit 1
fi
# Maven's local repository is under Java's user.home, which comes from the passwd entry, not $HOME.
maven_home=$(getent passwd "$(id -u)" | cut -d: -f6)
hdr_jar="$maven_home/.m2/repository/org/hdrhistogram/HdrHistogram/$hdr_version/HdrHistogram-$hdr_version.jar"
java -cp "$hdr_jar" org.HdrHistogram.HistogramLogProcessor -i "$run_dir/latency.hlog" \
  -outputValueUnitRatio 1000 -csv >"$lab_dir/hlog.csv"
python3 tests/hlog_check.py "$lab_dir/hlog.csv" "$run_dir/intervals.csv"
pids=$(target/debug/peakhour lab status --lab-dir "$lab_dir" --json | python3 -c \
  'import json,sys; print(" ".join(str(p["pid"]) for s in json.load(sys.stdin)["servers"] for p in s["processes"]))')
target/debug/peakhour lab down --lab-dir "$lab_dir"
for pid in $pids; do
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
  if [ -n "$state" ] && [ "$state" != Z ]; then
    echo "error: lab process $pid is still running after lab down" >&2
    exit 1
  fi
done
for port in 30025 30465 30143 30993 30110 30024; do
  if python3 -c "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1',$port)) else 1)"; then :; else
    echo "error: port $port still answers after lab down" >&2
    exit 1
  fi
done
say "lab down left no process and no port behind"

if cargo +nightly --version >/dev/null 2>&1; then
  say "fuzz targets: build with sanitizers, then 10 s per target seeded from the transcripts"
  ./scripts/fuzz.sh --run 10
else
  # cargo-fuzz needs nightly; without it, at least prove the targets compile.
  say "fuzz targets: no nightly toolchain, building them with stable only"
  cargo build --manifest-path fuzz/Cargo.toml --locked --quiet
fi

echo "all checks passed"
