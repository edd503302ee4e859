//! A tool built against `mcp:tool@0.2.0` — the contract as it was before
//! 0.2.1 added resources, prompts and completion — from its own copy of
//! that contract (`wit/`, as released). The host's tests load it beside
//! components built against the current contract: it must keep working
//! unchanged, with its imports and exports matched by semver.

wit_bindgen::generate!({
    path: "wit",
    world: "tool-component",
    generate_all,
});

use exports::mcp::tool::tool::Guest;
use mcp::tool::cancellation::Cancelled;
use mcp::tool::client::{self, LogLevel};
use mcp::tool::types::{Annotations, CallError, CallResult, Content, StopReason, ToolInfo};

struct Old;

impl Guest for Old {
    fn list_tools() -> Vec<ToolInfo> {
        vec![ToolInfo {
            name: "old_echo".into(),
            title: None,
            description: Some("Echoes `text` (built against mcp:tool 0.2.0)".into()),
            input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#
                .into(),
            output_schema: None,
            annotations: Annotations {
                read_only: Some(true),
                destructive: None,
                idempotent: None,
                open_world: None,
            },
            needs_approval: None,
        }]
    }

    fn call(
        _call_id: String,
        name: String,
        arguments: String,
        cancelled: Cancelled,
    ) -> Result<CallResult, CallError> {
        if name != "old_echo" {
            return Err(CallError::UnknownTool(name));
        }
        if cancelled.is_cancelled() {
            return Err(CallError::Cancelled);
        }
        client::log(LogLevel::Info, None, r#""old_echo called""#);
        // The arguments passed the schema: `{"text": "..."}`. Returned as
        // they came, so the test sees the round trip.
        Ok(CallResult { content: vec![Content::Text(arguments)], structured_content: None, is_error: false })
    }

    fn cleanup(_call_id: String, _reason: StopReason) {}
}

export!(Old);
