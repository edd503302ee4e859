//! The headings `--help` groups the serving options under, in the order a
//! user meets them: what is served, what it may touch, how far it may go,
//! who says yes, how it is reached, who may reach it, what it reports, and
//! where components come from. `docs/cli.md` uses the same headings.

/// What is served and how it is loaded: components, the config file, the
/// tool selection, reloading, the compile cache.
pub const SERVING: &str = "Serving";
/// What a tool may see: directories, environment, outgoing HTTP, wasi:config values.
pub const GRANTS: &str = "Grants";
/// How far a call, and all calls together, may go.
pub const LIMITS: &str = "Limits";
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
