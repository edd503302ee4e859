//! The `mcp-wasm-host` binary: parse the command line, log to stderr, serve.

use std::io::{IsTerminal as _, Write as _};

use mcp_wasm_host::cli::{Cli, Command, LogFormat};
use mcp_wasm_host::log_text::{OneLinePerEvent, error_chain};
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = Cli::parse_args(std::env::args_os()).unwrap_or_else(|err| err.exit());
    // `call` prints a result for a person: only warnings beside it (not
    // rmcp's for every error response, such as a refused call, which `call`
    // reports itself), and the one wait worth a line: a cold compile.
    let quiet = matches!(cli.command, Some(Command::Call(_)));
    let default_filter = if quiet {
        "warn,rmcp=error,mcp_wasm_host::component=info"
    } else {
        "mcp_wasm_host=info,tool=info,warn"
    };
    // stdout carries protocol frames only; every log line goes to stderr.
    let log = tracing_subscriber::fmt()
        .with_env_filter(
            // `tool`: what tools print and log, tagged with their call.
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr);
    match cli.log_format {
        // A field nobody escaped cannot start a line of its own.
        LogFormat::Text => {
            let coloured = std::io::stderr().is_terminal();
            log.with_ansi(coloured)
                .with_writer(move || OneLinePerEvent::new(std::io::stderr(), coloured))
                .init()
        }
        // The message and fields under `fields`, apart from the line's own
        // keys; the enclosing span (a call's request id) under `span`.
        LogFormat::Json => log.json().with_ansi(false).with_span_list(false).init(),
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        match &cli.command {
            Some(Command::Call(args)) => mcp_wasm_host::shell::call(args).await.map(|ending| ending.code()),
            Some(Command::Inspect { path, require_signature }) => {
                let tools = mcp_wasm_host::inspect(path, require_signature.as_deref()).await?;
                // `inspect X | head` closes the pipe early: not an error.
                let text = serde_json::to_string_pretty(&tools)?;
                let written = writeln!(std::io::stdout(), "{text}");
                if let Err(err) = written
                    && err.kind() != std::io::ErrorKind::BrokenPipe
                {
                    return Err(err.into());
                }
                Ok(0)
            }
            Some(Command::Wit { dir }) => {
                for path in mcp_wasm_host::contract::write_to(dir)? {
                    eprintln!("wrote {}", path.display());
                }
                Ok(0)
            }
            Some(Command::New { lang, dir }) => {
                let created = mcp_wasm_host::scaffold::create(*lang, dir)?;
                eprintln!(
                    "created {} ({} files); build and check it with:",
                    dir.display(),
                    created.files.len()
                );
                eprintln!("  cd {}", created.dir.display());
                for step in &created.next_steps {
                    eprintln!("  {step}");
                }
                Ok(0)
            }
            None => mcp_wasm_host::serve(&cli.serve).await.map(|()| 0),
        }
    });
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            // The chain embeds what components and registries said: one
            // escaped, bounded line, as every log line is.
            eprintln!("error: {}", error_chain(&err));
            1
        }
    };
    let _ = std::io::stdout().flush();
    // Exit without waiting for the runtime: its stdin reader may be blocked
    // in a read that only the client can end, and every call has already
    // been stopped and cleaned up (or given up on) by now.
    std::process::exit(code);
}
