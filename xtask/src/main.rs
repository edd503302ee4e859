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
//! (installed by `scripts/setup.sh`). They take 15-40 s each, so each is
//! rebuilt only when its inputs changed: the sources, the WIT and the
//! toolchain's version, fingerprinted into `NAME.wasm.inputs` beside it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

    // The hostile component built with one extra finding each: the tool
    // schema that burned hosts down, a tool list that never comes, and a
    // tool name that would forge log lines. Each in a target dir of its
    // own, so no build undoes another's and an unchanged one is not rebuilt
    // (`./dev serve` and `./dev call` run this every time).
    for feature in ["schema-bomb", "list-spins", "forged-name"] {
        let target_dir = format!("target/hostile-{feature}");
        cargo_build_in(&guests, "wasm32-wasip2", &["-p", "hostile", "--features", feature], &target_dir)?;
        let built = guests.join(format!("{target_dir}/wasm32-wasip2/release/hostile.wasm"));
        let dest = out.join(format!("hostile-{feature}.wasm"));
        std::fs::copy(&built, &dest).with_context(|| format!("copying {}", built.display()))?;
        println!("built {}", dest.display());
    }

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

    build_python(root, &out)?;
    build_js(root, &out)?;
    Ok(())
}

/// `target/guests/python-tool.wasm`: guest-tools/python/app.py and its
/// helper module, built with componentize-py against guest-tools/wit-examples.
fn build_python(root: &Path, out: &Path) -> Result<()> {
    let componentize = root.join(".tools/componentize-py/bin/componentize-py");
    if !componentize.is_file() {
        bail!("{} is missing: run scripts/setup.sh (`just setup`)", componentize.display());
    }
    let source = root.join("guest-tools/python");
    let wit = root.join("guest-tools/wit-examples");
    let version = tool_version(Command::new(&componentize).arg("--version"))?;
    let inputs = [source.join("app.py"), source.join("mcp_tool.py"), wit.clone()];
    let dest = out.join("python-tool.wasm");
    if up_to_date(&dest, &inputs, &version)? {
        return Ok(());
    }
    let status = Command::new(&componentize)
        .current_dir(&source)
        .arg("--quiet")
        .arg("-d")
        .arg(&wit)
        .args(["-w", "example-tools", "componentize", "app", "-p"])
        .arg(&source)
        .arg("-o")
        .arg(&dest)
        // Its errors come with a Rust backtrace when this is set.
        .env("RUST_BACKTRACE", "0")
        .env_remove("VIRTUAL_ENV")
        .status()
        .context("running componentize-py")?;
    if !status.success() {
        bail!("componentize-py failed to build {}", dest.display());
    }
    record_inputs(&dest, &inputs, &version)?;
    println!("built {}", dest.display());
    Ok(())
}

/// `target/guests/js-tool.wasm`: guest-tools/js/app.js and its helper
/// modules, built with componentize-js (guest-tools/js/build.mjs).
fn build_js(root: &Path, out: &Path) -> Result<()> {
    let source = root.join("guest-tools/js");
    let installed = source.join("node_modules/@bytecodealliance/componentize-js/package.json");
    if !installed.is_file() {
        bail!("{} is missing: run scripts/setup.sh (`just setup`)", installed.display());
    }
    let wit = root.join("guest-tools/wit-examples");
    let version = tool_version(Command::new("node").arg("--version"))?;
    let inputs = ["app.js", "mcp-tool.js", "schema.js", "build.mjs", "package-lock.json"]
        .iter()
        .map(|file| source.join(file))
        .chain([wit])
        .collect::<Vec<_>>();
    let dest = out.join("js-tool.wasm");
    if up_to_date(&dest, &inputs, &version)? {
        return Ok(());
    }
    let status = Command::new("node")
        .current_dir(&source)
        .arg("build.mjs")
        .arg(&dest)
        .status()
        .context("running node (is Node.js installed?)")?;
    if !status.success() {
        bail!("componentize-js failed to build {}", dest.display());
    }
    record_inputs(&dest, &inputs, &version)?;
    println!("built {}", dest.display());
    Ok(())
}

/// What `command` prints, to tell one toolchain version from another.
fn tool_version(command: &mut Command) -> Result<String> {
    let output = command.stderr(Stdio::inherit()).output().context("asking a guest toolchain its version")?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Whether `dest` exists and was built from exactly these inputs.
fn up_to_date(dest: &Path, inputs: &[PathBuf], toolchain: &str) -> Result<bool> {
    let stamp = dest.with_extension("wasm.inputs");
    let now = fingerprint(inputs, toolchain)?;
    let fresh = dest.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|recorded| recorded == now);
    if fresh {
        println!("{} is up to date", dest.display());
    }
    Ok(fresh)
}

/// Writes the fingerprint `up_to_date` compares against.
fn record_inputs(dest: &Path, inputs: &[PathBuf], toolchain: &str) -> Result<()> {
    std::fs::write(dest.with_extension("wasm.inputs"), fingerprint(inputs, toolchain)?)?;
    Ok(())
}

/// A 64-bit FNV-1a hash over the toolchain's version and every input file
/// (directories walked, symlinks followed), names and contents, in order.
fn fingerprint(inputs: &[PathBuf], toolchain: &str) -> Result<String> {
    fn walk(path: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
        if path.is_dir() {
            let mut entries: Vec<PathBuf> =
                std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
            entries.sort();
            for entry in entries {
                walk(&entry, files)?;
            }
        } else {
            files.push(path.to_path_buf());
        }
        Ok(())
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(toolchain.as_bytes());
    for input in inputs {
        let mut files = Vec::new();
        walk(input, &mut files)?;
        for file in files {
            feed(file.to_string_lossy().as_bytes());
            feed(&std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?);
        }
    }
    Ok(format!("{hash:016x}\n"))
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
