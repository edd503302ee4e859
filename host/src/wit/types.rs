//! The host side of `mcp:tool/types`: the interface has no functions, only
//! the records every other interface uses. What the host needs to know
//! about those records lives here.

use wasmtime::component::HasData;

use crate::contract::types::{CallError, CallResult, Content, Host, ResourceBody, StopReason};

/// The (empty) host of `types`; its linker entry exists so components that
/// import the interface resolve.
pub struct TypesHost;

impl Host for TypesHost {}

impl HasData for TypesHost {
    type Data<'a> = TypesHost;
}

/// A stop reason's name in logs (the WIT case name).
pub fn stop_reason_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::ClientCancelled => "client-cancelled",
        StopReason::DeadlineExceeded => "deadline-exceeded",
        StopReason::Shutdown => "shutdown",
        StopReason::NoAnswer => "no-answer",
        StopReason::LimitExceeded => "limit-exceeded",
    }
}

/// The bytes a result carries to the client, before encoding.
pub fn result_size(result: &CallResult) -> usize {
    let content: usize = result
        .content
        .iter()
        .map(|block| match block {
            Content::Text(text) => text.len(),
            Content::Image(media) | Content::Audio(media) => media.data.len(),
            Content::Embedded(resource) => match &resource.body {
                ResourceBody::Text(text) => text.len(),
                ResourceBody::Blob(bytes) => bytes.len(),
            },
            Content::ResourceLink(link) => link.uri.len() + link.name.len(),
        })
        .sum();
    content + result.structured_content.as_ref().map_or(0, String::len)
}

/// The bytes a tool's own error carries to the client.
pub fn error_size(error: &CallError) -> usize {
    match error {
        CallError::Failed(text) | CallError::InvalidArguments(text) | CallError::UnknownTool(text) => {
            text.len()
        }
        CallError::Cancelled => 0,
    }
}
