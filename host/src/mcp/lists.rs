//! Which items of a list a caller sees, and how long a client may keep a
//! list (`ttlMs`, `cacheScope`: SEP-2549, required from protocol
//! 2026-07-28). Lists are in the components' own order, the same on every
//! replica serving the same components.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CacheScope, GetSkillResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, ListToolsResult,
};
use rmcp::service::RequestContext;

use super::{ToolServer, access, mode};

/// How long a list stays fresh when components are not reloaded while
/// serving (a fleet's rolling update is the change a client may miss).
const FRESH_MS: u64 = 60_000;

/// A list result that can carry cache hints.
pub(super) trait Cacheable {
    fn with_hints(self, ttl_ms: u64, scope: CacheScope) -> Self;
}

macro_rules! cacheable {
    ($($list:ty),*) => {$(
        impl Cacheable for $list {
            fn with_hints(self, ttl_ms: u64, scope: CacheScope) -> Self {
                self.with_ttl_ms(ttl_ms).with_cache_scope(scope)
            }
        }
    )*};
}

cacheable!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    ListSkillsResult,
    GetSkillResult
);

impl ToolServer {
    /// `list` with the cache hints its protocol version requires: none
    /// before 2026-07-28; then fresh for [`FRESH_MS`], or not at all with
    /// `--watch` (a reload changes it at any time); private to the caller
    /// when a token filtered it.
    pub(super) fn cacheable<T: Cacheable>(&self, list: T, context: &RequestContext<RoleServer>) -> T {
        if !mode::rounds::speaks_in_rounds(context) {
            return list;
        }
        let ttl_ms = if self.caller.shared.list_changes.is_some() { 0 } else { FRESH_MS };
        let scope = if access::caller(context).is_some() { CacheScope::Private } else { CacheScope::Public };
        list.with_hints(ttl_ms, scope)
    }
}

/// The items whose scopes `granted` holds, in order.
pub(super) fn visible<T: Clone>(items: &[(T, Arc<[String]>)], granted: Option<&[String]>) -> Vec<T> {
    items
        .iter()
        .filter(|(_, needed)| {
            granted.is_none_or(|granted| needed.iter().all(|scope| granted.contains(scope)))
        })
        .map(|(item, _)| item.clone())
        .collect()
}
