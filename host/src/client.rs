//! The host side of `mcp:tool/client`: what a tool asks of the MCP client
//! during a call — logging, progress, elicitation and sampling.
//!
//! The rule here is that nothing outlives its call. Every request sent to
//! the client is tracked by an `OpenRequest`; when the call is cancelled,
//! times out or is dropped mid-wait, the request is withdrawn with
//! `notifications/cancelled` (rmcp itself sends nothing when a request
//! future is dropped) and the table of open requests goes back to empty.
//!
//! Questions (elicitation, sampling, approval) reach the user one of three
//! ways, chosen per call by the session ([`Asker`]): as requests to the
//! client (up to protocol 2025-11-25), as a paused result that a later
//! `tools/call` answers (2026-07-28), or as a task's `input_required`
//! status answered by `tasks/update`. Every wait is bounded, and a paused
//! call counts against `--max-paused`.
//!
//! Everything a tool sends has a size: a log record's data and a progress
//! message are cut to `--max-log-record`, a question larger than
//! `--max-question` fails before it reaches the client, and one call's
//! notifications are bounded in bytes (`--max-notification-bytes`), in
//! number (a queue of [`crate::notify::QUEUED_NOTES`]) and in time (the call's deadline).

// Logging and sampling are deprecated in rmcp by SEP-2577 but still part of
// every protocol version this host serves.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    Request, RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use rmcp::task_manager::TaskContext;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalQuestion, verdict};
use crate::bindings::client::{self, ElicitResponse, LogLevel, RequestError};
use crate::bindings::types;
use crate::cancellation::CallCancellation;
use crate::guest_output::escape_controls;
use crate::limits::{CallLimits, HumanBytes, cut_to};
use crate::notify::{Note, Notifier, RateLimit};
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

/// The longest logger name a log record keeps.
const LONGEST_LOGGER: usize = 256;

/// What a progress report costs against the notification budget besides its
/// message (the numbers and the token).
const PROGRESS_OVERHEAD: usize = 64;

/// What a call's guest may send the client, in bytes: its component's
/// limits.
#[derive(Clone, Copy, Debug)]
struct PayloadCaps {
    log_record: usize,
    question: usize,
    notification_bytes: usize,
}

impl From<&CallLimits> for PayloadCaps {
    fn from(limits: &CallLimits) -> Self {
        PayloadCaps {
            log_record: limits.max_log_record,
            question: limits.max_question,
            notification_bytes: limits.max_notification_bytes,
        }
    }
}

/// How a session's calls may use the client: set from the command line.
#[derive(Clone, Debug)]
pub struct ClientPolicy {
    /// How long a request to the client (elicitation, sampling) may wait.
    pub request_timeout: Duration,
    /// Requests to the client one call may make (`--max-questions`).
    pub max_requests_per_call: u32,
    /// How long a call waits for approval, and the longest any pause lasts.
    pub approval_timeout: Duration,
    /// One permit per call allowed to wait for the user at once (`--max-paused`).
    pub paused_slots: Arc<Semaphore>,
}

impl ClientPolicy {
    fn detached() -> Self {
        ClientPolicy {
            request_timeout: Duration::ZERO,
            max_requests_per_call: 0,
            approval_timeout: Duration::ZERO,
            paused_slots: Arc::new(Semaphore::new(0)),
        }
    }
}

/// How a call's questions (elicitation, sampling, approval) reach the user.
pub enum Asker {
    /// As requests to the client (`elicitation/create`, ...), withdrawn with
    /// `notifications/cancelled` when the call stops. Sessions up to 2025-11-25.
    Requests,
    /// In the call's result: the call pauses, and a later `tools/call`
    /// carrying the answer resumes it (protocol 2026-07-28, where servers
    /// send clients no requests).
    Rounds(mpsc::UnboundedSender<Pause>),
    /// As the task's `input_required` status, answered by `tasks/update`.
    /// The token stops the call when a question's lease runs out (rmcp
    /// cannot withdraw one pending input, so the task must end instead).
    Task(TaskContext, CancellationToken),
}

/// A call paused for the user: what to ask, and where the answer goes.
pub struct Pause {
    /// The key the client answers under (`inputResponses`).
    pub key: String,
    /// The question.
    pub request: InputRequest,
    /// Takes the client's answer (a JSON result, e.g. an `ElicitResult`).
    /// Dropped unanswered when the pause's lease runs out.
    pub answer: oneshot::Sender<Value>,
    /// How long the call may stay paused for this answer.
    pub lease: Duration,
}

/// Who the call is and what the user decided about it up front.
#[derive(Clone, Debug)]
pub struct CallIdentity {
    /// The tool being called.
    pub tool: String,
    /// The user approved this tool up front (`--no-approval`).
    pub pre_approved: bool,
}

/// A question for the user, before it is sent one way or another.
enum Question {
    Elicit(ElicitRequestParams),
    Sample(CreateMessageRequestParams),
}

/// How long one question may wait, and what it counts as.
#[derive(Clone, Copy)]
struct Wait {
    timeout: Duration,
    /// The flag that sets `timeout`, for messages.
    flag: &'static str,
    /// An approval: always counted as a paused call.
    approval: bool,
}

/// One call's line to the MCP client. Calls that have no client (listing
/// tools, cleanup) get a detached link: their requests are `unsupported`.
pub struct ClientLink {
    peer: Option<Peer<RoleServer>>,
    /// What the client declared it can do (elicitation, sampling).
    capabilities: Option<ClientCapabilities>,
    asker: Asker,
    identity: CallIdentity,
    /// Questions asked so far, for unique keys.
    asked: u32,
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
    /// Log records and progress reports dropped: by the rate limits, the
    /// byte budget or a full queue.
    dropped: u64,
    caps: PayloadCaps,
    /// Bytes of notifications queued so far, against `caps.notification_bytes`.
    notified_bytes: usize,
}

impl ClientLink {
    /// How many log records and progress reports were dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Takes the call's notification sender, if it sent any notification.
    pub fn take_notifier(&mut self) -> Option<Notifier> {
        self.notifier.take()
    }

    /// Applies the size limits of the call's component.
    pub fn limit_payloads(&mut self, limits: &CallLimits) {
        self.caps = limits.into();
    }

    /// Queues `note` (`size` bytes, as counted against the budget), or
    /// drops and counts it when the budget or the queue is full.
    fn notify(&mut self, note: Note, size: usize) {
        let Some(peer) = &self.peer else { return };
        if self.notified_bytes.saturating_add(size) > self.caps.notification_bytes {
            if self.notified_bytes <= self.caps.notification_bytes {
                tracing::debug!(
                    tool = %self.identity.tool,
                    "notifications past --max-notification-bytes ({}) are dropped",
                    HumanBytes(self.caps.notification_bytes)
                );
                // Said once: from here on the budget counts as spent.
                self.notified_bytes = self.caps.notification_bytes + 1;
            }
            self.dropped += 1;
            return;
        }
        let notifier = self.notifier.get_or_insert_with(|| Notifier::to_peer(peer.clone()));
        if notifier.offer(note) {
            self.notified_bytes += size;
        } else {
            self.dropped += 1;
        }
    }

    /// Fails a question of `size` bytes that is over `--max-question`.
    fn check_question(&self, size: usize) -> Result<(), RequestError> {
        if size <= self.caps.question {
            return Ok(());
        }
        Err(RequestError::Failed(format!(
            "the question is {}, larger than the limit of {} (--max-question); it was not sent",
            HumanBytes(size),
            HumanBytes(self.caps.question)
        )))
    }

    /// A link for a call made by a client session.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        peer: Peer<RoleServer>,
        capabilities: Option<ClientCapabilities>,
        asker: Asker,
        identity: CallIdentity,
        progress_token: Option<ProgressToken>,
        session: Arc<SessionState>,
        policy: ClientPolicy,
        stats: Arc<Stats>,
    ) -> Self {
        ClientLink {
            peer: Some(peer),
            capabilities,
            asker,
            identity,
            asked: 0,
            progress_token,
            session,
            requests_left: policy.max_requests_per_call,
            policy,
            stats,
            last_progress: None,
            progress_budget: RateLimit::new(20, 20.0),
            log_budget: RateLimit::new(50, 50.0),
            notifier: None,
            dropped: 0,
            caps: (&CallLimits::default()).into(),
            notified_bytes: 0,
        }
    }

    /// A link to nobody, for stores that serve no client request.
    pub fn detached(stats: Arc<Stats>) -> Self {
        ClientLink {
            peer: None,
            capabilities: None,
            asker: Asker::Requests,
            identity: CallIdentity { tool: String::new(), pre_approved: false },
            asked: 0,
            progress_token: None,
            session: Arc::default(),
            policy: ClientPolicy::detached(),
            requests_left: 0,
            stats,
            last_progress: None,
            progress_budget: RateLimit::new(0, 0.0),
            // Listing and cleanup still get to log to stderr, within reason.
            log_budget: RateLimit::new(50, 50.0),
            notifier: None,
            dropped: 0,
            caps: (&CallLimits::default()).into(),
            notified_bytes: 0,
        }
    }

    /// Puts `question` to the user the way this session allows and waits,
    /// bounded by `wait`, for the answer (the client's result as JSON). A
    /// request sent to the client is withdrawn if the call is cancelled or
    /// the wait runs out.
    async fn ask(
        &mut self,
        question: Question,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Result<Value, RequestError> {
        if self.peer.is_none() {
            return Err(RequestError::Unsupported);
        }
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
        self.asked += 1;
        let deferred = !matches!(self.asker, Asker::Requests);
        // A call waiting on the user holds a paused slot for the wait.
        let _paused = if wait.approval || deferred { Some(self.pause_slot()?) } else { None };
        if deferred {
            // A pause outlives this request's wait: no longer than the approval timeout.
            let timeout = wait.timeout.min(self.policy.approval_timeout);
            let flag = if timeout < wait.timeout { "--approval-timeout" } else { wait.flag };
            return self.ask_deferred(question, cancellation, Wait { timeout, flag, ..wait }).await;
        }
        let request = match question {
            Question::Elicit(params) => ServerRequest::ElicitRequest(Request::new(params)),
            Question::Sample(params) => ServerRequest::CreateMessageRequest(Request::new(params)),
        };
        let peer = self.peer.as_ref().ok_or(RequestError::Unsupported)?;
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
            () = tokio::time::sleep(wait.timeout) => {
                open.withdraw(&format!("no answer within the host's {}", wait.flag)).await;
                return Err(RequestError::TimedOut);
            }
        };
        open.answered();
        match answer.map_err(|err| RequestError::Failed(err.to_string()))? {
            ClientResult::ElicitResult(result) => Ok(serde_json::to_value(result).unwrap_or_default()),
            ClientResult::CreateMessageResult(result) => Ok(serde_json::to_value(result).unwrap_or_default()),
            other => Err(RequestError::Failed(format!("unexpected answer from the client: {other:?}"))),
        }
    }

    /// Asks through the call's result or task status, and waits for the
    /// answer a later request brings.
    async fn ask_deferred(
        &mut self,
        question: Question,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Result<Value, RequestError> {
        let key = format!("{}-{}", if wait.approval { "approval" } else { "question" }, self.asked);
        let request = match question {
            Question::Elicit(params) => InputRequest::Elicitation(ElicitRequest::new(params)),
            Question::Sample(params) => InputRequest::CreateMessage(CreateMessageRequest::new(params)),
        };
        let answer = match &self.asker {
            Asker::Requests => unreachable!("deferred questions only"),
            Asker::Rounds(pauses) => {
                let (answer, answered) = oneshot::channel();
                if pauses.send(Pause { key, request, answer, lease: wait.timeout }).is_err() {
                    return Err(RequestError::Failed("the call can no longer be paused".into()));
                }
                // The request that brought the call is answered now: its
                // progress token is spent.
                self.progress_token = None;
                // The lease is the only clock: when it runs out the call is
                // stopped (and cleaned up), not left running unasked.
                tokio::select! {
                    biased;
                    () = cancellation.cancelled() => Err(RequestError::Cancelled),
                    answer = answered => answer.map_err(|_| RequestError::TimedOut),
                }
            }
            Asker::Task(task, unanswered) => tokio::select! {
                biased;
                answer = task.request_input(key, request) => answer.map_err(|_| RequestError::Cancelled),
                () = cancellation.cancelled() => Err(RequestError::Cancelled),
                () = tokio::time::sleep(wait.timeout) => {
                    // As on 2026-07-28: the lease ran out, so the call is
                    // stopped (reason `no-answer`) and cleaned up; the task
                    // ends rather than showing a question nobody will answer.
                    unanswered.cancel();
                    cancellation.cancelled().await;
                    Err(RequestError::TimedOut)
                }
            },
        };
        if let Err(RequestError::TimedOut) = &answer {
            tracing::info!(tool = %self.identity.tool, "no answer within {}", wait.flag);
        }
        answer
    }

    /// The wait for an elicitation or sampling question.
    fn question_wait(&self) -> Wait {
        Wait { timeout: self.policy.request_timeout, flag: "--elicitation-timeout", approval: false }
    }

    /// A slot among the `--max-paused` calls that may wait for the user.
    fn pause_slot(&self) -> Result<(OwnedSemaphorePermit, Live), RequestError> {
        match self.policy.paused_slots.clone().try_acquire_owned() {
            Ok(permit) => Ok((permit, self.stats.paused())),
            Err(_) => Err(RequestError::Failed(
                "too many calls are already waiting for the user (--max-paused)".into(),
            )),
        }
    }

    /// Asks the user to approve `question`. `Ok` only for an explicit yes;
    /// everything else (no, dismissed, no answer in time, cancelled, no way
    /// to ask) is `Err` saying why. Fails closed.
    pub async fn approve(
        &mut self,
        question: ApprovalQuestion,
        cancellation: &CallCancellation,
    ) -> Result<(), String> {
        let tool = &question.tool;
        if !self.elicitation_modes().0 {
            return Err(format!(
                "this client cannot ask the user for approval (it declared no form elicitation support); \
                 to let `{tool}` run without asking, start mcp-wasm-host with `--no-approval {tool}`"
            ));
        }
        let params = form_params(question.message, ApprovalQuestion::requested_schema())
            .map_err(|err| format!("cannot word the approval request: {err}"))?;
        let wait = Wait { timeout: self.policy.approval_timeout, flag: "--approval-timeout", approval: true };
        match self.ask(Question::Elicit(params), cancellation, wait).await {
            Ok(answer) => match serde_json::from_value::<ElicitResult>(answer) {
                Ok(answer) => verdict(&answer),
                Err(err) => Err(format!("the client's answer to the approval request is malformed: {err}")),
            },
            Err(RequestError::TimedOut) => Err(format!(
                "no answer within --approval-timeout ({:?}), so it was declined",
                self.policy.approval_timeout
            )),
            Err(RequestError::Cancelled) => Err("the call was cancelled while waiting for approval".into()),
            Err(RequestError::Unsupported) => Err("there is no client to ask".into()),
            Err(RequestError::Failed(why)) => Err(format!("the approval request failed: {why}")),
        }
    }

    /// The elicitation modes the client declared: (form, url).
    fn elicitation_modes(&self) -> (bool, bool) {
        if self.peer.is_none() {
            return (false, false);
        }
        let Some(elicitation) = self.capabilities.as_ref().and_then(|caps| caps.elicitation.as_ref()) else {
            return (false, false);
        };
        // A client that names neither mode supports forms (2025-06-18 style).
        if elicitation.form.is_none() && elicitation.url.is_none() {
            return (true, false);
        }
        (elicitation.form.is_some(), elicitation.url.is_some())
    }

    fn supports_sampling(&self) -> bool {
        self.peer.is_some() && self.capabilities.as_ref().is_some_and(|caps| caps.sampling.is_some())
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

impl types::Host for CallState {}

impl client::Host for CallState {
    async fn log(&mut self, level: LogLevel, logger: Option<String>, data: String) -> wasmtime::Result<()> {
        // One budget for both destinations: a flooding tool must not flood
        // the host's stderr either.
        if !self.client.log_budget.allow() {
            self.client.dropped += 1;
            return Ok(());
        }
        let cut = data.len() > self.client.caps.log_record;
        let data = cut_to(data, self.client.caps.log_record);
        let logger = logger.map(|name| cut_to(name, LONGEST_LOGGER));
        {
            // Escaped: a record cannot end the host's log line or move the cursor.
            let call_id = &*self.call_id;
            let name = escape_controls(logger.as_deref().unwrap_or("tool"));
            let text = escape_controls(&data);
            match level {
                LogLevel::Debug => tracing::debug!(target: "tool", call_id, logger = %name, "{text}"),
                LogLevel::Info | LogLevel::Notice => {
                    tracing::info!(target: "tool", call_id, logger = %name, "{text}")
                }
                LogLevel::Warning => tracing::warn!(target: "tool", call_id, logger = %name, "{text}"),
                _ => tracing::error!(target: "tool", call_id, logger = %name, "{text}"),
            }
        }
        let level = mcp_level(level);
        let link = &mut self.client;
        if link.peer.is_none() || self.cancellation.is_cancelled() || !link.session.lets_through(level) {
            return Ok(());
        }
        let size = data.len() + logger.as_ref().map_or(0, String::len);
        // Data the guest claims is JSON but is not, or JSON that was cut,
        // goes out as a string.
        let data = if cut {
            Value::String(data)
        } else {
            serde_json::from_str(&data).unwrap_or(Value::String(data))
        };
        let mut message = LoggingMessageNotificationParam::new(level, data);
        message.logger = logger;
        link.notify(Note::Log(message), size);
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
        let mut size = PROGRESS_OVERHEAD;
        if let Some(message) = message {
            let message = cut_to(message, link.caps.log_record);
            size += message.len();
            note = note.with_message(message);
        }
        link.notify(Note::Progress(note), size);
        Ok(())
    }

    async fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> wasmtime::Result<Result<ElicitResponse, RequestError>> {
        if let Err(too_large) = self.client.check_question(message.len() + requested_schema.len()) {
            return Ok(Err(too_large));
        }
        if !self.client.elicitation_modes().0 {
            return Ok(Err(RequestError::Unsupported));
        }
        let schema: Value = match serde_json::from_str(&requested_schema) {
            Ok(schema) => schema,
            Err(err) => return Ok(Err(RequestError::Failed(format!("requested-schema is not JSON: {err}")))),
        };
        let params = match form_params(message, schema) {
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
        if let Err(too_large) = self.client.check_question(message.len() + url.len()) {
            return Ok(Err(too_large));
        }
        if !self.client.elicitation_modes().1 {
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
        if let Err(too_large) = self.client.check_question(request.len()) {
            return Ok(Err(too_large));
        }
        if !self.client.supports_sampling() {
            return Ok(Err(RequestError::Unsupported));
        }
        let params: CreateMessageRequestParams = match serde_json::from_str(&request) {
            Ok(params) => params,
            Err(err) => {
                return Ok(Err(RequestError::Failed(format!("not a sampling/createMessage request: {err}"))));
            }
        };
        let wait = self.client.question_wait();
        Ok(self
            .client
            .ask(Question::Sample(params), &self.cancellation, wait)
            .await
            .map(|answer| answer.to_string()))
    }

    async fn request_approval(&mut self, operation: String) -> wasmtime::Result<Result<(), String>> {
        if self.client.identity.pre_approved {
            return Ok(Ok(()));
        }
        // The question quotes the operation cut to a few hundred characters;
        // the log line quotes the same words, escaped.
        let question = ApprovalQuestion::for_operation(&self.client.identity.tool, &operation);
        let shown = escape_controls(&question.message).into_owned();
        let verdict = self.client.approve(question, &self.cancellation).await;
        tracing::info!(call_id = &*self.call_id, approved = verdict.is_ok(), "mid-call approval: {shown}");
        Ok(verdict)
    }
}

impl CallState {
    async fn elicit_with(&mut self, params: ElicitRequestParams) -> Result<ElicitResponse, RequestError> {
        let wait = self.client.question_wait();
        let answer = self.client.ask(Question::Elicit(params), &self.cancellation, wait).await?;
        let result: ElicitResult = serde_json::from_value(answer)
            .map_err(|err| RequestError::Failed(format!("malformed answer to the elicitation: {err}")))?;
        Ok(match result.action {
            ElicitationAction::Accept => {
                ElicitResponse::Accept(result.content.unwrap_or_else(|| json!({})).to_string())
            }
            ElicitationAction::Decline => ElicitResponse::Decline,
            // Cancel, and any action a later protocol adds: not an answer.
            _ => ElicitResponse::Cancel,
        })
    }
}

/// A form elicitation asking `message` with `schema`; rmcp checks the schema
/// is one MCP elicitation allows (flat, primitive fields).
fn form_params(message: String, schema: Value) -> Result<ElicitRequestParams, serde_json::Error> {
    serde_json::from_value(json!({ "mode": "form", "message": message, "requestedSchema": schema }))
}

fn next_elicitation_id() -> u64 {
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
