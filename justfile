# Recipes for building, testing and measuring mcp-wasm-host.
# On a fresh machine use ./dev (it installs `just` first): ./dev test, ./dev serve.

set shell := ["bash", "-euo", "pipefail", "-c"]

host := "target/release/mcp-wasm-host"

# List the recipes.
default:
    @just --list

# Install the wasm targets, componentize-py and componentize-js (and, with
# --with-node, the real-client test dependencies).
setup *flags:
    scripts/setup.sh {{flags}}

# Build the host (release: one profile for tests, benches and the binary).
# All targets at once, so the binary and the tests share one feature set and
# `cargo test` does not rebuild the host.
build: setup
    cargo build --release --workspace --all-targets 1>&2

# Build every example tool (each on the guest SDK, guest-tools/mcp-tool) into
# target/guests/NAME.wasm (plus demo-wasip1.wasm), and the Python and
# JavaScript examples into python-tool.wasm and js-tool.wasm (rebuilt only
# when their sources changed).
guests: setup
    cargo run --release -q -p xtask -- guests 1>&2

# Serve the example tools over stdio (point an MCP client at this, or type JSON-RPC).
serve: build guests
    mkdir -p target/scratch
    exec {{host}} --component target/guests/demo.wasm --dir target/scratch

# Call one example tool from the shell: ./dev call echo '{"text":"hi"}' [OPTIONS]
[positional-arguments]
call tool *args: build guests
    mkdir -p target/scratch
    {{host}} call --component target/guests/demo.wasm --dir target/scratch "$@"

# Print the tools of a component.
inspect path="target/guests/demo.wasm": build
    {{host}} inspect {{path}}

# Formatting and lints, warnings as errors.
lint:
    cargo fmt --all --check
    cd guest-tools && cargo fmt --all --check
    cargo clippy --release --workspace --all-targets -- -D warnings

# Everything: lints; unit and end-to-end tests (rmcp client); the Rust guest
# SDK's own tests (natively); the Python and JavaScript tool helpers; the
# TypeScript and Python SDKs; the official conformance suite over --http,
# against one host and against three behind HAProxy.
test: (setup "--with-node") build guests lint
    cargo test --release --workspace
    cd guest-tools && cargo test -p mcp-tool
    PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s guest-tools/python/tests
    node --test guest-tools/js/test/
    cd tests/ts && npm test
    .tools/py/bin/python -m pytest tests/py -q
    tests/conformance/run.sh
    tests/conformance/run.sh --replicas 3
    scripts/readme_examples.py --runs 3

# The README's examples as written, each run `runs` times on a cold compile
# cache and `runs` times on a warm one; each must answer what the README says.
readme-examples runs="100": build guests
    scripts/readme_examples.py --runs {{runs}}

# The cancel storm at soak size: 10 000 calls cancelled at random moments,
# then checks nothing leaked (responses, cleanups, stores, open requests,
# resident memory within 10 %). The test suite runs a 300-call version.
soak calls="10000": build guests
    STORM_CALLS={{calls}} cargo test --release -p mcp-wasm-host --test e2e storm -- --nocapture

# Long fuzz run over the wire (the suite runs 3 000 frames), and 20 000
# random and adversarial tool schemas with arguments. FUZZ_SEED replays.
fuzz frames="200000": build guests
    FUZZ_FRAMES={{frames}} cargo test --release -p mcp-wasm-host --test e2e fuzz -- --nocapture
    FUZZ_SEED=$RANDOM cargo test --release -p mcp-wasm-host --lib random_guest_results
    FUZZ_SCHEMAS=20000 cargo test --release -p mcp-wasm-host --lib random_schemas -- --nocapture

# The official MCP conformance suite against --http (guest-tools/everything).
conformance: (setup "--with-node") build guests
    tests/conformance/run.sh
    tests/conformance/run.sh --replicas 3

# Benchmarks; figures are recorded in BENCHMARKS.md.
bench: (setup "--with-node") build guests
    cargo bench -p mcp-wasm-host --bench wire

# Build the demo with cargo-component itself (pinned 0.21.1; installing it takes 10-25 min):
# the SDK's bindings and exports work under cargo-component too.
guest-with-cargo-component:
    command -v cargo-component >/dev/null && cargo component --version | grep -q 0.21.1 \
        || cargo install cargo-component@0.21.1 --locked
    cd guest-tools/demo && env -u CARGO_TARGET_DIR cargo component build --release
    mkdir -p target/guests
    cp guest-tools/target/wasm32-wasip1/release/demo.wasm target/guests/demo-cargo-component.wasm
    printf '%s\n' \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"just","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"built by cargo-component"}}}' \
        | {{host}} --component target/guests/demo-cargo-component.wasm | grep '"id":2' | grep -q '"text":"built by cargo-component"'
    @echo "target/guests/demo-cargo-component.wasm: built by cargo-component 0.21.1, served a tools/call" >&2
