//! What a call's result weighs as the client receives it: `--max-output`
//! caps the JSON of the result (every field of every content block, the
//! base64 of media, the escapes and each block's own keys), and
//! `--max-content-blocks` caps the number of blocks.
//!
//! The result is measured in the host's own types, before it becomes an
//! MCP result: the JSON the client receives (written by `mcp::result`
//! through rmcp's types) is mirrored here field for field and counted as
//! serde_json would write it, without a copy. `mcp::result`'s tests check
//! that the two agree. A result certain to be too large is refused on its
//! raw size first, so no byte of it is ever encoded.

use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::contract::types::{CallError, CallResult, Content, ResourceBody};
use crate::json_size::json_size;
use crate::limits::{CallLimits, LimitHit};

/// Checks what a guest returned against `--max-content-blocks` and
/// `--max-output`: a result, or the message of the tool's own error.
pub(super) fn check(limits: &CallLimits, returned: &Result<CallResult, CallError>) -> Result<(), LimitHit> {
    let cap = limits.max_output;
    let size = match returned {
        Ok(result) => {
            if result.content.len() > limits.max_content_blocks {
                return Err(LimitHit::ContentBlocks(result.content.len(), limits.max_content_blocks));
            }
            let carried = carried(result);
            if carried > cap {
                return Err(LimitHit::Output(carried, cap));
            }
            // At most `cap` bytes of text and media, so at most a few times
            // that in escapes: counting it whole is bounded.
            wire_size(result)
        }
        Err(error) => {
            let message = match error {
                CallError::Failed(text)
                | CallError::InvalidArguments(text)
                | CallError::UnknownTool(text) => text.as_str(),
                CallError::Cancelled => "",
            };
            if message.len() > cap {
                return Err(LimitHit::Output(message.len(), cap));
            }
            json_size(&Block::Text { text: message }, usize::MAX).unwrap_or(usize::MAX)
        }
    };
    if size > cap {
        return Err(LimitHit::Output(size, cap));
    }
    Ok(())
}

/// The bytes of `result` as the client receives it (the result object,
/// without the JSON-RPC envelope and without the `resultType` 2026-07-28
/// sessions add). Structured content that is not JSON counts as its text:
/// the result is replaced by an error then anyway.
pub(crate) fn wire_size(result: &CallResult) -> usize {
    let structured = result.structured_content.as_deref().map(|text| match serde_json::from_str(text) {
        Ok(value) => Structured::Json(value),
        Err(_) => Structured::Text(text),
    });
    let wire =
        Wire { content: Blocks(&result.content), structured_content: structured, is_error: result.is_error };
    json_size(&wire, usize::MAX).unwrap_or(usize::MAX)
}

/// The bytes every text field of `result` carries, media counted as
/// base64: less than its JSON, so a result over the cap by this measure is
/// over it on the wire too.
fn carried(result: &CallResult) -> usize {
    let optional = |text: &Option<String>| text.as_ref().map_or(0, String::len);
    let blocks = result.content.iter().fold(0usize, |sum, block| {
        sum.saturating_add(match block {
            Content::Text(text) => text.len(),
            Content::Image(media) | Content::Audio(media) => {
                base64_len(media.data.len()).saturating_add(media.mime_type.len())
            }
            Content::Embedded(resource) => {
                let body = match &resource.body {
                    ResourceBody::Text(text) => text.len(),
                    ResourceBody::Blob(bytes) => base64_len(bytes.len()),
                };
                body.saturating_add(resource.uri.len()).saturating_add(optional(&resource.mime_type))
            }
            Content::ResourceLink(link) => [&link.title, &link.description, &link.mime_type]
                .into_iter()
                .fold(link.uri.len().saturating_add(link.name.len()), |sum, text| {
                    sum.saturating_add(optional(text))
                }),
        })
    });
    blocks.saturating_add(result.structured_content.as_ref().map_or(0, String::len))
}

/// The length of `n` bytes in padded base64.
fn base64_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

/// `CallToolResult` as rmcp writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    content: Blocks<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Structured<'a>>,
    is_error: bool,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Structured<'a> {
    Json(Value),
    Text(&'a str),
}

struct Blocks<'a>(&'a [Content]);

impl Serialize for Blocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Block::from))
    }
}

/// One `ContentBlock` as rmcp writes it (annotations and `_meta` are never set).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        data: Base64<'a>,
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
    },
    Audio {
        data: Base64<'a>,
        #[serde(rename = "mimeType")]
        mime_type: &'a str,
    },
    Resource {
        resource: Embedded<'a>,
    },
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        uri: &'a str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
}

/// `ResourceContents`, text or blob.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Embedded<'a> {
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<Base64<'a>>,
}

/// Bytes written as the base64 string rmcp sends, encoded as they are
/// counted, never into a buffer.
struct Base64<'a>(&'a [u8]);

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&Base64Display::new(self.0, &BASE64))
    }
}

impl<'a> From<&'a Content> for Block<'a> {
    fn from(content: &'a Content) -> Self {
        match content {
            Content::Text(text) => Block::Text { text: text.as_str() },
            Content::Image(media) => Block::Image { data: Base64(&media.data), mime_type: &media.mime_type },
            Content::Audio(media) => Block::Audio { data: Base64(&media.data), mime_type: &media.mime_type },
            Content::Embedded(resource) => {
                let (text, blob) = match &resource.body {
                    ResourceBody::Text(text) => (Some(text.as_str()), None),
                    ResourceBody::Blob(bytes) => (None, Some(Base64(bytes))),
                };
                let (uri, mime_type) = (resource.uri.as_str(), resource.mime_type.as_deref());
                Block::Resource { resource: Embedded { uri, mime_type, text, blob } }
            }
            Content::ResourceLink(link) => Block::ResourceLink {
                uri: &link.uri,
                name: &link.name,
                title: link.title.as_deref(),
                description: link.description.as_deref(),
                mime_type: link.mime_type.as_deref(),
                size: link.size,
            },
        }
    }
}
