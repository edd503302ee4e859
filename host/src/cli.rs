//! The command line: what a user types to serve tools, and what `--help` teaches.

use clap::Parser;

pub use crate::config::ServeArgs;
use crate::config::{Given, heading};

mod call;
mod command;
pub use call::CallArgs;
pub use command::Command;

/// Serve WebAssembly component tools to any MCP client, each call sandboxed.
///
/// Every tool call runs in a fresh, isolated instance with no files, network
/// or environment beyond what you grant here. A cancelled call always stops:
/// the tool is told, then stopped by force after --cancel-grace, then its
/// `cleanup` export runs.
///
/// Example MCP client config:
///   {"command": "mcp-wasm-host", "args": ["--component", "/path/tool.wasm", "--dir", "/tmp/work"]}
///
/// Logs go to stderr, as text or JSON (--log-format); set RUST_LOG (e.g.
/// RUST_LOG=mcp_wasm_host=debug).
#[derive(Debug, Parser)]
#[command(name = "mcp-wasm-host", version, max_term_width = 100)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub serve: ServeArgs,

    /// How log lines on stderr are written.
    ///
    /// `json` is for programs reading them: one object per line, the
    /// event's message and fields under `fields`, e.g.
    /// {"timestamp":"…","level":"INFO","fields":{"message":"call
    /// ended","tool":"spin","outcome":"stopped","stop_reason":"client-cancelled",…},
    /// "target":"…","span":{"name":"tools/call","request":"3"}}. A tool's
    /// own output has target `tool`. Fatal errors stay plain text.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value_t = LogFormat::Text,
        global = true,
        help_heading = heading::OBSERVABILITY
    )]
    pub log_format: LogFormat,
}

/// How log lines on stderr are written (--log-format).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: `LEVEL target: message key=value …`.
    #[default]
    Text,
    /// For programs: one JSON object per line.
    Json,
}

impl Cli {
    /// Parses `args` (the program name first), remembering which options
    /// were given on the command line, so they can win over `--config`.
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        cli.serve.given = given_on_command_line(&matches);
        if let (Some(Command::Call(call)), Some((_, sub))) = (&mut cli.command, matches.subcommand()) {
            call.finish(sub)?;
        }
        Ok(cli)
    }
}

/// The options given on the command line, by clap id, with their values
/// as typed.
fn given_on_command_line(matches: &clap::ArgMatches) -> Given {
    (matches.ids())
        .filter(|id| matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| {
            let typed = matches
                .try_get_raw(id.as_str())
                .ok()
                .flatten()
                .into_iter()
                .flatten()
                .map(Into::into)
                .collect();
            (id.to_string(), typed)
        })
        .collect()
}
