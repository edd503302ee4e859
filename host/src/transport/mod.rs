//! How MCP messages reach the host: stdio (one session, ended by the client
//! closing stdin or a signal) or Streamable HTTP (many sessions, bounded).

mod call_frame;
mod frame_id;
pub(crate) mod http;
pub(crate) mod signal;
pub(crate) mod stdio;
mod stdio_end;
mod stdio_frames;
mod stdio_streams;
