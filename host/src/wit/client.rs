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

use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams, ElicitationAction, LoggingLevel};
use serde_json::{Value, json};
use wasmtime::component::HasData;

use crate::approval::ApprovalQuestion;
use crate::ask::{AskError, CallChannel, form_params};
use crate::cancellation::CallCancellation;
use crate::contract::client::{ElicitResponse, Host, LogLevel, RequestError};
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
        if !self.channel.elicitation_modes().0 {
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
        if let Err(too_large) = self.channel.check_question(message.len() + url.len()) {
            return Ok(Err(request_error(too_large)));
        }
        if !self.channel.elicitation_modes().1 {
            return Ok(Err(RequestError::Unsupported));
        }
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: CallChannel::elicitation_id(self.call_id),
        };
        Ok(self.elicit_with(params).await)
    }

    async fn sample(&mut self, request: String) -> wasmtime::Result<Result<String, RequestError>> {
        if let Err(too_large) = self.channel.check_question(request.len()) {
            return Ok(Err(request_error(too_large)));
        }
        if !self.channel.supports_sampling() {
            return Ok(Err(RequestError::Unsupported));
        }
        let params: CreateMessageRequestParams = match serde_json::from_str(&request) {
            Ok(params) => params,
            Err(err) => {
                return Ok(Err(RequestError::Failed(format!("not a sampling/createMessage request: {err}"))));
            }
        };
        let answer = self.channel.sample(params, self.cancellation).await;
        Ok(answer.map(|answer| answer.to_string()).map_err(|err| self.refused(err)))
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
        Ok(match result.action {
            ElicitationAction::Accept => {
                ElicitResponse::Accept(result.content.unwrap_or_else(|| json!({})).to_string())
            }
            ElicitationAction::Decline => ElicitResponse::Decline,
            // Cancel, and any action a later protocol adds: not an answer.
            _ => ElicitResponse::Cancel,
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
