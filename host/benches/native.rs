//! The baseline: a native rmcp server with the same `echo` tool (same
//! schema, same text and structured result), run as a child process, over
//! stdio or (with `SERVE_ENV=http`) over Streamable HTTP on a free port
//! (`SERVE_ENV=http-json`: with rmcp's `json_response` on, as the host
//! serves: a one-message answer as `application/json`, not SSE;
//! `SERVE_ENV=http-nodelay`: SSE, with `TCP_NODELAY` on each connection).
//! With `SERVE_ENV=reactor` it serves stdio through the host's own stdin /
//! stdout streams (`host/src/transport/stdio_streams.rs`) instead of
//! rmcp's `stdio()`: what is left between it and the host is then the
//! per-call work of the host, not the transport.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::json;

#[path = "../src/transport/stdio_streams.rs"]
mod stdio_streams;

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

fn native_echo() -> NativeEcho {
    let schema = json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    });
    let serde_json::Value::Object(schema) = schema else { unreachable!() };
    NativeEcho { tools: vec![Tool::new("echo", "Returns the text it is given.", Arc::new(schema))] }
}

/// Serves over stdio until stdin closes, or over HTTP until killed.
pub fn serve() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    match std::env::var(SERVE_ENV).as_deref() {
        Ok("http") => return runtime.block_on(serve_http(false, false)),
        Ok("http-json") => return runtime.block_on(serve_http(true, false)),
        Ok("http-nodelay") => return runtime.block_on(serve_http(false, true)),
        _ => {}
    }
    let reactor = std::env::var(SERVE_ENV).as_deref() == Ok("reactor");
    runtime.block_on(async {
        let running = if reactor {
            native_echo().serve(stdio_streams::streams()).await.unwrap()
        } else {
            native_echo().serve(rmcp::transport::stdio()).await.unwrap()
        };
        let _ = running.waiting().await;
    });
}

/// rmcp's Streamable HTTP service on hyper, as the host serves it (without
/// the host's limits and probes), announcing its address as the host does;
/// with `json`, rmcp's `json_response` on; with `nodelay`, `TCP_NODELAY`
/// on each connection (neither hyper nor axum sets it by default).
async fn serve_http(json: bool, nodelay: bool) {
    use hyper_util::rt::TokioIo;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

    let service = StreamableHttpService::new(
        || Ok(native_echo()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_json_response(json),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    eprintln!("native: serving MCP over Streamable HTTP at http://{}/mcp", listener.local_addr().unwrap());
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        if nodelay {
            stream.set_nodelay(true).unwrap();
        }
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler)
                .await;
        });
    }
}
