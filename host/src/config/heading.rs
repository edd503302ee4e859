//! The headings `--help` groups the serving options under. clap shows them
//! in the order their first option is defined: what is served, what it
//! may touch, how far it may go and who says yes (each component's, in
//! `flags.rs`), where components come from and who may call (a component
//! names its signing key and scopes too), then how it is reached and what
//! it reports. `docs/cli.md` uses the same headings.

/// What is served and how it is loaded: components, the config file, the
/// tool selection, reloading, the compile cache.
pub const SERVING: &str = "Serving";
/// What a tool may see: directories, environment, outgoing HTTP, wasi:config values.
pub const GRANTS: &str = "Grants";
/// How far a call, and all calls together, may go.
pub const LIMITS: &str = crate::limits::HELP_HEADING;
/// When the user is asked, and for how long.
pub const APPROVAL: &str = "Approval";
/// Serving Streamable HTTP: the address, sessions, connections, TLS, draining.
pub const HTTP: &str = "HTTP";
/// Who may call over HTTP (OAuth), and each caller's share.
pub const AUTHORIZATION: &str = "Authorization";
/// Logs, the audit trail and traces.
pub const OBSERVABILITY: &str = "Observability";
/// Components pulled from OCI registries.
pub const REGISTRY: &str = "Registry";
