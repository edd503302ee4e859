//! Whether the components are loaded yet.
//!
//! The host answers `initialize`, `ping` and `server/discover` at once,
//! while its components still compile: a cold start of a large component
//! (an interpreter) takes seconds, longer than some clients wait for their
//! first answer before they give up or fall back to an older handshake.
//! `tools/list` and calls wait here for the tools, bounded by [`LOAD_WAIT`].

use std::time::Duration;

use rmcp::ErrorData as McpError;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long a request waits for the components before it is answered with
/// an error: far beyond a cold compile here (≈15 s for a 19 MB component on
/// 2 cores), short enough that no request hangs on a host that never loads.
pub(crate) const LOAD_WAIT: Duration = Duration::from_secs(120);

/// Set once, when every component is loaded; requests wait on it.
pub(super) struct Loading {
    loaded: watch::Sender<bool>,
}

impl Loading {
    /// Already loaded (`true`), or to be finished with [`Loading::finish`].
    pub(super) fn new(loaded: bool) -> Self {
        Loading { loaded: watch::Sender::new(loaded) }
    }

    /// Whether the tools are there.
    pub(super) fn is_done(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Becomes `true` when every component is loaded.
    pub(super) fn subscribe(&self) -> watch::Receiver<bool> {
        self.loaded.subscribe()
    }

    /// Every component is loaded: waiting requests go on.
    pub(super) fn finish(&self) {
        self.loaded.send_replace(true);
    }

    /// Returns once the tools are loaded; an error if the request is
    /// cancelled first or [`LOAD_WAIT`] passes.
    pub(super) async fn wait(&self, request: &CancellationToken) -> Result<(), McpError> {
        if self.is_done() {
            return Ok(());
        }
        let mut loaded = self.loaded.subscribe();
        tokio::select! {
            done = tokio::time::timeout(LOAD_WAIT, loaded.wait_for(|loaded| *loaded)) => match done {
                Ok(Ok(_)) => Ok(()),
                // The sender lives as long as the server: not reached.
                Ok(Err(_)) => Err(McpError::internal_error("the host stopped while loading its components", None)),
                Err(_) => Err(McpError::internal_error(
                    format!(
                        "the host's components are still loading after {} s (compiling); try again later",
                        LOAD_WAIT.as_secs()
                    ),
                    None,
                )),
            },
            () = request.cancelled() => Err(McpError::internal_error("cancelled while the components loaded", None)),
        }
    }
}
