//! Serving over stdin/stdout. stdout carries protocol frames only, and
//! every line on stdin gets an answer, an error for one the host cannot
//! read ([`StdioFrames`]).
//!
//! The client closing stdin stops the host: every in-flight call is stopped
//! and cleaned up the same way a cancelled call is. rmcp alone would keep
//! in-flight calls running for up to five seconds after stdin closes;
//! watching the stream ourselves avoids that.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::{Context as _, Result};
use rmcp::ServiceExt as _;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::mcp::ToolServer;
use crate::stats::Stats;
use crate::transport::signal::{Signals, drain_calls};
use crate::transport::stdio_frames::StdioFrames;
use crate::transport::stdio_streams;

/// Serves over stdin/stdout until the client disconnects or a signal arrives.
/// Every in-flight call is stopped and cleaned up before this returns.
pub(crate) async fn serve(
    server: ToolServer,
    mut signals: Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    // On the reactor, not the blocking pool: no thread hand-off per frame.
    let (input, output) = stdio_streams::streams();
    let input = EofWatch::new(input, shutdown.clone());
    let running = tokio::select! {
        running = server.serve(StdioFrames::new(input, output)) => {
            running.context("the MCP session did not start")?
        }
        () = signals.recv() => return Ok(()),
    };
    // Keep the session alive while calls stop: dropping it would make rmcp
    // cancel every request as if the client had, before shutdown is seen.
    let session = running.waiting();
    tokio::pin!(session);
    tokio::select! {
        quit = &mut session => {
            tracing::info!(reason = ?quit.ok(), "session ended");
        }
        () = signals.recv() => shutdown.cancel(),
    }
    // Whatever ended the session, stop what is still running and give the
    // calls a bounded time to stop and clean up.
    shutdown.cancel();
    drain_calls(&stats).await;
    Ok(())
}

/// Wraps the server's input stream and fires `shutdown` when it ends.
pub(crate) struct EofWatch<R> {
    inner: R,
    shutdown: CancellationToken,
}

impl<R> EofWatch<R> {
    /// Watches `inner`; `shutdown` fires at end of stream or on a read error.
    pub(crate) fn new(inner: R, shutdown: CancellationToken) -> Self {
        Self { inner, shutdown }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofWatch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &poll {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            tracing::info!("input closed; stopping every call");
            self.shutdown.cancel();
        }
        poll
    }
}
