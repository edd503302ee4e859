# Recipes for building, testing and measuring mcp-wasm-host.
# On a fresh machine use ./dev (it installs `just` first): ./dev test, ./dev serve.

set shell := ["bash", "-euo", "pipefail", "-c"]

host := "target/release/mcp-wasm-host"
# Where `install-cargo-component` puts cargo-component (a cargo-component
# 0.21.1 already on PATH is used instead).
cargo_component_bin := justfile_directory() / ".tools/cargo-component/bin"

# List the recipes.
default:
    @just --list

# Install the wasm targets, componentize-py and componentize-js (and, with
# --with-node, the real-client test dependencies).
setup *flags:
    scripts/setup.sh {{flags}}

# Build the host and everything `cargo test` runs (release: one profile for
# tests and the binary), at once, so the binary and the tests share one
# feature set and `cargo test` does not rebuild the host. Not the bench:
# `bench` builds it as shipped (`--profile dist`), and lint checks it. Not
# xtask (it has no tests): `guests` runs it with its own features, and
# built here too its dependencies were compiled twice.
build: setup
    cargo test --release --workspace --exclude xtask --no-run 1>&2

# Build the host binary alone: what `serve`, `call` and `inspect` run (no
# test or bench target, no test package).
binary: (setup "--minimal")
    cargo build --release -p mcp-wasm-host --bin mcp-wasm-host 1>&2

# Build the demo tool alone into target/guests/demo.wasm (`guests` builds it
# with every other example).
demo: (setup "--minimal")
    cd guest-tools && env -u CARGO_TARGET_DIR -u RUSTFLAGS -u CARGO_BUILD_TARGET \
        cargo build --release --target wasm32-wasip2 -p demo 1>&2
    mkdir -p target/guests
    cp guest-tools/target/wasm32-wasip2/release/demo.wasm target/guests/demo.wasm

# Build every example tool (each on the guest SDK, guest-tools/mcp-tool) into
# target/guests/NAME.wasm (plus demo-wasip1.wasm), and the Python and
# JavaScript examples into python-tool.wasm and js-tool.wasm (rebuilt only
# when their sources changed).
guests: setup
    cargo run --release -q -p xtask -- guests 1>&2

# Serve the demo tool over stdio (point an MCP client at this, or type
# JSON-RPC). Builds the binary and the demo only, at once: the demo's
# compile fills the moments the host's leaves a core idle.
[parallel]
serve: binary demo
    mkdir -p target/scratch
    exec {{host}} --component target/guests/demo.wasm --dir target/scratch

# Call one example tool from the shell: ./dev call echo '{"text":"hi"}' [OPTIONS]
[parallel]
[positional-arguments]
call tool *args: binary demo
    mkdir -p target/scratch
    {{host}} call --component target/guests/demo.wasm --dir target/scratch "$@"

# Print the tools of a component.
[parallel]
inspect path="target/guests/demo.wasm": binary demo
    {{host}} inspect {{path}}

# Rewrite docs/cli.md from the binary's own definition (a test fails when it is stale).
cli-docs:
    UPDATE_CLI_DOCS=1 cargo test --release -p mcp-wasm-host --lib reference::tests::the_checked_in_reference_is_current 1>&2

# Formatting and lints, warnings as errors.
lint:
    cargo fmt --all --check
    cd guest-tools && cargo fmt --all --check
    cargo clippy --release --workspace --all-targets -- -D warnings
    # The small install (`cargo install --no-default-features`) compiles too.
    cargo clippy --release -p mcp-wasm-host --no-default-features --lib -- -D warnings

# Everything: lints; unit and end-to-end tests (rmcp client); the Rust guest
# SDK's own tests (natively); the Python and JavaScript tool helpers; the
# TypeScript and Python SDKs; the official conformance suite over --http,
# against one host and against three behind HAProxy.
test: (setup "--with-node") build guests lint
    cargo test --release --workspace --exclude xtask
    cd guest-tools && cargo test -p mcp-tool
    PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s guest-tools/python/tests
    node --test guest-tools/js/test/
    cd tests/ts && npm test
    .tools/py/bin/python -m pytest tests/py -q
    tests/conformance/run.sh
    tests/conformance/run.sh --replicas 3
    scripts/readme_examples.py --runs 3

# The examples of README.md and docs/*.md as written, each run `runs` times on
# a cold compile cache and `runs` times on a warm one; each must answer what it says.
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

# A new user's first minutes: a fresh clone, an empty cargo cache, then the
# README's first example, timed (recorded in BENCHMARKS.md).
first-minutes:
    scripts/first_minutes.sh

# Benchmarks; figures are recorded in BENCHMARKS.md. The host and the
# native baselines are built as they ship (`--profile dist`, whole-program
# LTO: the first build took 12 1/2 minutes on two cores).
bench: (setup "--with-node") guests
    cargo bench --profile dist -p mcp-wasm-host --bench wire

# Remake host/link-order.txt, the order lld lays the host's code out in
# (host/build.rs), from a profile of the shipped build serving `echo` calls.
# Needs perf (Debian: apt-get install linux-perf). Then rebuild and measure
# (`just bench`): the file changes the binary, not the source.
link-order: demo
    cargo build --profile dist -p mcp-wasm-host --bin mcp-wasm-host 1>&2
    scripts/link_order.py target/dist/mcp-wasm-host target/guests/demo.wasm host/link-order.txt

# Build the demo with cargo-component itself (pinned 0.21.1; installing it takes 10-25 min):
# the SDK's bindings and exports work under cargo-component too.
guest-with-cargo-component: install-cargo-component
    cd guest-tools/demo && env -u CARGO_TARGET_DIR PATH="{{cargo_component_bin}}:$PATH" cargo component build --release
    mkdir -p target/guests
    cp guest-tools/target/wasm32-wasip1/release/demo.wasm target/guests/demo-cargo-component.wasm
    printf '%s\n' \
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"just","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"built by cargo-component"}}}' \
        | {{host}} --component target/guests/demo-cargo-component.wasm | grep '"id":2' | grep -q '"text":"built by cargo-component"'
    @echo "target/guests/demo-cargo-component.wasm: built by cargo-component 0.21.1, served a tools/call" >&2

# guest-tools/plain/template is what `cargo component new --lib` makes, with
# its src/bindings.rs committed so that plain cargo (xtask) builds it.
# Regenerate plain/template's bindings with cargo-component 0.21.1, rebuild plain-template.wasm.
plain-template: install-cargo-component
    cd guest-tools/plain/template && env -u CARGO_TARGET_DIR PATH="{{cargo_component_bin}}:$PATH" cargo component build --release
    cd guest-tools && env -u CARGO_TARGET_DIR cargo build --release --target wasm32-wasip2 -p plain-template
    mkdir -p target/guests
    cp guest-tools/target/wasm32-wasip2/release/plain_template.wasm target/guests/plain-template.wasm
    @git diff --quiet -- guest-tools/plain/template/src/bindings.rs \
        || echo "guest-tools/plain/template/src/bindings.rs changed: commit it" >&2
    @echo "target/guests/plain-template.wasm: bindings from cargo-component 0.21.1, built by cargo" >&2

# Install cargo-component 0.21.1 into .tools/cargo-component unless it (or
# the same version on PATH) is there. Takes 10-25 min, so no other recipe
# needs it: setup does not install it.
[private]
install-cargo-component:
    case "$(PATH="{{cargo_component_bin}}:$PATH" cargo component --version 2>/dev/null)" in \
        *" 0.21.1") ;; \
        *) cargo install cargo-component@0.21.1 --locked --root .tools/cargo-component ;; \
    esac
