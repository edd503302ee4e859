//! The `mcp-wasm-host` process, start to exit: parse the command line, log
//! to stderr, run the command, flush, exit. In the library, not in
//! `main.rs`, so its generic code (the runtime, the log layers, clap) is
//! compiled once, with the library, instead of again in the binary crate.

use std::io::{IsTerminal as _, Write as _};

use crate::cli::{Cli, Command, LogFormat};
use crate::log_text::{OneLinePerEvent, error_chain};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Runs the process to its end: never returns.
pub fn main() -> ! {
    let cli = Cli::parse_args(std::env::args_os()).unwrap_or_else(|err| err.exit());
    // The command line written out: no logging, no runtime.
    match &cli.command {
        Some(Command::Completions { shell }) => {
            crate::reference::completions(*shell, &mut std::io::stdout());
            std::process::exit(0);
        }
        Some(Command::Man) => {
            let written = crate::reference::man(&mut std::io::stdout());
            std::process::exit(i32::from(written.is_err()));
        }
        _ => {}
    }
    // `call` prints a result for a person: only warnings beside it (not
    // rmcp's for every error response, such as a refused call, which `call`
    // reports itself), and the one wait worth a line: a cold compile.
    let quiet = matches!(cli.command, Some(Command::Call(_)));
    let default_filter =
        if quiet { "warn,rmcp=error,crate::component=info" } else { "mcp_wasm_host=info,tool=info,warn" };
    // stdout carries protocol frames only; every log line goes to stderr.
    // `tool`: what tools print and log, tagged with their call.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let log: Box<dyn Layer<Registry> + Send + Sync> = match cli.log_format {
        // A field nobody escaped cannot start a line of its own.
        LogFormat::Text => {
            let coloured = std::io::stderr().is_terminal();
            tracing_subscriber::fmt::layer()
                .with_ansi(coloured)
                .with_writer(move || OneLinePerEvent::new(std::io::stderr(), coloured))
                .boxed()
        }
        // The message and fields under `fields`, apart from the line's own
        // keys; the innermost span under `span`, and every enclosing one
        // under `spans` (the request's: its id and `trace_id`; a call's
        // `guest` or `cleanup` inside it).
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_ansi(false)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    // Traces over OTLP, only when an endpoint is configured.
    let (traces, telemetry) = match crate::telemetry::start(cli.serve.otlp_endpoint.as_deref()) {
        Ok(Some((layer, telemetry))) => (Some(layer), Some(telemetry)),
        Ok(None) => (None, None),
        Err(err) => {
            crate::log_text::say(format_args!("error: {}", error_chain(&err)));
            std::process::exit(1);
        }
    };
    match traces {
        // The log's filter filters for every layer when there is no other:
        // a span the filter turns down is then never made, and no enabled
        // one carries a per-layer filter's bookkeeping (a fifth of what
        // tracing cost a call).
        None => tracing_subscriber::registry().with(log).with(filter).init(),
        Some(traces) => tracing_subscriber::registry().with(log.with_filter(filter)).with(traces).init(),
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            crate::log_text::say(format_args!("error: cannot start the async runtime: {err}"));
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        match &cli.command {
            Some(Command::Call(args)) => crate::shell::call(args).await.map(|ending| ending.code()),
            Some(Command::Inspect { path, require_signature }) => {
                let tools = crate::inspect::inspect(path, require_signature.as_deref()).await?;
                // `inspect X | head` closes the pipe early: not an error.
                // Titles and descriptions are the component's words: no raw
                // C1 or bidi control reaches the terminal.
                let text = crate::log_text::safe_json(&tools)?;
                let written = writeln!(std::io::stdout(), "{text}");
                if let Err(err) = written
                    && err.kind() != std::io::ErrorKind::BrokenPipe
                {
                    return Err(err.into());
                }
                Ok(0)
            }
            Some(Command::Wit { dir }) => {
                for path in crate::contract::write_to(dir)? {
                    crate::log_text::say(format_args!("wrote {}", path.display()));
                }
                Ok(0)
            }
            Some(Command::New { lang, dir }) => {
                let created = crate::scaffold::create(*lang, dir)?;
                crate::log_text::say(format_args!(
                    "created {} ({} files); build and check it with:",
                    dir.display(),
                    created.files.len()
                ));
                crate::log_text::say(format_args!("  cd {}", created.dir.display()));
                for step in &created.next_steps {
                    crate::log_text::say(format_args!("  {step}"));
                }
                Ok(0)
            }
            None => crate::startup::serve(&cli.serve).await.map(|()| 0),
            Some(Command::Completions { .. } | Command::Man) => Ok(0),
        }
    });
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            // The chain embeds what components and registries said: one
            // escaped, bounded line, as every log line is.
            crate::log_text::say(format_args!("error: {}", error_chain(&err)));
            1
        }
    };
    let _ = std::io::stdout().flush();
    if let Some(telemetry) = telemetry {
        telemetry.flush();
    }
    // Exit without waiting for the runtime: its stdin reader may be blocked
    // in a read that only the client can end, and every call has already
    // been stopped and cleaned up (or given up on) by now.
    std::process::exit(code);
}
