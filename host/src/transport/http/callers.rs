//! Who is calling over `--http`, with `--auth-issuer`: the gate admits a
//! request with a valid token and its [`Principal`] rides on the request
//! for the MCP handlers. Here also what only the HTTP layer can do for
//! them: refuse another caller's session as unknown, bind a new session
//! to its caller, and answer a call of a tool whose scopes the token lacks
//! with `403 insufficient_scope`, the status a client's auth layer acts on
//! (recorded in the audit log as the MCP handler records its refusals).

use http::StatusCode;
use http_body_util::BodyExt as _;
use hyper::body::Bytes;

use super::sessions::BoundedSessions;
use super::{Body, closing, plain};
use crate::audit::Who;
use crate::auth::{Gate, Lacking, Principal};
use crate::mcp::ToolServer;

/// The header that names a Streamable HTTP session.
pub(super) const SESSION: &str = "mcp-session-id";

/// An admitted caller.
pub(super) struct Caller<'a> {
    gate: &'a Gate,
    principal: Principal,
    /// The session the request names (its own: another's was refused),
    /// for the audit record of a refusal.
    session: Option<http::HeaderValue>,
}

/// The caller of the request with `parts`, now riding in its extensions;
/// or the answer that refuses it: `401` without a valid token, `404` for
/// another caller's session.
pub(super) async fn admit<'a>(
    gate: &'a Gate,
    parts: &mut http::request::Parts,
    sessions: &BoundedSessions,
) -> Result<Caller<'a>, http::Response<Body>> {
    let principal = match gate.admit(parts).await {
        Ok(principal) => principal,
        Err(refusal) => return Err(closing(refusal.map(|body| body.boxed()))),
    };
    let session = parts.headers.get(SESSION).cloned();
    let named = session.as_ref().and_then(|id| id.to_str().ok());
    if named.is_some_and(|id| !sessions.belongs(id, &principal.key())) {
        // Word for word rmcp's answer for a session it does not have.
        return Err(plain(StatusCode::NOT_FOUND, "Not Found: Session not found".into()));
    }
    // For the handlers, in the `http::request::Parts` rmcp hands them.
    parts.extensions.insert(principal.clone());
    Ok(Caller { gate, principal, session })
}

impl Caller<'_> {
    /// `403 insufficient_scope` if `body` is a `tools/call` of a tool of
    /// `tools` whose scopes the caller's token lacks, with its audit record.
    pub(super) async fn forbid(&self, tools: &ToolServer, body: &Bytes) -> Option<http::Response<Body>> {
        #[derive(serde::Deserialize)]
        struct Call<'a> {
            method: String,
            #[serde(default)]
            id: serde_json::Value,
            #[serde(borrow)]
            params: Option<Params<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            name: String,
            /// Left unread: only a refusal's audit record needs it.
            #[serde(borrow, default)]
            arguments: Option<&'a serde_json::value::RawValue>,
        }
        // The body's one parse here; fields not named are skipped unread. A
        // body that is not a single call is rmcp's to answer (the MCP
        // handler gives the same verdict as a JSON-RPC error).
        let call = serde_json::from_slice::<Call>(body).ok().filter(|call| call.method == "tools/call")?;
        let params = call.params?;
        let needed = tools.scopes_of(&params.name)?;
        let verdict = Lacking::of(&self.principal, &params.name, &needed)?;
        let audit = tools.runner().stats().audit();
        if audit.is_on() {
            // As the handler has it: no arguments are `{}`.
            let arguments = (params.arguments)
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
            let session = self.session.as_ref().map(|id| id.as_bytes());
            let who = Who::of_request(Some(&self.principal), session, &call.id);
            // Waits for room in the log's queue, as the handler's refusals
            // do: a flood of refused calls is held back, not queued without bound.
            audit.refused(who, &params.name, &arguments, Lacking::AUDIT_REASON).await;
        }
        Some(self.gate.forbid(&self.principal, &verdict).map(|body| body.boxed()))
    }

    /// Binds the session `response` (to an `initialize`) made, if any, to
    /// the caller, before the client learns its id.
    pub(super) fn own_new_session(&self, response: &http::Response<Body>, sessions: &BoundedSessions) {
        if let Some(id) = response.headers().get(SESSION).and_then(|id| id.to_str().ok()) {
            sessions.bind(id, self.principal.key());
        }
    }
}
