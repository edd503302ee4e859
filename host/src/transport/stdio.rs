//! Serving over stdin/stdout. stdout carries protocol frames only, and
//! every line on stdin gets an answer, an error for one the host cannot
//! read ([`StdioFrames`]).
//!
//! The client closing stdin ends the session: the requests already received
//! are answered within `--eof-drain` (after the components load), then
//! whatever still runs is stopped and cleaned up as a cancelled call is
//! ([`stdio_end`](super::stdio_end)). A signal stops every call at once.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use rmcp::ServiceExt as _;
use tokio_util::sync::CancellationToken;

use crate::audit::Drain;
use crate::mcp::{Served, ToolServer};
use crate::stats::Stats;
use crate::transport::signal::{Signals, drain_calls};
use crate::transport::stdio_end::{Ending, Ledger};
use crate::transport::stdio_frames::StdioFrames;
use crate::transport::stdio_streams;

/// Serves over stdin/stdout until the client disconnects or a signal arrives.
/// Every in-flight call is stopped and cleaned up before this returns.
pub(crate) async fn serve(
    server: ToolServer,
    mut signals: Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
    eof_drain: Duration,
    max_request_memory: usize,
) -> Result<()> {
    // On the reactor, not the blocking pool: no thread hand-off per frame.
    let (input, output) = stdio_streams::streams();
    let ledger = Arc::new(Ledger::new(shutdown.clone(), max_request_memory));
    let audit = stats.audit().clone();
    let ending = Ending::new(ledger, eof_drain, server.loaded(), shutdown.clone(), audit.clone());
    let running = tokio::select! {
        running = Served(server).serve(StdioFrames::new(input, output, ending)) => {
            running.context("the MCP session did not start")?
        }
        () = signals.recv() => {
            audit.drain(Drain::Signal);
            return Ok(());
        }
    };
    // Keep the session alive while calls stop: dropping it would make rmcp
    // cancel every request as if the client had, before shutdown is seen.
    let session = running.waiting();
    tokio::pin!(session);
    tokio::select! {
        quit = &mut session => {
            tracing::info!(reason = ?quit.ok(), "session ended");
        }
        // The session's loop runs on: the stopped calls' answers go out.
        () = signals.recv() => {
            audit.drain(Drain::Signal);
            shutdown.cancel();
        }
    }
    // Whatever ended the session, stop what is still running and give the
    // calls a bounded time to stop and clean up.
    shutdown.cancel();
    drain_calls(&stats).await;
    Ok(())
}
