#!/usr/bin/env python3
"""Runs the marked examples of README.md and docs/*.md as written.

Each must answer what the text says it answers. An example is a ```sh
block right after a marker line:

    <!-- example: answers "text":"hello" -->

The block runs with bash from the repository root, RUNS times on a warm
compile cache (the user's own) and RUNS times on a cold one (an empty
XDG_CACHE_HOME per run). A run passes when it exits 0 and its stdout holds
the text (everything after `answers `). Every failure is printed with what the run said.

    scripts/readme_examples.py            # 3 runs each way (what `./dev test` does)
    scripts/readme_examples.py --runs 100 # `just readme-examples`
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- example: answers (?P<text>.+) -->$")


def examples(name: str, text: str):
    """(file name, line number, expected text, script) for every marked block."""
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        fence = number + 1
        if fence >= len(lines) or lines[fence].strip() != "```sh":
            sys.exit(f"{name}:{number + 1}: an example marker must be followed by a ```sh block")
        end = next((i for i in range(fence + 1, len(lines)) if lines[i].strip() == "```"), None)
        if end is None:
            sys.exit(f"{name}:{fence + 1}: the ```sh block never ends")
        found.append((name, number + 1, marker["text"], "\n".join(lines[fence + 1 : end]) + "\n"))
    return found


def run(script: str, cold: bool, timeout: float):
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="readme-cache-") as cache:
        if cold:
            env["XDG_CACHE_HOME"] = cache
        started = time.monotonic()
        try:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as timed_out:
            return None, f"no end after {timeout:.0f} s\n{timed_out.stdout or ''}{timed_out.stderr or ''}", timeout
        return done, None, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per example on each cache (default 3)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    args = parser.parse_args()

    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found += examples(path.relative_to(ROOT).as_posix(), path.read_text())
    if not found:
        sys.exit("README.md and docs/*.md have no marked examples")
    failed = 0
    for name, line, text, script in found:
        first = script.strip().splitlines()[0]
        for cold in (True, False):
            passed, took = 0, []
            for _ in range(args.runs):
                done, problem, seconds = run(script, cold, args.timeout)
                took.append(seconds)
                if problem is None and done.returncode != 0:
                    problem = f"exit status {done.returncode}"
                if problem is None and text not in done.stdout:
                    problem = f"stdout does not hold {text!r}"
                if problem is None:
                    passed += 1
                    continue
                failed += 1
                said = "" if done is None else f"--- stdout\n{done.stdout}--- stderr\n{done.stderr[-4000:]}"
                print(f"{name}:{line} ({'cold' if cold else 'warm'}): {problem}\n{said}", file=sys.stderr)
            took.sort()
            print(
                f"{name}:{line} `{first}` {'cold' if cold else 'warm'}: {passed}/{args.runs} answered "
                f"{text!r} (median {took[len(took) // 2]:.1f} s)",
                file=sys.stderr,
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
