//! MCP answers being written: a drain waits for them before the listener
//! closes. A call counts as ended just before its answer goes out, so "no
//! live calls" alone would close connections with the last answers unsent.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::Response;
use hyper::body::{Bytes, Frame, SizeHint};
use tokio::sync::Notify;

use super::Body;

/// How many `POST /mcp` responses are not yet fully written.
#[derive(Default)]
pub(super) struct Answers {
    open: AtomicUsize,
    none_open: Notify,
}

impl Answers {
    /// Counts a response from now until its body is written or dropped.
    pub(super) fn enter(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::SeqCst);
        Open(self.clone())
    }

    /// Waits until every response is written, at most `patience`.
    pub(super) async fn written(&self, patience: Duration) {
        let all_written = async {
            loop {
                let notified = self.none_open.notified();
                if self.open.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(patience, all_written).await;
    }
}

/// One response being answered; counted until dropped.
pub(super) struct Open(Arc<Answers>);

impl Drop for Open {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.none_open.notify_waiters();
        }
    }
}

/// `response`, with `guard` kept until its body is written (hyper drops it
/// then) or abandoned: what a response holds for as long as it is being
/// answered (its count in [`Answers`], its request's body charge).
pub(super) fn keeping<G: Send + Sync + Unpin + 'static>(
    response: Response<Body>,
    guard: G,
) -> Response<Body> {
    response.map(|inner| http_body_util::BodyExt::boxed(Keeping { inner, _guard: guard }))
}

/// A response body that keeps a guard while it lives.
struct Keeping<G> {
    inner: Body,
    _guard: G,
}

impl<G: Send + Sync + Unpin + 'static> hyper::body::Body for Keeping<G> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
