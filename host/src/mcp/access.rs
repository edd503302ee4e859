//! Who may do what, with `--auth-issuer`: a caller (its [`Principal`])
//! reaches only the tools its token's scopes allow, only the tasks and
//! paused calls it started, and only its share of the host's calls. A
//! task id another caller started gets the same answer as one never
//! issued. Without auth there is no principal and everything here allows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::ErrorCode;
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskManager;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

use crate::auth::{Fairness, Lacking, Principal};
use crate::call::Share;

/// The JSON-RPC error for a token that lacks a scope, where no HTTP `403`
/// can say it (a task's requests, prompts, resources, completions; a
/// `tools/call`, new or a follow-up, got its `403` from the HTTP layer
/// already): in the range JSON-RPC leaves to servers.
const INSUFFICIENT_SCOPE: ErrorCode = ErrorCode(-32003);

/// Principals' tasks remembered before the ended ones are dropped.
const REMEMBERED: usize = 1024;

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

/// Who started each task of a session (or of the sessionless ones).
#[derive(Default)]
pub(super) struct Owners {
    table: Mutex<HashMap<String, Owned>>,
}

struct Owned {
    /// [`Principal::key`] of who started it.
    principal: String,
    tool: String,
    /// The scopes its tool needs, checked again on every follow-up.
    scopes: Arc<[String]>,
}

impl Owners {
    /// Records that `context`'s caller started task `id`, a call of `tool`.
    pub(super) fn claim(
        &self,
        id: &str,
        tool: &str,
        scopes: Arc<[String]>,
        context: &RequestContext<RoleServer>,
        tasks: &TaskManager,
    ) {
        let Some(principal) = caller(context) else { return };
        let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if table.len() >= REMEMBERED {
            // Tasks rmcp has let go of (past their time to live) need no owner.
            table.retain(|id, _| tasks.get_task(id).is_ok());
        }
        let owned = Owned { principal: principal.key(), tool: tool.to_string(), scopes };
        table.insert(id.to_string(), owned);
    }

    /// Whether `context`'s caller may see or steer task `id`: the same
    /// error as for an unknown task if another caller started it, and a
    /// scope error if the token no longer has its tool's scopes.
    pub(super) fn check(&self, id: &str, context: &RequestContext<RoleServer>) -> Result<(), McpError> {
        let Some(principal) = caller(context) else { return Ok(()) };
        let table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match table.get(id) {
            Some(owned) if owned.principal == principal.key() => {
                check_scopes(&owned.tool, &owned.scopes, context)
            }
            // Word for word rmcp's answer for a task it never issued.
            _ => Err(TaskManager::new()
                .get_task(id)
                .err()
                .unwrap_or_else(|| McpError::invalid_params("task not found", None))),
        }
    }
}
