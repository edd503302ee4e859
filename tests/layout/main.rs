//! The host's architecture, checked: no module imports another that
//! imports it back, the sandbox knows nothing of MCP, the wings point one
//! way (the runtime knows nothing of the server, nothing below the
//! commands knows the command line or start-up), and the binary and the
//! tests build one dependency tree. The host's modules are its source
//! files; a folder's `mod.rs` is the folder's own module. (There is no cap
//! on a file's length: a file is split when it has two jobs.)
//!
//! Imports are read from `use crate::…` paths (and `crate::…` paths in
//! code). A module and the modules inside it may name each other (a parent
//! declares its children; a child uses its parent's items): those edges
//! are not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file, by module path (`call::stop`, `mcp`, `lib`).
fn modules() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let relative = path.strip_prefix(src()).unwrap().with_extension("");
                let mut parts: Vec<String> =
                    relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
                if parts.last().is_some_and(|last| last == "mod") {
                    parts.pop();
                }
                found.insert(parts.join("::"), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    found
}

/// The modules `text` (the source of module `from`) names, resolved to the
/// longest known module path.
fn imports(from: &str, text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut add = |path: &str| {
        let parts: Vec<&str> = path.split("::").filter(|part| !part.is_empty()).collect();
        for end in (1..=parts.len()).rev() {
            let candidate = parts[..end].join("::");
            if known.contains(&candidate) {
                found.insert(candidate);
                return;
            }
        }
    };
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let tail = &rest[at + "crate::".len()..];
            let path: String =
                tail.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            add(&path);
            rest = &tail[path.len()..];
        }
        // `use super::x::y` inside a module: resolve against its parent.
        if let Some(tail) = code.trim_start().strip_prefix("use super::") {
            let parent = from.rsplit_once("::").map_or("", |(parent, _)| parent);
            let path: String =
                tail.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            add(&format!("{parent}::{path}"));
        }
    }
    found.remove(from);
    found
}

/// Whether one module contains the other (or is it).
fn nested(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
}

#[test]
fn no_host_module_imports_one_that_imports_it_back() {
    let modules = modules();
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let edges: BTreeMap<&str, BTreeSet<String>> = modules
        .iter()
        .filter(|(name, _)| *name != "lib" && *name != "main")
        .map(|(name, text)| {
            let to = imports(name, text, &known).into_iter().filter(|to| !nested(name, to)).collect();
            (name.as_str(), to)
        })
        .collect();
    // Depth-first search for a cycle, reporting its path.
    fn visit<'a>(
        at: &'a str,
        edges: &'a BTreeMap<&'a str, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| *m == at) {
            let mut cycle: Vec<String> = path[start..].iter().map(|m| m.to_string()).collect();
            cycle.push(at.to_string());
            return Some(cycle);
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        for next in edges.get(at).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for start in edges.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = visit(start, &edges, &mut path, &mut done) {
            panic!("modules import each other in a circle: {}", cycle.join(" → "));
        }
    }
}

/// Every crate `cargo build --bin mcp-wasm-host` builds (what `./dev call`,
/// `./dev serve` and `cargo install` run) is built with the features the
/// test build gives it, so neither build recompiles wasmtime after the
/// other (the feature unification in host/Cargo.toml).
#[test]
fn the_binary_and_the_tests_build_one_dependency_tree() {
    let tree = |args: &[&str]| -> BTreeMap<String, BTreeSet<String>> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let output = std::process::Command::new(cargo)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .args(["tree", "--locked", "--offline", "--prefix", "none", "--format", "{p} [{f}]"])
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let mut crates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let line = line.trim_end_matches(" (*)");
            if let Some((package, features)) = line.split_once(" [") {
                let features = features.trim_end_matches(']').to_string();
                crates.entry(package.to_string()).or_default().insert(features);
            }
        }
        crates
    };
    // Two comparisons, (the binary's edges, the tests' edges, whether a
    // crate's features must be the very set the tests build it with):
    // - the crates built for the target, not for build scripts or proc
    //   macros: each build makes each of them once, so the features must be
    //   the same (a workspace member that turns on a shared crate's feature
    //   otherwise makes a second build of the host's library: xtask's
    //   `id-arena` with `default` did, and the looser check let it through);
    // - with build scripts and proc macros: a crate may be built more than
    //   once (for the host, and for the target with more features), so
    //   every build the binary needs must be one the tests make too.
    let comparisons = [
        ("normal,no-proc-macro", "normal,dev,no-proc-macro", true),
        ("normal,build", "normal,build,dev", false),
    ];
    for (binary_edges, test_edges, exact) in comparisons {
        let binary = tree(&["-p", "mcp-wasm-host", "-e", binary_edges]);
        // As `just build` builds the tests: xtask is built on its own, by
        // `just guests`, with features of its own.
        let tests = tree(&["--workspace", "--exclude", "xtask", "-e", test_edges]);
        let differ: Vec<String> = (binary.iter())
            .filter(|(package, features)| match tests.get(*package) {
                Some(built) if exact => built != *features,
                Some(built) => !features.is_subset(built),
                None => true,
            })
            .map(|(package, features)| format!("{package}: {features:?} vs {:?}", tests.get(package)))
            .collect();
        assert!(
            differ.is_empty(),
            "turn these features on in host/Cargo.toml's [dependencies] too: {differ:#?}"
        );
    }
}

#[test]
fn the_sandbox_knows_nothing_of_mcp() {
    let modules = modules();
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let mcp_side = ["mcp", "ask", "call", "wit", "store", "approval", "transport"];
    for (name, text) in modules.iter().filter(|(name, _)| name.starts_with("sandbox")) {
        assert!(!text.contains("rmcp::"), "{name} uses rmcp");
        for to in imports(name, text, &known) {
            let top = to.split("::").next().unwrap();
            assert!(!mcp_side.contains(&top), "{name} imports {to}");
        }
    }
}

/// Each module's imports by top-level module, outside itself.
fn top_edges() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let top = |module: &str| module.split("::").next().unwrap().to_string();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // A module's tests may drive it from above (through the command line).
    for (name, text) in modules.iter().filter(|(name, _)| !name.ends_with("::tests")) {
        for to in imports(name, text, &known).into_iter().filter(|to| top(to) != top(name)) {
            edges.entry(top(name)).or_default().insert(top(&to));
        }
    }
    edges
}

/// The runtime wing — engines, the compile cache, the sandbox, a call's
/// store and the guest-facing interfaces, plain components, schemas,
/// limits — runs guest code for whoever asks: it imports nothing of the
/// server (MCP, transports, authorization, audit, telemetry), of loading
/// (registries, reloading) or of the command line.
#[test]
fn the_runtime_knows_nothing_of_the_server() {
    let runtime = [
        "engine",
        "cache",
        "tiering",
        "sandbox",
        "store",
        "wit",
        "plain",
        "schema",
        "limits",
        "budget",
        "contract",
        "cancellation",
        "operation",
    ];
    let above = [
        "mcp",
        "transport",
        "auth",
        "audit",
        "telemetry",
        "metrics",
        "config",
        "cli",
        "startup",
        "registry",
        "loader",
        "watch",
        "shell",
        "inspect",
        "binary",
        "reference",
    ];
    let edges = top_edges();
    let wrong: Vec<String> = (runtime.iter())
        .flat_map(|from| edges.get(*from).into_iter().flatten().map(move |to| (from, to)))
        .filter(|(_, to)| above.contains(&to.as_str()))
        .map(|(from, to)| format!("{from} → {to}"))
        .collect();
    assert!(wrong.is_empty(), "the runtime imports from above it: {wrong:?}");
}

/// Only the commands know the command line (`cli`) and start-up: what
/// serves a call reads resolved settings (`config`), never the parser.
#[test]
fn nothing_below_the_commands_knows_the_command_line() {
    let commands = ["binary", "shell", "inspect", "reference"];
    for (from, to) in top_edges() {
        for up in to.iter().filter(|to| *to == "cli" || *to == "startup") {
            assert!(commands.contains(&from.as_str()), "{from} imports {up}: only {commands:?} may");
        }
    }
}
