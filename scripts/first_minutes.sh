#!/usr/bin/env bash
# What a new user waits for: a fresh clone of this repository (its HEAD),
# an empty cargo cache (CARGO_HOME) and an empty target dir, then the
# README's first example, `./dev call echo '{"text":"hello"}'`, timed; then
# the same again (everything built). Prints both times; fails unless both
# print `hello`. rustup's toolchain (and its wasm32-wasip2 target, if
# already added) is shared with this machine: that download is seconds.
#   scripts/first_minutes.sh          (`just first-minutes`)
#   scripts/first_minutes.sh --no-default-features
#                                     (the small install: the clone's `just binary`
#                                     builds without otlp and oci; measurement only)
set -euo pipefail
small="${1:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/first-minutes.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
git clone --quiet "$root" "$scratch/clone"
export CARGO_HOME="$scratch/cargo-home"
# rustup's proxies (cargo, rustc) stay on PATH; only the cache is new.
unset CARGO_TARGET_DIR RUSTFLAGS
cd "$scratch/clone"
if [ "$small" = "--no-default-features" ]; then
    sed -i 's|--bin mcp-wasm-host 1>&2|--bin mcp-wasm-host --no-default-features 1>\&2|' justfile
    grep -q -- '--no-default-features 1>&2' justfile || { echo "justfile's binary recipe changed" >&2; exit 1; }
fi
for run in first second; do
    start=$(date +%s)
    out="$(./dev call echo '{"text":"hello"}' 2>"$scratch/$run.log")" || {
        tail -40 "$scratch/$run.log" >&2
        exit 1
    }
    end=$(date +%s)
    if [ "$out" != "hello" ]; then
        echo "the $run run printed '$out', not hello" >&2
        tail -40 "$scratch/$run.log" >&2
        exit 1
    fi
    echo "$run run: printed hello after $((end - start)) s"
done
ls -l target/release/mcp-wasm-host | awk '{ printf "binary: %.1f MB\n", $5 / 1e6 }'
