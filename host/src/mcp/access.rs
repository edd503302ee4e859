//! Who may do what, with `--auth-issuer`: a caller (its [`Principal`])
//! reaches only the tools its token's scopes allow, only the tasks and
//! paused calls it started, and only its share of the host's calls. A
//! task id another caller started gets the same answer as one never
//! issued. Without auth there is no principal and everything here allows.

use std::sync::Arc;

use rmcp::model::ErrorCode;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

use crate::auth::{Fairness, Lacking, Principal};
use crate::call::Share;
use crate::tasks::{self, Owner};

/// The JSON-RPC error for a token that lacks a scope, where no HTTP `403`
/// can say it (a task's requests, prompts, resources, completions; a
/// `tools/call`, new or a follow-up, got its `403` from the HTTP layer
/// already): in the range JSON-RPC leaves to servers.
const INSUFFICIENT_SCOPE: ErrorCode = ErrorCode(-32003);

/// The caller of `context`'s request, if it came with a token.
pub(super) fn caller(context: &RequestContext<RoleServer>) -> Option<&Principal> {
    Principal::of(&context.extensions)
}

/// Refuses a call of `tool`, which needs `needed`, by a caller whose token
/// lacks one of them: the scope verdict ([`Lacking`]) as MCP shows it.
pub(super) fn check_scopes(
    tool: &str,
    needed: &[String],
    context: &RequestContext<RoleServer>,
) -> Result<(), McpError> {
    match caller(context).and_then(|principal| Lacking::of(principal, tool, needed)) {
        Some(verdict) => Err(refusal(&verdict)),
        None => Ok(()),
    }
}

/// The scope verdict as a JSON-RPC error.
fn refusal(verdict: &Lacking) -> McpError {
    McpError::new(
        INSUFFICIENT_SCOPE,
        format!(
            "insufficient_scope: tool `{}` needs scope {}, which the access token lacks; \
             get a token with it (step up) and call again",
            verdict.tool,
            verdict.lacking.join(" ")
        ),
        Some(json!({ "requiredScopes": verdict.needed })),
    )
}

/// A slot of the caller's share of calls (`--max-calls-per-principal`), or
/// the error that refuses the call; unshared without auth.
pub(super) fn share(
    fairness: Option<&Fairness>,
    context: &RequestContext<RoleServer>,
) -> Result<Share, McpError> {
    let (Some(fairness), Some(principal)) = (fairness, caller(context)) else { return Ok(Share::unshared()) };
    let shares = &fairness.calls;
    match shares.take(&principal.key()) {
        Some(permit) => Ok(Share::taken(permit)),
        None => Err(McpError::invalid_request(
            format!(
                "too many calls of yours at once: at most {} may run or wait per caller \
                 (--max-calls-per-principal); let one end, then call again",
                shares.max()
            ),
            None,
        )),
    }
}

/// Who owns a task of `tool` (which needs `scopes`) that `context`'s
/// request starts.
pub(super) fn owner(tool: &str, scopes: Arc<[String]>, context: &RequestContext<RoleServer>) -> Owner {
    Owner { principal: caller(context).map(Principal::key), tool: tool.to_string(), scopes }
}

/// Whether `context`'s caller may see or steer a task of `owner`: the
/// same error as for an unknown task `id` if another caller started it,
/// and a scope error if the token no longer has its tool's scopes.
pub(super) fn task_check(
    id: &str,
    context: &RequestContext<RoleServer>,
    owner: &Owner,
) -> Result<(), McpError> {
    let Some(principal) = caller(context) else { return Ok(()) };
    if owner.principal.as_deref() != Some(principal.key().as_str()) {
        return Err(tasks::unknown(id));
    }
    check_scopes(&owner.tool, &owner.scopes, context)
}
