#!/usr/bin/env bash
# Checks the dependency rules of docs/architecture.md ("Rules the edge check
# enforces") on the crates' normal edges, as `cargo tree` resolves them from
# the committed Cargo.lock (offline, locked; dev- and build-dependencies do not
# count: a test may use anything):
#   * the engine depends on neither peakhour-lab nor peakhour-monitor;
#   * the report does not depend on peakhour-monitor;
#   * the lab does not depend on peakhour-engine;
#   * the pure crates (analysis, workload) depend on no peakhour crate that does
#     I/O (every workspace crate not listed in PURE below) and not on tokio.
# An edge counts whether it is direct or comes through another crate. Prints
# every broken rule with the path `cargo tree -i` gives and exits 1 if there is
# one.
set -euo pipefail
cd "$(dirname "$0")/.."

# Workspace crates that do no I/O. A new crate counts as I/O until it is added
# here, so a pure crate may only lean on crates that were judged pure.
PURE="peakhour-analysis peakhour-workload peakhour-report peakhour-deploy"

tree() { cargo tree --offline --locked --edges normal "$@"; }

# Every package in PKG's normal dependency graph (PKG itself included), one name a line.
deps_of() { tree --package "$1" --prefix none --format '{p}' | awk '{print $1}' | sort -u; }

members=$(cargo metadata --offline --locked --no-deps --format-version 1 |
  python3 -c 'import json, sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')

broken=0
# must_not PKG WHY DEP...: PKG must reach none of the DEPs.
must_not() {
  local pkg=$1 why=$2 dep reached
  shift 2
  reached=$(deps_of "$pkg")
  local clean=1
  for dep in "$@"; do
    if grep -qx -- "$dep" <<<"$reached"; then
      clean=0
      broken=$((broken + 1))
      printf 'broken: %s depends on %s (%s); the path, from `cargo tree -e normal -p %s -i %s`:\n' \
        "$pkg" "$dep" "$why" "$pkg" "$dep"
      tree --package "$pkg" --invert "$dep" | sed 's/^/    /'
    fi
  done
  if [ "$clean" = 1 ]; then
    printf 'ok: %s depends on none of: %s\n' "$pkg" "$*"
  fi
}

io_crates=()
for member in $members; do
  case " $PURE " in *" $member "*) ;; *) io_crates+=("$member") ;; esac
done

must_not peakhour-engine "the application layer, not the engine, uses the lab and the monitor" \
  peakhour-lab peakhour-monitor
must_not peakhour-report "the report is built from files; the monitor's statistics live in peakhour-analysis" \
  peakhour-monitor
must_not peakhour-lab "the lab knows no load" peakhour-engine
for pure in peakhour-analysis peakhour-workload; do
  must_not "$pure" "a pure layer does no I/O and has no async runtime" "${io_crates[@]}" tokio
done

if [ "$broken" -gt 0 ]; then
  echo "edge rules: $broken broken" >&2
  exit 1
fi
echo "edge rules: ok"
