//! The host's architecture, checked: one module, one job, and no module
//! imports another that imports it back. The host's modules are its source
//! files; a folder's `mod.rs` is the folder's own module.
//!
//! Imports are read from `use crate::…` paths (and `crate::…` paths in
//! code). A module and the modules inside it may name each other (a parent
//! declares its children; a child uses its parent's items): those edges
//! are not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a host module may be, in lines (tests in their own file).
const MAX_LINES: usize = 420;

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

#[test]
fn no_host_module_is_longer_than_it_can_be_read() {
    let long: Vec<String> = modules()
        .into_iter()
        .map(|(name, text)| (name, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(name, lines)| format!("{name}: {lines} lines"))
        .collect();
    assert!(long.is_empty(), "split these by job (at most {MAX_LINES} lines): {long:?}");
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
