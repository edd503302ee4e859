//! `mcp-wasm-host new --lang LANG NAME`: a new tool project that builds and
//! passes `mcp-wasm-host inspect` as it is, for tool authors without this
//! repository.
//!
//! Each language is a table of files, by their path in the new project,
//! embedded in the binary at build time. Templates (`{{name}}`, `{{crate}}`)
//! are filled in; everything else is written as is. A Rust project carries
//! the SDK (`guest-tools/mcp-tool`) and the contract it is built against,
//! since neither is on crates.io. Python and JavaScript projects carry their
//! helper modules (`guest-tools/python`, `guest-tools/js`) and, in `wit/`,
//! the contract plus the two WASI interfaces the examples use
//! (`guest-tools/wit-examples`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

/// The languages a project can be made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust with the `mcp-tool` SDK; builds with `cargo build --target wasm32-wasip2`.
    Rust,
    /// Python with `mcp_tool.py`; builds with componentize-py.
    Python,
    /// JavaScript with `mcp-tool.js`; builds with componentize-js (`build.mjs`).
    Js,
}

/// A file of a new project: its path there, and its text.
type File = (&'static str, &'static str);

/// Rust: files whose `{{name}}` (the package) and `{{crate}}` (its library,
/// `-` as `_`) are filled in.
const RUST_TEMPLATES: &[File] = &[
    ("Cargo.toml", include_str!("../../guest-tools/templates/rust/Cargo.toml.in")),
    ("README.md", include_str!("../../guest-tools/templates/rust/README.md.in")),
];

/// Rust: files written as they are. The lock file pins the versions the
/// repository builds its own tools with (cargo drops what the project does
/// not use). The contract goes to `mcp-tool/wit/` (from [`crate::contract`]).
const RUST_FILES: &[File] = &[
    (".gitignore", include_str!("../../guest-tools/templates/rust/gitignore")),
    ("src/lib.rs", include_str!("../../guest-tools/templates/rust/src/lib.rs")),
    ("Cargo.lock", include_str!("../../guest-tools/Cargo.lock")),
    ("mcp-tool/Cargo.toml", include_str!("../../guest-tools/mcp-tool/Cargo.toml")),
    ("mcp-tool/README.md", include_str!("../../guest-tools/mcp-tool/README.md")),
    ("mcp-tool/rustfmt.toml", include_str!("../../guest-tools/mcp-tool/rustfmt.toml")),
    ("mcp-tool/src/lib.rs", include_str!("../../guest-tools/mcp-tool/src/lib.rs")),
    ("mcp-tool/src/context.rs", include_str!("../../guest-tools/mcp-tool/src/context.rs")),
    ("mcp-tool/src/dispatch.rs", include_str!("../../guest-tools/mcp-tool/src/dispatch.rs")),
    ("mcp-tool/src/error.rs", include_str!("../../guest-tools/mcp-tool/src/error.rs")),
    ("mcp-tool/src/offers.rs", include_str!("../../guest-tools/mcp-tool/src/offers.rs")),
    ("mcp-tool/src/output.rs", include_str!("../../guest-tools/mcp-tool/src/output.rs")),
    ("mcp-tool/src/schema.rs", include_str!("../../guest-tools/mcp-tool/src/schema.rs")),
];

/// Where a Rust project keeps the contract the SDK generates its bindings from.
const RUST_WIT_DIR: &str = "mcp-tool/wit";

/// Python: the README, whose `{{name}}` (the component's) is filled in.
const PYTHON_TEMPLATES: &[File] =
    &[("README.md", include_str!("../../guest-tools/templates/python/README.md.in"))];

/// Python: files written as they are.
const PYTHON_FILES: &[File] = &[
    (".gitignore", include_str!("../../guest-tools/templates/python/gitignore")),
    ("app.py", include_str!("../../guest-tools/templates/python/app.py")),
    ("mcp_tool.py", include_str!("../../guest-tools/python/mcp_tool.py")),
];

/// JavaScript: files whose `{{name}}` (the package's and the component's)
/// is filled in.
const JS_TEMPLATES: &[File] = &[
    ("README.md", include_str!("../../guest-tools/templates/js/README.md.in")),
    ("package.json", include_str!("../../guest-tools/templates/js/package.json.in")),
];

/// JavaScript: files written as they are. The lock file pins what
/// `guest-tools/js` builds with (its devDependencies are the same), so
/// `npm ci` installs exactly that.
const JS_FILES: &[File] = &[
    (".gitignore", include_str!("../../guest-tools/templates/js/gitignore")),
    ("app.js", include_str!("../../guest-tools/templates/js/app.js")),
    ("mcp-tool.js", include_str!("../../guest-tools/js/mcp-tool.js")),
    ("schema.js", include_str!("../../guest-tools/js/schema.js")),
    ("build.mjs", include_str!("../../guest-tools/js/build.mjs")),
    ("package-lock.json", include_str!("../../guest-tools/js/package-lock.json")),
];

/// Python and JavaScript: the world `tool` and the WASI interfaces it adds
/// to the contract, which goes to `wit/deps/mcp-tool/` (its `wasi:io` to
/// `wit/deps/io/`).
const WASI_WIT: &[File] = &[
    ("wit/world.wit", include_str!("../../guest-tools/templates/wit/world.wit")),
    ("wit/deps/clocks/clocks.wit", include_str!("../../guest-tools/wit-examples/deps/clocks/clocks.wit")),
    (
        "wit/deps/filesystem/filesystem.wit",
        include_str!("../../guest-tools/wit-examples/deps/filesystem/filesystem.wit"),
    ),
];

/// Where a Python or JavaScript project keeps a file of the contract: its
/// packages side by side in `wit/deps/`.
fn wasi_world_path(contract_path: &str) -> PathBuf {
    match contract_path.strip_prefix("deps/") {
        Some(dep) => Path::new("wit/deps").join(dep),
        None => Path::new("wit/deps/mcp-tool").join(contract_path),
    }
}

/// The files of one language's project.
struct Tables {
    /// Files whose `{{name}}` and `{{crate}}` are filled in.
    templates: &'static [File],
    /// Files written as they are.
    as_is: &'static [&'static [File]],
    /// Where a file of the contract goes, by its path in `wit/`.
    contract_path: fn(&str) -> PathBuf,
}

impl Tables {
    fn of(lang: Lang) -> Self {
        match lang {
            Lang::Rust => Tables {
                templates: RUST_TEMPLATES,
                as_is: &[RUST_FILES],
                contract_path: |path| Path::new(RUST_WIT_DIR).join(path),
            },
            Lang::Python => Tables {
                templates: PYTHON_TEMPLATES,
                as_is: &[PYTHON_FILES, WASI_WIT],
                contract_path: wasi_world_path,
            },
            Lang::Js => Tables {
                templates: JS_TEMPLATES,
                as_is: &[JS_FILES, WASI_WIT],
                contract_path: wasi_world_path,
            },
        }
    }
}

/// What [`create`] made, for telling the user what to do next.
#[derive(Debug)]
pub struct Created {
    /// The project's folder.
    pub dir: PathBuf,
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
    /// Commands that build the project and check it, run from `dir`.
    pub next_steps: Vec<String>,
}

/// Makes a `lang` project in the folder `dir` (named after its last
/// component). Refuses a folder that exists and is not empty: nothing of
/// the user's is overwritten.
pub fn create(lang: Lang, dir: &Path) -> Result<Created> {
    let name = project_name(dir)?;
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        bail!("{} already exists and is not empty: choose a new folder", dir.display());
    }
    let library = name.replace('-', "_");
    let fill = |text: &str| text.replace("{{name}}", &name).replace("{{crate}}", &library);
    let tables = Tables::of(lang);
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    files.extend(tables.templates.iter().map(|(path, text)| (PathBuf::from(path), fill(text))));
    files.extend(
        tables
            .as_is
            .iter()
            .flat_map(|table| table.iter())
            .map(|(path, text)| (PathBuf::from(path), text.to_string())),
    );
    files.extend(
        crate::contract::FILES.iter().map(|(path, text)| ((tables.contract_path)(path), text.to_string())),
    );
    let mut written = Vec::with_capacity(files.len());
    for (path, text) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    let next_steps = match lang {
        Lang::Rust => vec![
            "cargo build --release --target wasm32-wasip2".to_string(),
            format!("mcp-wasm-host inspect target/wasm32-wasip2/release/{library}.wasm"),
        ],
        Lang::Python => vec![
            "python3 -m venv .venv && .venv/bin/pip install componentize-py==0.25.1".to_string(),
            format!(".venv/bin/componentize-py -d wit -w tool componentize app -o {name}.wasm"),
            format!("mcp-wasm-host inspect {name}.wasm"),
        ],
        Lang::Js => vec![
            // Without weval the build runs the tool on the interpreter, and says so.
            "cargo install weval --locked   # once: then the build is ahead of time".to_string(),
            format!("npm ci && node build.mjs --wit wit --world tool {name}.wasm"),
            format!("mcp-wasm-host inspect {name}.wasm"),
        ],
    };
    Ok(Created { dir: dir.to_path_buf(), files: written, next_steps })
}

/// The package name a folder gives: its last component, if cargo (and
/// Python, JavaScript) would take it as a name.
fn project_name(dir: &Path) -> Result<String> {
    let name = dir.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        bail!(
            "`{}` cannot name a project: use letters, digits, `-` and `_`, starting with a letter",
            dir.display()
        );
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// Files under `dir`, by their path inside it, skipping `skip` folders.
    fn files_under(dir: &Path, skip: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(next) = dirs.pop() {
            for entry in std::fs::read_dir(next).unwrap() {
                let path = entry.unwrap().path();
                let inside = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                if skip.contains(&inside.as_str()) {
                    continue;
                }
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    found.push(inside);
                }
            }
        }
        found.sort();
        found
    }

    /// Every file of the SDK is embedded: one added to `guest-tools/mcp-tool`
    /// must be added here too, or new projects would not build.
    #[test]
    fn the_whole_sdk_is_embedded() {
        let on_disk = files_under(&repo().join("guest-tools/mcp-tool"), &["wit", "target"]);
        let mut embedded: Vec<String> = RUST_FILES
            .iter()
            .filter_map(|(path, _)| path.strip_prefix("mcp-tool/"))
            .map(str::to_string)
            .collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
    }

    /// The SDK generates its bindings from `guest-tools/mcp-tool/wit`, which
    /// must be the repository's contract (a link to `wit/`), as new projects
    /// get it.
    #[test]
    fn the_sdk_builds_against_the_repository_contract() {
        let sdk_wit = repo().join("guest-tools/mcp-tool/wit");
        assert_eq!(files_under(&sdk_wit, &[]), files_under(&repo().join("wit"), &[]));
        for (path, text) in crate::contract::FILES {
            assert_eq!(std::fs::read_to_string(sdk_wit.join(path)).unwrap(), text, "{path}");
        }
    }

    #[test]
    fn a_project_is_written_into_a_new_or_empty_folder_only() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("my-tool");
        let created = create(Lang::Rust, &project).unwrap();
        let cargo_toml = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
        assert!(cargo_toml.contains("name = \"my-tool\""), "{cargo_toml}");
        assert!(project.join("mcp-tool/wit/deps/io/io.wit").is_file());
        assert!(created.next_steps.iter().any(|step| step.contains("release/my_tool.wasm")));

        let again = create(Lang::Rust, &project).unwrap_err().to_string();
        assert!(again.contains("not empty"), "{again}");
        for bad in ["1tool", "my tool", "../"] {
            assert!(create(Lang::Rust, &dir.path().join(bad)).is_err(), "{bad}");
        }
    }

    /// Python and JavaScript projects get the world the examples are built
    /// against, `guest-tools/wit-examples`: every package it has, the
    /// contract's files in `deps/mcp-tool` and `deps/io`.
    #[test]
    fn python_and_js_projects_get_the_contract_and_the_examples_wasi_interfaces() {
        let examples = files_under(&repo().join("guest-tools/wit-examples/deps"), &["mcp-tool", "io"]);
        let embedded: Vec<String> = WASI_WIT
            .iter()
            .filter_map(|(path, _)| path.strip_prefix("wit/deps/"))
            .map(str::to_string)
            .collect();
        assert_eq!(embedded, examples);
        for lang in [Lang::Python, Lang::Js] {
            let dir = tempfile::tempdir().unwrap();
            let project = dir.path().join("my-tool");
            let created = create(lang, &project).unwrap();
            for path in ["wit/world.wit", "wit/deps/mcp-tool/world.wit", "wit/deps/io/io.wit"] {
                assert!(project.join(path).is_file(), "{lang:?}: {path}");
            }
            assert!(
                created
                    .next_steps
                    .iter()
                    .any(|step| step.contains("-w tool") || step.contains("--world tool"))
            );
            let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
            assert!(readme.contains("my-tool.wasm"), "{readme}");
        }
    }

    /// A JavaScript project installs what `guest-tools/js` is built and
    /// tested with: the same pins, and its lock file.
    #[test]
    fn a_js_project_pins_the_versions_the_examples_build_with() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("my-tool");
        create(Lang::Js, &project).unwrap();
        let read = |path: &Path| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let package = read(&project.join("package.json"));
        assert_eq!(package["name"], "my-tool");
        let examples = read(&repo().join("guest-tools/js/package.json"));
        assert_eq!(package["devDependencies"], examples["devDependencies"]);
        let lock = read(&project.join("package-lock.json"));
        assert_eq!(lock["packages"][""]["devDependencies"], examples["devDependencies"]);
    }
}
