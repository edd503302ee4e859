//! Project tasks that need more than a shell one-liner. Run through `just`.
//!
//! `cargo run -p xtask -- guests` builds every example tool in `guest-tools/`
//! and copies each component to `target/guests/NAME.wasm`. It also builds
//! `target/guests/demo-wasip1.wasm`: the demo as cargo-component ships tools
//! by default (wasm32-wasip1 + the preview1 reactor adapter, importing
//! `wasi:*@0.2.3`), so the tests cover that shape without needing
//! cargo-component installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

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
        let built = guests.join(format!("target/wasm32-wasip2/release/{name}.wasm"));
        let dest = out.join(format!("{name}.wasm"));
        std::fs::copy(&built, &dest).with_context(|| format!("copying {}", built.display()))?;
        println!("built {}", dest.display());
    }

    // The hostile component with the tool schema that burned hosts down,
    // in a target dir of its own so the two builds don't undo each other.
    cargo_build_in(
        &guests,
        "wasm32-wasip2",
        &["-p", "hostile", "--features", "schema-bomb"],
        "target/schema-bomb",
    )?;
    let built = guests.join("target/schema-bomb/wasm32-wasip2/release/hostile.wasm");
    let dest = out.join("hostile-schema-bomb.wasm");
    std::fs::copy(&built, &dest).with_context(|| format!("copying {}", built.display()))?;
    println!("built {}", dest.display());

    cargo_build(&guests, "wasm32-wasip1")?;
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
    Ok(())
}

/// The components of the guest workspace: every folder whose Cargo.toml
/// builds a `cdylib` (the SDK, `mcp-tool`, is a library they use).
fn guest_crates(guests: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(guests)? {
        let path: PathBuf = entry?.path();
        let manifest = std::fs::read_to_string(path.join("Cargo.toml")).unwrap_or_default();
        if manifest.contains("\"cdylib\"") {
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// `cargo build --release --target TARGET` in the guest workspace, isolated
/// from the cargo that runs this task: its own target dir (sharing the
/// host's deadlocks on the build lock) and none of the inherited variables
/// that would override the guests' settings.
fn cargo_build(guests: &Path, target: &str) -> Result<()> {
    cargo_build_in(guests, target, &[], "target")
}

/// [`cargo_build`] with extra arguments, into `target_dir` (relative to the guests).
fn cargo_build_in(guests: &Path, target: &str, extra: &[&str], target_dir: &str) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(guests)
        .args(["build", "--release", "--target", target])
        .args(extra)
        .env("CARGO_TARGET_DIR", guests.join(target_dir))
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
