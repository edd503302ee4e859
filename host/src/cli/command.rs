//! The subcommands besides serving: `call`, `inspect`, `wit`, `new`.

use std::path::PathBuf;

use clap::Subcommand;

use super::CallArgs;

/// Subcommands besides serving.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Call one tool and print its result, without an MCP client.
    Call(Box<CallArgs>),
    /// Print the tools a component offers (as `tools/list` would) and exit;
    /// for an oci:// component, also its digest and verified signer.
    Inspect {
        /// The component file (.wasm), or oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST).
        path: PathBuf,
        /// Verify its cosign signature with this public key first.
        #[arg(long, value_name = "KEY.pub")]
        require_signature: Option<PathBuf>,
    },
    /// Write the mcp:tool contract (WIT) this host speaks into DIR, for
    /// building a tool against it without this repository.
    Wit {
        /// Where to write it (made if missing; same-named files are replaced).
        #[arg(default_value = "wit")]
        dir: PathBuf,
    },
    /// Make a new tool project in DIR that builds as it is (`rust`: with the
    /// mcp-tool SDK, for `cargo build --release --target wasm32-wasip2`;
    /// `python`: componentize-py; `js`: componentize-js). Its README says how.
    New {
        /// The language to write the tool in.
        #[arg(long, value_enum)]
        lang: crate::scaffold::Lang,
        /// The project's folder, made if missing (must be empty); its name names the project.
        dir: PathBuf,
    },
}
