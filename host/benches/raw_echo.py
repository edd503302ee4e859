"""A bare stdio driver for profiling the host: N sequential `echo` calls.

No SDK, so a profiler attached to the host (perf record, perf stat,
strace) sees only the host's work. Speaks protocol 2026-07-28 (one
`server/discover`, then stateless requests) and prints the p50 and p90
round trip and the child's resident memory at the end (the host's; with
PREFIX, the profiler's). Not part of the
bench's figures; docs/benchmarks-archive.md says where it was used.

    python3 host/benches/raw_echo.py target/release/mcp-wasm-host \
        target/guests/python-tool.wasm 1000 [host args...]
    IN_FLIGHT=32 python3 host/benches/raw_echo.py ...   # then 5 000 more, 32 at a time
    BURST=60000 IN_FLIGHT=32 python3 host/benches/raw_echo.py ...   # 60 000 more
    PREFIX="perf stat -e page-faults --" python3 host/benches/raw_echo.py ...
"""

import json
import os
import subprocess
import sys
import time

host, component, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
command = os.environ.get("PREFIX", "").split() + [host, "--component", component] + sys.argv[4:]
child = subprocess.Popen(
    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1
)
meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw_echo", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def request(id, method, params):
    child.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}) + "\n")
    child.stdin.flush()
    while True:
        message = json.loads(child.stdout.readline())
        if message.get("id") == id:
            return message


request(0, "server/discover", {"_meta": meta})
request(1, "tools/list", {"_meta": meta})
times = []
for id in range(2, calls + 2):
    started = time.perf_counter()
    reply = request(id, "tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta})
    times.append(time.perf_counter() - started)
    if "error" in reply or reply["result"].get("isError"):
        sys.exit(f"call {id} failed: {reply}")
in_flight = int(os.environ.get("IN_FLIGHT", "0"))
next_id = calls + 2
burst_started = time.perf_counter()
for _ in range(int(os.environ.get("BURST", "5000")) // max(in_flight, 1) if in_flight else 0):
    # `in_flight` requests written at once, then their responses read.
    for id in range(next_id, next_id + in_flight):
        params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}
        child.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}) + "\n")
    child.stdin.flush()
    for _ in range(in_flight):
        child.stdout.readline()
    next_id += in_flight
burst = time.perf_counter() - burst_started
times.sort()
status = {line.split(":")[0]: int(line.split()[1]) for line in open(f"/proc/{child.pid}/status") if line.startswith("Rss")}
status |= {line.split(":")[0]: int(line.split()[1]) for line in open(f"/proc/{child.pid}/smaps_rollup") if line.startswith("Pss")}
print(
    f"{component}: p50 {times[len(times) // 2] * 1e3:.3f} ms, p90 {times[int(len(times) * 0.9)] * 1e3:.3f} ms, "
    f"RSS anon {status['RssAnon'] / 1024:.1f} MiB + file {status['RssFile'] / 1024:.1f} MiB, Pss {status['Pss'] / 1024:.1f} MiB"
    + (f", {next_id - calls - 2} calls {in_flight} at a time: {(next_id - calls - 2) / burst:.0f} calls/s" if in_flight else "")
)
child.stdin.close()
child.wait()
