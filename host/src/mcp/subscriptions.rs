//! `resources/subscribe`: which sessions follow which URIs, and telling
//! them when a resource changes (`notifications/resources/updated`) — when
//! a component's call says so (`client.resource-updated`), or when a
//! reload (`--watch`) replaces the component that serves it.
//!
//! Bounded: a session follows at most [`MAX_PER_SESSION`] URIs; a
//! notification is sent off the call's path, so a slow client never holds
//! up the call that changed the resource.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;

use crate::ask::ResourceUpdates;
use crate::component::ToolComponent;

/// The most URIs one session may follow.
pub(super) const MAX_PER_SESSION: usize = 1024;

/// One session's subscriptions.
#[derive(Default)]
pub(super) struct Following {
    state: Mutex<FollowingState>,
}

#[derive(Default)]
struct FollowingState {
    peer: Option<Peer<RoleServer>>,
    uris: HashSet<String>,
    registered: bool,
}

/// Every session that follows something.
#[derive(Default)]
pub(super) struct Subscribers {
    sessions: Mutex<Vec<Weak<Following>>>,
}

/// Why a subscription was refused.
pub(super) enum Refused {
    TooMany,
}

impl Subscribers {
    /// `session` (reached through `peer`) follows `uri` from now on.
    pub(super) fn follow(
        &self,
        session: &Arc<Following>,
        peer: Peer<RoleServer>,
        uri: &str,
    ) -> Result<(), Refused> {
        let mut state = lock(&session.state);
        if !state.uris.contains(uri) && state.uris.len() >= MAX_PER_SESSION {
            return Err(Refused::TooMany);
        }
        state.uris.insert(uri.to_string());
        state.peer = Some(peer);
        if !state.registered {
            state.registered = true;
            let mut sessions = lock(&self.sessions);
            sessions.retain(|session| session.strong_count() > 0);
            sessions.push(Arc::downgrade(session));
        }
        Ok(())
    }

    /// `session` no longer follows `uri`.
    pub(super) fn unfollow(&self, session: &Following, uri: &str) {
        lock(&session.state).uris.remove(uri);
    }

    /// Tells every session following `uri` that it changed.
    pub(super) fn updated(&self, uri: &str) {
        for peer in self.followers(|uris| uris.contains(uri)) {
            let uri = uri.to_string();
            tokio::spawn(async move {
                if let Err(err) =
                    peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await
                {
                    tracing::debug!("cannot tell a client a resource changed: {err}");
                }
            });
        }
    }

    /// After a reload of `component`: every followed URI it serves changed.
    pub(super) fn reloaded(&self, component: &ToolComponent) {
        let sessions: Vec<Arc<Following>> = lock(&self.sessions).iter().filter_map(Weak::upgrade).collect();
        let mut changed = HashSet::new();
        for session in sessions {
            let state = lock(&session.state);
            changed.extend(state.uris.iter().filter(|uri| component.offers.offers_uri(uri)).cloned());
        }
        for uri in changed {
            self.updated(&uri);
        }
    }

    /// Where the calls of `component` announce changes: checked against
    /// the URIs it offers.
    pub(super) fn sink_for(self: &Arc<Self>, component: &Arc<ToolComponent>) -> ResourceUpdates {
        let (subscribers, component) = (Arc::downgrade(self), Arc::downgrade(component));
        Arc::new(move |uri: &str| {
            let (Some(subscribers), Some(component)) = (subscribers.upgrade(), component.upgrade()) else {
                return true;
            };
            if !component.offers.offers_uri(uri) {
                return false;
            }
            subscribers.updated(uri);
            true
        })
    }

    /// The peers of live sessions whose URIs pass `wanted`.
    fn followers(&self, wanted: impl Fn(&HashSet<String>) -> bool) -> Vec<Peer<RoleServer>> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|session| session.strong_count() > 0);
        sessions
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|session| {
                let state = lock(&session.state);
                let peer = state.peer.as_ref().filter(|peer| !peer.is_transport_closed())?;
                wanted(&state.uris).then(|| peer.clone())
            })
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
