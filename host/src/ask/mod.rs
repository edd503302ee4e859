//! A call's channel to the user, through the MCP client: the log records
//! and progress its tool sends, and the questions (elicitation, sampling,
//! approval) it asks.
//!
//! The rule here is that nothing outlives its call. Every request sent to
//! the client is tracked while open; when the call is cancelled, times out
//! or is dropped mid-wait, the request is withdrawn with
//! `notifications/cancelled` (rmcp itself sends nothing when a request
//! future is dropped) and the count of open requests goes back to zero
//! ([`question`]).
//!
//! Questions reach the user one of three ways, chosen per call by the
//! session ([`Delivery`]): as requests to the client (up to protocol
//! 2025-11-25), as a paused result that a later `tools/call` answers
//! (2026-07-28), or as a task's `input_required` status answered by
//! `tasks/update`. Every wait is bounded, and a paused call counts against
//! `--max-paused`.
//!
//! Everything a tool sends has a size: log data and progress messages are
//! cut to `--max-log-record`, a question over `--max-question` fails before
//! it reaches the client (an answer over `--max-answer`, or off its schema,
//! before the guest sees it: [`answer`]), and one call's notifications are
//! bounded in bytes (`--max-notification-bytes`), in number (a queue of
//! [`notify::QUEUED_NOTES`]) and in time (the call's deadline, [`notify`]).

// Logging and sampling are deprecated in rmcp by SEP-2577 but still part of
// every protocol version this host serves.
#![allow(deprecated)]

mod answer;
mod approve;
mod client_asks;
mod log_filter;
mod notify;
mod question;
mod replay;
mod updates;

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, InputRequest, InputResponses, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::Peer;
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

use crate::limits::{CallLimits, HumanBytes};
use crate::log_text::{cut_to, escape_controls};
use crate::request_state::Answered;
use crate::stats::Stats;
use crate::tasks::TaskHandle;
use updates::MAX_UPDATES_PER_CALL;
pub use updates::ResourceUpdates;

pub use answer::{Answer, Asked};
pub use client_asks::{Capability, MissingCapabilities};
pub use log_filter::LogFilter;
pub use notify::Notifier;
pub use question::{AskError, Question, form_params};
pub use replay::AnswerBook;

use client_asks::ClientAsks;
pub(crate) use notify::RequestStream;
use notify::{Note, RateLimit};

/// The longest logger name a log record keeps.
const LONGEST_LOGGER: usize = 256;

/// What a progress report costs the notification budget besides its message.
const PROGRESS_OVERHEAD: usize = 64;

/// What a call's guest may send the client, or be answered, in bytes.
#[derive(Clone, Copy, Debug)]
struct PayloadCaps {
    log_record: usize,
    question: usize,
    answer: usize,
    notification_bytes: usize,
}

impl From<&CallLimits> for PayloadCaps {
    fn from(limits: &CallLimits) -> Self {
        PayloadCaps {
            log_record: limits.max_log_record,
            question: limits.max_question,
            answer: limits.max_answer,
            notification_bytes: limits.max_notification_bytes,
        }
    }
}

/// How calls may put questions to the user: set from the command line.
#[derive(Clone, Debug)]
pub struct AskPolicy {
    /// How long an elicitation or sampling request may wait (`--elicitation-timeout`).
    pub elicitation_timeout: Duration,
    /// Questions one call may ask (`--max-questions`).
    pub max_questions: u32,
    /// How long a call waits for approval, and the longest any pause lasts
    /// (`--approval-timeout`).
    pub approval_timeout: Duration,
    /// One permit per call allowed to wait for the user at once (`--max-paused`).
    pub paused_slots: Arc<Semaphore>,
    /// With `--auth-issuer`: the caller's share of them
    /// (`--max-paused-per-principal`), set per call.
    pub paused_share: Option<Arc<Semaphore>>,
}

impl AskPolicy {
    /// Nothing may be asked: for stores that serve no client request.
    fn nothing() -> Self {
        AskPolicy {
            elicitation_timeout: Duration::ZERO,
            max_questions: 0,
            approval_timeout: Duration::ZERO,
            paused_slots: Arc::new(Semaphore::new(0)),
            paused_share: None,
        }
    }
}

/// How a call's questions (elicitation, sampling, approval) reach the user.
pub enum Delivery {
    /// As requests to the client (`elicitation/create`, ...), withdrawn with
    /// `notifications/cancelled` when the call stops. Sessions up to 2025-11-25.
    Requests,
    /// In the call's result: the call pauses, and a later `tools/call`
    /// carrying the answer resumes it (protocol 2026-07-28, where servers
    /// send clients no requests).
    Rounds(RoundTrips),
    /// As the task's `input_required` status, answered by `tasks/update`;
    /// the call becomes a task at its first question if it is not one yet.
    /// The token stops the call when a question's lease runs out (the
    /// question is withdrawn, and the call ends as unanswered).
    Task(Arc<TaskSlot>, CancellationToken),
}

/// The task a call runs as, made only once the call needs one: when it
/// asks the user something, or runs past the moment a quick call answers
/// in its own response (SEP-2663's immediate result).
#[derive(Default)]
pub struct TaskSlot {
    task: std::sync::OnceLock<TaskHandle>,
    /// A question is waiting for the task: the request that started the
    /// call makes it now (a permit is kept if it is not listening yet).
    wanted: tokio::sync::Notify,
    /// The task was made.
    made: tokio::sync::Notify,
}

impl TaskSlot {
    /// Puts the task the call became in the slot.
    pub fn fill(&self, task: TaskHandle) {
        let _ = self.task.set(task);
        self.made.notify_waiters();
    }

    /// Resolves when a question of the call needs its task.
    pub async fn wanted(&self) {
        self.wanted.notified().await;
    }

    /// The call's task, asking for it to be made if need be.
    async fn task(&self) -> &TaskHandle {
        loop {
            // Listening before looking: a `fill` in between still wakes us.
            let made = self.made.notified();
            if let Some(task) = self.task.get() {
                return task;
            }
            self.wanted.notify_one();
            made.await;
        }
    }
}

/// Sends a call's pauses to the request driving it.
pub type PauseSender = futures_channel::mpsc::UnboundedSender<Box<Pause>>;
/// Where the request driving a call takes its pauses from.
pub type PauseReceiver = futures_channel::mpsc::UnboundedReceiver<Box<Pause>>;

/// Where a call in rounds sends its pauses.
pub struct RoundTrips {
    /// The request driving the call takes its pauses from here. A paused
    /// call holds its channel (10 000 such calls are held at once), and a
    /// call has at most one pause queued: `futures_channel`'s channel is a
    /// few words and a node per message, where tokio's allocates 32 slots
    /// up front (0.8 KiB with the pause boxed, ~10 KiB without).
    pub pauses: PauseSender,
    /// With `--state-key-file`: the answers the call was given before it
    /// was re-run here. A paused call then travels in its sealed state and
    /// stops here, rather than being parked.
    pub book: Option<AnswerBook>,
    /// Fires when the call's pause was handed to the client in a sealed
    /// state: what stops it then is not a cancel.
    pub handed_off: CancellationToken,
    /// Answers the client sent with the call itself (`inputResponses` on a
    /// first request), by the key a tool names in `client.ask`.
    pub given: InputResponses,
}

/// A call paused for the user: what to ask, and where the answers go. A
/// tool may ask several questions at once (`client.ask`); they travel
/// together, in one `input_required` result or task status.
pub struct Pause {
    /// The questions, in the order the tool asked them.
    pub questions: Vec<PausedQuestion>,
    /// The questions answered before these (only kept with a state key).
    pub answered: Vec<Answered>,
    /// How long the call may stay paused for the answers.
    pub lease: Duration,
}

/// One question of a [`Pause`].
pub struct PausedQuestion {
    /// The key the client answers under (`inputResponses`).
    pub key: String,
    /// The question.
    pub request: InputRequest,
    /// The question's digest, to recognise it when the call is re-run
    /// (empty without a state key, where calls are not re-run).
    pub question: String,
    /// Takes the client's answer (a JSON result, e.g. an `ElicitResult`).
    /// Dropped unanswered when the pause's lease runs out.
    pub answer: oneshot::Sender<Value>,
}

/// Who the call is and what the user decided about it up front.
#[derive(Clone, Debug)]
pub struct CallIdentity {
    /// The tool being called.
    pub tool: String,
    /// The user approved this tool up front (`--no-approval`).
    pub pre_approved: bool,
}

/// One call's channel to the user. Calls that have no client (listing
/// tools, cleanup) get a detached channel: their questions are unsupported
/// and their log records go to the host's log only.
pub struct CallChannel {
    peer: Option<Peer<RoleServer>>,
    /// What the client declared it can be asked. Only these three answers
    /// are kept, not the client's whole capabilities: a call paused in
    /// rounds keeps its channel (10 000 such calls are held at once).
    asks: ClientAsks,
    delivery: Delivery,
    identity: CallIdentity,
    /// Questions asked so far, for unique keys.
    asked: u32,
    progress_token: Option<ProgressToken>,
    log_filter: Arc<LogFilter>,
    policy: AskPolicy,
    /// Questions this call may still ask.
    questions_left: u32,
    stats: Arc<Stats>,
    last_progress: Option<f64>,
    progress_budget: RateLimit,
    log_budget: RateLimit,
    notifier: Option<Notifier>,
    /// Where notifications go instead of `peer`, when the host answers the
    /// request itself (its own stream; a shared peer could not route them).
    stream: Option<RequestStream>,
    /// Log records and progress reports dropped: by the rate limits, the
    /// byte budget or a full queue.
    dropped: u64,
    caps: PayloadCaps,
    /// Bytes of notifications queued so far, against `caps.notification_bytes`.
    notified_bytes: usize,
    /// Where the call's `client.resource-updated` goes, if anywhere.
    resource_updates: Option<ResourceUpdates>,
    /// How many more resource updates this call may announce.
    updates_left: u32,
    /// What the call asked for that the client had not declared.
    missing: MissingCapabilities,
}

impl CallChannel {
    /// A channel for a call made by a client session.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        peer: Peer<RoleServer>,
        capabilities: Option<ClientCapabilities>,
        delivery: Delivery,
        identity: CallIdentity,
        progress_token: Option<ProgressToken>,
        log_filter: Arc<LogFilter>,
        policy: AskPolicy,
        stats: Arc<Stats>,
    ) -> Self {
        CallChannel {
            peer: Some(peer),
            asks: ClientAsks::from(capabilities.as_ref()),
            delivery,
            identity,
            asked: 0,
            progress_token,
            log_filter,
            questions_left: policy.max_questions,
            policy,
            stats,
            last_progress: None,
            progress_budget: RateLimit::new(20, 20.0),
            log_budget: RateLimit::new(50, 50.0),
            notifier: None,
            stream: None,
            dropped: 0,
            caps: (&CallLimits::default()).into(),
            notified_bytes: 0,
            resource_updates: None,
            updates_left: MAX_UPDATES_PER_CALL,
            missing: MissingCapabilities::default(),
        }
    }

    /// A channel to nobody, for stores that serve no client request.
    pub fn detached(stats: Arc<Stats>) -> Self {
        CallChannel {
            peer: None,
            asks: ClientAsks::default(),
            delivery: Delivery::Requests,
            identity: CallIdentity { tool: String::new(), pre_approved: false },
            asked: 0,
            progress_token: None,
            log_filter: Arc::default(),
            policy: AskPolicy::nothing(),
            questions_left: 0,
            stats,
            last_progress: None,
            progress_budget: RateLimit::new(0, 0.0),
            // Listing and cleanup still get to log to stderr, within reason.
            log_budget: RateLimit::new(50, 50.0),
            notifier: None,
            stream: None,
            dropped: 0,
            caps: (&CallLimits::default()).into(),
            notified_bytes: 0,
            resource_updates: None,
            updates_left: MAX_UPDATES_PER_CALL,
            missing: MissingCapabilities::default(),
        }
    }

    /// Applies the size limits of the call's component.
    pub fn limit_payloads(&mut self, limits: &CallLimits) {
        self.caps = limits.into();
    }

    /// Who the call is.
    pub fn identity(&self) -> &CallIdentity {
        &self.identity
    }

    /// How many log records and progress reports were dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Sends this call's notifications down `stream`, its request's own
    /// answer, rather than to the peer.
    pub(crate) fn notify_on(&mut self, stream: RequestStream) {
        self.stream = Some(stream);
    }

    /// Takes the call's notification sender, if it sent any notification.
    pub fn take_notifier(&mut self) -> Option<Notifier> {
        self.notifier.take()
    }

    /// A log record from the tool of `call_id`: into the host's log
    /// (escaped, cut) and, unless the call is `stopping` or the client's
    /// filter holds it back (the session's level, or on 2026-07-28 the
    /// request's own), to the client. Rate-limited for both.
    pub fn log(
        &mut self,
        call_id: &str,
        level: LoggingLevel,
        logger: Option<String>,
        data: String,
        stopping: bool,
    ) {
        // One budget for both destinations: a flooding tool must not flood
        // the host's stderr either.
        if !self.log_budget.allow() {
            self.dropped += 1;
            return;
        }
        let cut = data.len() > self.caps.log_record;
        let data = cut_to(data, self.caps.log_record);
        let logger = logger.map(|name| cut_to(name, LONGEST_LOGGER));
        {
            // Escaped: a record cannot end the host's log line or move the
            // cursor. Cut to 1 KiB, as any outside text in a log line: the
            // client gets the record whole (within --max-log-record); the
            // host's log, and a traced call's span event, a bounded quote.
            let name = escape_controls(logger.as_deref().unwrap_or("tool"));
            let text = crate::log_text::escaped(&data);
            match level {
                LoggingLevel::Debug => tracing::debug!(target: "tool", call_id, logger = %name, "{text}"),
                LoggingLevel::Info | LoggingLevel::Notice => {
                    tracing::info!(target: "tool", call_id, logger = %name, "{text}")
                }
                LoggingLevel::Warning => tracing::warn!(target: "tool", call_id, logger = %name, "{text}"),
                _ => tracing::error!(target: "tool", call_id, logger = %name, "{text}"),
            }
        }
        if self.peer.is_none() || stopping || !self.log_filter.lets_through(level) {
            return;
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
        self.notify(Note::Log(message), size);
    }

    /// A progress report, if the request that brought the call asked for
    /// them: only increasing values, thinned by a rate limit (the final
    /// report always goes out).
    pub fn progress(&mut self, call_id: &str, progress: f64, total: Option<f64>, message: Option<String>) {
        let (Some(_), Some(token)) = (&self.peer, &self.progress_token) else { return };
        if !progress.is_finite() {
            return;
        }
        if self.last_progress.is_some_and(|last| progress <= last) {
            tracing::debug!(call_id, progress, "dropped progress that does not increase");
            return;
        }
        let done = total.is_some_and(|total| progress >= total);
        if !done && !self.progress_budget.allow() {
            self.dropped += 1;
            return;
        }
        self.last_progress = Some(progress);
        let mut note = ProgressNotificationParam::new(token.clone(), progress);
        if let Some(total) = total {
            note = note.with_total(total);
        }
        let mut size = PROGRESS_OVERHEAD;
        if let Some(message) = message {
            let message = cut_to(message, self.caps.log_record);
            size += message.len();
            note = note.with_message(message);
        }
        self.notify(Note::Progress(note), size);
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
        let stream = &self.stream;
        let notifier = self.notifier.get_or_insert_with(|| match stream {
            Some(stream) => Notifier::to_stream(stream.clone()),
            None => Notifier::to_peer(peer.clone()),
        });
        if notifier.offer(note) {
            self.notified_bytes += size;
        } else {
            self.dropped += 1;
        }
    }

    /// Whether the client declared it can be asked `capability`. When it
    /// did not, the call's asking for it is noted ([`MissingCapabilities`]).
    pub fn may_ask(&self, capability: Capability) -> bool {
        if self.peer.is_none() {
            return false;
        }
        let declared = match capability {
            Capability::Form => self.asks.form,
            Capability::Url => self.asks.url,
            Capability::Sampling => self.asks.sampling,
            Capability::Roots => self.asks.roots,
        };
        if !declared {
            self.missing.note(capability);
        }
        declared
    }

    /// Questions this call may still ask (`--max-questions`).
    pub fn questions_left(&self) -> u32 {
        self.questions_left
    }

    /// The most questions one call may ask (`--max-questions`).
    pub fn max_questions(&self) -> u32 {
        self.policy.max_questions
    }

    /// On protocol 2026-07-28 (a call in rounds), what this call asked
    /// for that its client had not declared, as it grows: a handle to keep
    /// beside the call. Earlier sessions have no error for it.
    pub fn missing_capabilities(&self) -> Option<MissingCapabilities> {
        matches!(self.delivery, Delivery::Rounds(_)).then(|| self.missing.clone())
    }
}
