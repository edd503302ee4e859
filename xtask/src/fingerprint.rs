//! Rebuild only when something changed: the slow guest toolchains
//! (componentize-py, componentize-js: 15-40 s each) record a fingerprint of
//! their inputs beside each output, in `NAME.wasm.inputs`, and a build whose
//! fingerprint matches is skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result};

/// What `command` prints, to tell one toolchain version from another.
pub fn tool_version(command: &mut Command) -> Result<String> {
    let output = command.stderr(Stdio::inherit()).output().context("asking a guest toolchain its version")?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Whether `dest` exists and was built from exactly these inputs.
pub fn up_to_date(dest: &Path, inputs: &[PathBuf], toolchain: &str) -> Result<bool> {
    let stamp = dest.with_extension("wasm.inputs");
    let now = fingerprint(inputs, toolchain)?;
    let fresh = dest.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|recorded| recorded == now);
    if fresh {
        println!("{} is up to date", dest.display());
    }
    Ok(fresh)
}

/// Writes the fingerprint `up_to_date` compares against.
pub fn record_inputs(dest: &Path, inputs: &[PathBuf], toolchain: &str) -> Result<()> {
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
