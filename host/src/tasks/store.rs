//! The task store (`--task-store`): Redis, shared by the replicas of a
//! fleet, so a task made on one is read, answered and cancelled through
//! any of them.
//!
//! What it holds, under the prefix `mcp-wasm-host:`:
//! - `task:{id}`: the task as `tasks/get` shows it (its status, questions,
//!   result or error), its owner (principal key, tool, scopes) and the
//!   replica running it, as JSON. Only that replica writes it; it expires
//!   with the task.
//! - `inbox:{id}`: answers and cancels for the task that reached another
//!   replica, a list the running replica empties. At most [`MAX_INBOX`].
//! - `alive:{replica}`: each replica's lease, renewed every
//!   [`RENEW_EVERY`] and lapsing after [`LEASE`]. A task whose replica's
//!   lease lapsed reads as `failed`.
//! - channel `wake:{replica}`: a task id published when its inbox got
//!   something, so the runner need not wait for its next renewal.
//!
//! A record is read with `GETRANGE` up to [`MAX_RECORD`] bytes, so what
//! the store returns is bounded before it is parsed, and whatever it holds
//! that does not parse is an error, never a panic.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use rmcp::ErrorData as McpError;
use rmcp::model::{DetailedTask, InputResponses, TaskPayload};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::entry::Entry;
use super::{Owner, Table, TaskHandle};
use crate::log_text::{Escaped, escaped};

/// Every key and channel starts with this.
const PREFIX: &str = "mcp-wasm-host:";

/// How long a replica's lease lasts without renewal.
pub const LEASE: Duration = Duration::from_secs(10);

/// How often a replica renews its lease and empties its tasks' inboxes.
pub const RENEW_EVERY: Duration = Duration::from_secs(3);

/// The most a task's record may be: a tool's result is bounded by its
/// component's --max-output, far below.
pub const MAX_RECORD: usize = 32 << 20;

/// Messages an inbox holds before further answers are refused.
pub const MAX_INBOX: usize = 64;

/// The most one inbox message may be (a `tasks/update` body is bounded by
/// --max-request-memory before it gets here).
const MAX_MESSAGE: usize = 8 << 20;

/// What a replica tells the one running a task.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Message {
    /// `tasks/update`'s `inputResponses`.
    Answers(InputResponses),
    /// `tasks/cancel`.
    Cancel,
}

/// A task as the store keeps it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Record {
    /// The replica running the task.
    pub replica: String,
    /// Who may read and steer it.
    pub owner: Owner,
    /// The task as `tasks/get` shows it.
    pub task: DetailedTask,
}

/// A replica's connection to the store.
pub struct Store {
    /// This replica's name in the store: random per process, so a
    /// restarted replica never takes over a dead one's lease.
    replica: String,
    client: redis::Client,
    connection: ConnectionManager,
    /// The task tables whose tasks run here (the sessionless one).
    tables: Mutex<Vec<Weak<Mutex<Table>>>>,
}

impl Store {
    /// Connects to `url`, and starts renewing this replica's lease.
    pub async fn connect(url: &str) -> anyhow::Result<Arc<Self>> {
        use redis::IntoConnectionInfo as _;
        let info = url.into_connection_info().context("--task-store: not a redis:// or rediss:// URL")?;
        // Commands go out as they are written: a multiplexed connection
        // writes each in its own piece, and Nagle's algorithm would hold a
        // piece back until the one before it was acknowledged.
        let info = info.set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
        let client = redis::Client::open(info).context("--task-store: not a redis:// or rediss:// URL")?;
        // Redis' TLS is rustls, on the provider the rest of the host uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(1));
        let connection = client
            .get_connection_manager_with_config(config)
            .await
            .with_context(|| format!("--task-store: cannot reach {}", redacted(url)))?;
        let store = Arc::new(Store {
            replica: uuid::Uuid::new_v4().to_string(),
            client,
            connection,
            tables: Mutex::default(),
        });
        store.renew().await.context("--task-store: cannot write the replica's lease")?;
        tracing::info!(store = %redacted(url), replica = %store.replica, "tasks are kept in the task store (--task-store)");
        let (wake, woken) = mpsc::channel(256);
        tokio::spawn(listen(store.client.clone(), format!("{PREFIX}wake:{}", store.replica), wake));
        tokio::spawn(tend(Arc::downgrade(&store), woken));
        Ok(store)
    }

    /// Takes answers and cancels for the tasks of `table` that run here.
    pub(super) fn serve(&self, table: Weak<Mutex<Table>>) {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner).push(table);
    }

    /// Writes `task` as it is now, to be kept `keep` longer.
    pub(super) async fn write(
        &self,
        owner: &Owner,
        task: &DetailedTask,
        keep: Duration,
    ) -> Result<(), McpError> {
        let record = RecordRef { replica: &self.replica, owner, task };
        let json =
            serde_json::to_vec(&record).map_err(|error| store_error("cannot write the task", error))?;
        if json.len() > MAX_RECORD {
            return Err(McpError::internal_error(
                format!("the task is {} bytes, more than the task store keeps ({MAX_RECORD})", json.len()),
                None,
            ));
        }
        let mut connection = self.connection.clone();
        redis::cmd("SET")
            .arg(key("task", &task.task.task_id))
            .arg(json)
            .arg("PX")
            .arg(millis(keep))
            .query_async::<()>(&mut connection)
            .await
            .map_err(|error| store_error("cannot write the task", error))
    }

    /// The record of task `id`, if the store has one.
    pub(super) async fn read(&self, id: &str) -> Result<Option<Record>, McpError> {
        // Ours are UUIDs: anything else was never issued, and is not sent
        // to the store at all.
        if uuid::Uuid::try_parse(id).is_err() {
            return Ok(None);
        }
        let mut connection = self.connection.clone();
        let bytes: Vec<u8> = redis::cmd("GETRANGE")
            .arg(key("task", id))
            .arg(0)
            .arg(MAX_RECORD)
            .query_async(&mut connection)
            .await
            .map_err(|error| store_error("cannot read the task", error))?;
        if bytes.is_empty() {
            return Ok(None);
        }
        if bytes.len() > MAX_RECORD {
            return Err(McpError::internal_error("the task store holds a task larger than it may be", None));
        }
        let record: Record = serde_json::from_slice(&bytes)
            .map_err(|error| store_error("the task store holds a task this host cannot read", error))?;
        // A record under another id's key is not that task.
        Ok((record.task.task.task_id == id).then_some(record))
    }

    /// `record`'s task as a reader sees it: `failed` if it was still
    /// running on a replica whose lease lapsed.
    pub(super) async fn as_seen(&self, record: Record) -> Result<DetailedTask, McpError> {
        if record.task.status().is_terminal() || self.is_alive(&record.replica).await? {
            return Ok(record.task);
        }
        let error = McpError::internal_error(
            "the replica running this task stopped before the task ended (its lease in the task store lapsed)",
            None,
        );
        let error = match serde_json::to_value(&error) {
            Ok(serde_json::Value::Object(object)) => object,
            _ => Default::default(),
        };
        Ok(DetailedTask::new(record.task.task, TaskPayload::Failed { error }))
    }

    /// Hands `message` to the replica running `record`'s task: into its
    /// inbox, then a wake-up. A task that has ended, or whose replica is
    /// gone, takes nothing (as for a task here).
    pub(super) async fn send(&self, record: &Record, message: Message) -> Result<(), McpError> {
        if record.task.status().is_terminal() || !self.is_alive(&record.replica).await? {
            return Ok(());
        }
        let id = &record.task.task.task_id;
        let inbox = key("inbox", id);
        let mut connection = self.connection.clone();
        if matches!(message, Message::Answers(_)) {
            let queued: usize = redis::cmd("LLEN")
                .arg(&inbox)
                .query_async(&mut connection)
                .await
                .map_err(|error| store_error("cannot reach the task", error))?;
            if queued >= MAX_INBOX {
                return Err(McpError::invalid_request(
                    format!("{queued} answers already wait for this task; let it take them first"),
                    None,
                ));
            }
        }
        let json =
            serde_json::to_vec(&message).map_err(|error| store_error("cannot send to the task", error))?;
        let keep = record.task.task.ttl_ms.unwrap_or(60_000).saturating_mul(2);
        redis::pipe()
            .cmd("RPUSH")
            .arg(&inbox)
            .arg(json)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&inbox)
            .arg(keep)
            .ignore()
            .cmd("PUBLISH")
            .arg(format!("{PREFIX}wake:{}", record.replica))
            .arg(id)
            .ignore()
            .query_async::<()>(&mut connection)
            .await
            .map_err(|error| store_error("cannot reach the task", error))
    }

    /// Whether `replica`'s lease holds.
    async fn is_alive(&self, replica: &str) -> Result<bool, McpError> {
        if replica == self.replica {
            return Ok(true);
        }
        let mut connection = self.connection.clone();
        redis::cmd("EXISTS")
            .arg(key("alive", replica))
            .query_async(&mut connection)
            .await
            .map_err(|error| store_error("cannot read the replica's lease", error))
    }

    /// Renews this replica's lease.
    async fn renew(&self) -> redis::RedisResult<()> {
        let mut connection = self.connection.clone();
        redis::cmd("SET")
            .arg(key("alive", &self.replica))
            .arg(1)
            .arg("PX")
            .arg(millis(LEASE))
            .query_async(&mut connection)
            .await
    }

    /// The tasks running here, by id.
    fn running(&self) -> Vec<Arc<Entry>> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        tables.retain(|table| table.strong_count() > 0);
        let mut running = Vec::new();
        for table in tables.iter().filter_map(Weak::upgrade) {
            let table = table.lock().unwrap_or_else(PoisonError::into_inner);
            running.extend(
                table.entries.values().map(|slot| &slot.entry).filter(|entry| !entry.ended()).cloned(),
            );
        }
        running
    }

    /// Takes what waits in the inbox of `entry`'s task, and acts on it.
    async fn take_inbox(self: &Arc<Self>, entry: Arc<Entry>) {
        let mut connection = self.connection.clone();
        let inbox = key("inbox", entry.id());
        let taken: redis::RedisResult<Option<Vec<Vec<u8>>>> =
            redis::cmd("LPOP").arg(&inbox).arg(MAX_INBOX).query_async(&mut connection).await;
        let messages = match taken {
            Ok(messages) => messages.unwrap_or_default(),
            Err(error) => {
                tracing::warn!(task = %entry.id(), error = %escaped(error.to_string()), "cannot read the task's inbox in the task store");
                return;
            }
        };
        let handle = TaskHandle::new(entry, Some(self.clone()));
        for bytes in messages {
            let message = (bytes.len() <= MAX_MESSAGE).then(|| serde_json::from_slice::<Message>(&bytes));
            match message {
                Some(Ok(Message::Answers(answers))) => {
                    if let Err(error) = handle.answer(answers).await {
                        tracing::warn!(task = %handle.id(), error = %escaped(&error.message), "the task's answers could not be written to the task store");
                    }
                }
                Some(Ok(Message::Cancel)) => handle.cancel().await,
                _ => {
                    tracing::warn!(task = %handle.id(), bytes = bytes.len(), "ignoring a message in the task's inbox this host cannot read")
                }
            }
        }
    }
}

/// [`Record`], borrowed, to write without copying the task.
#[derive(Serialize)]
struct RecordRef<'a> {
    replica: &'a str,
    owner: &'a Owner,
    task: &'a DetailedTask,
}

/// Renews the lease every [`RENEW_EVERY`] and takes the inboxes of the
/// tasks running here, and at once those of tasks woken. A replica that
/// cannot renew its lease for [`LEASE`] stops its tasks: the others
/// already read them as failed.
async fn tend(store: Weak<Store>, mut woken: mpsc::Receiver<String>) {
    let mut renewal = tokio::time::interval(RENEW_EVERY);
    renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewed = Instant::now();
    loop {
        tokio::select! {
            _ = renewal.tick() => {
                let Some(store) = store.upgrade() else { return };
                match store.renew().await {
                    Ok(()) => renewed = Instant::now(),
                    Err(error) => tracing::warn!(error = %escaped(error.to_string()), "cannot renew this replica's lease in the task store"),
                }
                let lapsed = renewed.elapsed() >= LEASE;
                for entry in store.running() {
                    if lapsed {
                        tracing::warn!(task = %entry.id(), "stopping the task: this replica's lease in the task store lapsed");
                        TaskHandle::new(entry, Some(store.clone())).cancel().await;
                    } else {
                        store.take_inbox(entry).await;
                    }
                }
            }
            id = woken.recv() => {
                let (Some(id), Some(store)) = (id, store.upgrade()) else { return };
                let entry = store.running().into_iter().find(|entry| entry.id() == id);
                if let Some(entry) = entry {
                    store.take_inbox(entry).await;
                }
            }
        }
    }
}

/// Listens on `channel` for task ids to wake, reconnecting (a wake-up
/// missed meanwhile waits for the next renewal).
async fn listen(client: redis::Client, channel: String, wake: mpsc::Sender<String>) {
    use futures_util::StreamExt as _;
    loop {
        match client.get_async_pubsub().await {
            Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                Ok(()) => {
                    let mut messages = pubsub.into_on_message();
                    while let Some(message) = messages.next().await {
                        let id = message.get_payload_bytes();
                        // A task id is a UUID; anything else is not ours.
                        let Some(id) =
                            std::str::from_utf8(id).ok().filter(|id| uuid::Uuid::try_parse(id).is_ok())
                        else {
                            continue;
                        };
                        if wake.send(id.to_string()).await.is_err() {
                            return;
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %escaped(error.to_string()), "cannot subscribe to this replica's wake-ups in the task store")
                }
            },
            Err(error) => {
                tracing::warn!(error = %escaped(error.to_string()), "cannot listen for this replica's wake-ups in the task store")
            }
        }
        if wake.is_closed() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn key(kind: &str, name: &str) -> String {
    format!("{PREFIX}{kind}:{name}")
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

/// `url` without its user and password, for logs and errors.
fn redacted(url: &str) -> Escaped<String> {
    let shown = match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) => format!("{scheme}://***@{host}"),
            None => url.to_string(),
        },
        None => "the URL given".to_string(),
    };
    escaped(shown)
}

fn store_error(what: &str, error: impl std::fmt::Display) -> McpError {
    McpError::internal_error(format!("task store: {what}: {error}"), None)
}
