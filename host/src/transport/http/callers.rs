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
use crate::auth::{Gate, Principal};
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

/// The caller of the request with `parts` (`None` without a gate), now
/// riding in its extensions; or the answer that refuses it: `401` without
/// a valid token, `404` for another caller's session.
pub(super) async fn admit<'a>(
    gate: Option<&'a Gate>,
    parts: &mut http::request::Parts,
    sessions: &BoundedSessions,
) -> Result<Option<Caller<'a>>, http::Response<Body>> {
    let Some(gate) = gate else { return Ok(None) };
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
    Ok(Some(Caller { gate, principal, session }))
}

impl Caller<'_> {
    /// `403 insufficient_scope` if `body` is a `tools/call` of a tool of
    /// `tools` whose scopes the caller's token lacks.
    pub(super) async fn forbid(&self, tools: &ToolServer, body: &Bytes) -> Option<http::Response<Body>> {
        #[derive(serde::Deserialize)]
        struct Call {
            method: String,
            params: Option<Params>,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            name: String,
        }
        // Fields not named here are skipped unread; a body that is not a
        // single call is rmcp's to answer (the MCP handler checks scopes too).
        let call = serde_json::from_slice::<Call>(body).ok().filter(|call| call.method == "tools/call")?;
        let name = call.params?.name;
        let needed = tools.scopes_of(&name)?;
        let refusal = self.gate.forbid(&self.principal, &name, &needed)?;
        self.record_refusal(tools, &name, body).await;
        Some(refusal.map(|body| body.boxed()))
    }

    /// Writes the audit record of a call of `tool` (in `body`) refused for
    /// a scope: the same the MCP handler writes for a refusal it answers.
    async fn record_refusal(&self, tools: &ToolServer, tool: &str, body: &Bytes) {
        #[derive(Default, serde::Deserialize)]
        struct Asked {
            #[serde(default)]
            id: serde_json::Value,
            #[serde(default)]
            params: Arguments,
        }
        #[derive(Default, serde::Deserialize)]
        struct Arguments {
            #[serde(default)]
            arguments: serde_json::Value,
        }
        let audit = tools.runner().stats().audit();
        if !audit.is_on() {
            return;
        }
        // Parsed again, only here: a call that is let through keeps its
        // arguments unread by this layer. The body parsed once already.
        let asked = serde_json::from_slice::<Asked>(body).unwrap_or_default();
        let arguments = match asked.params.arguments {
            // As the handler has it: no arguments are `{}`.
            serde_json::Value::Null => serde_json::Value::Object(Default::default()),
            arguments => arguments,
        };
        let session = self.session.as_ref().map(|id| id.as_bytes());
        let who = Who::of_request(Some(&self.principal), session, &asked.id);
        // Waits for room in the log's queue, as the handler's refusals do:
        // a flood of refused calls is held back, not queued without bound.
        audit.refused(who, tool, &arguments, "insufficient-scope").await;
    }

    /// Binds the session `response` (to an `initialize`) made, if any, to
    /// the caller, before the client learns its id.
    pub(super) fn own_new_session(&self, response: &http::Response<Body>, sessions: &BoundedSessions) {
        if let Some(id) = response.headers().get(SESSION).and_then(|id| id.to_str().ok()) {
            sessions.bind(id, self.principal.key());
        }
    }
}
