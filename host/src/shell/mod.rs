//! `mcp-wasm-host call`: one tool call from the shell, without an MCP client.
//!
//! The real server is built in this process and the call goes to it from
//! an rmcp client over an in-memory pipe, so it takes exactly the path any
//! client's call does: the schema check, approval, the limits, questions
//! to the user, and a cancel that stops the tool and runs its cleanup.
//!
//! - [`args`]: the tool's arguments, from ARGS and `--arg`;
//! - [`client`]: the client, answering questions at the terminal
//!   ([`terminal`], with the fields of a form in [`form`]) or by `--yes`;
//! - [`print`]: the result, on stdout and stderr.

mod args;
mod client;
mod form;
mod print;
mod terminal;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CancelledNotificationParam, ClientRequest, Request, ServerResult};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::cli::CallArgs;
use crate::sandbox::descriptors;
use crate::stats::Stats;
use crate::transport::signal::{Signals, wait_for_calls};
use client::ShellClient;

/// How a call from the shell ended, as the process's exit status says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The tool returned a result (exit status 0).
    Done,
    /// An `isError` result, or the call was refused: an unknown tool,
    /// arguments that break its schema, approval declined (exit status 1).
    Failed,
    /// Ctrl-C, SIGINT or SIGTERM (exit status 130).
    Interrupted,
}

impl Ending {
    /// The process's exit status.
    pub fn code(self) -> i32 {
        match self {
            Ending::Done => 0,
            Ending::Failed => 1,
            Ending::Interrupted => 130,
        }
    }
}

/// The least time a cancelled call is given to stop and clean up before
/// `call` exits anyway: the server's shutdown budget.
const STOP_BUDGET: Duration = Duration::from_millis(900);

/// Room for what a frame holds besides a result of `--max-output` bytes:
/// the JSON-RPC envelope and the result's `_meta`.
const FRAME_ROOM: usize = 1 << 20;

/// Calls `args.tool` and prints its result.
pub async fn call(args: &CallArgs) -> Result<Ending> {
    descriptors::raise_limit();
    // Before anything slow: Ctrl-C while loading exits cleanly.
    let mut signals = Signals::listen();
    let stats = Arc::new(Stats::default());
    let mut settings = crate::config::resolve(&args.serve)?;
    // Optimized code, cached, as `inspect` compiles: a one-shot call would
    // exit before the background compile of tiering could cache it.
    settings.server.no_tiering = true;
    // One call in this process: a config file's `http` or `watch` (refused
    // on `call`'s command line) serves nothing here.
    settings.server.http = None;
    settings.server.watch = false;
    let (server, loader) =
        crate::startup::build_server(&mut settings, CancellationToken::new(), stats.clone(), None)?;
    let loading = async {
        crate::startup::pull_components(&mut settings).await?;
        crate::startup::load_components(&server, &loader, &settings).await
    };
    tokio::select! {
        loaded = loading => loaded?,
        () = signals.recv() => {
            crate::log_text::say(format_args!("interrupted while loading"));
            return Ok(Ending::Interrupted);
        }
    }
    // A stopped call may take its grace and its cleanup's time, at most.
    let slowest = settings.components.iter().map(|c| c.limits.cancel_grace + c.limits.cleanup_timeout).max();
    let budget = STOP_BUDGET.max(slowest.unwrap_or_default() + Duration::from_millis(400));

    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let serving = tokio::spawn(async move {
        let running = server.serve(tokio::io::split(server_end)).await?;
        anyhow::Ok(running.waiting().await?)
    });
    // rmcp's client drops a frame past its line cap (16 MiB) and waits on:
    // a result just under `--max-output` is a larger frame, and the call
    // would hang. The server in this process bounds what it sends (the
    // result by `--max-output`, the rest is small), so the client takes
    // that much and some room for the frame around it.
    let largest = settings.components.iter().map(|c| c.limits.max_output).max().unwrap_or_default();
    let (read, write) = tokio::io::split(client_end);
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new(read, write)
        .with_max_line_length(rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH.max(largest + FRAME_ROOM));
    let client = ShellClient::new(args.yes)
        .serve(transport)
        .await
        .context("the in-process MCP session did not start")?;
    let peer = client.peer().clone();
    // The tool's own log records from `warning` up; the rest stays quiet.
    #[allow(deprecated)]
    peer.set_level(rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Warning)).await?;

    let tools = peer.list_all_tools().await?;
    // An unknown tool gets no schema here; the server refuses it by name.
    let schema = tools.iter().find(|tool| tool.name == args.tool).map(|tool| tool.input_schema.clone());
    let mut params = CallToolRequestParams::new(args.tool.clone());
    params.arguments =
        Some(args::tool_arguments(args.arguments.as_ref(), &args.pairs, &schema.unwrap_or_default()));
    let request = ClientRequest::CallToolRequest(Request::new(params));
    let handle = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let id = handle.id.clone();
    let response = handle.await_response();
    tokio::pin!(response);
    let ending = tokio::select! {
        response = &mut response => answer(response, args.json)?,
        () = signals.recv() => {
            crate::log_text::say(format_args!("cancelled; stopping the call…"));
            let reason = Some("interrupted at the terminal (Ctrl-C)".to_string());
            let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), reason)).await;
            // The server stops the tool and runs its cleanup; a second
            // Ctrl-C leaves at once.
            tokio::select! {
                left = wait_for_calls(&stats, budget) => if left > 0 {
                    crate::log_text::say(format_args!("exiting with the call still stopping (its cleanup may not have run)"));
                },
                () = signals.recv() => {}
            }
            return Ok(Ending::Interrupted);
        }
    };
    let _ = client.cancel().await;
    serving.abort();
    Ok(ending)
}

/// Prints the server's answer to the call; how it ended.
fn answer(response: Result<ServerResult, ServiceError>, json: bool) -> Result<Ending> {
    let result = match response {
        Ok(ServerResult::CallToolResult(result)) => result,
        Ok(other) => anyhow::bail!("the server answered the call with something else: {other:?}"),
        Err(ServiceError::McpError(refusal)) => {
            let mut message = refusal.message.to_string();
            // An unknown tool: the ones there are.
            let available = refusal.data.as_ref().and_then(|data| data.get("available"));
            if let Some(Value::Array(names)) = available {
                let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                message.push_str(&format!(" (tools: {})", names.join(", ")));
            }
            crate::log_text::say(format_args!("error: {message}"));
            return Ok(Ending::Failed);
        }
        Err(other) => return Err(other.into()),
    };
    print::result(&result, json)?;
    Ok(if result.is_error == Some(true) { Ending::Failed } else { Ending::Done })
}
