//! Serving over Streamable HTTP (`--http ADDR`): the same tools, limits,
//! cancel path and cleanup as stdio, with stateful sessions (so tools can
//! ask the user questions) and Host/Origin checks against DNS rebinding.
//!
//! Loopback by default: requests must name a loopback host
//! (`localhost`, `127.0.0.1`, `[::1]`), and browser requests must come from
//! a loopback origin, unless `--http-allow-host` / `--http-allow-origin`
//! widen that.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::server::ToolServer;

/// Where and for whom to serve.
pub struct HttpOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// Extra `Host` values to accept besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept besides loopback ones.
    pub allowed_origins: Vec<String>,
}

/// Serves `server` at `http://ADDR/mcp` until `shutdown` fires.
pub async fn serve(server: ToolServer, options: HttpOptions, shutdown: CancellationToken) -> Result<()> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"].map(String::from).to_vec();
    hosts.extend(options.allowed_hosts);
    let mut origins: Vec<String> =
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).to_vec();
    origins.extend(options.allowed_origins);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(server.new_session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        tracing::warn!(%local, "listening beyond loopback: anyone who can reach this address can call the tools");
    }
    // Announce the real port (useful with port 0) on stderr, for scripts and tests.
    eprintln!("mcp-wasm-host: serving MCP over Streamable HTTP at http://{local}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .context("the HTTP server failed")
}
