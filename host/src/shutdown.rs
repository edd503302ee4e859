//! Noticing that the host should stop: the client closed stdin, or the
//! process got SIGINT or SIGTERM. Each fires the one shutdown token that
//! every live call watches, so all calls stop (and clean up) the same way a
//! cancelled call does.
//!
//! rmcp alone would keep in-flight calls running for up to five seconds
//! after stdin closes; watching the stream ourselves avoids that.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Wraps the server's input stream and fires `shutdown` when it ends.
pub struct EofWatch<R> {
    inner: R,
    shutdown: CancellationToken,
}

impl<R> EofWatch<R> {
    /// Watches `inner`; `shutdown` fires at end of stream or on a read error.
    pub fn new(inner: R, shutdown: CancellationToken) -> Self {
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

/// Resolves on SIGINT or SIGTERM (Ctrl-C elsewhere).
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM; stopping every call"),
            _ = int.recv() => tracing::info!("SIGINT; stopping every call"),
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
