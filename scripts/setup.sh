#!/usr/bin/env bash
# Installs what building and testing need beyond rustup's Rust toolchain.
# Idempotent: each step checks before it installs. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

# Guest targets: wasip2 for the examples, wasip1 for the cargo-component shape.
installed="$(rustup target list --installed)"
for target in wasm32-wasip2 wasm32-wasip1; do
    if ! grep -qx "$target" <<<"$installed"; then
        rustup target add "$target" >&2
    fi
done

# The TypeScript SDK client for the cross-client tests (pinned by package-lock.json).
if [ "${1:-}" = "--with-node" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "npm is needed for the TypeScript SDK tests (apt-get install nodejs npm)" >&2
        exit 1
    fi
    if [ ! -d tests/ts/node_modules/@modelcontextprotocol/sdk ] \
        || [ tests/ts/package-lock.json -nt tests/ts/node_modules/.package-lock.json ]; then
        (cd tests/ts && npm ci --no-audit --no-fund --loglevel=error) >&2
    fi
fi
