//! mcp-wasm-host: an MCP server whose tools are sandboxed WebAssembly components.
//!
//! The process is [`binary`]; start-up is [`startup`], one stage a file:
//! the settings ([`cli`] merged with [`config`]), the runtime, the
//! components, the transport.
//!
//! The path of a tool call, top to bottom, one folder or file per job:
//!
//! - [`transport`]: stdio (stdin EOF and signals stop every call) or
//!   Streamable HTTP, bounded;
//! - [`mcp`]: the rmcp handler, which only dispatches; routing and argument
//!   validation (`mcp/tools`); the three ways a call travels
//!   (`mcp/mode/{request,rounds,task}`; a paused 2026-07-28 call is parked
//!   here or sealed into its `requestState`, `mode/rounds/{parked,sealed}`
//!   with [`request_state`]); outcome → MCP result (`mcp/result`);
//!   the status resource;
//! - [`tasks`]: the tasks a call runs as (SEP-2663), in the process or,
//!   with `--task-store`, in Redis for every replica;
//! - [`call`]: one call's life — approval, a slot, run, stop (`call/stop`),
//!   cleanup (`call/cleanup`) — and its outcome classified in one place
//!   (`call/outcome`);
//! - [`approval`]: which calls need the user's yes, the question, the verdict;
//! - [`ask`]: a call's channel to the user — log and progress notifications,
//!   questions withdrawn when the call stops;
//! - [`store`]: the data of a call's wasmtime store, handing each WIT
//!   interface its view, and the one place guest code is run;
//! - [`wit`]: the host side of each `mcp:tool` interface (`types`,
//!   `cancellation`, `client`), over the contract's types in [`contract`];
//! - [`cancellation`]: the per-call stop signal the guest sees as `cancelled`;
//! - [`sandbox`]: what a store grants and bounds — WASI with the user's
//!   grants, outgoing HTTP to granted hosts only, regular files only, the
//!   memory budget, guest output, and the lowered guest threads.
//!
//! Beside the path: [`cli`] and [`config`] (the command line merged with
//! `--config`), [`reference`] (the command line written out: `docs/cli.md`,
//! completions, the man page), [`component`] (loading and checking a component, of either
//! kind: the `mcp:tool` contract, or [`plain`] functions as tools) with
//! [`skills`] (a component's skills, SEP-2640: its `skill://` files read and
//! hashed at load, then served from that copy),
//! [`schema`] (schemas bounded at load, checks bounded at run time),
//! [`engine`] and [`cache`] (the wasmtime engines, epoch ticker, compile
//! cache) with [`tiering`] (cold components serve baseline code until their
//! optimized code is compiled) and [`code_pages`] (the code start-up and
//! the optimizing compile ran once, unmapped when they are over), [`limits`] (what a call may use, named in messages)
//! with [`json_size`] (sizes of JSON counted without writing it) and
//! [`budget`] (the one ledger: host memory made for a guest or a client is
//! charged to a budget before it is allocated),
//! [`log_text`] (the one rule for outside text in log lines and errors: escaped, cut),
//! [`bounded_body`] (an HTTP body the host fetches, read under a bound),
//! [`stats`] (live counts, so tests and operators can see nothing leaks)
//! with [`metrics`] (the same and more for Prometheus, at `/metrics`) and
//! [`audit`] (who called what and how it ended, `--audit-log`)
//! and [`scaffold`] (new tool projects for `mcp-wasm-host new`).
//! [`shell`] is `mcp-wasm-host call`: one call from the shell, through an
//! rmcp client talking to this server in the same process.
//!
//! Before loading: [`registry`] pulls `oci://` components (by tag or
//! digest, bounded and hashed), verifies their cosign signatures and keeps
//! them by digest, so the loader only ever sees a checked local file.
//! [`loader`] loads one configured component, at start and when [`watch`]
//! (`--watch`) finds a new version to swap in without a restart.

// The terminal is written only through `log_text::say` (escaped).
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod allocator;
mod approval;
mod ask;
mod audit;
mod auth;
pub mod binary;
mod bounded_body;
mod budget;
mod cache;
mod call;
mod cancellation;
pub mod cli;
mod code_pages;
mod component;
mod config;
pub mod contract;
mod engine;
mod inspect;
mod json_size;
mod limits;
mod loader;
pub mod log_text;
mod mcp;
mod metrics;
mod operation;
mod plain;
pub mod reference;
mod registry;
mod request_state;
mod sandbox;
pub mod scaffold;
mod schema;
mod secret_file;
pub mod shell;
mod skills;
mod startup;
mod stats;
mod store;
mod tasks;
pub mod telemetry;
mod tiering;
mod tool_name;
mod transport;
mod watch;
mod wit;

pub use inspect::inspect;
pub use startup::serve;
