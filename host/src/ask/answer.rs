//! The client's answers, checked before the guest sees them. An answer is
//! client data, as hostile as anything a client sends: it is at most
//! `--max-answer` bytes, and a form's accepted content matches the schema
//! that was asked, or the guest gets `request-error::failed` saying which.

use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams, ElicitResult, ElicitationAction};
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
        // Compiled before the question goes out: a schema the host could
        // not check answers against is not asked. It is bounded like a
        // tool's schema, and flat (rmcp accepts no other as a form), so the
        // check of an answer of at most `--max-answer` bytes is linear and
        // cheap enough to run here.
        let schema = match &params {
            ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
                let text = serde_json::to_string(requested_schema).unwrap_or_default();
                Some(Schema::load(&text, &SCHEMA_LIMITS).map_err(|err| AskError::Schema(err.to_string()))?)
            }
            _ => None,
        };
        let asking = self.ask(Question::Elicit(Box::new(params)), cancellation);
        let answer = traced("elicitation/create", asking).await?;
        self.check_answer_size(&answer)?;
        let result: ElicitResult = serde_json::from_value(answer)
            .map_err(|err| AskError::Client(format!("malformed answer to the elicitation: {err}")))?;
        if let (Some(schema), ElicitationAction::Accept) = (&schema, &result.action) {
            // No content is an empty form, as the guest would receive it.
            let empty = Value::Object(Default::default());
            if let Some(why) = schema.first_violation(result.content.as_ref().unwrap_or(&empty)) {
                return Err(AskError::Mismatch(cut_to(why, LONGEST_MISMATCH)));
            }
        }
        Ok(result)
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
