//! The audit trail (`--audit-log FILE`): one JSON line per tool call and
//! per lifecycle event, appended to a file opened `O_APPEND` (created
//! 0600), so an operator can answer "who ran what, when, and how did it
//! end" after the fact. Without the flag every method here does nothing.
//!
//! Records (one JSON object per line; `time` is RFC 3339 UTC):
//!
//! - `start`: `version`, `transport` (`stdio` or `http`), `listen` (the
//!   `--http` address as configured), `auth_issuer`, and `components`,
//!   each with its `source` (path or `oci://` reference) and `sha256` (of
//!   the local file; `null` for one pulled later);
//! - `call`, when a `tools/call` ends, in every mode (inside its request,
//!   as a task, paused in rounds): `principal` (`{issuer, subject}`, or
//!   `null` over stdio or without `--auth-issuer`), `client_id`,
//!   `session`, `request` (the JSON-RPC id), `tool`, `arguments_sha256`,
//!   `outcome` and `reason`, `approval` (`{verdict, by}`) and
//!   `duration_ms`. A call refused before it ran (an unknown tool,
//!   arguments that break the schema, a scope the token lacks, whether the
//!   MCP handler or the HTTP layer's `403` refused it) is a `call` with
//!   outcome `refused`;
//! - `reload` (`--watch`): `component`, `old_sha256`, `new_sha256`, `result`;
//! - `drain`: `reason` (`signal` or `eof`); `stop`: `status`.
//!
//! Nothing secret is written: no token (the principal is the token's
//! `iss` and `sub`), no argument values (only the SHA-256 of their
//! canonical JSON, [`digest`]), no environment grants. The MCP session id
//! is a bearer capability in Streamable HTTP, so only a short digest of it
//! is written: enough to group a session's calls, useless to join it.
//!
//! Records are made on the call path and handed, whole, to one writer
//! thread ([`writer`]) through a bounded channel. A call takes its
//! record's place in the channel before it runs, and a refusal before it
//! is answered; with the channel full, both wait. So the trail is never
//! silently shorter than what happened, and a writer that falls behind
//! holds calls back instead of growing memory.

mod digest;
mod record;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::config::Settings;
use crate::metrics::Metrics;
use record::{CallRecord, bounded};
use writer::Message;

pub use digest::short_sha256;
pub use record::{CallEnd, Verdict, Who};

/// Lines the writer may be behind by before a recording call waits.
const QUEUE: usize = 4096;

/// How long stopping waits for the writer to write and sync the last lines.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// The audit log, or nothing (without `--audit-log`). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct AuditLog {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    lines: mpsc::Sender<Message>,
    /// A drain is recorded once, however many signals follow.
    drained: AtomicBool,
}

/// Why the host stops taking work.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Drain {
    /// SIGTERM or SIGINT.
    Signal,
    /// The client closed stdin.
    Eof,
}

impl AuditLog {
    /// Opens `settings.server.audit_log`, if set, and writes the `start`
    /// record; an error if the file cannot be opened or written.
    pub fn open(settings: &Settings, metrics: &Metrics) -> Result<AuditLog> {
        let Some(path) = &settings.server.audit_log else { return Ok(AuditLog::default()) };
        let opened = writer::open(path)?;
        let (lines, receiver) = mpsc::channel(QUEUE);
        writer::start(path.clone(), opened, &line(&start(settings)), receiver, metrics.audit())?;
        Ok(AuditLog { inner: Some(Arc::new(Inner { lines, drained: AtomicBool::new(false) })) })
    }

    /// Whether records are written (`--audit-log` was given).
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Starts recording a call of `tool` by `who`: the record is written
    /// when the returned value is told how the call ended (or dropped).
    ///
    /// The record's place in the writer's queue is taken now, before the
    /// call runs. The record of a call whose future is dropped (`abandoned`)
    /// then goes into its place from `Drop`, where nothing can wait, with no
    /// task per record; and a writer that is stuck (a failing disk) holds new
    /// calls back at their start, rather than letting them run and pile up
    /// records it cannot take.
    pub async fn call(&self, who: Who, tool: &str, arguments: &Value, needs_approval: bool) -> CallAudit {
        let Some(inner) = &self.inner else { return CallAudit { pending: None } };
        let Ok(place) = inner.lines.clone().reserve_owned().await else {
            tracing::error!("a call began after the audit log was closed");
            return CallAudit { pending: None };
        };
        let pending = Pending {
            place,
            who,
            tool: tool.to_owned(),
            arguments_sha256: digest::canonical_sha256(arguments),
            needs_approval,
            started: Instant::now(),
        };
        CallAudit { pending: Some(Box::new(pending)) }
    }

    /// Records a call refused before it ran (`reason`: `unknown-tool`,
    /// `invalid-arguments`, …). `arguments` as the client sent them.
    pub async fn refused(&self, who: Who, tool: &str, arguments: &Value, reason: &'static str) {
        if self.inner.is_some() {
            self.push(refusal(&who, tool, arguments, reason)).await;
        }
    }

    /// Records a `--watch` reload of `component` from the version whose
    /// SHA-256 is `old` to `new`: `accepted`, or refused (the old one
    /// keeps serving).
    pub async fn reload(&self, component: &str, old: [u8; 32], new: [u8; 32], accepted: bool) {
        if self.inner.is_none() {
            return;
        }
        // All zeros: the file could not be read to hash it.
        let hex = |hash: [u8; 32]| (hash != [0; 32]).then(|| hex::encode(hash));
        let fields = json!({
            "component": bounded(component),
            "old_sha256": hex(old),
            "new_sha256": hex(new),
            "result": if accepted { "accepted" } else { "refused" },
        });
        self.push(line(&record::event("reload", fields))).await;
    }

    /// Records that the host stops taking work, and why (once).
    pub fn drain(&self, reason: Drain) {
        let Some(inner) = &self.inner else { return };
        if !inner.drained.swap(true, Ordering::Relaxed) {
            self.push_now(line(&record::event("drain", json!({ "reason": reason }))));
        }
    }

    /// Writes the `stop` record (`ok` or `error`: how serving ended), and
    /// waits, bounded, for the writer to write and sync every line before it.
    pub async fn stop(&self, ok: bool) {
        let Some(inner) = &self.inner else { return };
        let stop = line(&record::event("stop", json!({ "status": if ok { "ok" } else { "error" } })));
        let (done, written) = oneshot::channel();
        // Bounded as a whole: a writer stuck on a failing disk may hold a full queue.
        let stopped =
            async { inner.lines.send(Message::Stop(stop, done)).await.is_ok() && written.await.is_ok() };
        if !tokio::time::timeout(STOP_WAIT, stopped).await.unwrap_or(false) {
            tracing::error!("the audit log's last records could not be written in time");
        }
    }

    /// Queues `line`, waiting while the writer is [`QUEUE`] lines behind.
    async fn push(&self, line: Vec<u8>) {
        let Some(inner) = &self.inner else { return };
        if inner.lines.send(Message::Line(line)).await.is_err() {
            tracing::error!("an audit record came after the audit log was closed");
        }
    }

    /// Queues `line` from where nothing can wait: at once if there is
    /// room, else from a task that waits for room. Only for records made
    /// once per host (the drain), so the tasks are bounded; a call's record
    /// has its place taken in advance ([`AuditLog::call`]).
    fn push_now(&self, line: Vec<u8>) {
        let Some(inner) = &self.inner else { return };
        match inner.lines.try_send(Message::Line(line)) {
            Err(mpsc::error::TrySendError::Full(message)) => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let lines = inner.lines.clone();
                    runtime.spawn(async move { lines.send(message).await });
                }
                Err(_) => tracing::error!("an audit record was lost: the log is full and nothing can wait"),
            },
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::error!("an audit record came after the audit log was closed")
            }
            Ok(()) => {}
        }
    }
}

/// A call being recorded: its record is written by [`CallAudit::ended`],
/// or, if the call's future is dropped first, with outcome `abandoned`.
pub struct CallAudit {
    /// Boxed: a call's futures carry this by value, some more than once,
    /// and a call paused for the user keeps them while it waits; without
    /// `--audit-log` it is `None` and costs a pointer.
    pending: Option<Box<Pending>>,
}

struct Pending {
    /// The record's place in the writer's queue, held since the call began.
    place: mpsc::OwnedPermit<Message>,
    who: Who,
    tool: String,
    arguments_sha256: String,
    needs_approval: bool,
    started: Instant,
}

impl Pending {
    /// Puts the record of a call that ended as `end` into its place.
    fn write(self, mut end: CallEnd) {
        if !self.needs_approval {
            end.approval = Some(Verdict::NotRequired);
        }
        let took = self.started.elapsed();
        let record = line(&CallRecord::new(&self.who, &self.tool, &self.arguments_sha256, end, took));
        self.place.send(Message::Line(record));
    }
}

impl CallAudit {
    /// Writes the call's record: it ended as `end`. Never waits: the
    /// record's place was taken when the call began.
    pub fn ended(mut self, end: CallEnd) {
        if let Some(pending) = self.pending.take() {
            pending.write(end);
        }
    }
}

impl Drop for CallAudit {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending.write(CallEnd { outcome: "abandoned", reason: None, approval: None });
        }
    }
}

/// The record of a call of `tool` by `who` refused before it ran.
fn refusal(who: &Who, tool: &str, arguments: &Value, reason: &'static str) -> Vec<u8> {
    let digest = digest::canonical_sha256(arguments);
    let end = CallEnd { outcome: "refused", reason: Some(reason), approval: None };
    line(&CallRecord::new(who, tool, &digest, end, Duration::ZERO))
}

/// The `start` record's fields.
fn start(settings: &Settings) -> record::Event {
    let listen = settings.server.http;
    let components: Vec<Value> = settings
        .components
        .iter()
        .map(|component| {
            let local = component.oci.is_none();
            let source = component.oci.clone().unwrap_or_else(|| component.path.display().to_string());
            json!({ "source": bounded(&source), "sha256": local.then(|| file_sha256(&component.path)).flatten() })
        })
        .collect();
    record::event(
        "start",
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "transport": if listen.is_some() { "http" } else { "stdio" },
            "listen": listen.map(|addr| addr.to_string()),
            "auth_issuer": settings.server.auth.as_ref().map(|auth| auth.issuer.clone()),
            "components": components,
        }),
    )
}

/// The hex SHA-256 of the file at `path`, if it can be read.
fn file_sha256(path: &Path) -> Option<String> {
    use sha2::{Digest as _, Sha256};
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(hex::encode(hasher.finalize()))
}

/// `record` as one line: its JSON and a newline.
fn line(record: &impl Serialize) -> Vec<u8> {
    let mut line = serde_json::to_vec(record).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    /// A log whose writer is stuck: `capacity` places, nothing drains them
    /// until the test reads the returned end.
    fn stuck(capacity: usize) -> (AuditLog, mpsc::Receiver<Message>) {
        let (lines, receiver) = mpsc::channel(capacity);
        (AuditLog { inner: Some(Arc::new(Inner { lines, drained: AtomicBool::new(false) })) }, receiver)
    }

    fn next_outcome(receiver: &mut mpsc::Receiver<Message>) -> Value {
        match receiver.try_recv() {
            Ok(Message::Line(line)) => serde_json::from_slice::<Value>(&line).unwrap()["outcome"].clone(),
            other => panic!("expected a record, got {:?}", other.map(|_| "a stop")),
        }
    }

    #[tokio::test]
    async fn a_stuck_writer_holds_new_calls_back_and_every_started_call_keeps_its_place() {
        let (log, mut receiver) = stuck(2);
        let args = json!({});
        let first = log.call(Who::default(), "a", &args, false).await;
        let second = log.call(Who::default(), "b", &args, false).await;
        // Both places are taken: a third call waits to start instead of
        // queueing a record the writer cannot take.
        let mut third = Box::pin(log.call(Who::default(), "c", &args, false));
        assert!((&mut third).now_or_never().is_none(), "a call started with no place for its record");

        // A dropped call (abandoned) and an ended one both land in their
        // places at once, with nothing spawned and nothing waiting.
        drop(first);
        second.ended(CallEnd { outcome: "ok", reason: None, approval: None });
        assert_eq!(next_outcome(&mut receiver), "abandoned");
        assert_eq!(next_outcome(&mut receiver), "ok");

        // The writer caught up: the third call starts.
        let third = third.now_or_never().expect("the third call starts once there is room");
        third.ended(CallEnd { outcome: "tool-error", reason: None, approval: None });
        assert_eq!(next_outcome(&mut receiver), "tool-error");
    }
}
