//! One call's notifications to the client (log records, progress), sent
//! in order from a task of their own, bounded in number (a queue of
//! [`QUEUED_NOTES`]) and in time (the drain before the result stops at the
//! call's deadline), and thinned by [`RateLimit`]s. What a guest may put in
//! them, and how many bytes, is decided in [`super::CallChannel`].

// Logging is deprecated in rmcp by SEP-2577 but still part of every
// protocol version this host serves.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::{
    LoggingMessageNotification, LoggingMessageNotificationParam, ProgressNotification,
    ProgressNotificationParam, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::Peer;
use tokio::sync::mpsc;

/// A notification waiting to go out.
pub(crate) enum Note {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

/// Notifications one call may have waiting at once; more are dropped (and
/// counted), the guest never waits for the queue.
pub const QUEUED_NOTES: usize = 64;

/// Sends one call's notifications in order, from a task of its own, so the
/// guest does not wait for each one to be written (tens of microseconds).
/// The call waits for the queue to drain before its result goes out, so
/// notifications still precede the response — but no longer than the
/// call's deadline.
pub struct Notifier {
    queue: mpsc::Sender<Note>,
    /// Notes queued so far, and how many of them the sender delivered.
    queued: u64,
    delivered: Arc<AtomicU64>,
    sender: tokio::task::JoinHandle<()>,
}

impl Notifier {
    /// Starts the sender: `send` delivers one note, `false` when the
    /// session is gone.
    fn start<F, Sent>(mut send: F) -> Self
    where
        F: FnMut(Note) -> Sent + Send + 'static,
        Sent: Future<Output = bool> + Send,
    {
        let (queue, mut pending) = mpsc::channel(QUEUED_NOTES);
        let delivered = Arc::new(AtomicU64::new(0));
        let counter = delivered.clone();
        let sender = tokio::spawn(async move {
            while let Some(note) = pending.recv().await {
                if !send(note).await {
                    break; // the session is gone
                }
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
        Notifier { queue, queued: 0, delivered, sender }
    }

    /// A sender to `peer`.
    pub(crate) fn to_peer(peer: Peer<RoleServer>) -> Self {
        Notifier::start(move |note| {
            let peer = peer.clone();
            async move {
                match note {
                    Note::Progress(note) => peer.notify_progress(note).await,
                    Note::Log(note) => peer.notify_logging_message(note).await,
                }
                .is_ok()
            }
        })
    }

    /// A sender to one request's own stream (the host's HTTP answer to a
    /// 2026-07-28 call, see `transport::http::direct`): a notification
    /// there names no request, so it must go down that request's answer.
    pub(crate) fn to_stream(stream: RequestStream) -> Self {
        Notifier::start(move |note| {
            let stream = stream.0.clone();
            async move {
                let notification = match note {
                    Note::Progress(note) => {
                        ServerNotification::ProgressNotification(ProgressNotification::new(note))
                    }
                    Note::Log(note) => {
                        ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(note))
                    }
                };
                stream.send(ServerJsonRpcMessage::notification(notification)).await.is_ok()
            }
        })
    }

    /// Queues `note`, unless the queue is full. Never waits.
    pub(crate) fn offer(&mut self, note: Note) -> bool {
        let queued = self.queue.try_send(note).is_ok();
        self.queued += u64::from(queued);
        queued
    }

    /// The call returned: deliver what is queued, until `deadline` at the
    /// latest. Returns how many notes were still undelivered then (and are
    /// dropped).
    pub async fn finish(self, deadline: tokio::time::Instant) -> u64 {
        let Notifier { queue, queued, delivered, mut sender } = self;
        drop(queue);
        if tokio::time::timeout_at(deadline, &mut sender).await.is_ok() {
            return 0;
        }
        sender.abort();
        queued.saturating_sub(delivered.load(Ordering::Relaxed))
    }

    /// The call was cancelled or stopped: nothing more goes out for it.
    pub fn abandon(self) {
        self.sender.abort();
    }
}

/// The messages of one request's answer, in order, when the host answers
/// that request itself rather than through an rmcp session: kept in the
/// request's extensions, where a call's channel finds it.
#[derive(Clone)]
pub(crate) struct RequestStream(pub(crate) mpsc::Sender<ServerJsonRpcMessage>);

/// A token bucket: bursts up to `burst`, then `per_second` on average.
pub(crate) struct RateLimit {
    burst: f64,
    per_second: f64,
    tokens: f64,
    refilled: Instant,
}

impl RateLimit {
    pub(crate) fn new(burst: u32, per_second: f64) -> Self {
        RateLimit { burst: burst.into(), per_second, tokens: burst.into(), refilled: Instant::now() }
    }

    pub(crate) fn allow(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.refilled).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::model::{NumberOrString, ProgressToken};

    use super::*;

    fn note(n: u32) -> Note {
        Note::Progress(ProgressNotificationParam::new(
            ProgressToken(NumberOrString::Number(n.into())),
            f64::from(n),
        ))
    }

    #[tokio::test]
    async fn the_queue_is_bounded_and_never_makes_the_guest_wait() {
        // A client that never takes a note: the first one sticks in the
        // sender, the queue fills, and later notes are refused at once.
        let mut notifier = Notifier::start(|_note| std::future::pending::<bool>());
        let accepted = (0..QUEUED_NOTES as u32 + 10).filter(|&n| notifier.offer(note(n))).count();
        assert!((QUEUED_NOTES..=QUEUED_NOTES + 1).contains(&accepted), "{accepted} notes queued");
        notifier.abandon();
    }

    #[tokio::test]
    async fn draining_stops_at_the_call_deadline() {
        let mut notifier = Notifier::start(|_note| std::future::pending::<bool>());
        for n in 0..5 {
            assert!(notifier.offer(note(n)));
        }
        let started = tokio::time::Instant::now();
        let abandoned = notifier.finish(started + Duration::from_millis(50)).await;
        assert_eq!(abandoned, 5);
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_drain_within_the_deadline_delivers_everything() {
        let delivered = Arc::new(AtomicU64::new(0));
        let count = delivered.clone();
        let mut notifier = Notifier::start(move |_note| {
            count.fetch_add(1, Ordering::Relaxed);
            std::future::ready(true)
        });
        for n in 0..5 {
            assert!(notifier.offer(note(n)));
        }
        let abandoned = notifier.finish(tokio::time::Instant::now() + Duration::from_secs(5)).await;
        assert_eq!((abandoned, delivered.load(Ordering::Relaxed)), (0, 5));
    }
}
