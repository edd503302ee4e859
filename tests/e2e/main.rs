//! End-to-end tests: each spawns the real `mcp-wasm-host` binary and drives it
//! over stdio with rmcp's MCP client. Fixtures are the example components in
//! `target/guests/` (built by `just guests`).

mod harness;

mod approval;
mod asking;
mod audit;
mod auth;
mod auth_access;
mod auth_fleet;
mod auth_introspect;
mod balanced;
mod bounded_io;
mod call;
mod cancel;
mod client_requests;
mod config;
mod descriptors;
mod fleet;
mod forged_text;
mod frames;
mod fuzz;
mod hardening;
mod host_memory;
mod hostile;
mod hostile_registry;
mod hostile_uris;
mod http_answers;
mod http_bodies;
mod http_headers;
mod http_limits;
mod input_end;
mod languages;
mod lifecycle;
mod limits;
mod offers;
mod plain;
mod plain_reload;
mod registry;
mod registry_harness;
mod request_state;
mod scaffold;
mod secret_files;
mod skills;
mod storm;
mod task_store;
mod tiering;
mod tls;
mod tools;
mod traces;
mod watch;
