//! How MCP messages reach the host: stdio (one session, ended by the client
//! closing stdin or a signal) or Streamable HTTP (many sessions, bounded).

pub(crate) mod http;
pub(crate) mod signal;
pub(crate) mod stdio;
mod stdio_streams;
