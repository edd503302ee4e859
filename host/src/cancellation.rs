//! The stop signal of one tool call.
//!
//! One [`CallCancellation`] is shared by everything that takes part in a
//! call: the MCP side that notices the client's `notifications/cancelled`,
//! the deadline and shutdown watchers, the questions the call has open, and
//! the guest, which sees it as the WIT resource
//! `mcp:tool/cancellation.cancelled` ([`crate::wit::cancellation`]). The
//! first reason to stop wins and is never replaced, so the guest, the
//! cleanup export and the log all agree on why a call ended.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::contract::types::StopReason;

/// The cancellation state of one call; cheap to clone, all clones share it.
#[derive(Clone, Debug, Default)]
pub struct CallCancellation {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Set once, before `token` fires, so a woken waiter always sees a reason.
    stop: OnceLock<(StopReason, Instant)>,
    token: CancellationToken,
}

impl CallCancellation {
    /// A call that has not been asked to stop.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the call to stop. Returns false if it had already been asked
    /// (the first reason is kept).
    pub fn cancel(&self, reason: StopReason) -> bool {
        let first = self.inner.stop.set((reason, Instant::now())).is_ok();
        self.inner.token.cancel();
        first
    }

    /// Whether the call has been asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.inner.token.is_cancelled()
    }

    /// Why the call was asked to stop, if it was.
    pub fn reason(&self) -> Option<StopReason> {
        self.inner.stop.get().map(|(reason, _)| *reason)
    }

    /// When the call was asked to stop, if it was.
    pub fn cancelled_at(&self) -> Option<Instant> {
        self.inner.stop.get().map(|(_, at)| *at)
    }

    /// Resolves once the call is asked to stop.
    pub async fn cancelled(&self) {
        self.inner.token.cancelled().await
    }
}
