//! `client.resource-updated`: a call says a resource of its component
//! changed, and the clients subscribed to it are told — within an
//! allowance per call, and only for the component's own URIs.

use std::sync::Arc;

use super::CallChannel;

/// Announces that the resource at a URI changed, to the clients subscribed
/// to it. Returns `false` for a URI the calling component does not offer.
pub type ResourceUpdates = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Resource updates one call may announce: enough for a tool that touches
/// many records, not a flood of notifications.
pub(super) const MAX_UPDATES_PER_CALL: u32 = 64;

impl CallChannel {
    /// Sends the call's `client.resource-updated` to `updates`.
    pub fn announce_updates_to(&mut self, updates: ResourceUpdates) {
        self.resource_updates = Some(updates);
    }

    /// The tool says the resource at `uri` changed: subscribers are told,
    /// within the call's allowance (a URI its component does not offer, or
    /// one past the allowance, is dropped with a log line).
    pub fn resource_updated(&mut self, call_id: &str, uri: &str) {
        let Some(updates) = &self.resource_updates else { return };
        if self.updates_left == 0 {
            self.dropped += 1;
            return;
        }
        self.updates_left -= 1;
        if !updates(uri) {
            tracing::info!(call_id, uri = %crate::log_text::escaped(uri), "resource-updated names no resource of this component; ignored");
        }
    }
}
