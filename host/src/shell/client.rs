//! The MCP client `call` is: it declares form elicitation (no URL mode, no
//! sampling), answers the questions a call asks — at the terminal, or as
//! `--yes` says when there is none — and shows the tool's warnings.

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationSchema, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Value, json};

use super::form;
use super::print::lines_escaped;
use super::terminal::{Terminal, accepted, declined, say};
use crate::approval::ApprovalQuestion;

/// How `call` answers the questions a call asks.
#[derive(Clone)]
pub(super) struct ShellClient {
    /// The user's terminal, if stdin and stderr are one.
    terminal: Option<Arc<Terminal>>,
    /// `--yes`: approve off a terminal.
    yes: bool,
}

impl ShellClient {
    /// Asks at the terminal if there is one; otherwise answers as `yes` says.
    pub(super) fn new(yes: bool) -> Self {
        ShellClient { terminal: Terminal::open().map(Arc::new), yes }
    }

    /// The answer when nobody can be asked: `--yes` approves; a form is
    /// declined, unless `--yes` and every field has a default to send.
    fn unattended(&self, message: &str, schema: &ElicitationSchema, approval: bool) -> ElicitResult {
        let asked = || {
            let mut stderr = std::io::stderr().lock();
            let _ = lines_escaped(&mut stderr, "asked: ", message);
        };
        if approval {
            asked();
            if self.yes {
                crate::log_text::say(format_args!("approved (--yes)"));
                return accepted(json!({ "approve": true }));
            }
            crate::log_text::say(format_args!("declined: not on a terminal to ask; give --yes to approve"));
            return declined();
        }
        match form::all_defaults(&form::fields(schema)) {
            Some(defaults) if self.yes => accepted(Value::Object(defaults)),
            _ => {
                asked();
                let why = if self.yes { "some field has no default" } else { "give --yes to send defaults" };
                crate::log_text::say(format_args!("declined: not on a terminal to fill in the form ({why})"));
                declined()
            }
        }
    }
}

/// Whether `schema` is the form the host asks approval with: one field,
/// `approve`, a boolean. (A tool may ask the same form itself; what the
/// user answers goes back to that tool alone, and approves nothing.)
fn is_approval(schema: &ElicitationSchema) -> bool {
    let host = ApprovalQuestion::requested_schema();
    let asked = serde_json::to_value(&schema.properties).unwrap_or_default();
    let field = |properties: &Value| properties.get("approve").and_then(|f| f.get("type")).cloned();
    asked.as_object().is_some_and(|fields| fields.len() == 1)
        && field(&asked).is_some()
        && field(&asked) == field(&host["properties"])
}

impl ClientHandler for ShellClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {} } })).unwrap_or_default();
        ClientConfig::new(capabilities, Implementation::new("mcp-wasm-host call", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        // URL mode was not declared; the host does not send it.
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            return Ok(declined());
        };
        let approval = is_approval(&requested_schema);
        let Some(terminal) = &self.terminal else {
            return Ok(self.unattended(&message, &requested_schema, approval));
        };
        let answer = async {
            if approval {
                terminal.approve(&message).await
            } else {
                terminal.fill(&message, &requested_schema).await
            }
        };
        tokio::select! {
            answer = answer => Ok(answer),
            // The host withdrew the question: the call was cancelled, or
            // the wait ran out (--approval-timeout, --elicitation-timeout).
            () = context.ct.cancelled() => {
                Terminal::withdrawn();
                Err(McpError::internal_error("the question was withdrawn", None))
            }
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap_or_default();
        let data = match &params.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        say(&format!("{}: {data}", level.as_str().unwrap_or("log")));
    }
}
