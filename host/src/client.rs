//! The host side of `mcp:tool/client`: what a tool asks of the MCP client
//! during a call. For now, logging; progress, elicitation and sampling join
//! this interface in later minor versions of the contract.

use crate::bindings::client::{self, LogLevel};
use crate::bindings::types;
use crate::sandbox::CallState;

impl types::Host for CallState {}

impl client::Host for CallState {
    fn log(&mut self, level: LogLevel, logger: Option<String>, data: String) -> wasmtime::Result<()> {
        let call_id = &*self.call_id;
        let logger = logger.as_deref().unwrap_or("tool");
        match level {
            LogLevel::Debug => tracing::debug!(target: "tool", call_id, logger, "{data}"),
            LogLevel::Info | LogLevel::Notice => tracing::info!(target: "tool", call_id, logger, "{data}"),
            LogLevel::Warning => tracing::warn!(target: "tool", call_id, logger, "{data}"),
            LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
                tracing::error!(target: "tool", call_id, logger, "{data}")
            }
        }
        Ok(())
    }
}
