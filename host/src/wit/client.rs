//! The host side of `mcp:tool/client`: what a tool asks of the MCP client
//! during a call — logging, progress, elicitation, sampling and approval.
//!
//! This file speaks WIT: it checks what the guest hands over (sizes, JSON,
//! the client's declared capabilities) and maps answers and errors to the
//! contract's types. Reaching the user, bounding the wait and withdrawing
//! a question when the call stops is [`crate::ask`]'s job.

// Logging and sampling are deprecated in rmcp by SEP-2577 but still part of
// every protocol version this host serves.
#![allow(deprecated)]

use rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction, ListRootsResult,
    LoggingLevel,
};
use serde_json::{Value, json};
use wasmtime::component::HasData;

use crate::approval::ApprovalQuestion;
use crate::ask::{Answer, AskError, Asked, CallChannel, Capability, form_params};
use crate::cancellation::CallCancellation;
use crate::contract::client::{
    Answer as WitAnswer, ElicitResponse, Host, LogLevel, Question as WitQuestion, RequestError, Root,
};
use crate::log_text::escape_controls;

/// What `client` needs of a call's store.
pub struct ClientCtxView<'a> {
    /// The call's channel to the user.
    pub channel: &'a mut CallChannel,
    /// The call's stop signal: nothing new reaches the client once it fired.
    pub cancellation: &'a CallCancellation,
    /// Which call this is, for log lines.
    pub call_id: &'a str,
}

/// A store that gives the `client` interface its view.
pub trait ClientView: Send {
    /// The view into this store.
    fn client(&mut self) -> ClientCtxView<'_>;
}

/// The `HasData` marker that hands `client` its view.
pub struct HasClient;

impl HasData for HasClient {
    type Data<'a> = ClientCtxView<'a>;
}

impl Host for ClientCtxView<'_> {
    async fn resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
        if !self.cancellation.is_cancelled() {
            self.channel.resource_updated(self.call_id, &uri).await;
        }
        Ok(())
    }

    async fn log(&mut self, level: LogLevel, logger: Option<String>, data: String) -> wasmtime::Result<()> {
        let stopping = self.cancellation.is_cancelled();
        self.channel.log(self.call_id, mcp_level(level), logger, data, stopping);
        Ok(())
    }

    async fn progress(
        &mut self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> wasmtime::Result<()> {
        if !self.cancellation.is_cancelled() {
            self.channel.progress(self.call_id, progress, total, message);
        }
        Ok(())
    }

    async fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> wasmtime::Result<Result<ElicitResponse, RequestError>> {
        if let Err(too_large) = self.channel.check_question(message.len() + requested_schema.len()) {
            return Ok(Err(request_error(too_large)));
        }
        if !self.channel.may_ask(Capability::Form) {
            return Ok(Err(RequestError::Unsupported));
        }
        match form(message, &requested_schema) {
            Ok(params) => Ok(self.elicit_with(params).await),
            Err(failed) => Ok(Err(failed)),
        }
    }

    async fn elicit_url(
        &mut self,
        message: String,
        url: String,
    ) -> wasmtime::Result<Result<ElicitResponse, RequestError>> {
        if let Err(too_large) = self.channel.check_question(message.len() + url.len()) {
            return Ok(Err(request_error(too_large)));
        }
        if !self.channel.may_ask(Capability::Url) {
            return Ok(Err(RequestError::Unsupported));
        }
        Ok(self.elicit_with(self.url_params(message, url)).await)
    }

    async fn sample(&mut self, request: String) -> wasmtime::Result<Result<String, RequestError>> {
        if let Err(too_large) = self.channel.check_question(request.len()) {
            return Ok(Err(request_error(too_large)));
        }
        if !self.channel.may_ask(Capability::Sampling) {
            return Ok(Err(RequestError::Unsupported));
        }
        let params = match sampling(&request) {
            Ok(params) => params,
            Err(failed) => return Ok(Err(failed)),
        };
        let answer = self.channel.sample(params, self.cancellation).await;
        Ok(answer.map(|answer| answer.to_string()).map_err(|err| self.refused(err)))
    }

    async fn list_roots(&mut self) -> wasmtime::Result<Result<Vec<Root>, RequestError>> {
        if !self.channel.may_ask(Capability::Roots) {
            return Ok(Err(RequestError::Unsupported));
        }
        let answer = self.channel.list_roots(self.cancellation).await;
        Ok(answer.map(roots).map_err(|err| self.refused(err)))
    }

    async fn ask(
        &mut self,
        questions: Vec<(String, WitQuestion)>,
        // One answer per question, as the contract says: a list as long as
        // the guest's, which is bounded by `--max-questions` first.
    ) -> wasmtime::Result<Vec<Result<WitAnswer, RequestError>>> {
        let n = questions.len();
        let left = self.channel.questions_left();
        if n > left as usize {
            let limit = self.channel.max_questions();
            let refusal = format!(
                "{n} questions at once, but this call may ask {left} more (--max-questions {limit}); none was sent"
            );
            return Ok((0..n).map(|_| Err(RequestError::Failed(refusal.clone()))).collect());
        }
        let size = questions.iter().map(|(key, question)| key.len() + question_size(question)).sum();
        if let Err(too_large) = self.channel.check_question(size) {
            let text = too_large.to_string();
            return Ok((0..n).map(|_| Err(RequestError::Failed(text.clone()))).collect());
        }
        let mut answers: Vec<Option<Result<WitAnswer, RequestError>>> = (0..n).map(|_| None).collect();
        let mut asked = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::with_capacity(n);
        for (index, (key, question)) in questions.into_iter().enumerate() {
            let checked = if !valid_key(&key) {
                Err(RequestError::Failed(format!(
                    "question key `{}` is not 1 to {LONGEST_KEY} of A-Z a-z 0-9 _ - .",
                    escape_controls(&crate::log_text::cut_to(key.clone(), LONGEST_KEY))
                )))
            } else if !seen.insert(key.clone()) {
                Err(RequestError::Failed(format!("question key `{key}` is used twice")))
            } else {
                self.checked_question(question)
            };
            match checked {
                Ok(question) => asked.push((index, key, question)),
                Err(refused) => answers[index] = Some(Err(refused)),
            }
        }
        let (indices, keyed): (Vec<usize>, Vec<(String, Asked)>) =
            asked.into_iter().map(|(index, key, question)| (index, (key, question))).unzip();
        let got = self.channel.ask_all(keyed, self.cancellation).await;
        for (index, answer) in indices.into_iter().zip(got) {
            answers[index] = Some(match answer {
                Ok(Answer::Elicit(result)) => Ok(WitAnswer::Elicit(elicit_response(result))),
                Ok(Answer::Sample(result)) => Ok(WitAnswer::Sample(result.to_string())),
                Ok(Answer::Roots(result)) => Ok(WitAnswer::Roots(roots(result))),
                Err(err) => Err(self.refused(err)),
            });
        }
        Ok(answers.into_iter().map(|answer| answer.unwrap_or(Err(RequestError::Unsupported))).collect())
    }

    async fn request_approval(&mut self, operation: String) -> wasmtime::Result<Result<(), String>> {
        let identity = self.channel.identity();
        if identity.pre_approved {
            return Ok(Ok(()));
        }
        // The question quotes the operation cut to a few hundred characters;
        // the log line quotes the same words, escaped.
        let question = ApprovalQuestion::for_operation(&identity.tool, &operation);
        let shown = escape_controls(&question.message).into_owned();
        let verdict = self.channel.approve(question, self.cancellation).await;
        tracing::info!(call_id = self.call_id, approved = verdict.is_ok(), "mid-call approval: {shown}");
        Ok(verdict.map_err(|decline| decline.to_string()))
    }
}

impl ClientCtxView<'_> {
    async fn elicit_with(&mut self, params: ElicitRequestParams) -> Result<ElicitResponse, RequestError> {
        let result = self.channel.elicit(params, self.cancellation).await.map_err(|err| self.refused(err))?;
        Ok(elicit_response(result))
    }

    /// A URL elicitation's params, with an id of this call.
    fn url_params(&self, message: String, url: String) -> ElicitRequestParams {
        ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: CallChannel::elicitation_id(self.call_id),
        }
    }

    /// One question of `ask`, checked as its single-question function
    /// checks it: the client declared it, and it is well formed.
    fn checked_question(&self, question: WitQuestion) -> Result<Asked, RequestError> {
        let capability = match &question {
            WitQuestion::Elicit(_) => Capability::Form,
            WitQuestion::ElicitUrl(_) => Capability::Url,
            WitQuestion::Sample(_) => Capability::Sampling,
            WitQuestion::ListRoots => Capability::Roots,
        };
        if !self.channel.may_ask(capability) {
            return Err(RequestError::Unsupported);
        }
        Ok(match question {
            WitQuestion::Elicit((message, schema)) => Asked::Elicit(form(message, &schema)?),
            WitQuestion::ElicitUrl((message, url)) => Asked::Elicit(self.url_params(message, url)),
            WitQuestion::Sample(request) => Asked::Sample(sampling(&request)?),
            WitQuestion::ListRoots => Asked::Roots,
        })
    }

    /// The contract's word for why a question got no answer; an answer the
    /// host refused (too large, or off its schema) is logged too.
    fn refused(&self, error: AskError) -> RequestError {
        if matches!(error, AskError::AnswerTooLarge { .. } | AskError::Mismatch(_)) {
            // Escaped: the account of a mismatch quotes the client's answer.
            tracing::warn!(call_id = self.call_id, "answer refused: {}", escape_controls(&error.to_string()));
        }
        request_error(error)
    }
}

/// The longest key a question of `ask` may have.
const LONGEST_KEY: usize = 64;

/// Whether `key` may name a question: 1 to 64 of `A-Z a-z 0-9 _ - .`, so
/// it travels as a JSON key and shows in a log line as it is.
fn valid_key(key: &str) -> bool {
    (1..=LONGEST_KEY).contains(&key.len())
        && key.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
}

/// What a question of `ask` weighs against `--max-question`.
fn question_size(question: &WitQuestion) -> usize {
    match question {
        WitQuestion::Elicit((message, schema)) => message.len() + schema.len(),
        WitQuestion::ElicitUrl((message, url)) => message.len() + url.len(),
        WitQuestion::Sample(request) => request.len(),
        WitQuestion::ListRoots => 0,
    }
}

/// A form elicitation from the guest's message and schema text.
fn form(message: String, requested_schema: &str) -> Result<ElicitRequestParams, RequestError> {
    let schema: Value = serde_json::from_str(requested_schema)
        .map_err(|err| RequestError::Failed(format!("requested-schema is not JSON: {err}")))?;
    form_params(message, schema).map_err(|err| {
        RequestError::Failed(format!("requested-schema is not a schema MCP elicitation allows: {err}"))
    })
}

/// A sampling request from the guest's JSON text.
fn sampling(request: &str) -> Result<CreateMessageRequestParams, RequestError> {
    serde_json::from_str(request)
        .map_err(|err| RequestError::Failed(format!("not a sampling/createMessage request: {err}")))
}

/// The contract's form of the user's answer to an elicitation.
fn elicit_response(result: ElicitResult) -> ElicitResponse {
    match result.action {
        ElicitationAction::Accept => {
            ElicitResponse::Accept(result.content.unwrap_or_else(|| json!({})).to_string())
        }
        ElicitationAction::Decline => ElicitResponse::Decline,
        // Cancel, and any action a later protocol adds: not an answer.
        _ => ElicitResponse::Cancel,
    }
}

/// The contract's form of the client's roots.
fn roots(result: ListRootsResult) -> Vec<Root> {
    result.roots.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect()
}

/// The contract's word for why a question got no answer.
fn request_error(error: AskError) -> RequestError {
    match error {
        AskError::Unsupported => RequestError::Unsupported,
        AskError::Cancelled => RequestError::Cancelled,
        AskError::TimedOut => RequestError::TimedOut,
        other => RequestError::Failed(other.to_string()),
    }
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
