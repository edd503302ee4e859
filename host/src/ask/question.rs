//! Putting a question to the user and waiting, bounded, for the answer —
//! and withdrawing it from the client when the call stops first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    ElicitRequest, ElicitRequestParams, InputRequest, Request, RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::{AnswerBook, CallChannel, Delivery, Pause, RoundTrips};
use crate::cancellation::CallCancellation;
use crate::limits::HumanBytes;
use crate::request_state::digest as digest_of;
use crate::stats::Live;

/// A question for the user, before it is sent one way or another.
///
/// Boxed: a question is handed down through nested futures by value, and a
/// call paused in rounds keeps those futures while it waits (10 000 such
/// calls are held at once): each would otherwise keep room for a copy.
pub enum Question {
    /// An elicitation (a form or a URL).
    Elicit(Box<ElicitRequestParams>),
    /// A sampling request.
    Sample(Box<CreateMessageRequestParams>),
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// There is no client, or it declared no support for this kind of question.
    #[error("the client does not support this request")]
    Unsupported,
    /// The call was stopped while the question was open.
    #[error("the tool call was cancelled")]
    Cancelled,
    /// No answer came within the question's timeout.
    #[error("no answer in time")]
    TimedOut,
    /// The call has asked its `--max-questions` already.
    #[error("this call already asked the client {0} questions, the most one call may ask (--max-questions)")]
    TooMany(u32),
    /// `--max-paused` calls (or the caller's `--max-paused-per-principal`)
    /// are already waiting for the user; the flag is named.
    #[error("too many calls are already waiting for the user ({0})")]
    TooManyPaused(&'static str),
    /// The question is larger than `--max-question`.
    #[error("the question is {}, larger than the limit of {} (--max-question); it was not sent", HumanBytes(*.size), HumanBytes(*.limit))]
    TooLarge {
        /// Its size in bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Sending failed, or the client answered with an error.
    #[error("{0}")]
    Client(String),
    /// The client's answer is larger than `--max-answer`.
    #[error("the client's answer is larger than the limit of {} (--max-answer)", HumanBytes(*.limit))]
    AnswerTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The client accepted a form with content that breaks its requested
    /// schema: the first violation.
    #[error("the client's answer does not match the requested schema: {0}")]
    Mismatch(String),
    /// The form's requested schema is beyond what the host checks answers
    /// against (the bounds of a tool's schema); it was not sent.
    #[error("requested-schema {0}; it was not sent")]
    Schema(String),
}

/// How long one question may wait, and what it counts as.
#[derive(Clone, Copy)]
pub(super) struct Wait {
    pub(super) timeout: Duration,
    /// The flag that sets `timeout`, for messages.
    pub(super) flag: &'static str,
    /// An approval: always counted as a paused call.
    pub(super) approval: bool,
}

impl CallChannel {
    /// Fails a question of `size` bytes that is over `--max-question`.
    pub fn check_question(&self, size: usize) -> Result<(), AskError> {
        if size <= self.caps.question {
            return Ok(());
        }
        Err(AskError::TooLarge { size, limit: self.caps.question })
    }

    /// Asks an elicitation or sampling question, bounded by
    /// `--elicitation-timeout` (and by `--approval-timeout` when the call
    /// must pause for it). The answer is the client's result as JSON.
    pub async fn ask(
        &mut self,
        question: Question,
        cancellation: &CallCancellation,
    ) -> Result<Value, AskError> {
        let wait =
            Wait { timeout: self.policy.elicitation_timeout, flag: "--elicitation-timeout", approval: false };
        self.put(question, cancellation, wait).await
    }

    /// A URL elicitation's id: unique in the process, tied to the call.
    pub fn elicitation_id(call_id: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        format!("{call_id}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Puts `question` to the user the way this session allows and waits,
    /// bounded by `wait`, for the answer. A request sent to the client is
    /// withdrawn if the call is cancelled or the wait runs out.
    pub(super) async fn put(
        &mut self,
        question: Question,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Result<Value, AskError> {
        if self.peer.is_none() {
            return Err(AskError::Unsupported);
        }
        if cancellation.is_cancelled() {
            return Err(AskError::Cancelled);
        }
        // A tool must not pester the user: questions per call are bounded.
        if self.questions_left == 0 {
            return Err(AskError::TooMany(self.policy.max_questions));
        }
        self.questions_left -= 1;
        self.asked += 1;
        let answer = if matches!(self.delivery, Delivery::Requests) {
            // A call waiting on the user holds a slot of its caller's paused
            // share for the wait, whatever it asks (approval, form, URL,
            // sampling); an approval holds one of `--max-paused` too, as
            // every question in rounds does.
            let _paused = if wait.approval { Some(self.pause_slot()?) } else { None };
            let _share = if wait.approval { None } else { self.paused_share()? };
            self.count_asked(wait);
            // Boxed: a request to the client is the larger wait by far, and
            // a call paused in rounds should not carry its room (see
            // `mcp/mode/rounds`: 10 000 paused calls are held at once).
            Box::pin(self.put_request(question, cancellation, wait)).await
        } else {
            let request = Box::new(match question {
                Question::Elicit(params) => InputRequest::Elicitation(ElicitRequest::new(*params)),
                Question::Sample(params) => InputRequest::CreateMessage(CreateMessageRequest::new(*params)),
            });
            // Only a sealed call (a state key) recognises its questions: a
            // re-run gets the answers it was given before, in order,
            // without pausing again.
            let mut digest = String::new();
            if let Delivery::Rounds(RoundTrips { book: Some(book), .. }) = &mut self.delivery {
                digest = serde_json::to_value(&*request).map(|json| digest_of(&json)).unwrap_or_default();
                if let Some(answer) = book.answer(&digest) {
                    tracing::debug!(tool = %self.identity.tool, key = self.asked, "answered from the call's state");
                    return Ok(answer);
                }
            }
            let _paused = self.pause_slot()?;
            self.count_asked(wait);
            // A pause outlives this request's wait: no longer than the approval timeout.
            let timeout = wait.timeout.min(self.policy.approval_timeout);
            let flag = if timeout < wait.timeout { "--approval-timeout" } else { wait.flag };
            self.put_deferred(request, digest, cancellation, Wait { timeout, flag, ..wait }).await
        };
        if let Err(AskError::TimedOut) = &answer {
            tracing::info!(tool = %self.identity.tool, "no answer within {}", wait.flag);
        }
        answer
    }

    /// Sends the question as a request to the client and waits for its answer.
    async fn put_request(
        &mut self,
        question: Question,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Result<Value, AskError> {
        let request = match question {
            Question::Elicit(params) => ServerRequest::ElicitRequest(Request::new(*params)),
            Question::Sample(params) => ServerRequest::CreateMessageRequest(Request::new(*params)),
        };
        let peer = self.peer.as_ref().ok_or(AskError::Unsupported)?;
        // Counted before it is sent: the client may see it (and read the
        // status) before this task runs again.
        let counted = self.stats.client_request();
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|err| AskError::Client(format!("cannot send the request: {err}")))?;
        let mut open = OpenRequest::new(peer.clone(), handle.id.clone(), counted);
        let answer = tokio::select! {
            biased;
            answer = handle.await_response() => answer,
            () = cancellation.cancelled() => {
                open.withdraw("the tool call was cancelled").await;
                return Err(AskError::Cancelled);
            }
            () = tokio::time::sleep(wait.timeout) => {
                open.withdraw(&format!("no answer within the host's {}", wait.flag)).await;
                return Err(AskError::TimedOut);
            }
        };
        open.answered();
        match answer.map_err(|err| AskError::Client(err.to_string()))? {
            ClientResult::ElicitResult(result) => Ok(serde_json::to_value(result).unwrap_or_default()),
            ClientResult::CreateMessageResult(result) => Ok(serde_json::to_value(result).unwrap_or_default()),
            other => Err(AskError::Client(format!("unexpected answer from the client: {other:?}"))),
        }
    }

    /// Asks through the call's result or task status, and waits for the
    /// answer a later request brings.
    async fn put_deferred(
        &mut self,
        request: Box<InputRequest>,
        question: String,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Result<Value, AskError> {
        let key = format!("{}-{}", if wait.approval { "approval" } else { "question" }, self.asked);
        match &self.delivery {
            Delivery::Requests => unreachable!("deferred questions only"),
            Delivery::Rounds(RoundTrips { pauses, book, .. }) => {
                let (answer, answered) = oneshot::channel();
                let answered_before = book.as_ref().map(AnswerBook::read).unwrap_or_default();
                let pause = Pause {
                    key,
                    request: *request,
                    question,
                    answered: answered_before,
                    answer,
                    lease: wait.timeout,
                };
                if pauses.send(Box::new(pause)).is_err() {
                    return Err(AskError::Client("the call can no longer be paused".into()));
                }
                // The request that brought the call is answered now: its
                // progress token is spent.
                self.progress_token = None;
                // The lease is the only clock: when it runs out the call is
                // stopped (and cleaned up), not left running unasked.
                tokio::select! {
                    biased;
                    () = cancellation.cancelled() => Err(AskError::Cancelled),
                    answer = answered => match answer {
                        Ok(answer) => Ok(answer),
                        Err(_) => {
                            // The lease ran out, or the session ended: the
                            // call's stop follows. The guest runs on a thread
                            // of its own: let it see `cancelled` set when it
                            // gets this answer.
                            cancellation.cancelled().await;
                            Err(AskError::TimedOut)
                        }
                    },
                }
            }
            Delivery::Task(task, unanswered) => tokio::select! {
                biased;
                answer = task.request_input(key, *request) => match answer {
                    Ok(answer) => Ok(answer),
                    Err(rmcp::task_manager::TaskExit::Cancelled) => {
                        // `tasks/cancel` withdrew the question; the call's
                        // stop follows. The guest runs on a thread of its
                        // own: let it see `cancelled` set when it gets this answer.
                        cancellation.cancelled().await;
                        Err(AskError::Cancelled)
                    }
                    Err(_) => Err(AskError::Cancelled),
                },
                () = cancellation.cancelled() => Err(AskError::Cancelled),
                () = tokio::time::sleep(wait.timeout) => {
                    // As on 2026-07-28: the lease ran out, so the call is
                    // stopped (reason `no-answer`) and cleaned up; the task
                    // ends rather than showing a question nobody will answer.
                    unanswered.cancel();
                    cancellation.cancelled().await;
                    Err(AskError::TimedOut)
                }
            },
        }
    }

    /// Counts an approval question as asked, when it goes to the user.
    fn count_asked(&self, wait: Wait) {
        if wait.approval {
            self.stats.metrics().approval("asked");
        }
    }

    /// Whether the call's pause was handed to the client in a sealed state.
    pub(super) fn handed_off(&self) -> bool {
        matches!(&self.delivery, Delivery::Rounds(rounds) if rounds.handed_off.is_cancelled())
    }

    /// A slot of the caller's share of paused calls
    /// (`--max-paused-per-principal`); none without authorization.
    fn paused_share(&self) -> Result<Option<OwnedSemaphorePermit>, AskError> {
        let Some(share) = &self.policy.paused_share else { return Ok(None) };
        let permit = share.clone().try_acquire_owned();
        permit.map(Some).map_err(|_| AskError::TooManyPaused("--max-paused-per-principal"))
    }

    /// A slot among the `--max-paused` calls that may wait for the user,
    /// and one of the caller's share of them.
    fn pause_slot(&self) -> Result<(Option<OwnedSemaphorePermit>, OwnedSemaphorePermit, Live), AskError> {
        let share = self.paused_share()?;
        match self.policy.paused_slots.clone().try_acquire_owned() {
            Ok(permit) => Ok((share, permit, self.stats.paused())),
            Err(_) => Err(AskError::TooManyPaused("--max-paused")),
        }
    }
}

/// A form elicitation asking `message` with `schema`; rmcp checks the schema
/// is one MCP elicitation allows (flat, primitive fields).
pub fn form_params(message: String, schema: Value) -> Result<ElicitRequestParams, serde_json::Error> {
    serde_json::from_value(json!({ "mode": "form", "message": message, "requestedSchema": schema }))
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
    fn new(peer: Peer<RoleServer>, id: RequestId, counted: Live) -> Self {
        OpenRequest { peer, id: Some(id), _open: counted }
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
