//! Project tasks that need more than a shell one-liner. Run through `just`.
//!
//! `cargo run -p xtask -- guests` builds every example tool in `guest-tools/`
//! and copies each component to `target/guests/NAME.wasm`. It also builds
//! `target/guests/demo-wasip1.wasm`: the demo as cargo-component ships tools
//! by default (wasm32-wasip1 + the preview1 reactor adapter, importing
//! `wasi:*@0.2.3`), so the tests cover that shape without needing
//! cargo-component installed.
//!
//! It also builds the Python and JavaScript examples (`guest-tools/python`,
//! `guest-tools/js`) into `target/guests/python-tool.wasm` and
//! `target/guests/js-tool.wasm` with componentize-py and componentize-js
//! (see [`componentize`]).
//!
//! The plain components in `guest-tools/plain/` (issue 25) do not use the
//! `mcp:tool` contract: the host serves their exported functions. One per
//! toolchain, so the tests see what each toolchain really emits:
//! `plain-types` (wit-bindgen), `plain-template` (cargo-component's
//! template), `plain-python` (componentize-py), `plain-js` (componentize-js).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

mod componentize;
mod fingerprint;

/// The guests built with componentize-py.
const PYTHON_GUESTS: &[componentize::Guest] = &[
    componentize::Guest {
        dir: "guest-tools/python",
        sources: &["app.py", "mcp_tool.py"],
        wit: "guest-tools/wit-examples",
        world: "example-tools",
        output: "python-tool.wasm",
    },
    componentize::Guest {
        dir: "guest-tools/plain/python",
        sources: &["app.py"],
        wit: "guest-tools/plain/python/wit",
        world: "plain-python",
        output: "plain-python.wasm",
    },
];

/// The guests built with componentize-js.
const JS_GUESTS: &[componentize::Guest] = &[
    componentize::Guest {
        dir: "guest-tools/js",
        sources: &["app.js", "mcp-tool.js", "schema.js"],
        wit: "guest-tools/wit-examples",
        world: "example-tools",
        output: "js-tool.wasm",
    },
    componentize::Guest {
        dir: "guest-tools/plain/js",
        sources: &["app.js"],
        wit: "guest-tools/plain/js/wit",
        world: "plain-js",
        output: "plain-js.wasm",
    },
];

fn main() -> Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the repo")?;
    match task.as_str() {
        "guests" => build_guests(root),
        _ => bail!("usage: cargo run -p xtask -- guests"),
    }
}

fn build_guests(root: &Path) -> Result<()> {
    let guests = root.join("guest-tools");
    let out = root.join("target/guests");
    std::fs::create_dir_all(&out)?;

    cargo_build(&guests, "wasm32-wasip2")?;
    for name in guest_crates(&guests)? {
        // Cargo names a cdylib after its crate, with `_` for `-`.
        let artifact = name.replace('-', "_");
        let built = guests.join(format!("target/wasm32-wasip2/release/{artifact}.wasm"));
        let dest = out.join(format!("{name}.wasm"));
        std::fs::copy(&built, &dest).with_context(|| format!("copying {}", built.display()))?;
        if name == "plain-types" {
            add_package_docs(&dest, &guests.join("plain/types/wit"))?;
        }
        println!("built {}", dest.display());
    }

    // Only the demo is wanted for wasip1.
    cargo_build_in(&guests, "wasm32-wasip1", &["-p", "demo"])?;
    let module = std::fs::read(guests.join("target/wasm32-wasip1/release/demo.wasm"))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)?
        .adapter(
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .validate(true)
        .encode()?;
    let dest = out.join("demo-wasip1.wasm");
    std::fs::write(&dest, component)?;
    println!("built {}", dest.display());

    for guest in PYTHON_GUESTS {
        componentize::python(root, &out, guest)?;
    }
    for guest in JS_GUESTS {
        componentize::js(root, &out, guest)?;
    }
    Ok(())
}

/// Adds to `component` a `package-docs` section with the docs of the WIT
/// package in `wit` (the section wit-component defines; the host reads it
/// in host/src/plain/docs.rs). wit-bindgen builds do not keep their docs,
/// and hosts that describe plain components add them like this.
fn add_package_docs(component: &Path, wit: &Path) -> Result<()> {
    use wasm_encoder::Encode as _;
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(wit)?;
    let docs = wit_parser::PackageMetadata::extract(&resolve, package).encode()?;
    let mut bytes = std::fs::read(component)?;
    bytes.push(0); // a custom section
    wasm_encoder::CustomSection { name: "package-docs".into(), data: docs.into() }.encode(&mut bytes);
    std::fs::write(component, bytes)?;
    Ok(())
}

/// The components of the guest workspace, by crate name: every crate in a
/// folder of `guest-tools/`, `guest-tools/plain/` or
/// `guest-tools/hostile/variants/` whose Cargo.toml builds a `cdylib` (the
/// SDK, `mcp-tool`, is a library they use). The variants are the hostile
/// component with one extra finding each: the tool schema that burned hosts
/// down, a tool list that never comes, a tool name that would forge log
/// lines, templates that make a matcher quadratic, and a URI that shadows
/// another component's template. As crates of their own, one workspace
/// build makes them on the others' dependencies.
fn guest_crates(guests: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for parent in [guests.to_path_buf(), guests.join("plain"), guests.join("hostile/variants")] {
        for entry in std::fs::read_dir(&parent)? {
            let path: PathBuf = entry?.path();
            let manifest = std::fs::read_to_string(path.join("Cargo.toml")).unwrap_or_default();
            if manifest.contains("\"cdylib\"") {
                names.push(
                    package_name(&manifest)
                        .with_context(|| format!("no package name in {}", path.display()))?,
                );
            }
        }
    }
    names.sort();
    Ok(names)
}

/// The `name = "..."` of a manifest's `[package]` (its first `name` key:
/// every guest manifest starts with `[package]`).
fn package_name(manifest: &str) -> Option<String> {
    manifest.lines().find_map(|line| {
        let value = line.trim().strip_prefix("name")?.trim_start().strip_prefix('=')?.trim();
        Some(value.strip_prefix('"')?.strip_suffix('"')?.to_string())
    })
}

/// `cargo build --release` for `target` in the guest workspace: every member.
fn cargo_build(guests: &Path, target: &str) -> Result<()> {
    cargo_build_in(guests, target, &[])
}

/// `cargo build --release --target TARGET` in the guest workspace, with
/// `extra` arguments, into `guest-tools/target`. Isolated from the cargo
/// that runs this task: its own target dir (sharing the host's deadlocks on
/// the build lock) and none of the inherited variables that would override
/// the guests' settings.
fn cargo_build_in(guests: &Path, target: &str, extra: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(guests)
        .args(["build", "--release", "--target", target])
        .args(extra)
        .env("CARGO_TARGET_DIR", guests.join("target"))
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .status()
        .context("running cargo for the guests")?;
    if !status.success() {
        bail!("building the guest tools for {target} failed");
    }
    Ok(())
}
