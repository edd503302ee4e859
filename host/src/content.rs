//! Turning what a guest returned into an MCP `CallToolResult`.
//!
//! Guests hand over raw bytes and JSON text; this is where they are
//! base64-encoded and parsed, and where malformed output becomes an
//! `isError` result naming the tool instead of a broken response.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::Value;

use crate::bindings::types::{CallResult, Content, ResourceBody};

/// Converts a guest's result. `tool` names the tool in error messages.
pub fn to_mcp(tool: &str, result: CallResult) -> CallToolResult {
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
pub fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

fn content_block(content: Content) -> ContentBlock {
    match content {
        Content::Text(text) => ContentBlock::text(text),
        Content::Image(media) => ContentBlock::image(BASE64.encode(media.data), media.mime_type),
        Content::Audio(media) => ContentBlock::audio(BASE64.encode(media.data), media.mime_type),
        Content::Embedded(resource) => {
            let contents = match resource.body {
                ResourceBody::Text(text) => ResourceContents::TextResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    text,
                    meta: None,
                },
                ResourceBody::Blob(bytes) => ResourceContents::BlobResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    blob: BASE64.encode(bytes),
                    meta: None,
                },
            };
            ContentBlock::resource(contents)
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
    use crate::bindings::types::{EmbeddedResource, Media};

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
}
