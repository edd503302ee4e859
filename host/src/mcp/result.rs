//! A call's outcome as the MCP response: what the guest returned, or an
//! `isError` result saying in the user's terms why there is none (for a
//! task, a `failed` status with that text when the host ended the call).
//!
//! Guests hand over raw bytes and JSON text; this is where they are
//! base64-encoded and parsed, and where malformed output becomes an
//! `isError` result naming the tool instead of a broken response.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorCode, Resource, ResourceContents};
use rmcp::task_manager::TaskExit;
use serde_json::Value;

use crate::call::CallOutcome;
use crate::contract::types::{CallError, CallResult, Content, ResourceBody, StopReason};

/// The response to a call of `tool` that ended with `outcome`.
pub(super) fn to_response(tool: &str, outcome: CallOutcome) -> Result<CallToolResponse, McpError> {
    let result: CallToolResult = match outcome {
        CallOutcome::Returned(Ok(result)) => to_mcp(tool, result),
        CallOutcome::Returned(Err(error)) => error_result(call_error_text(tool, error)),
        // The client asked for no result: rmcp sends nothing for a cancelled
        // request, so this error never reaches the wire.
        CallOutcome::Stopped(StopReason::ClientCancelled) => {
            return Err(McpError::new(ErrorCode::INTERNAL_ERROR, "request cancelled", None));
        }
        other => error_result(why_no_result(tool, &other)),
    };
    Ok(CallToolResponse::Complete(result))
}

/// How a task running a call of `tool` ends with `outcome` (SEP-2663): what
/// the tool answered, its own error included, completes the task (an
/// approval the user did not give is such an answer); a cancel cancels it;
/// what the host had to end — a limit, a crash, a broken result, a lease
/// that ran out — fails it with a JSON-RPC error saying why.
pub(super) fn to_task_end(tool: &str, outcome: CallOutcome) -> Result<CallToolResult, TaskExit> {
    match outcome {
        CallOutcome::Returned(Ok(result)) => Ok(to_mcp(tool, result)),
        CallOutcome::Returned(Err(error)) => Ok(error_result(call_error_text(tool, error))),
        CallOutcome::Declined(_) => Ok(error_result(why_no_result(tool, &outcome))),
        CallOutcome::Stopped(StopReason::ClientCancelled) => Err(TaskExit::Cancelled),
        other => Err(TaskExit::Error(McpError::internal_error(why_no_result(tool, &other), None))),
    }
}

/// What a tool's own error says.
fn call_error_text(tool: &str, error: CallError) -> String {
    match error {
        CallError::Failed(message) => message,
        CallError::InvalidArguments(message) => format!("invalid arguments: {message}"),
        CallError::UnknownTool(other) => {
            format!("component error: `{tool}` was listed but the component does not know `{other}`")
        }
        CallError::Cancelled => format!("tool `{tool}` said it was cancelled, but the call was not"),
    }
}

/// Why a call of `tool` that ended with `outcome` has no result of its own.
fn why_no_result(tool: &str, outcome: &CallOutcome) -> String {
    outcome.why_none(&format!("tool `{tool}`"))
}

/// Converts a guest's result. `tool` names the tool in error messages.
fn to_mcp(tool: &str, result: CallResult) -> CallToolResult {
    let content: Vec<ContentBlock> = result.content.into_iter().map(content_block).collect();
    let structured = match result.structured_content.as_deref().map(serde_json::from_str::<Value>) {
        None => None,
        Some(Ok(value)) => Some(value),
        Some(Err(err)) => {
            return error_result(format!(
                "tool `{tool}` returned structured content that is not valid JSON: {err}"
            ));
        }
    };
    let mut mcp =
        if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    mcp.structured_content = structured;
    mcp
}

/// A result with `isError: true` and one text block.
fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// A resource's body as MCP carries it: text, or bytes base64-encoded.
pub(super) fn resource_contents(
    uri: String,
    mime_type: Option<String>,
    body: ResourceBody,
) -> ResourceContents {
    match body {
        ResourceBody::Text(text) => {
            ResourceContents::TextResourceContents { uri, mime_type, text, meta: None }
        }
        ResourceBody::Blob(bytes) => {
            ResourceContents::BlobResourceContents { uri, mime_type, blob: BASE64.encode(bytes), meta: None }
        }
    }
}

pub(super) fn content_block(content: Content) -> ContentBlock {
    match content {
        Content::Text(text) => ContentBlock::text(text),
        Content::Image(media) => ContentBlock::image(BASE64.encode(media.data), media.mime_type),
        Content::Audio(media) => ContentBlock::audio(BASE64.encode(media.data), media.mime_type),
        Content::Embedded(resource) => {
            ContentBlock::resource(resource_contents(resource.uri, resource.mime_type, resource.body))
        }
        Content::ResourceLink(link) => {
            let mut resource = Resource::new(link.uri, link.name);
            resource.title = link.title;
            resource.description = link.description;
            resource.mime_type = link.mime_type;
            resource.size = link.size;
            ContentBlock::resource_link(resource)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::types::{EmbeddedResource, Media};

    fn result(content: Vec<Content>, structured: Option<&str>) -> CallResult {
        CallResult { content, structured_content: structured.map(Into::into), is_error: false }
    }

    #[test]
    fn media_is_base64_encoded_for_the_wire() {
        let image = Content::Image(Media { data: vec![0, 1, 2], mime_type: "image/png".into() });
        let blob = Content::Embedded(EmbeddedResource {
            uri: "file:///x.bin".into(),
            mime_type: None,
            body: ResourceBody::Blob(b"hi".to_vec()),
        });
        let mcp = to_mcp("t", result(vec![image, blob], None));
        let json = serde_json::to_value(&mcp).unwrap();
        assert_eq!(json["content"][0]["data"], "AAEC");
        assert_eq!(json["content"][0]["mimeType"], "image/png");
        assert_eq!(json["content"][1]["resource"]["blob"], "aGk=");
    }

    #[test]
    fn invalid_structured_content_becomes_an_error_naming_the_tool() {
        let mcp = to_mcp("echo", result(vec![], Some("{not json")));
        assert_eq!(mcp.is_error, Some(true));
        let text = &mcp.content[0].as_text().unwrap().text;
        assert!(text.contains("tool `echo`"), "{text}");
    }

    /// Random guest results (any bytes, any strings, any "JSON") must map to
    /// a result that serialises, never a panic. Seeded; `FUZZ_SEED` replays.
    #[test]
    fn random_guest_results_always_map_to_a_valid_result() {
        use crate::contract::types::ResourceLink;
        let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(42);
        struct Rng(u64);
        impl Rng {
            fn next(&mut self) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0
            }
            fn text(&mut self) -> String {
                const STRINGS: [&str; 11] = [
                    "",
                    "text",
                    "{",
                    "{\"a\":1}",
                    "null",
                    "\u{0}\u{ffff}",
                    "🦀",
                    "[1,2",
                    "1e999",
                    "[ 1E5, \"\\u00e9\\n\" ]",
                    "\"\u{1b}]0;x\u{7}\"",
                ];
                STRINGS[(self.next() % STRINGS.len() as u64) as usize].to_string()
            }
        }
        let mut rng = Rng(seed | 1);
        for _ in 0..20_000 {
            let bytes: Vec<u8> = (0..rng.next() % 64).map(|_| rng.next() as u8).collect();
            let content = match rng.next() % 6 {
                0 => Content::Text(rng.text()),
                1 => Content::Image(Media { data: bytes, mime_type: rng.text() }),
                2 => Content::Audio(Media { data: bytes, mime_type: rng.text() }),
                3 => Content::Embedded(EmbeddedResource {
                    uri: rng.text(),
                    mime_type: Some(rng.text()),
                    body: ResourceBody::Blob(bytes),
                }),
                4 => Content::Embedded(EmbeddedResource {
                    uri: rng.text(),
                    mime_type: None,
                    body: ResourceBody::Text(rng.text()),
                }),
                _ => Content::ResourceLink(ResourceLink {
                    uri: rng.text(),
                    name: rng.text(),
                    title: Some(rng.text()),
                    description: rng.next().is_multiple_of(2).then(|| rng.text()),
                    mime_type: rng.next().is_multiple_of(2).then(|| rng.text()),
                    size: rng.next().is_multiple_of(2).then(|| rng.next()),
                }),
            };
            let structured = rng.next().is_multiple_of(2).then(|| rng.text());
            let result = CallResult {
                content: vec![content],
                structured_content: structured,
                is_error: rng.next().is_multiple_of(2),
            };
            let measured = crate::call::wire_size(&result);
            let json_structured = result
                .structured_content
                .as_deref()
                .is_none_or(|text| serde_json::from_str::<Value>(text).is_ok());
            let mut mcp = to_mcp("fuzzed", result);
            serde_json::to_string(&mcp).expect("every mapped result serialises");
            // `--max-output` measures what the client receives: the host's
            // count is the length of rmcp's JSON (without `resultType`,
            // which only 2026-07-28 sessions carry).
            if json_structured {
                mcp.result_type = None;
                let sent = serde_json::to_string(&mcp).unwrap();
                assert_eq!(measured, sent.len(), "FUZZ_SEED={seed}: {sent}");
            }
        }
    }
}
