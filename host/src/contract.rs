//! The `mcp:tool` contract (`wit/`) this binary speaks: its Rust types,
//! generated at build time by wasmtime's `bindgen!`, and its text, embedded
//! so a tool author can get it without the repository
//! (`mcp-wasm-host wit [DIR]`).
//!
//! This module only describes the contract; the host's side of each
//! interface is in [`crate::wit`].

use std::path::Path;

use anyhow::{Context as _, Result};

/// The version of the `mcp:tool` contract this host implements.
pub const CONTRACT_VERSION: &str = "0.2.3";

/// The generated bindings. In a module of their own because `bindgen!` puts
/// the resources a world `use`s at the module root.
mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        // The world that exports every interface a component may offer;
        // each is looked up on its own (`crate::store::ContractCode`), so a
        // component may export any of them.
        world: "mcp:tool/server-component",
        // Host imports may fail (e.g. a stale resource handle): that traps the
        // guest. `client` functions wait on the MCP client, so they are async.
        imports: {
            "mcp:tool/client": async | trappable,
            default: trappable,
        },
        // Exports run as async calls so a call can be interrupted at epoch yields
        // and abandoned while parked in an async host call.
        exports: { default: async },
        // No `with` for the `cancelled` resource: its handle type is the
        // generated `Cancelled`, and the table entry behind it is the call's
        // stop signal (see `crate::wit::cancellation`). This keeps the
        // contract's types free of host code.
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
        },
    });
}

pub use bindings::exports::mcp::tool::{
    completion as completion_export, prompts as prompts_export, resources as resources_export,
    tasks as tasks_export, tool as tool_export,
};
pub use bindings::mcp::tool::{cancellation, client, types};

impl types::ResourceBody {
    /// Its raw bytes: a text's UTF-8, or a blob's.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            types::ResourceBody::Text(text) => text.as_bytes(),
            types::ResourceBody::Blob(bytes) => bytes,
        }
    }
}

/// Every file of `wit/`, by its path inside that folder.
pub const FILES: [(&str, &str); 9] = [
    ("world.wit", include_str!("../../wit/world.wit")),
    ("types.wit", include_str!("../../wit/types.wit")),
    ("cancellation.wit", include_str!("../../wit/cancellation.wit")),
    ("client.wit", include_str!("../../wit/client.wit")),
    ("resources.wit", include_str!("../../wit/resources.wit")),
    ("prompts.wit", include_str!("../../wit/prompts.wit")),
    ("completion.wit", include_str!("../../wit/completion.wit")),
    ("tasks.wit", include_str!("../../wit/tasks.wit")),
    ("deps/io/io.wit", include_str!("../../wit/deps/io/io.wit")),
];

/// Writes the contract into `dir` (made if missing; files of the same name
/// are replaced, so the command also updates a tool's copy). Returns the
/// paths written.
pub fn write_to(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut written = Vec::with_capacity(FILES.len());
    for (name, text) in FILES {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    /// The embedded list is the whole of `wit/`: a file added there must be
    /// added here too, or tool authors would get a contract that does not
    /// resolve.
    #[test]
    fn every_file_of_the_contract_is_embedded() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        let mut on_disk = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    on_disk.push(path.strip_prefix(&root).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = super::FILES.iter().map(|(name, _)| name.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
    }
}
