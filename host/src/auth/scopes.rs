//! Which scopes a tool needs (`--required-scopes`, `--tool-scope`, or
//! `required_scopes` / `tool_scopes` in a `[[component]]`), and what a
//! caller lacks. With `--auth-issuer`, `tools/list` shows a caller only
//! the tools its token's scopes reach, and a call of any other tool is
//! refused: `403 insufficient_scope` naming what to step up to, or, where
//! an HTTP status can no longer say it, a JSON-RPC error.

use std::collections::BTreeMap;
use std::str::FromStr;

use anyhow::{Result, bail};

use super::is_scope_char;

/// The scopes one component's tools need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolScopes {
    /// Every tool of the component needs these.
    pub every_tool: Vec<String>,
    /// These tools need these too.
    pub per_tool: BTreeMap<String, Vec<String>>,
}

impl ToolScopes {
    /// The scopes `tool` needs, sorted and without repeats.
    pub fn for_tool(&self, tool: &str) -> Vec<String> {
        let mut scopes = self.every_tool.clone();
        scopes.extend(self.per_tool.get(tool).into_iter().flatten().cloned());
        scopes.sort_unstable();
        scopes.dedup();
        scopes
    }

    /// Every scope named, for `scopes_supported`.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        self.every_tool.iter().chain(self.per_tool.values().flatten())
    }

    /// Checks every scope is one, and every tool named is among `tools`
    /// (a misspelt tool would otherwise leave the real one open).
    pub fn validate<'a>(&self, tools: impl IntoIterator<Item = &'a str> + Clone) -> Result<()> {
        if let Some(bad) = self.all().find(|scope| !is_scope(scope)) {
            bail!("{bad:?} is not a scope (RFC 6749: printable ASCII, no spaces, quotes or \\)");
        }
        for name in self.per_tool.keys() {
            if !tools.clone().into_iter().any(|tool| tool == name) {
                let mut known: Vec<&str> = tools.clone().into_iter().collect();
                known.sort_unstable();
                bail!(
                    "--tool-scope {name}=…: no loaded component offers a tool `{name}` (tools: {})",
                    known.join(", ")
                );
            }
        }
        Ok(())
    }
}

/// Whether `scope` is one scope token (RFC 6749 §3.3).
pub(super) fn is_scope(scope: &str) -> bool {
    !scope.is_empty() && scope.chars().all(is_scope_char)
}

/// The one scope verdict: what a caller's token lacks for a tool. The
/// HTTP layer shows it as `403 insufficient_scope` ([`super::Gate::forbid`]),
/// MCP as JSON-RPC error -32003 where no status can say it any more; both
/// write the same audit record ([`Lacking::AUDIT_REASON`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lacking {
    /// The tool (or resource, prompt, method) asked for.
    pub tool: String,
    /// Every scope it needs.
    pub needed: Vec<String>,
    /// Those of them the token lacks (never empty).
    pub lacking: Vec<String>,
}

impl Lacking {
    /// How the audit trail names a call refused for a scope.
    pub const AUDIT_REASON: &'static str = "insufficient-scope";

    /// What `principal`'s token lacks of `needed` for `tool`; `None` when
    /// it holds every one (a caller without a token is not checked here).
    pub fn of(principal: &super::Principal, tool: &str, needed: &[String]) -> Option<Lacking> {
        let lacking: Vec<String> =
            needed.iter().filter(|scope| !principal.scopes.contains(scope)).cloned().collect();
        (!lacking.is_empty()).then(|| Lacking { tool: tool.to_string(), needed: needed.to_vec(), lacking })
    }
}

/// `--tool-scope TOOL=SCOPE`: one scope one tool needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolScope {
    /// The tool.
    pub tool: String,
    /// The scope it needs.
    pub scope: String,
}

impl FromStr for ToolScope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // A tool name holds no `=` (MCP: letters, digits, `_`, `-`, `.`),
        // so the first one ends it; a scope may hold one.
        let Some((tool, scope)) = text.split_once('=') else {
            return Err(format!("{text:?} is not TOOL=SCOPE"));
        };
        if tool.is_empty() || !is_scope(scope) {
            return Err(format!("{text:?} is not TOOL=SCOPE (one scope: printable ASCII, no spaces)"));
        }
        Ok(ToolScope { tool: tool.to_string(), scope: scope.to_string() })
    }
}

/// `--tool-scope` entries gathered by tool.
pub fn by_tool(entries: &[ToolScope]) -> BTreeMap<String, Vec<String>> {
    let mut per_tool: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ToolScope { tool, scope } in entries {
        per_tool.entry(tool.clone()).or_default().push(scope.clone());
    }
    per_tool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_needs_its_components_scopes_and_its_own() {
        let scopes = ToolScopes {
            every_tool: vec!["tools".into()],
            per_tool: by_tool(&["delete=files:write".parse().unwrap(), "delete=tools".parse().unwrap()]),
        };
        assert_eq!(scopes.for_tool("delete"), ["files:write", "tools"]);
        assert_eq!(scopes.for_tool("echo"), ["tools"]);
        let caller = super::super::Principal {
            issuer: "https://login.example.com".into(),
            subject: "ana".into(),
            client_id: None,
            scopes: vec!["tools".into()],
        };
        let verdict = Lacking::of(&caller, "delete", &scopes.for_tool("delete")).unwrap();
        assert_eq!(
            (verdict.needed, verdict.lacking),
            (scopes.for_tool("delete"), vec!["files:write".into()])
        );
        assert_eq!(Lacking::of(&caller, "echo", &scopes.for_tool("echo")), None);
        assert!(scopes.validate(["delete", "echo"]).is_ok());
        assert!(scopes.validate(["echo"]).is_err());
        assert!("noscope".parse::<ToolScope>().is_err());
        assert!("x=a b".parse::<ToolScope>().is_err());
        assert_eq!("x=a=b".parse::<ToolScope>().unwrap().scope, "a=b");
    }
}
