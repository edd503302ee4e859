//! `client.resource-updated`: a call says a resource of its component
//! changed, and the clients subscribed to it are told — within an
//! allowance per call, and only for the component's own URIs.
//!
//! The call waits (briefly) until the notifications are handed to the
//! followers' transports, so a client that follows the resource gets
//! `notifications/resources/updated` before the result of the call that
//! changed it.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::CallChannel;

/// Announces that the resource at a URI changed, to the clients subscribed
/// to it: the task sending the notifications, or `None` for a URI the
/// calling component does not offer.
pub type ResourceUpdates = Arc<dyn Fn(&str) -> Option<JoinHandle<()>> + Send + Sync>;

/// Resource updates one call may announce: enough for a tool that touches
/// many records, not a flood of notifications.
pub(super) const MAX_UPDATES_PER_CALL: u32 = 64;

/// How long a call waits for its notifications to be handed over: a
/// client that does not read its stream holds no call up for longer.
const HAND_OVER_WAIT: Duration = Duration::from_secs(1);

impl CallChannel {
    /// Sends the call's `client.resource-updated` to `updates`.
    pub fn announce_updates_to(&mut self, updates: ResourceUpdates) {
        self.resource_updates = Some(updates);
    }

    /// The tool says the resource at `uri` changed: subscribers are told,
    /// within the call's allowance (a URI its component does not offer, or
    /// one past the allowance, is dropped with a log line).
    pub async fn resource_updated(&mut self, call_id: &str, uri: &str) {
        let Some(updates) = &self.resource_updates else { return };
        if self.updates_left == 0 {
            self.dropped += 1;
            return;
        }
        self.updates_left -= 1;
        // Matched on the caller's thread: a URI past the bound is no
        // resource of any component, and is not looked at.
        if uri.len() > crate::limits::MAX_MATCHED_URI {
            tracing::info!(
                call_id,
                bytes = uri.len(),
                "resource-updated names a URI too long to be a resource; ignored"
            );
            return;
        }
        match updates(uri) {
            Some(sending) => {
                // The sending goes on if the wait ends first.
                let _ = tokio::time::timeout(HAND_OVER_WAIT, sending).await;
            }
            None => {
                let uri = crate::log_text::escaped(uri);
                tracing::info!(call_id, uri = %uri, "resource-updated names no resource of this component; ignored");
            }
        }
    }
}
