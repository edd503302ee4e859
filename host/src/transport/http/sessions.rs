//! Streamable HTTP sessions, bounded: at most `--max-sessions` at once, and
//! none left idle longer than `--http-idle-timeout`.
//!
//! Every `initialize` makes a session (a worker task, a channel and an MCP
//! server value, some 50 KiB), so without a bound any client can make the
//! host hold as many as it likes. [`BoundedSessions`] wraps rmcp's
//! in-memory [`LocalSessionManager`] and counts, per session, the requests
//! it is answering and when it last had one:
//!
//! - a session is *idle* while none of its requests is being answered (a
//!   call in flight keeps its response stream open); an open GET stream for
//!   server notifications does not count as activity, as in rmcp;
//! - when the table is full, a new session closes the least recently used
//!   idle one; if every session is busy, it is refused, and the HTTP layer
//!   answers `503` (see [`watch_refusal`]);
//! - a reaper closes sessions idle for `--http-idle-timeout`. rmcp's own
//!   keep-alive is off: it ends a session whose call runs silently for too
//!   long, which this does not.
//!
//! With `--auth-issuer`, a session belongs to the caller that made it:
//! another caller's requests with its id are answered as for an unknown
//! session (`404`).
//!
//! Closing a session ends its MCP server value, which stops the calls it
//! still runs as tasks (see `server::SessionCalls`).

use std::cell::Cell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;
use prometheus_client::metrics::histogram::Histogram;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use tokio_util::sync::CancellationToken;

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// From rmcp's session table.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// Every one of the `--max-sessions` sessions is answering a request.
    #[error("all {0} sessions (--max-sessions) are busy")]
    Full(usize),
}

/// rmcp's session manager, with a cap and idle eviction.
pub struct BoundedSessions {
    inner: LocalSessionManager,
    table: Arc<Mutex<Table>>,
    max: usize,
}

#[derive(Default)]
struct Table {
    sessions: HashMap<SessionId, Activity>,
    /// Sessions being created (counted against the cap before they have an id).
    reserved: usize,
    /// `mcp.server.session.duration`: each session's life, observed when it
    /// leaves the table.
    durations: Option<Histogram>,
}

struct Activity {
    /// When the session was made.
    since: Instant,
    /// When a request last started or ended.
    last: Instant,
    /// Requests being answered (their response streams are open).
    open: usize,
    /// With `--auth-issuer`: [`crate::auth::Principal::key`] of the caller
    /// that made the session, the only one whose requests may use it.
    owner: Option<String>,
}

impl Table {
    /// The least recently used idle session, removed from the table.
    fn take_least_recently_used_idle(&mut self) -> Option<SessionId> {
        let (id, _) = self
            .sessions
            .iter()
            .filter(|(_, activity)| activity.open == 0)
            .min_by_key(|(_, activity)| activity.last)?;
        let id = id.clone();
        self.remove(&id);
        Some(id)
    }

    /// Takes session `id` out of the table, recording how long it lasted.
    fn remove(&mut self, id: &SessionId) {
        if let Some(activity) = self.sessions.remove(id)
            && let Some(durations) = &self.durations
        {
            durations.observe(activity.since.elapsed().as_secs_f64());
        }
    }
}

impl BoundedSessions {
    /// At most `max` sessions (at least one); how long each lasted goes to
    /// `durations`.
    pub fn new(max: usize, durations: Histogram) -> Self {
        let mut inner = LocalSessionManager::default();
        // Idle sessions are closed by `reap_idle`, which knows a busy one.
        inner.session_config.keep_alive = None;
        let table = Table { durations: Some(durations), ..Table::default() };
        BoundedSessions { inner, table: Arc::new(Mutex::new(table)), max: max.max(1) }
    }

    /// Closes sessions idle for `idle_timeout`, until `shutdown`.
    pub fn reap_idle(self: &Arc<Self>, idle_timeout: Duration, shutdown: CancellationToken) {
        let sessions = Arc::downgrade(self);
        let every = (idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = shutdown.cancelled() => return,
                }
                let Some(sessions) = sessions.upgrade() else { return };
                let idle: Vec<SessionId> = {
                    let mut table = sessions.table.lock().unwrap();
                    let idle: Vec<SessionId> = table
                        .sessions
                        .iter()
                        .filter(|(_, activity)| activity.open == 0 && activity.last.elapsed() >= idle_timeout)
                        .map(|(id, _)| id.clone())
                        .collect();
                    for id in &idle {
                        table.remove(id);
                    }
                    idle
                };
                for id in idle {
                    tracing::debug!(session = %crate::audit::short_sha256(id.as_bytes()), "closing a session idle for --http-idle-timeout");
                    let _ = sessions.inner.close_session(&id).await;
                }
            }
        });
    }

    /// How many sessions exist (or are being created).
    pub fn count(&self) -> usize {
        let table = self.table.lock().unwrap();
        table.sessions.len() + table.reserved
    }

    /// Binds the new session `id` to the caller `owner` that made it (done
    /// before the client learns the id, from the `initialize` answer).
    pub fn bind(&self, id: &str, owner: String) {
        if let Some(activity) = self.table.lock().unwrap().sessions.get_mut(id) {
            activity.owner = Some(owner);
        }
    }

    /// Whether the caller `who` may use session `id`: not if another
    /// caller made it. (An unknown id is left to rmcp, which answers 404.)
    pub fn belongs(&self, id: &str, who: &str) -> bool {
        let table = self.table.lock().unwrap();
        table.sessions.get(id).and_then(|activity| activity.owner.as_deref()).is_none_or(|owner| owner == who)
    }

    /// Marks a request of `id` as being answered until the guard drops.
    fn open(&self, id: &SessionId) -> OpenRequest {
        if let Some(activity) = self.table.lock().unwrap().sessions.get_mut(id) {
            activity.open += 1;
            activity.last = Instant::now();
        }
        OpenRequest { table: self.table.clone(), id: id.clone() }
    }

    /// Notes activity on `id` (a notification or response from the client).
    fn touch(&self, id: &SessionId) {
        if let Some(activity) = self.table.lock().unwrap().sessions.get_mut(id) {
            activity.last = Instant::now();
        }
    }
}

/// A request being answered; the session is busy until this drops.
struct OpenRequest {
    table: Arc<Mutex<Table>>,
    id: SessionId,
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        if let Some(activity) = self.table.lock().unwrap().sessions.get_mut(&self.id) {
            activity.open = activity.open.saturating_sub(1);
            activity.last = Instant::now();
        }
    }
}

/// A place in the table held while a session is created; given back if the
/// creation fails or is abandoned.
struct Reservation<'a>(&'a Mutex<Table>);

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.0.lock().unwrap().reserved -= 1;
    }
}

/// A response stream that keeps its session busy while it is open.
struct Tracked {
    stream: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    _open: Option<OpenRequest>,
}

impl Stream for Tracked {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.stream.as_mut().poll_next(cx)
    }
}

fn tracked(
    stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    open: Option<OpenRequest>,
) -> Tracked {
    Tracked { stream: Box::pin(stream), _open: open }
}

tokio::task_local! {
    /// Set when this request's new session was refused because all were busy.
    static REFUSED: Cell<bool>;
}

/// Runs `serve` (one HTTP request through rmcp) and says whether it was
/// refused a session by the cap: rmcp answers a failed `create_session`
/// with a bare 500, which the caller replaces with a 503.
pub async fn watch_refusal<T>(serve: impl Future<Output = T>) -> (T, bool) {
    REFUSED.scope(Cell::new(false), async { (serve.await, REFUSED.with(Cell::get)) }).await
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let evicted = {
            let mut table = self.table.lock().unwrap();
            let evicted = if table.sessions.len() + table.reserved >= self.max {
                match table.take_least_recently_used_idle() {
                    Some(id) => Some(id),
                    None => {
                        let _ = REFUSED.try_with(|refused| refused.set(true));
                        tracing::warn!(
                            max = self.max,
                            "refused a new HTTP session: every session is busy (--max-sessions)"
                        );
                        return Err(SessionsError::Full(self.max));
                    }
                }
            } else {
                None
            };
            table.reserved += 1;
            evicted
        };
        let _reservation = Reservation(&self.table);
        if let Some(id) = evicted {
            tracing::info!(session = %crate::audit::short_sha256(id.as_bytes()), "closing the least recently used idle session to make room (--max-sessions)");
            let _ = self.inner.close_session(&id).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        // Busy until its `initialize` is answered, so no one evicts it first.
        let now = Instant::now();
        let activity = Activity { since: now, last: now, open: 1, owner: None };
        self.table.lock().unwrap().sessions.insert(id.clone(), activity);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        // Takes over the `open` that `create_session` counted.
        let _open = OpenRequest { table: self.table.clone(), id: id.clone() };
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.table.lock().unwrap().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = self.open(id);
        Ok(tracked(self.inner.create_stream(id, message).await?, Some(open)))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(tracked(self.inner.create_standalone_stream(id).await?, None))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // An event id `INDEX/REQUEST` resumes a request's stream (busy);
        // a bare `INDEX`, the notification stream.
        let open = if last_event_id.contains('/') {
            Some(self.open(id))
        } else {
            self.touch(id);
            None
        };
        Ok(tracked(self.inner.resume(id, last_event_id).await?, open))
    }
}
