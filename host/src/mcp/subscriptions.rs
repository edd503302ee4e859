//! `resources/subscribe` (up to protocol 2025-11-25) and
//! `subscriptions/listen` (2026-07-28): who follows which URIs, and telling
//! them when a resource changes (`notifications/resources/updated`) — when
//! a component's call says so (`client.resource-updated`), or when a
//! reload (`--watch`) replaces the component that serves it. A listen
//! stream may also follow the lists (`list_changed`).
//!
//! A listen stream is acknowledged by rmcp before [`Subscribers::listen`]
//! gets its sink, and a client may act on the acknowledgment at once: the
//! stream is therefore followed from [`Subscribers::accept`] on (while rmcp
//! picks the filter), and what changed in between is told when the sink
//! arrives.
//!
//! Bounded: a session follows at most [`MAX_PER_SESSION`] URIs of at most
//! [`MAX_BYTES_PER_SESSION`] together (each within
//! [`crate::limits::MAX_MATCHED_URI`], checked before it comes here); the call
//! that changed a resource waits at most a second for its notifications to
//! be handed over (so they precede its result), and each one at most
//! [`SEND_WAIT`] for a client that does not read.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, Weak};

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use tokio::task::JoinHandle;

use crate::ask::ResourceUpdates;
use crate::budget::{Budget, Charge};
use crate::component::ToolComponent;

/// How long one notification may wait for its client's transport.
const SEND_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The most URIs one session may follow.
pub(super) const MAX_PER_SESSION: usize = 1024;

/// The most listen streams acknowledged and not yet handed their sink; a
/// stream whose acknowledgment could not be sent never comes for its
/// entry, so the oldest is dropped past this.
const MAX_ACCEPTING: usize = 64;

/// The most bytes of URIs one session may follow: with `--max-sessions`
/// (256), what clients can make the host keep is 64 MiB at most.
pub(super) const MAX_BYTES_PER_SESSION: usize = 256 << 10;

/// One session's subscriptions.
pub(super) struct Following {
    state: Mutex<FollowingState>,
    /// What the session's URIs may hold together ([`MAX_BYTES_PER_SESSION`]).
    memory: Arc<Budget>,
}

impl Default for Following {
    fn default() -> Self {
        Following {
            state: Mutex::default(),
            memory: Budget::shared("the URIs a session may follow", MAX_BYTES_PER_SESSION),
        }
    }
}

#[derive(Default)]
struct FollowingState {
    to: Option<Target>,
    /// Each URI, with its bytes charged before it was kept.
    uris: HashMap<String, Charge>,
    /// A listen stream that follows the lists too.
    lists: bool,
    registered: bool,
    /// Followed URIs that changed while the stream had no sink yet (a
    /// subset of `uris`, so bounded with them).
    missed: HashSet<String>,
    /// The lists changed while the stream had no sink yet.
    missed_lists: bool,
}

/// Where a follower's notifications go.
#[derive(Clone)]
enum Target {
    /// The session's peer (`resources/subscribe`).
    Session(Peer<RoleServer>),
    /// A `subscriptions/listen` stream, which tags each with its id.
    Stream(SubscriptionSink),
}

impl Target {
    fn is_closed(&self) -> bool {
        match self {
            Target::Session(peer) => peer.is_transport_closed(),
            Target::Stream(_) => false,
        }
    }

    async fn updated(&self, uri: String) -> Result<(), String> {
        match self {
            Target::Session(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .map_err(|err| err.to_string()),
            Target::Stream(sink) => sink.notify_resource_updated(uri).await.map_err(|err| err.to_string()),
        }
    }
}

/// Every session that follows something.
#[derive(Default)]
pub(super) struct Subscribers {
    sessions: Mutex<Vec<Weak<Following>>>,
    /// Listen streams accepted and not yet handed their sink, by the task
    /// that serves the `subscriptions/listen` request (rmcp runs the filter
    /// and the handler in that one task). At most [`MAX_ACCEPTING`].
    accepting: Mutex<VecDeque<(tokio::task::Id, Arc<Following>)>>,
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
        if !state.uris.contains_key(uri) {
            if state.uris.len() >= MAX_PER_SESSION {
                return Err(Refused::TooMany);
            }
            let charge = session.memory.charge_owned(uri.len()).map_err(|_| Refused::TooMany)?;
            state.uris.insert(uri.to_string(), charge);
        }
        state.to = Some(Target::Session(peer));
        if !state.registered {
            state.registered = true;
            self.register(session);
        }
        Ok(())
    }

    /// A `subscriptions/listen` request is about to be acknowledged for
    /// `uris` (and the lists, if `lists`): they are followed from now on,
    /// so nothing that changes before [`Self::listen`] is lost.
    pub(super) fn accept(&self, uris: &[String], lists: bool) {
        let Some(task) = tokio::task::try_id() else { return };
        let following = Arc::new(Following::default());
        following.follow_all(uris, lists);
        self.register(&following);
        let mut accepting = lock(&self.accepting);
        if accepting.len() >= MAX_ACCEPTING {
            accepting.pop_front();
        }
        accepting.push_back((task, following));
    }

    /// A `subscriptions/listen` stream follows `uris` (and the lists, if
    /// `lists`) through `sink` for as long as the returned value lives;
    /// what changed since [`Self::accept`] is told first.
    pub(super) fn listen(&self, sink: SubscriptionSink, uris: &[String], lists: bool) -> Arc<Following> {
        let accepted = tokio::task::try_id().and_then(|task| {
            let mut accepting = lock(&self.accepting);
            let at = accepting.iter().position(|(id, _)| *id == task)?;
            accepting.remove(at).map(|(_, following)| following)
        });
        let following = accepted.unwrap_or_else(|| {
            let following = Arc::new(Following::default());
            self.register(&following);
            following
        });
        // rmcp may have narrowed the accepted filter after `accept`.
        following.follow_all(uris, lists);
        let (missed, missed_lists) = {
            let mut guard = lock(&following.state);
            let state = &mut *guard;
            let kept: HashSet<&str> = uris.iter().map(String::as_str).collect();
            state.uris.retain(|uri, _| kept.contains(uri.as_str()));
            state.lists = lists;
            state.to = Some(Target::Stream(sink.clone()));
            let missed: Vec<String> =
                state.missed.drain().filter(|uri| state.uris.contains_key(uri)).collect();
            (missed, std::mem::take(&mut state.missed_lists) && lists)
        };
        if missed_lists {
            tell_lists_changed(sink.clone());
        }
        if !missed.is_empty() {
            let target = Target::Stream(sink);
            tokio::spawn(async move {
                for uri in missed {
                    tell(&target, uri).await;
                }
            });
        }
        following
    }

    fn register(&self, following: &Arc<Following>) {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|session| session.strong_count() > 0);
        sessions.push(Arc::downgrade(following));
    }

    /// Tells every listen stream that follows the lists that they changed.
    pub(super) fn lists_changed(&self) {
        for target in self.followers(|state| state.lists, |state| state.missed_lists = true) {
            let Target::Stream(sink) = target else { continue };
            tell_lists_changed(sink);
        }
    }

    /// `session` no longer follows `uri`.
    pub(super) fn unfollow(&self, session: &Following, uri: &str) {
        lock(&session.state).uris.remove(uri);
    }

    /// Tells every follower of `uri` that it changed; the task ends once
    /// each notification is handed to its transport (or given up on).
    pub(super) fn updated(&self, uri: &str) -> JoinHandle<()> {
        let targets = self.followers(
            |state| state.uris.contains_key(uri),
            |state| {
                state.missed.insert(uri.to_string());
            },
        );
        let uri = uri.to_string();
        tokio::spawn(async move {
            let sends = targets.into_iter().map(|target| {
                let uri = uri.clone();
                async move { tell(&target, uri).await }
            });
            futures_util::future::join_all(sends).await;
        })
    }

    /// After a reload of `component`: every followed URI it serves changed.
    pub(super) fn reloaded(&self, component: &ToolComponent) {
        let sessions: Vec<Arc<Following>> = lock(&self.sessions).iter().filter_map(Weak::upgrade).collect();
        let mut changed = HashSet::new();
        for session in sessions {
            let state = lock(&session.state);
            changed.extend(state.uris.keys().filter(|uri| component.offers.offers_uri(uri)).cloned());
        }
        for uri in changed {
            drop(self.updated(&uri));
        }
    }

    /// Where the calls of `component` announce changes: checked against
    /// the URIs it offers.
    pub(super) fn sink_for(self: &Arc<Self>, component: &Arc<ToolComponent>) -> ResourceUpdates {
        let (subscribers, component) = (Arc::downgrade(self), Arc::downgrade(component));
        Arc::new(move |uri: &str| {
            let (subscribers, component) = (subscribers.upgrade()?, component.upgrade()?);
            component.offers.offers_uri(uri).then(|| subscribers.updated(uri))
        })
    }

    /// Where the live followers that pass `wanted` are reached; a stream
    /// that has no sink yet gets `missed` instead.
    fn followers(
        &self,
        wanted: impl Fn(&FollowingState) -> bool,
        missed: impl Fn(&mut FollowingState),
    ) -> Vec<Target> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|session| session.strong_count() > 0);
        sessions
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|session| {
                let mut state = lock(&session.state);
                if !wanted(&state) {
                    return None;
                }
                match &state.to {
                    None => {
                        missed(&mut state);
                        None
                    }
                    Some(to) => (!to.is_closed()).then(|| to.clone()),
                }
            })
            .collect()
    }
}

impl Following {
    /// Follows each of `uris` not followed yet (within the session's
    /// bounds), and the lists if `lists`.
    fn follow_all(&self, uris: &[String], lists: bool) {
        let mut state = lock(&self.state);
        for uri in uris.iter().take(MAX_PER_SESSION) {
            if state.uris.contains_key(uri) {
                continue;
            }
            let Ok(charge) = self.memory.charge_owned(uri.len()) else { break };
            state.uris.insert(uri.clone(), charge);
        }
        state.lists |= lists;
        state.registered = true;
    }
}

/// Tells `target` that `uri` changed, waiting at most [`SEND_WAIT`].
async fn tell(target: &Target, uri: String) {
    match tokio::time::timeout(SEND_WAIT, target.updated(uri)).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::debug!("cannot tell a client a resource changed: {err}"),
        Err(_) => tracing::debug!("a client did not take a resource update in time; dropped"),
    }
}

/// Tells a listen stream that the lists changed.
fn tell_lists_changed(sink: SubscriptionSink) {
    tokio::spawn(async move {
        let told = async {
            sink.notify_tool_list_changed().await?;
            sink.notify_resource_list_changed().await?;
            sink.notify_prompt_list_changed().await
        };
        if let Err(err) = told.await {
            tracing::debug!("cannot tell a listen stream the lists changed: {err}");
        }
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
