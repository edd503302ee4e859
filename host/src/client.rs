//! The host side of `mcp:tool/client`: what a tool asks of the MCP client
//! during a call — logging, progress, elicitation and sampling.
//!
//! The rule here is that nothing outlives its call. Every request sent to
//! the client is tracked by an `OpenRequest`; when the call is cancelled,
//! times out or is dropped mid-wait, the request is withdrawn with
//! `notifications/cancelled` (rmcp itself sends nothing when a request
//! future is dropped) and the table of open requests goes back to empty.

// Logging and sampling are deprecated in rmcp by SEP-2577 but still part of
// every protocol version this host serves.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, CreateMessageRequestParams, ElicitRequestParams,
    ElicitationAction, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, Request, RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use serde_json::{Value, json};

use crate::bindings::client::{self, ElicitResponse, LogLevel, RequestError};
use crate::bindings::types;
use crate::cancellation::CallCancellation;
use crate::sandbox::CallState;
use crate::stats::{Live, Stats};

/// Per-session state the client controls (one per MCP session).
#[derive(Debug, Default)]
pub struct SessionState {
    /// The minimum level set by `logging/setLevel`; `None` until the client
    /// sets one (then everything from `info` up is sent).
    log_level: Mutex<Option<LoggingLevel>>,
}

impl SessionState {
    /// Records the client's `logging/setLevel`.
    pub fn set_log_level(&self, level: LoggingLevel) {
        *self.log_level.lock().unwrap() = Some(level);
    }

    fn lets_through(&self, level: LoggingLevel) -> bool {
        let minimum = self.log_level.lock().unwrap().unwrap_or(LoggingLevel::Info);
        severity(level) >= severity(minimum)
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A notification waiting to go out.
enum Note {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// Sends one call's notifications in order, from a task of its own, so the
/// guest does not wait for each one to be written (tens of microseconds).
/// The call waits for the queue to drain before its result goes out, so
/// notifications still precede the response.
pub struct Notifier {
    queue: tokio::sync::mpsc::UnboundedSender<Note>,
    sender: tokio::task::JoinHandle<()>,
}

impl Notifier {
    fn start(peer: Peer<RoleServer>) -> Self {
        let (queue, mut pending) = tokio::sync::mpsc::unbounded_channel();
        let sender = tokio::spawn(async move {
            while let Some(note) = pending.recv().await {
                let sent = match note {
                    Note::Progress(note) => peer.notify_progress(note).await,
                    Note::Log(note) => peer.notify_logging_message(note).await,
                };
                if sent.is_err() {
                    break; // the session is gone
                }
            }
        });
        Notifier { queue, sender }
    }

    /// The call returned: deliver what is queued, then stop.
    pub async fn finish(self) {
        drop(self.queue);
        let _ = self.sender.await;
    }

    /// The call was cancelled or stopped: nothing more goes out for it.
    pub fn abandon(self) {
        self.sender.abort();
    }
}

/// How a session's calls may use the client: set from the command line.
#[derive(Clone, Copy, Debug)]
pub struct ClientPolicy {
    /// How long a request to the client (elicitation, sampling) may wait.
    pub request_timeout: Duration,
    /// Requests to the client one call may make (`--max-questions`).
    pub max_requests_per_call: u32,
}

/// One call's line to the MCP client. Calls that have no client (listing
/// tools, cleanup) get a detached link: their requests are `unsupported`.
pub struct ClientLink {
    peer: Option<Peer<RoleServer>>,
    progress_token: Option<ProgressToken>,
    session: Arc<SessionState>,
    policy: ClientPolicy,
    /// Requests this call may still make.
    requests_left: u32,
    stats: Arc<Stats>,
    last_progress: Option<f64>,
    progress_budget: RateLimit,
    log_budget: RateLimit,
    notifier: Option<Notifier>,
    /// Log records and progress reports dropped by the rate limits.
    dropped: u64,
}

impl ClientLink {
    /// How many log records and progress reports the rate limits dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Takes the call's notification sender, if it sent any notification.
    pub fn take_notifier(&mut self) -> Option<Notifier> {
        self.notifier.take()
    }

    fn notify(&mut self, note: Note) {
        let Some(peer) = &self.peer else { return };
        let notifier = self.notifier.get_or_insert_with(|| Notifier::start(peer.clone()));
        let _ = notifier.queue.send(note);
    }

    /// A link for a call made by a client session.
    pub fn new(
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        session: Arc<SessionState>,
        policy: ClientPolicy,
        stats: Arc<Stats>,
    ) -> Self {
        ClientLink {
            peer: Some(peer),
            progress_token,
            session,
            policy,
            requests_left: policy.max_requests_per_call,
            stats,
            last_progress: None,
            progress_budget: RateLimit::new(20, 20.0),
            log_budget: RateLimit::new(50, 50.0),
            notifier: None,
            dropped: 0,
        }
    }

    /// A link to nobody, for stores that serve no client request.
    pub fn detached(stats: Arc<Stats>) -> Self {
        ClientLink {
            peer: None,
            progress_token: None,
            session: Arc::default(),
            policy: ClientPolicy { request_timeout: Duration::ZERO, max_requests_per_call: 0 },
            requests_left: 0,
            stats,
            last_progress: None,
            progress_budget: RateLimit::new(0, 0.0),
            // Listing and cleanup still get to log to stderr, within reason.
            log_budget: RateLimit::new(50, 50.0),
            notifier: None,
            dropped: 0,
        }
    }

    /// Sends `request` and waits for the answer, withdrawing it from the
    /// client if the call is cancelled or the answer takes too long.
    async fn request(
        &mut self,
        request: ServerRequest,
        cancellation: &CallCancellation,
    ) -> Result<ClientResult, RequestError> {
        let peer = self.peer.as_ref().ok_or(RequestError::Unsupported)?;
        if cancellation.is_cancelled() {
            return Err(RequestError::Cancelled);
        }
        // A tool must not pester the user: questions per call are bounded.
        if self.requests_left == 0 {
            return Err(RequestError::Failed(format!(
                "this call already asked the client {} questions, the most one call may ask (--max-questions)",
                self.policy.max_requests_per_call
            )));
        }
        self.requests_left -= 1;
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|err| RequestError::Failed(format!("cannot send the request: {err}")))?;
        let mut open = OpenRequest::new(peer.clone(), handle.id.clone(), &self.stats);
        let answer = tokio::select! {
            biased;
            answer = handle.await_response() => answer,
            () = cancellation.cancelled() => {
                open.withdraw("the tool call was cancelled").await;
                return Err(RequestError::Cancelled);
            }
            () = tokio::time::sleep(self.policy.request_timeout) => {
                open.withdraw("no answer within the host's --elicitation-timeout").await;
                return Err(RequestError::TimedOut);
            }
        };
        open.answered();
        answer.map_err(|err| RequestError::Failed(err.to_string()))
    }

    fn supports_elicitation(&self, url: bool) -> bool {
        let Some(peer) = &self.peer else { return false };
        let modes = peer.supported_elicitation_modes();
        modes.contains(if url {
            &rmcp::service::ElicitationMode::Url
        } else {
            &rmcp::service::ElicitationMode::Form
        })
    }

    fn supports_sampling(&self) -> bool {
        self.peer
            .as_ref()
            .and_then(|peer| peer.peer_info())
            .is_some_and(|info| info.capabilities.sampling.is_some())
    }
}

/// A request sent to the client and not yet answered. Counted as open until
/// answered or withdrawn; dropped while open (the call was stopped by force
/// mid-wait), it withdraws itself.
struct OpenRequest {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
    _open: Live,
}

impl OpenRequest {
    fn new(peer: Peer<RoleServer>, id: RequestId, stats: &Arc<Stats>) -> Self {
        OpenRequest { peer, id: Some(id), _open: stats.client_request() }
    }

    /// Tells the client to drop the request; it is no longer open.
    async fn withdraw(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let notice = CancelledNotificationParam::new(Some(id), Some(reason.to_string()));
            if let Err(err) = self.peer.notify_cancelled(notice).await {
                tracing::debug!("could not withdraw a request from the client: {err}");
            }
        }
    }

    /// The client answered; nothing to withdraw.
    fn answered(&mut self) {
        self.id = None;
    }
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        // Dropped while still open: the call future was abandoned (forced
        // stop). Withdraw from a task of its own, since drop cannot wait.
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            let notice =
                CancelledNotificationParam::new(Some(id), Some("the tool call was stopped".to_string()));
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = peer.notify_cancelled(notice).await;
                });
            }
        }
    }
}

/// A token bucket: bursts up to `burst`, then `per_second` on average.
struct RateLimit {
    burst: f64,
    per_second: f64,
    tokens: f64,
    refilled: Instant,
}

impl RateLimit {
    fn new(burst: u32, per_second: f64) -> Self {
        RateLimit { burst: burst.into(), per_second, tokens: burst.into(), refilled: Instant::now() }
    }

    fn allow(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.refilled).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl types::Host for CallState {}

impl client::Host for CallState {
    async fn log(&mut self, level: LogLevel, logger: Option<String>, data: String) -> wasmtime::Result<()> {
        // One budget for both destinations: a flooding tool must not flood
        // the host's stderr either.
        if !self.client.log_budget.allow() {
            self.client.dropped += 1;
            return Ok(());
        }
        let call_id = &*self.call_id;
        let name = logger.as_deref().unwrap_or("tool");
        match level {
            LogLevel::Debug => tracing::debug!(target: "tool", call_id, logger = name, "{data}"),
            LogLevel::Info | LogLevel::Notice => {
                tracing::info!(target: "tool", call_id, logger = name, "{data}")
            }
            LogLevel::Warning => tracing::warn!(target: "tool", call_id, logger = name, "{data}"),
            _ => tracing::error!(target: "tool", call_id, logger = name, "{data}"),
        }
        let level = mcp_level(level);
        let link = &mut self.client;
        if link.peer.is_none() || self.cancellation.is_cancelled() || !link.session.lets_through(level) {
            return Ok(());
        }
        // Data the guest claims is JSON but is not goes out as a string.
        let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
        let mut message = LoggingMessageNotificationParam::new(level, data);
        message.logger = logger;
        link.notify(Note::Log(message));
        Ok(())
    }

    async fn progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> wasmtime::Result<()> {
        let link = &mut self.client;
        let (Some(_), Some(token)) = (&link.peer, &link.progress_token) else { return Ok(()) };
        if self.cancellation.is_cancelled() || !progress.is_finite() {
            return Ok(());
        }
        if link.last_progress.is_some_and(|last| progress <= last) {
            tracing::debug!(call_id = &*self.call_id, progress, "dropped progress that does not increase");
            return Ok(());
        }
        let done = total.is_some_and(|total| progress >= total);
        // The final report always goes out; the ones before it may be thinned.
        if !done && !link.progress_budget.allow() {
            link.dropped += 1;
            return Ok(());
        }
        link.last_progress = Some(progress);
        let mut note = ProgressNotificationParam::new(token.clone(), progress);
        if let Some(total) = total {
            note = note.with_total(total);
        }
        if let Some(message) = message {
            note = note.with_message(message);
        }
        link.notify(Note::Progress(note));
        Ok(())
    }

    async fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> wasmtime::Result<Result<ElicitResponse, RequestError>> {
        if !self.client.supports_elicitation(false) {
            return Ok(Err(RequestError::Unsupported));
        }
        let schema: Value = match serde_json::from_str(&requested_schema) {
            Ok(schema) => schema,
            Err(err) => return Ok(Err(RequestError::Failed(format!("requested-schema is not JSON: {err}")))),
        };
        let params = json!({ "mode": "form", "message": message, "requestedSchema": schema });
        let params: ElicitRequestParams = match serde_json::from_value(params) {
            Ok(params) => params,
            Err(err) => {
                return Ok(Err(RequestError::Failed(format!(
                    "requested-schema is not a schema MCP elicitation allows: {err}"
                ))));
            }
        };
        Ok(self.elicit_with(params).await)
    }

    async fn elicit_url(
        &mut self,
        message: String,
        url: String,
    ) -> wasmtime::Result<Result<ElicitResponse, RequestError>> {
        if !self.client.supports_elicitation(true) {
            return Ok(Err(RequestError::Unsupported));
        }
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: format!("{}-{}", self.call_id, next_elicitation_id()),
        };
        Ok(self.elicit_with(params).await)
    }

    async fn sample(&mut self, request: String) -> wasmtime::Result<Result<String, RequestError>> {
        if !self.client.supports_sampling() {
            return Ok(Err(RequestError::Unsupported));
        }
        let params: CreateMessageRequestParams = match serde_json::from_str(&request) {
            Ok(params) => params,
            Err(err) => {
                return Ok(Err(RequestError::Failed(format!("not a sampling/createMessage request: {err}"))));
            }
        };
        let request = ServerRequest::CreateMessageRequest(Request::new(params));
        Ok(match self.client.request(request, &self.cancellation).await {
            Ok(ClientResult::CreateMessageResult(result)) => Ok(serde_json::to_string(&result)?),
            Ok(other) => Err(RequestError::Failed(format!("unexpected answer to sampling: {other:?}"))),
            Err(err) => Err(err),
        })
    }
}

impl CallState {
    async fn elicit_with(&mut self, params: ElicitRequestParams) -> Result<ElicitResponse, RequestError> {
        let request = ServerRequest::ElicitRequest(Request::new(params));
        match self.client.request(request, &self.cancellation).await? {
            ClientResult::ElicitResult(result) => Ok(match result.action {
                ElicitationAction::Accept => {
                    ElicitResponse::Accept(result.content.unwrap_or_else(|| json!({})).to_string())
                }
                ElicitationAction::Decline => ElicitResponse::Decline,
                // Cancel, and any action a later protocol adds: not an answer.
                _ => ElicitResponse::Cancel,
            }),
            other => Err(RequestError::Failed(format!("unexpected answer to elicitation: {other:?}"))),
        }
    }
}

fn next_elicitation_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}
