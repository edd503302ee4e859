#!/usr/bin/env python3
"""Remakes host/link-order.txt: the host's functions an `echo` burst runs,
hottest first, for lld to lay out together (host/build.rs says why).

    just link-order                       # builds the dist host and the demo first
    scripts/link_order.py BINARY DEMO.wasm OUT [SECONDS]

Profiles BINARY (a `--profile dist` build: the names are only true of the
profile they were made on) with `perf record` while a bare JSON-RPC client
sends it `echo` calls, 3 000 one at a time and then 32 in flight, as the
`languages` bench does. Needs perf (Debian: apt-get install linux-perf) and
a binary with its symbol table, which the dist profile keeps.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def fail(message):
    sys.exit(f"link_order.py: {message}")


def main():
    if len(sys.argv) not in (4, 5):
        fail("usage: link_order.py BINARY DEMO.wasm OUT [SECONDS]")
    binary, demo, out = sys.argv[1:4]
    seconds = float(sys.argv[4]) if len(sys.argv) == 5 else 8.0
    for path in (binary, demo):
        if not os.path.isfile(path):
            fail(f"no file at {path} (`just link-order` builds both)")
    if shutil.which("perf") is None:
        fail("needs perf (Debian: apt-get install linux-perf)")
    symbols = defined_functions(binary)
    if not symbols:
        fail(f"{binary} has no symbol table (build it with --profile dist)")

    with tempfile.TemporaryDirectory() as scratch:
        data = os.path.join(scratch, "perf.data")
        burst(binary, demo, data, seconds)
        report = subprocess.run(
            ["perf", "report", "-i", data, "--no-children", "--sort", "sym",
             "-g", "none", "--no-demangle", "--stdio", "--dsos", os.path.basename(binary)],
            check=True, capture_output=True, text=True,
        ).stdout

    # Lines read `  12.34%  [.] name`: perf sorts them hottest first.
    # A dict keeps the first (hottest) place of a name perf lists twice.
    order = {}
    for line in report.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].endswith("%") and parts[1] == "[.]":
            name = parts[2].strip()
            if name in symbols:
                order.setdefault(name, None)
    if len(order) < 50:
        fail(f"only {len(order)} of the binary's functions were sampled; is perf allowed "
             "to read this process (kernel.perf_event_paranoid)?")
    with open(out, "w") as file:
        file.write("# The host's functions an `echo` burst ran, hottest first: lld lays them\n")
        file.write("# out together (host/build.rs). Made by `just link-order`; do not edit.\n")
        file.write("".join(name + "\n" for name in order))
    print(f"{out}: {len(order)} functions", file=sys.stderr)


def defined_functions(binary):
    """The function symbols the binary defines, by name (`nm` from binutils)."""
    listing = subprocess.run(["nm", "--defined-only", binary],
                             capture_output=True, text=True).stdout
    return {parts[2] for parts in (line.split(None, 2) for line in listing.splitlines())
            if len(parts) == 3 and parts[1] in "tTwW"}


def burst(binary, demo, data, seconds):
    """Runs the host under perf while calls go at it."""
    host = subprocess.Popen(
        [binary, "--component", demo], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG="warn"),
    )
    try:
        def send(message):
            host.stdin.write((json.dumps(message) + "\n").encode())

        def answer():
            line = host.stdout.readline()
            if not line:
                fail("the host closed its output")
            return line

        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "link-order", "version": "1"}}})
        host.stdin.flush()
        answer()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        host.stdin.flush()
        answer()

        perf = subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", "20000", "-o", data, "-p", str(host.pid)],
            stderr=subprocess.DEVNULL,
        )
        # perf says nothing when it is attached; the first calls go unsampled
        # at worst, and 3 000 follow.
        time.sleep(0.5)
        next_id = 1

        def call():
            nonlocal next_id
            send({"jsonrpc": "2.0", "id": next_id, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"text": "hi"}}})
            next_id += 1

        for _ in range(3000):
            call()
            host.stdin.flush()
            answer()
        for _ in range(32):
            call()
        host.stdin.flush()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            answer()
            call()
            host.stdin.flush()
        perf.send_signal(2)
        # perf ends by raising the SIGINT it was stopped with again.
        if perf.wait() not in (0, -2, 130) or not os.path.exists(data):
            fail("perf record failed (kernel.perf_event_paranoid?)")
    finally:
        host.kill()
        host.wait()


if __name__ == "__main__":
    main()
