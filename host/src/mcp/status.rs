//! `mcp-wasm-host://status`: the host's live counts as a resource, so
//! clients, operators and tests can see that nothing leaks.

use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResponse, ReadResourceResult, Resource, ResourceContents};

use crate::stats::Stats;

/// The URI of the resource that reports the host's live counts.
pub const STATUS_URI: &str = "mcp-wasm-host://status";

/// The resources the host offers: the status.
pub(super) fn list() -> Vec<Resource> {
    let status = Resource::new(STATUS_URI, "status")
        .with_description("Live counts: calls, wasm stores and open requests to the client")
        .with_mime_type("application/json");
    vec![status]
}

/// Reads the resource at `uri`: the status now, as JSON.
pub(super) fn read(uri: &str, stats: &Stats) -> Result<ReadResourceResponse, McpError> {
    if uri != STATUS_URI {
        return Err(McpError::resource_not_found(format!("no resource `{uri}`"), None));
    }
    let text = serde_json::to_string(&stats.snapshot())
        .map_err(|err| McpError::internal_error(err.to_string(), None))?;
    let contents = ResourceContents::TextResourceContents {
        uri: STATUS_URI.into(),
        mime_type: Some("application/json".into()),
        text,
        meta: None,
    };
    Ok(ReadResourceResult::new(vec![contents]).into())
}
