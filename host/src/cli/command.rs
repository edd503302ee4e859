//! The subcommands besides serving: `call`, `inspect`, `wit`, `new`, and
//! `completions` and `man`, which write the command line out.

use std::path::PathBuf;

use clap::Subcommand;

use super::CallArgs;

/// Subcommands besides serving.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Call one tool and print its result, without an MCP client.
    Call(Box<CallArgs>),
    /// Print the tools a component offers, as `tools/list` would.
    ///
    /// For an oci:// component, also its digest and verified signer.
    Inspect {
        /// The component file (.wasm), or oci://REGISTRY/REPOSITORY:TAG (or @sha256:DIGEST).
        path: PathBuf,
        /// Verify its cosign signature with this public key first.
        #[arg(long, value_name = "KEY.pub")]
        require_signature: Option<PathBuf>,
    },
    /// Write the mcp:tool contract (WIT) this host speaks into DIR.
    ///
    /// For building a tool against it without this repository.
    Wit {
        /// Where to write it (made if missing; same-named files are replaced).
        #[arg(default_value = "wit")]
        dir: PathBuf,
    },
    /// Make a new tool project in DIR that builds as it is.
    ///
    /// `rust`: with the mcp-tool SDK, for `cargo build --release --target
    /// wasm32-wasip2`; `python`: componentize-py; `js`: componentize-js.
    /// Its README says how.
    New {
        /// The language to write the tool in.
        #[arg(long, value_enum)]
        lang: crate::scaffold::Lang,
        /// The project's folder, made if missing (must be empty); its name names the project.
        dir: PathBuf,
    },
    /// Print a completion script for SHELL.
    ///
    /// E.g. `mcp-wasm-host completions bash >
    /// ~/.local/share/bash-completion/completions/mcp-wasm-host`.
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    ///
    /// E.g. `mcp-wasm-host man > mcp-wasm-host.1`, then `man ./mcp-wasm-host.1`.
    Man,
}
