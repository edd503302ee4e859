//! The baseline: a native rmcp stdio server with the same `echo` tool (same
//! schema, same text and structured result), run as a child process.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::json;

/// Set in the child's environment to make the bench binary serve instead.
pub const SERVE_ENV: &str = "MCP_WASM_HOST_BENCH_NATIVE_SERVER";

struct NativeEcho {
    tools: Vec<Tool>,
}

impl ServerHandler for NativeEcho {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| McpError::invalid_params("`text` must be a string", None))?;
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(json!({ "text": text }));
        Ok(CallToolResponse::Complete(result))
    }
}

/// Serves over stdio until stdin closes.
pub fn serve() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let schema = json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"]
        });
        let serde_json::Value::Object(schema) = schema else { unreachable!() };
        let server =
            NativeEcho { tools: vec![Tool::new("echo", "Returns the text it is given.", Arc::new(schema))] };
        let running = server.serve(rmcp::transport::stdio()).await.unwrap();
        let _ = running.waiting().await;
    });
}
