//! The client's answers, checked before the guest sees them. An answer is
//! client data, as hostile as anything a client sends: it is at most
//! `--max-answer` bytes, and a form's accepted content matches the schema
//! that was asked, or the guest gets `request-error::failed` saying which.

use rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction, ListRootsResult,
};
use serde_json::Value;
use tracing::Instrument as _;
use tracing::field::Empty;

use super::{AskError, CallChannel, Question};
use crate::cancellation::CallCancellation;
use crate::json_size::json_size;
use crate::log_text::cut_to;
use crate::schema::{SCHEMA_LIMITS, Schema};

/// The longest account of a mismatch an error keeps: the violation can
/// quote the answer, which may be large.
const LONGEST_MISMATCH: usize = 256;

impl CallChannel {
    /// Asks an elicitation and reads the answer. An accepted form's content
    /// must match the form's requested schema.
    pub async fn elicit(
        &mut self,
        params: ElicitRequestParams,
        cancellation: &CallCancellation,
    ) -> Result<ElicitResult, AskError> {
        let schema = answer_schema(&params)?;
        let asking = self.ask(Question::Elicit(Box::new(params)), cancellation);
        let answer = traced("elicitation/create", asking).await?;
        self.read_elicited(answer, schema.as_ref())
    }

    /// Asks for the client's roots; the answer is at most `--max-answer`
    /// bytes and a `roots/list` result.
    pub async fn list_roots(&mut self, cancellation: &CallCancellation) -> Result<ListRootsResult, AskError> {
        let asking = self.ask(Question::Roots, cancellation);
        let answer = traced("roots/list", asking).await?;
        self.read_roots(answer)
    }

    /// Puts `questions` to the client at once, each under the key the tool
    /// named, and reads each answer as its single-question form would.
    pub async fn ask_all(
        &mut self,
        questions: Vec<(String, Asked)>,
        cancellation: &CallCancellation,
    ) -> Vec<Result<Answer, AskError>> {
        let n = questions.len();
        let mut results: Vec<Option<Result<Answer, AskError>>> = (0..n).map(|_| None).collect();
        let mut sent = Vec::with_capacity(n);
        let mut reading = Vec::with_capacity(n);
        for (index, (key, asked)) in questions.into_iter().enumerate() {
            let (question, read) = match asked {
                Asked::Elicit(params) => match answer_schema(&params) {
                    Ok(schema) => (Question::Elicit(Box::new(params)), Reading::Elicit(schema)),
                    Err(err) => {
                        results[index] = Some(Err(err));
                        continue;
                    }
                },
                Asked::Sample(params) => (Question::Sample(Box::new(params)), Reading::Sample),
                Asked::Roots => (Question::Roots, Reading::Roots),
            };
            sent.push((Some(key), question));
            reading.push((index, read));
        }
        let span = tracing::info_span!("questions", otel.name = "questions", count = sent.len());
        let answers = self.ask_several(sent, cancellation).instrument(span).await;
        for ((index, read), answer) in reading.into_iter().zip(answers) {
            results[index] = Some(answer.and_then(|answer| match read {
                Reading::Elicit(schema) => self.read_elicited(answer, schema.as_ref()).map(Answer::Elicit),
                Reading::Sample => self.check_answer_size(&answer).map(|()| Answer::Sample(answer)),
                Reading::Roots => self.read_roots(answer).map(Answer::Roots),
            }));
        }
        results.into_iter().map(|result| result.unwrap_or(Err(AskError::Unsupported))).collect()
    }

    /// Reads an answer to an elicitation: at most `--max-answer` bytes, and
    /// an accepted form's content matches `schema`.
    fn read_elicited(&self, answer: Value, schema: Option<&Schema>) -> Result<ElicitResult, AskError> {
        self.check_answer_size(&answer)?;
        let result: ElicitResult = serde_json::from_value(answer)
            .map_err(|err| AskError::Client(format!("malformed answer to the elicitation: {err}")))?;
        if let (Some(schema), ElicitationAction::Accept) = (schema, &result.action) {
            // No content is an empty form, as the guest would receive it.
            let empty = Value::Object(Default::default());
            if let Some(why) = schema.first_violation(result.content.as_ref().unwrap_or(&empty)) {
                return Err(AskError::Mismatch(cut_to(why, LONGEST_MISMATCH)));
            }
        }
        Ok(result)
    }

    /// Reads an answer to `roots/list`: at most `--max-answer` bytes.
    fn read_roots(&self, answer: Value) -> Result<ListRootsResult, AskError> {
        self.check_answer_size(&answer)?;
        serde_json::from_value(answer)
            .map_err(|err| AskError::Client(format!("malformed answer to roots/list: {err}")))
    }

    /// Asks the client's model for a completion; the answer is its result
    /// as JSON, at most `--max-answer` bytes.
    pub async fn sample(
        &mut self,
        params: CreateMessageRequestParams,
        cancellation: &CallCancellation,
    ) -> Result<Value, AskError> {
        let asking = self.ask(Question::Sample(Box::new(params)), cancellation);
        let answer = traced("sampling/createMessage", asking).await?;
        self.check_answer_size(&answer)?;
        Ok(answer)
    }

    /// Fails an answer over `--max-answer`, counted as JSON (it came as
    /// JSON and goes to the guest as JSON), without writing it out.
    fn check_answer_size(&self, answer: &Value) -> Result<(), AskError> {
        match json_size(answer, self.caps.answer) {
            Ok(_) => Ok(()),
            Err(_) => Err(AskError::AnswerTooLarge { limit: self.caps.answer }),
        }
    }
}

/// A question a tool puts with others (`client.ask`).
pub enum Asked {
    /// An elicitation, by form or URL.
    Elicit(ElicitRequestParams),
    /// A sampling request.
    Sample(CreateMessageRequestParams),
    /// The client's roots.
    Roots,
}

/// The checked answer to one of them.
pub enum Answer {
    /// The user's answer to an elicitation.
    Elicit(ElicitResult),
    /// The client's sampling result, as JSON.
    Sample(Value),
    /// The client's roots.
    Roots(ListRootsResult),
}

/// How an answer is read, by the kind of its question.
enum Reading {
    Elicit(Option<Schema>),
    Sample,
    Roots,
}

/// The schema a form's accepted answer is checked against, compiled before
/// the question goes out: a schema the host could not check answers
/// against is not asked. It is bounded like a tool's schema, and flat
/// (rmcp accepts no other as a form), so the check of an answer of at most
/// `--max-answer` bytes is linear and cheap enough to run here.
fn answer_schema(params: &ElicitRequestParams) -> Result<Option<Schema>, AskError> {
    match params {
        ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
            let text = serde_json::to_string(requested_schema).unwrap_or_default();
            Ok(Some(Schema::load(&text, &SCHEMA_LIMITS).map_err(|err| AskError::Schema(err.to_string()))?))
        }
        _ => Ok(None),
    }
}

/// Asks within a span of its own, a child of the call's guest span (or of
/// its `approval` span): a client span named by the request's method, with
/// how the question ended.
pub(super) async fn traced(
    method: &'static str,
    asking: impl Future<Output = Result<Value, AskError>>,
) -> Result<Value, AskError> {
    let span = tracing::info_span!(
        "question",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = method,
        outcome = Empty,
        error.type = Empty,
    );
    let answer = asking.instrument(span.clone()).await;
    let outcome = match &answer {
        Ok(_) => "answered",
        Err(AskError::Cancelled) => "cancelled",
        Err(AskError::TimedOut) => "timed-out",
        Err(_) => "failed",
    };
    span.record("outcome", outcome);
    if answer.is_err() {
        crate::telemetry::spans::failed(&span, outcome);
    }
    answer
}
