#!/usr/bin/env python3
"""Watches the host's resident memory while a bare JSON-RPC client pipelines
calls at it, to tell host leaks from client effects (see docs/benchmarks-archive.md,
"Cancel storm and soak").

    scripts/rss_probe.py cancel spin      # calls cancelled 3 ms in, 16 at a time
    scripts/rss_probe.py deadline spin    # calls stopped by --timeout 5ms
    BATCHES=10 GRACE=20ms scripts/rss_probe.py cancel spin

Prints the host's VmRSS after every 1000 calls. Needs `just build guests`.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
mode, tool = sys.argv[1], sys.argv[2]
locks = tempfile.mkdtemp()
args = [
    os.path.join(ROOT, "target/release/mcp-wasm-host"),
    "--component", os.path.join(ROOT, "target/guests/demo.wasm"),
    "--dir", locks,
    "--cancel-grace", os.environ.get("GRACE", "0"),
]
if mode == "deadline":
    args += ["--timeout", "5ms"]
host = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def send(message):
    host.stdin.write((json.dumps(message) + "\n").encode())


def rss_kib():
    with open(f"/proc/{host.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))


send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rss-probe", "version": "1"}}})
host.stdin.flush()
host.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
next_id = 1


def wait_idle():
    global next_id
    while True:
        send({"jsonrpc": "2.0", "id": next_id, "method": "resources/read",
              "params": {"uri": "mcp-wasm-host://status"}})
        host.stdin.flush()
        while True:
            answer = json.loads(host.stdout.readline())
            if answer.get("id") == next_id:
                break
        next_id += 1
        status = json.loads(answer["result"]["contents"][0]["text"])
        if status["live_calls"] == 0 and status["live_stores"] == 0:
            return
        time.sleep(0.01)


def batch(calls):
    global next_id
    sent = []
    for _ in range(calls):
        send({"jsonrpc": "2.0", "id": next_id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
        sent.append(next_id)
        next_id += 1
        if mode == "cancel" and len(sent) % 16 == 0:
            host.stdin.flush()
            time.sleep(0.003)
            for request_id in sent[-16:]:
                send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})
    host.stdin.flush()
    if mode == "deadline":
        for _ in sent:
            host.stdout.readline()
    else:
        wait_idle()


for n in range(int(os.environ.get("BATCHES", "4"))):
    batch(1000)
    print(mode, tool, (n + 1) * 1000, "calls, rss", rss_kib(), "KiB", flush=True)
host.stdin.close()
host.wait()
