"""How much CPU each server of the bench takes while it is under load.

The `http` section's clients run in the bench's own process, on the same
cores as the server they drive, so its calls/s say how fast client and
server go together. This samples, every 50 ms, the CPU time and context
switches of every server the bench starts (the host under test, and the
bench binary serving natively, named by its `MCP_WASM_HOST_BENCH_NATIVE_SERVER`
mode) and prints, per server, each load round it saw: a stretch of 3 s or
more using over 30 % of a core. Divide a server's cores by its calls/s for
its CPU a call. Not part of the bench's figures; BENCHMARKS.md says where
it was used.

    python3 host/benches/cpu_share.py /tmp/stop &      # from the checkout
    (cd host && ../target/dist/deps/wire-<hash> --bench --only http); touch /tmp/stop
"""

import os
import re
import sys
import time

stop = sys.argv[1]
ticks = os.sysconf("SC_CLK_TCK")


def sample(pid):
    """(server name, CPU seconds, context switches), or None if not a server."""
    program = os.path.basename(open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[0].decode())
    if program.startswith("mcp-wasm-host"):
        name = "host"
    elif program.startswith("wire-"):
        mode = re.search(rb"MCP_WASM_HOST_BENCH_NATIVE_SERVER=([^\0]*)", open(f"/proc/{pid}/environ", "rb").read())
        if not mode:
            return None  # the bench itself, with its clients
        name = "native-" + mode.group(1).decode()
    else:
        return None
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / ticks
    switches = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        status = open(f"/proc/{pid}/task/{task}/status").read()
        switches += sum(int(n) for n in re.findall(r"voluntary_ctxt_switches:\s+(\d+)", status))
    return name, cpu, switches


last, busy, rounds, names = {}, {}, {}, {}
while not os.path.exists(stop):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            seen = sample(pid)
        except (OSError, ValueError, IndexError):
            continue  # gone, or not ours to read
        if not seen:
            continue
        name, cpu, switches = seen
        now = time.monotonic()
        names[pid] = name
        if pid in last:
            then, cpu_then, switches_then = last[pid]
            if (cpu - cpu_then) / (now - then) > 0.3:
                stretch = busy.setdefault(pid, [then, now, 0.0, 0])
                stretch[1] = now
                stretch[2] += cpu - cpu_then
                stretch[3] += switches - switches_then
            elif pid in busy:
                stretch = busy.pop(pid)
                if stretch[1] - stretch[0] >= 3:
                    rounds.setdefault(pid, []).append(stretch)
        last[pid] = (now, cpu, switches)
    time.sleep(0.05)
for pid, stretch in busy.items():
    if stretch[1] - stretch[0] >= 3:
        rounds.setdefault(pid, []).append(stretch)
for pid, stretches in rounds.items():
    cores = " ".join(f"{cpu / (end - start):.2f}" for start, end, cpu, _ in stretches)
    switches = " ".join(f"{n / (end - start):.0f}" for start, end, _, n in stretches)
    print(f"{names[pid]:20} {len(stretches)} rounds: cores {cores}; context switches/s {switches}")
