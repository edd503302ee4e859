//! The stop signal of one tool call.
//!
//! One [`CallCancellation`] is shared by everything that takes part in a
//! call: the MCP handler that notices the client's `notifications/cancelled`,
//! the deadline and shutdown watchers, and the guest, which sees it as the
//! WIT resource `mcp:tool/cancellation.cancelled`. The first reason to stop
//! wins and is never replaced, so the guest, the cleanup export and the log
//! all agree on why a call ended.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynPollable, Pollable};

use crate::bindings::{cancellation, types};
use crate::sandbox::CallState;

/// Why a call is being stopped before it returned by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The client sent `notifications/cancelled` for the request.
    ClientCancelled,
    /// The call ran past `--timeout`.
    DeadlineExceeded,
    /// The host is shutting down (stdin closed, SIGINT or SIGTERM).
    Shutdown,
    /// The call was paused for an answer that did not come before its lease ran out.
    NoAnswer,
    /// The call trapped or hit a fuel, memory or stack limit.
    LimitExceeded,
}

impl StopReason {
    /// A short name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::ClientCancelled => "client-cancelled",
            StopReason::DeadlineExceeded => "deadline-exceeded",
            StopReason::Shutdown => "shutdown",
            StopReason::NoAnswer => "no-answer",
            StopReason::LimitExceeded => "limit-exceeded",
        }
    }
}

impl From<StopReason> for types::StopReason {
    fn from(reason: StopReason) -> Self {
        match reason {
            StopReason::ClientCancelled => types::StopReason::ClientCancelled,
            StopReason::DeadlineExceeded => types::StopReason::DeadlineExceeded,
            StopReason::Shutdown => types::StopReason::Shutdown,
            StopReason::NoAnswer => types::StopReason::NoAnswer,
            StopReason::LimitExceeded => types::StopReason::LimitExceeded,
        }
    }
}

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

/// The host side of the guest's `cancelled` resource.
pub struct GuestCancelled(pub CallCancellation);

#[wasmtime_wasi::async_trait]
impl Pollable for GuestCancelled {
    async fn ready(&mut self) {
        self.0.cancelled().await
    }
}

impl cancellation::Host for CallState {}

impl cancellation::HostCancelled for CallState {
    fn is_cancelled(&mut self, this: Resource<GuestCancelled>) -> wasmtime::Result<bool> {
        Ok(self.table.get(&this)?.0.is_cancelled())
    }

    fn reason(&mut self, this: Resource<GuestCancelled>) -> wasmtime::Result<Option<types::StopReason>> {
        Ok(self.table.get(&this)?.0.reason().map(Into::into))
    }

    fn subscribe(&mut self, this: Resource<GuestCancelled>) -> wasmtime::Result<Resource<DynPollable>> {
        // The pollable borrows the resource; the table keeps the parent alive
        // until every child pollable is dropped.
        wasmtime_wasi::p2::subscribe(&mut self.table, Resource::<GuestCancelled>::new_borrow(this.rep()))
    }

    fn drop(&mut self, this: Resource<GuestCancelled>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}
