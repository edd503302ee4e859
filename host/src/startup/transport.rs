//! Stage 4 of start-up: the transport that answers clients.

use std::sync::Arc;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::config;
use crate::mcp::ToolServer;
use crate::stats::Stats;

/// Serves `server` over stdio, or over Streamable HTTP with `--http`.
pub(super) async fn serve(
    limits: &config::ServerSettings,
    server: ToolServer,
    signals: crate::transport::signal::Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    match limits.http {
        Some(addr) => {
            let options = crate::transport::http::HttpOptions {
                addr,
                allowed_hosts: limits.http_allowed_hosts.clone(),
                allowed_origins: limits.http_allowed_origins.clone(),
                max_sessions: limits.max_sessions as usize,
                idle_timeout: limits.http_idle_timeout,
                header_timeout: limits.http_header_timeout,
                body_timeout: limits.http_body_timeout,
                max_connections: limits.max_connections as usize,
                max_request_memory: limits.max_request_memory,
                drain_timeout: limits.drain_timeout,
                auth: limits.auth.clone(),
                tls: limits.tls.clone(),
            };
            crate::transport::http::serve_until_signal(server, options, signals, shutdown, stats).await
        }
        None => {
            let memory = limits.max_request_memory;
            crate::transport::stdio::serve(server, signals, shutdown, stats, limits.eof_drain, memory).await
        }
    }
}
