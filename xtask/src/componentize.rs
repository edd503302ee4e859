//! The Python and JavaScript guests, built with componentize-py and
//! componentize-js (both installed by `scripts/setup.sh`). Each takes
//! 15-40 s, so a component is rebuilt only when its inputs changed: its
//! sources, its WIT and the toolchain's version (see [`crate::fingerprint`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::fingerprint::{record_inputs, tool_version, up_to_date};

/// One guest in a scripting language: where its sources are and which world
/// of which WIT folder it implements. Paths are relative to the repository.
pub struct Guest<'a> {
    /// The folder holding the sources.
    pub dir: &'a str,
    /// The source files in `dir`; the first is the entry point (for Python,
    /// the module componentize-py loads; for JavaScript, the module whose
    /// exports implement the world).
    pub sources: &'a [&'a str],
    /// The WIT folder (its `deps/` included).
    pub wit: &'a str,
    /// The world in `wit` the component implements.
    pub world: &'a str,
    /// The file name in `target/guests`.
    pub output: &'a str,
}

impl Guest<'_> {
    fn sources(&self, root: &Path) -> Vec<PathBuf> {
        self.sources.iter().map(|file| root.join(self.dir).join(file)).collect()
    }
}

/// Builds `guest` with componentize-py into `out`.
pub fn python(root: &Path, out: &Path, guest: &Guest) -> Result<()> {
    let componentize = root.join(".tools/componentize-py/bin/componentize-py");
    if !componentize.is_file() {
        bail!("{} is missing: run scripts/setup.sh (`just setup`)", componentize.display());
    }
    let source = root.join(guest.dir);
    let wit = root.join(guest.wit);
    let module =
        guest.sources[0].strip_suffix(".py").context("a Python guest's entry point is a .py file")?;
    let version = tool_version(Command::new(&componentize).arg("--version"))?;
    let inputs: Vec<PathBuf> = guest.sources(root).into_iter().chain([wit.clone()]).collect();
    let dest = out.join(guest.output);
    if up_to_date(&dest, &inputs, &version)? {
        return Ok(());
    }
    let status = Command::new(&componentize)
        .current_dir(&source)
        .arg("--quiet")
        .arg("-d")
        .arg(&wit)
        .args(["-w", guest.world, "componentize", module, "-p"])
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

/// Builds `guest` with componentize-js (guest-tools/js/build.mjs, on the
/// packages installed in guest-tools/js/node_modules), ahead of time with
/// the weval `scripts/setup.sh` installs, into `out`.
pub fn js(root: &Path, out: &Path, guest: &Guest) -> Result<()> {
    let builder = root.join("guest-tools/js");
    let installed = builder.join("node_modules/@bytecodealliance/componentize-js/package.json");
    if !installed.is_file() {
        bail!("{} is missing: run scripts/setup.sh (`just setup`)", installed.display());
    }
    // Ahead of time (weval), as a user's build is when weval is installed:
    // the tests and benches run the JavaScript tools as compiled code.
    let weval = root.join(".tools/weval/bin/weval");
    if !weval.is_file() {
        bail!("{} is missing: run scripts/setup.sh (`just setup`)", weval.display());
    }
    let wit = root.join(guest.wit);
    let version = format!(
        "{} {}",
        tool_version(Command::new("node").arg("--version"))?,
        tool_version(Command::new(&weval).arg("--version"))?
    );
    // The lock file pins componentize-js, so a new version rebuilds.
    let inputs: Vec<PathBuf> = guest
        .sources(root)
        .into_iter()
        .chain(["build.mjs", "package-lock.json"].map(|file| builder.join(file)))
        .chain([wit.clone()])
        .collect();
    let dest = out.join(guest.output);
    if up_to_date(&dest, &inputs, &version)? {
        return Ok(());
    }
    let status = Command::new("node")
        .current_dir(&builder)
        .arg("build.mjs")
        .arg("--source")
        .arg(root.join(guest.dir).join(guest.sources[0]))
        .arg("--wit")
        .arg(&wit)
        .args(["--world", guest.world])
        .arg("--weval-bin")
        .arg(&weval)
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
