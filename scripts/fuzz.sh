#!/usr/bin/env bash
# Builds every fuzz target in fuzz/ and, with --run SECONDS, runs each one.
#
#   scripts/fuzz.sh                      build all targets (silent on success)
#   scripts/fuzz.sh --run 60             build, seed, run each target 60 s
#   scripts/fuzz.sh --run 60 pop3_response   the same for one target
#
# Seeds: the server side of the protocol's transcripts
# (crates/protocols/<proto>/tests/transcripts/*.txt, <proto> being the target
# name up to its first "_"), written as raw bytes to fuzz/corpus/<target>/;
# for the targets that read files rather than a protocol, files of the kind
# they read (the built-in profiles, /proc fixtures, run-directory fixtures);
# and every input of fuzz/regressions/<target>/ (committed inputs that once
# crashed the target: each run starts by replaying them).
# Crashes land in fuzz/artifacts/<target>/; libFuzzer's output in
# fuzz/artifacts/<target>.log. Both directories are git-ignored.
# Needs a nightly toolchain (cargo-fuzz builds with sanitizers); installs
# cargo-fuzz if it is missing. Safe to run again: seeds are overwritten in place.
set -euo pipefail

usage() {
    echo "usage: scripts/fuzz.sh [--run SECONDS] [TARGET...]" >&2
    exit 2
}

run_seconds=""
targets=()
while (($#)); do
    case "$1" in
        --run)
            [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage
            run_seconds="$2"
            shift 2
            ;;
        -h | --help) usage ;;
        -*) usage ;;
        *)
            targets+=("$1")
            shift
            ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "error: fuzzing needs a nightly toolchain (cargo-fuzz builds with -Z sanitizer flags)." >&2
    echo "       Install one with: rustup toolchain install nightly" >&2
    exit 1
fi
if ! cargo fuzz --help >/dev/null 2>&1; then
    echo "cargo-fuzz not found; installing it (cargo install cargo-fuzz --locked)" >&2
    cargo install cargo-fuzz --locked --quiet
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# Prints the captured output only when a step fails: quiet on success.
quietly() {
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        echo "error: failed: $*" >&2
        exit 1
    fi
}

if ((${#targets[@]} == 0)); then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

if ((${#targets[@]} == 0)); then
    echo "error: no fuzz targets found in fuzz/Cargo.toml" >&2
    exit 1
fi

# One build for all targets shares the dependency compilation.
if [[ -z "$run_seconds" ]]; then
    quietly cargo +nightly fuzz build
    exit 0
fi
for target in "${targets[@]}"; do
    quietly cargo +nightly fuzz build "$target"
done

# Writes the S:/S| lines of a transcript as raw bytes. The transcript escapes
# (\r \n \t \\ \xNN) are exactly what printf %b understands.
server_bytes() {
    local line
    while IFS= read -r line || [[ -n "$line" ]]; do
        case "$line" in
            "S: "*) printf '%b\r\n' "${line:3}" ;;
            "S:") printf '\r\n' ;;
            "S| "*) printf '%b' "${line:3}" ;;
        esac
    done <"$1"
}

for target in "${targets[@]}"; do
    proto="${target%%_*}"
    corpus="fuzz/corpus/$target"
    artifacts="fuzz/artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    shopt -s nullglob
    for transcript in "crates/protocols/$proto/tests/transcripts/"*.txt; do
        server_bytes "$transcript" >"$corpus/transcript-$(basename "$transcript" .txt)"
    done
    case "$target" in
        profile_toml) seeds=(crates/workload/profiles/*.toml) ;;
        proc_files) seeds=(crates/monitor/tests/fixtures/*) ;;
        rundir_json) seeds=(crates/report/tests/fixtures/*/record.json crates/report/tests/fixtures/*/summary.json) ;;
        *) seeds=() ;;
    esac
    for seed in "${seeds[@]}" fuzz/regressions/"$target"/*; do
        cp "$seed" "$corpus/seed-${seed//\//-}"
    done
    shopt -u nullglob
    if ! cargo +nightly fuzz run "$target" "$corpus" -- \
        -max_total_time="$run_seconds" -artifact_prefix="$artifacts/" \
        >"fuzz/artifacts/$target.log" 2>&1; then
        tail -n 40 "fuzz/artifacts/$target.log" >&2
        echo "error: $target failed; crash input and full log under $artifacts/" >&2
        exit 1
    fi
    runs="$(grep -o 'Done [0-9]* runs in [0-9]* second' "fuzz/artifacts/$target.log" | tail -n 1 || true)"
    echo "$target: ${runs:-done}, corpus $(find "$corpus" -type f | wc -l) inputs"
done
