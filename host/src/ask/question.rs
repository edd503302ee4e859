//! Putting a question to the user and waiting, bounded, for the answer —
//! and withdrawing it from the client when the call stops first.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    ElicitRequest, ElicitRequestParams, InputRequest, ListRootsRequest, Request, RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio_util::sync::CancellationToken;

use super::{AnswerBook, CallChannel, Delivery, Pause, PausedQuestion, RoundTrips, TaskSlot};
use crate::cancellation::CallCancellation;
use crate::limits::HumanBytes;
use crate::request_state::{Answered, digest as digest_of};
use crate::stats::{Live, Stats};
use crate::tasks::NoAnswer;

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
    /// A request for the client's roots.
    Roots,
}

impl Question {
    fn into_input_request(self) -> InputRequest {
        match self {
            Question::Elicit(params) => InputRequest::Elicitation(ElicitRequest::new(*params)),
            Question::Sample(params) => InputRequest::CreateMessage(CreateMessageRequest::new(*params)),
            Question::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
        }
    }

    fn into_server_request(self) -> ServerRequest {
        match self {
            Question::Elicit(params) => ServerRequest::ElicitRequest(Request::new(*params)),
            Question::Sample(params) => ServerRequest::CreateMessageRequest(Request::new(*params)),
            Question::Roots => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
        }
    }
}

/// Every answer to `n` questions that got none, for the same reason.
fn none_of(n: usize, error: impl Fn() -> AskError) -> Vec<Result<Value, AskError>> {
    (0..n).map(|_| Err(error())).collect()
}

/// The flag a refused pause names.
fn paused_flag(error: &AskError) -> &'static str {
    match error {
        AskError::TooManyPaused(flag) => flag,
        _ => "--max-paused",
    }
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

    /// Asks several questions at once, each under its key, bounded like
    /// [`CallChannel::ask`]: the answers as JSON, one per question, in order.
    pub async fn ask_several(
        &mut self,
        questions: Vec<(Option<String>, Question)>,
        cancellation: &CallCancellation,
    ) -> Vec<Result<Value, AskError>> {
        let wait =
            Wait { timeout: self.policy.elicitation_timeout, flag: "--elicitation-timeout", approval: false };
        self.put_all(questions, cancellation, wait).await
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
        let mut answers = self.put_all(vec![(None, question)], cancellation, wait).await;
        answers.pop().unwrap_or(Err(AskError::Unsupported))
    }

    /// Puts `questions` to the user at once, each under its key (the host
    /// numbers those without one), and waits, bounded by `wait`, for every
    /// answer: one per question, in order. As requests to the client they
    /// go out side by side; in rounds or a task, in one pause.
    pub(super) async fn put_all(
        &mut self,
        questions: Vec<(Option<String>, Question)>,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Vec<Result<Value, AskError>> {
        let n = questions.len();
        if self.peer.is_none() {
            return none_of(n, || AskError::Unsupported);
        }
        if cancellation.is_cancelled() {
            return none_of(n, || AskError::Cancelled);
        }
        // A tool must not pester the user: questions per call are bounded.
        if (self.questions_left as usize) < n {
            return none_of(n, || AskError::TooMany(self.policy.max_questions));
        }
        self.questions_left -= n as u32;
        let kind = if wait.approval { "approval" } else { "question" };
        // A key the tool named (`client.ask`) may be answered up front;
        // one the host numbers is the host's own.
        let questions: Vec<(String, bool, Question)> = questions
            .into_iter()
            .map(|(key, question)| {
                self.asked += 1;
                let named = key.is_some() && !wait.approval;
                (key.unwrap_or_else(|| format!("{kind}-{}", self.asked)), named, question)
            })
            .collect();
        // Boxed, each way: a call paused for the user keeps this future
        // while it waits, and neither way's state belongs in the other's.
        let answers = if matches!(self.delivery, Delivery::Requests) {
            let questions = questions.into_iter().map(|(key, _, question)| (key, question)).collect();
            Box::pin(self.put_requests(questions, cancellation, wait)).await
        } else {
            Box::pin(self.put_paused(questions, cancellation, wait)).await
        };
        if answers.iter().any(|answer| matches!(answer, Err(AskError::TimedOut))) {
            tracing::info!(tool = %self.identity.tool, "no answer within {}", wait.flag);
        }
        answers
    }

    /// Sends `questions` to the client as requests, side by side.
    async fn put_requests(
        &mut self,
        questions: Vec<(String, Question)>,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Vec<Result<Value, AskError>> {
        let n = questions.len();
        // A call waiting on the user holds a slot of its caller's paused
        // share for the wait, whatever it asks (approval, form, URL,
        // sampling); an approval holds one of `--max-paused` too, as every
        // question in rounds does.
        let _paused = if wait.approval {
            match self.pause_slot() {
                Ok(slot) => Some(slot),
                Err(err) => return none_of(n, || AskError::TooManyPaused(paused_flag(&err))),
            }
        } else {
            None
        };
        let _share = if wait.approval {
            None
        } else {
            match self.paused_share() {
                Ok(share) => share,
                Err(err) => return none_of(n, || AskError::TooManyPaused(paused_flag(&err))),
            }
        };
        self.count_asked(wait);
        let Some(peer) = &self.peer else { return none_of(n, || AskError::Unsupported) };
        let stats = &self.stats;
        let sent = questions.into_iter().map(|(_, question)| {
            // Boxed: a request to the client is the larger wait by far, and
            // a call paused in rounds should not carry its room (see
            // `mcp/mode/rounds`: 10 000 paused calls are held at once).
            Box::pin(put_request(peer, stats, question, cancellation, wait))
        });
        futures_util::future::join_all(sent).await
    }

    /// Pauses the call with `questions` (in rounds or a task), answering
    /// from its sealed state those a re-run call was answered before.
    async fn put_paused(
        &mut self,
        questions: Vec<(String, bool, Question)>,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Vec<Result<Value, AskError>> {
        let n = questions.len();
        let mut answers: Vec<Option<Result<Value, AskError>>> = (0..n).map(|_| None).collect();
        let mut open = Vec::with_capacity(n);
        for (index, (key, named, question)) in questions.into_iter().enumerate() {
            let request = question.into_input_request();
            // Only a sealed call (a state key) recognises its questions: a
            // re-run gets the answers it was given before, in order, without
            // pausing again.
            let mut digest = String::new();
            if let Delivery::Rounds(RoundTrips { book: Some(book), .. }) = &mut self.delivery {
                digest = serde_json::to_value(&request).map(|json| digest_of(&json)).unwrap_or_default();
                if let Some(answer) = book.answer(&digest) {
                    tracing::debug!(tool = %self.identity.tool, %key, "answered from the call's state");
                    answers[index] = Some(Ok(answer));
                    continue;
                }
            }
            // An answer the client sent with the call itself, under a key the
            // tool named (SEP-2322: a client may answer before it is asked).
            // Checked like any answer (one that is not even an object is
            // no answer: the question is asked); a sealed call keeps it in
            // its state.
            if let Delivery::Rounds(RoundTrips { given, book, .. }) = &mut self.delivery
                && named
                && let Some(answer) = given.remove(&key).filter(Value::is_object)
            {
                tracing::debug!(tool = %self.identity.tool, %key, "answered up front, with the call");
                if let Some(book) = book {
                    book.record(Answered { question: digest, answer: answer.clone() });
                }
                answers[index] = Some(Ok(answer));
                continue;
            }
            open.push((index, PausedKey { key, request, digest }));
        }
        if !open.is_empty() {
            match self.pause_slot() {
                Err(err) => {
                    for (index, _) in open {
                        answers[index] = Some(Err(AskError::TooManyPaused(paused_flag(&err))));
                    }
                }
                Ok(_paused) => {
                    self.count_asked(wait);
                    // A pause outlives this request's wait: no longer than the approval timeout.
                    let timeout = wait.timeout.min(self.policy.approval_timeout);
                    let flag = if timeout < wait.timeout { "--approval-timeout" } else { wait.flag };
                    let (indices, open): (Vec<usize>, Vec<PausedKey>) = open.into_iter().unzip();
                    let got = self.put_deferred(open, cancellation, Wait { timeout, flag, ..wait }).await;
                    for (index, answer) in indices.into_iter().zip(got) {
                        answers[index] = Some(answer);
                    }
                }
            }
        }
        answers.into_iter().map(|answer| answer.unwrap_or(Err(AskError::Unsupported))).collect()
    }

    /// Asks through the call's result or task status, and waits for the
    /// answers a later request brings: one per question, in order.
    async fn put_deferred(
        &mut self,
        questions: Vec<PausedKey>,
        cancellation: &CallCancellation,
        wait: Wait,
    ) -> Vec<Result<Value, AskError>> {
        let n = questions.len();
        match &self.delivery {
            Delivery::Requests => unreachable!("deferred questions only"),
            Delivery::Rounds(RoundTrips { pauses, book, .. }) => {
                let answered = book.as_ref().map(AnswerBook::read).unwrap_or_default();
                let mut waits = Vec::with_capacity(n);
                let questions = questions
                    .into_iter()
                    .map(|PausedKey { key, request, digest }| {
                        let (answer, answered) = oneshot::channel();
                        waits.push(answered);
                        PausedQuestion { key, request, question: digest, answer }
                    })
                    .collect();
                let pause = Pause { questions, answered, lease: wait.timeout };
                if pauses.unbounded_send(Box::new(pause)).is_err() {
                    return none_of(n, || AskError::Client("the call can no longer be paused".into()));
                }
                // The request that brought the call is answered now: its
                // progress token is spent.
                self.progress_token = None;
                // All the answers come with one follow-up: waited for in turn.
                let mut answers = Vec::with_capacity(n);
                for answered in waits {
                    // The lease is the only clock: when it runs out the call
                    // is stopped (and cleaned up), not left running unasked.
                    answers.push(tokio::select! {
                        biased;
                        () = cancellation.cancelled() => Err(AskError::Cancelled),
                        answer = answered => match answer {
                            Ok(answer) => Ok(answer),
                            Err(_) => {
                                // The lease ran out, or the session ended:
                                // the call's stop follows. The guest runs on
                                // a thread of its own: let it see `cancelled`
                                // set when it gets this answer.
                                cancellation.cancelled().await;
                                Err(AskError::TimedOut)
                            }
                        },
                    });
                }
                answers
            }
            // Boxed: a task's questions go through the task store (Redis,
            // with `--task-store`), whose futures are kilobytes. Inline,
            // every call that asks keeps room for them while it waits: a
            // call paused in rounds held 2.3 KiB more for it (10 000 such
            // calls are held at once).
            Delivery::Task(slot, unanswered) => {
                Box::pin(ask_in_task(slot, unanswered, questions, cancellation, wait)).await
            }
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

/// Asks `questions` through the call's task (made now if need be), and
/// waits for the answers `tasks/update` brings: one per question, in order.
async fn ask_in_task(
    slot: &TaskSlot,
    unanswered: &CancellationToken,
    questions: Vec<PausedKey>,
    cancellation: &CallCancellation,
    wait: Wait,
) -> Vec<Result<Value, AskError>> {
    let n = questions.len();
    let task = tokio::select! {
        biased;
        () = cancellation.cancelled() => return none_of(n, || AskError::Cancelled),
        task = slot.task() => task,
    };
    let asked = questions.into_iter().map(|PausedKey { key, request, .. }| (key, request)).collect();
    tokio::select! {
        biased;
        answers = task.ask_all(asked, wait.timeout) => match answers {
            Ok(answers) => answers.into_iter().map(Ok).collect(),
            Err(NoAnswer::Unanswered) => {
                // As on 2026-07-28: the lease ran out (or the question could
                // not be shown), so the call is stopped (reason `no-answer`)
                // and cleaned up. The guest runs on a thread of its own: let
                // it see `cancelled` set when it gets this answer.
                unanswered.cancel();
                cancellation.cancelled().await;
                none_of(n, || AskError::TimedOut)
            }
            Err(NoAnswer::Cancelled) => {
                // `tasks/cancel` withdrew the questions; the call's stop follows.
                cancellation.cancelled().await;
                none_of(n, || AskError::Cancelled)
            }
        },
        () = cancellation.cancelled() => none_of(n, || AskError::Cancelled),
    }
}

/// Sends `question` to the client as a request and waits for its answer.
async fn put_request(
    peer: &Peer<RoleServer>,
    stats: &Arc<Stats>,
    question: Question,
    cancellation: &CallCancellation,
    wait: Wait,
) -> Result<Value, AskError> {
    let request = question.into_server_request();
    // Counted before it is sent: the client may see it (and read the
    // status) before this task runs again.
    let counted = stats.client_request();
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
        ClientResult::ListRootsResult(result) => Ok(serde_json::to_value(result).unwrap_or_default()),
        other => Err(AskError::Client(format!("unexpected answer from the client: {other:?}"))),
    }
}

/// A question about to pause the call: its key, the request, and its
/// digest (empty without a state key).
struct PausedKey {
    key: String,
    request: InputRequest,
    digest: String,
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
