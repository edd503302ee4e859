//! Tasks (the tasks extension, SEP-2663): what `tasks/get`, `tasks/update`
//! and `tasks/cancel` read and steer, and the [`TaskHandle`] a call running
//! as a task puts its questions through.
//!
//! Only the process that runs a task's call writes the task's state. Without
//! a store that state lives in the [`Tasks`] table of the session that made
//! it. With `--task-store` (Redis), the sessionless table (2026-07-28 over
//! HTTP, where a follow-up may reach any replica) also writes each change to
//! the store, and any replica answers `tasks/get` from there; an answer or a
//! cancel that reaches another replica goes to the task's inbox in the
//! store, and the replica running it is woken to take it ([`store`]).
//! Each replica renews a lease while it lives, so a task whose replica died
//! reads as `failed`, never as `working` for ever.
//!
//! Why not rmcp's `TaskManager`: it keeps its state in its own process,
//! cannot withdraw a question whose lease ran out, and sweeps every task on
//! every request.

mod entry;
mod kept;
#[cfg(feature = "task-store")]
pub mod store;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, DetailedTask, InputResponses, Task};
use rmcp::task_manager::TaskExit;
use tokio_util::sync::CancellationToken;

use crate::budget::Charge;
use entry::Entry;
pub use entry::{NoAnswer, TaskHandle};
pub use kept::Kept;

/// How long a client is told to wait between polls of a task.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Who may read and steer a task: the caller that started it (with
/// `--auth-issuer`) while its token still has the tool's scopes.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    /// The caller's principal key, or none without authorization.
    pub principal: Option<String>,
    /// The tool the task's call runs.
    pub tool: String,
    /// The scopes that tool needs, checked again on every follow-up.
    pub scopes: Arc<[String]>,
}

/// The check a request's caller must pass to see or steer a task: the
/// same error as for an unknown task if it did not start it.
pub type Allowed<'a> = &'a (dyn Fn(&Owner) -> Result<(), McpError> + Sync);

/// The error for a task id this host never issued (or no longer keeps),
/// word for word rmcp's.
pub fn unknown(id: &str) -> McpError {
    McpError::invalid_params(format!("unknown task: {id}"), None)
}

/// The task store (`--task-store`) replicas share, connected at start.
#[derive(Clone)]
pub struct TaskStore {
    #[cfg(feature = "task-store")]
    store: Arc<store::Store>,
}

impl TaskStore {
    /// Connects to the store at `url` (`redis://` or `rediss://`), as a
    /// replica of its own.
    #[cfg(feature = "task-store")]
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        Ok(TaskStore { store: store::Store::connect(url).await? })
    }
}

/// One session's tasks (or the sessionless ones).
pub struct Tasks {
    table: Arc<Mutex<Table>>,
    kept: Kept,
    #[cfg(feature = "task-store")]
    store: Option<Arc<store::Store>>,
}

/// Where a task a request names is.
enum Found {
    /// In this process's table: it runs here, or ended here.
    Here(Arc<Entry>),
    /// In the task store, run by another replica (or ended).
    #[cfg(feature = "task-store")]
    InStore(Arc<store::Store>, Box<store::Record>),
}

/// The tasks this process made and still keeps, with two indexes that
/// each hold exactly one item per entry they concern, so nothing in the
/// table outlives its entry.
#[derive(Default)]
struct Table {
    entries: HashMap<String, Slot>,
    /// When each entry goes (its task's time to live after its end, or
    /// twice it after its start), soonest first: looked at on each request,
    /// so no request walks the whole table.
    deadlines: BTreeSet<(Instant, String)>,
    /// The ended tasks in the order they ended: the first let go of when
    /// the results kept run out of room.
    ended: BTreeMap<u64, String>,
    /// The next number in `ended`.
    next_ended: u64,
}

/// An entry and where the indexes hold it.
struct Slot {
    entry: Arc<Entry>,
    deadline: Instant,
    ended: Option<u64>,
}

impl Table {
    fn insert(&mut self, entry: Arc<Entry>) {
        let (id, deadline) = (entry.id().to_string(), entry.expires());
        self.deadlines.insert((deadline, id.clone()));
        self.entries.insert(id, Slot { entry, deadline, ended: None });
    }

    /// Takes entry `id` out of the table and its indexes.
    fn remove(&mut self, id: &str) -> Option<Arc<Entry>> {
        let slot = self.entries.remove(id)?;
        self.deadlines.remove(&(slot.deadline, id.to_string()));
        if let Some(n) = slot.ended {
            self.ended.remove(&n);
        }
        Some(slot.entry)
    }

    /// Files entry `id` as ended now: the newest of the ended, going its
    /// time to live from now.
    fn mark_ended(&mut self, id: &str) {
        let Some(slot) = self.entries.get_mut(id) else { return };
        let n = self.next_ended;
        self.next_ended += 1;
        self.ended.insert(n, id.to_string());
        slot.ended = Some(n);
        self.deadlines.remove(&(slot.deadline, id.to_string()));
        slot.deadline = slot.entry.expires();
        self.deadlines.insert((slot.deadline, id.to_string()));
    }

    /// Drops what has expired; a task still running then is stopped.
    fn sweep(&mut self) {
        let now = Instant::now();
        while let Some((at, id)) = self.deadlines.first() {
            if *at > now {
                break;
            }
            let id = id.clone();
            if let Some(entry) = self.remove(&id) {
                entry.abort();
            }
        }
    }

    /// Lets go of the oldest ended task; false if none is left.
    fn drop_oldest_ended(&mut self) -> bool {
        let Some((_, id)) = self.ended.first_key_value() else { return false };
        let id = id.clone();
        self.remove(&id).is_some()
    }

    fn get(&mut self, id: &str) -> Option<Arc<Entry>> {
        self.sweep();
        self.entries.get(id).map(|slot| slot.entry.clone())
    }
}

impl Tasks {
    /// A table kept in this process, its finished tasks' results charged to
    /// `kept`; with `store`, one whose tasks any replica sharing it can
    /// read and steer.
    pub fn new(kept: Kept, store: Option<&TaskStore>) -> Self {
        let table = Arc::default();
        #[cfg(feature = "task-store")]
        let store = store.map(|shared| {
            shared.store.serve(Arc::downgrade(&table));
            shared.store.clone()
        });
        #[cfg(not(feature = "task-store"))]
        let _ = store;
        Tasks {
            table,
            kept,
            #[cfg(feature = "task-store")]
            store,
        }
    }

    /// Makes a task owned by `owner` running what `run` makes of it (a call
    /// already started), kept at least `bounds` beyond its start, and
    /// returns it once any replica can read it. `stop` (the call's cancel)
    /// fires if the task is dropped before its run ends.
    pub async fn spawn<F>(
        &self,
        owner: Owner,
        bounds: Duration,
        stop: CancellationToken,
        run: impl FnOnce(TaskHandle) -> F,
    ) -> Result<Task, McpError>
    where
        F: Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
    {
        // A task outlives its call's own bounds, so the call always ends
        // (and cleans up) before the task is let go of.
        let ttl = bounds + Duration::from_secs(60);
        let entry = Entry::new(owner, ttl, POLL_INTERVAL);
        let handle = TaskHandle::new(entry.clone(), self.sink());
        // Readable before the client learns the id: no request of its can
        // come first.
        handle.publish().await.inspect_err(|_| stop.cancel())?;
        let task = entry.snapshot().task;
        {
            let mut table = self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            table.sweep();
            table.insert(entry.clone());
        }
        let future = run(handle.clone());
        let table = Arc::downgrade(&self.table);
        let kept = self.kept.clone();
        let join = tokio::spawn(async move {
            // If this is aborted (the session ended, the task expired), the
            // guard stops the call, and it still cleans up.
            let _stop_if_dropped = stop.drop_guard();
            let ended = future.await;
            handle.finish(ended, |bytes| keep(&table, &kept, bytes)).await;
            settle(&table, &handle);
        });
        entry.hold(join);
        Ok(task)
    }

    /// `tasks/get`: the task's state, if `allowed` lets the caller see it.
    pub async fn get(&self, id: &str, allowed: Allowed<'_>) -> Result<DetailedTask, McpError> {
        match self.find(id, allowed).await? {
            Found::Here(entry) => Ok(entry.snapshot()),
            #[cfg(feature = "task-store")]
            Found::InStore(store, record) => store.as_seen(*record).await,
        }
    }

    /// `tasks/update`: hands the answers to the task's call. Keys it does
    /// not wait for are ignored, as the extension says.
    pub async fn update(
        &self,
        id: &str,
        allowed: Allowed<'_>,
        answers: InputResponses,
    ) -> Result<(), McpError> {
        match self.find(id, allowed).await? {
            Found::Here(entry) => TaskHandle::new(entry, self.sink()).answer(answers).await,
            #[cfg(feature = "task-store")]
            Found::InStore(store, record) => store.send(&record, store::Message::Answers(answers)).await,
        }
    }

    /// `tasks/cancel`: asks the task's call to stop; the call settles it.
    pub async fn cancel(&self, id: &str, allowed: Allowed<'_>) -> Result<(), McpError> {
        match self.find(id, allowed).await? {
            Found::Here(entry) => {
                TaskHandle::new(entry, self.sink()).cancel().await;
                Ok(())
            }
            #[cfg(feature = "task-store")]
            Found::InStore(store, record) => store.send(&record, store::Message::Cancel).await,
        }
    }

    /// Task `id`, here or in the store, once `allowed` lets the caller at
    /// it: the one place a task request's caller is checked.
    async fn find(&self, id: &str, allowed: Allowed<'_>) -> Result<Found, McpError> {
        if let Some(entry) = self.local(id) {
            allowed(entry.owner())?;
            return Ok(Found::Here(entry));
        }
        #[cfg(feature = "task-store")]
        if let Some(store) = &self.store {
            let record = store.read(id).await?.ok_or_else(|| unknown(id))?;
            allowed(&record.owner)?;
            return Ok(Found::InStore(store.clone(), Box::new(record)));
        }
        Err(unknown(id))
    }

    /// Stops every task still running (their session ended).
    pub fn shutdown(&self) {
        let mut table = self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        table.deadlines.clear();
        table.ended.clear();
        for (_, slot) in table.entries.drain() {
            slot.entry.abort();
        }
    }

    fn local(&self, id: &str) -> Option<Arc<Entry>> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id)
    }

    /// Where a task's changes go besides its entry.
    fn sink(&self) -> entry::Sink {
        #[cfg(feature = "task-store")]
        return self.store.clone();
        #[cfg(not(feature = "task-store"))]
        return entry::Sink;
    }
}

/// A charge for keeping `bytes` of a task's end: when the results kept
/// are full, this table's oldest ended tasks are let go of first (a client
/// that never reads its results loses its own oldest, not another's
/// newest); if that does not make room, the end is not kept.
fn keep(table: &Weak<Mutex<Table>>, kept: &Kept, bytes: usize) -> Result<Charge, String> {
    loop {
        let refused = match kept.charge(bytes) {
            Ok(charge) => return Ok(charge),
            Err(refused) => refused,
        };
        let Some(table) = table.upgrade() else { return Err(refused) };
        if !table.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drop_oldest_ended() {
            return Err(refused);
        }
    }
}

/// Files an ended task: once the store holds its end, the table need not
/// (any replica reads it from there); otherwise it is kept, the newest of
/// the ended.
fn settle(table: &Weak<Mutex<Table>>, handle: &TaskHandle) {
    let Some(table) = table.upgrade() else { return };
    let mut table = table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if handle.stored() {
        table.remove(handle.id());
    } else {
        table.mark_ended(handle.id());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rmcp::model::{CallToolResult, ContentBlock, InputRequest, TaskPayload};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn owner() -> Owner {
        Owner { principal: None, tool: "t".into(), scopes: Arc::from([]) }
    }

    /// Starts a task of `run` in `tasks`, kept a minute: its id.
    async fn start<F>(tasks: &Tasks, run: impl FnOnce(TaskHandle) -> F) -> String
    where
        F: Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
    {
        tasks.spawn(owner(), Duration::from_secs(60), CancellationToken::new(), run).await.unwrap().task_id
    }

    fn anyone(_: &Owner) -> Result<(), McpError> {
        Ok(())
    }

    async fn until(tasks: &Tasks, id: &str, done: impl Fn(&TaskPayload) -> bool) -> TaskPayload {
        let wait = async {
            loop {
                let task = tasks.get(id, &anyone).await.unwrap();
                if done(&task.payload) {
                    return task.payload;
                }
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait).await.expect("the task got there")
    }

    /// The smallest question there is (roots are deprecated by SEP-2577,
    /// and still a question a tool may ask).
    #[expect(deprecated)]
    fn roots() -> InputRequest {
        InputRequest::ListRoots(rmcp::model::ListRootsRequest::default())
    }

    #[tokio::test]
    async fn a_question_shows_until_answered_and_the_answer_reaches_the_call() {
        let tasks = Tasks::new(Kept::new(), None);
        let id = start(&tasks, |task| async move {
            let answers = task.ask_all(vec![("k".into(), roots())], Duration::from_secs(60)).await;
            let answer = answers.map_err(|_| TaskExit::Cancelled)?.remove(0);
            Ok(CallToolResult::success(vec![ContentBlock::text(answer.to_string())]))
        })
        .await;
        let waiting = until(&tasks, &id, |p| matches!(p, TaskPayload::InputRequired { .. })).await;
        let TaskPayload::InputRequired { input_requests } = waiting else { unreachable!() };
        assert_eq!(input_requests.keys().collect::<Vec<_>>(), ["k"]);
        // An answer to a key nobody asked is ignored.
        let answers = InputResponses::from([("other".into(), json!(1)), ("k".into(), json!({"roots": []}))]);
        tasks.update(&id, &anyone, answers).await.unwrap();
        let done = until(&tasks, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
        let TaskPayload::Completed { result } = done else { unreachable!() };
        assert_eq!(result["content"][0]["text"], r#"{"roots":[]}"#);
    }

    #[tokio::test]
    async fn a_question_whose_lease_runs_out_is_withdrawn_from_the_status() {
        let tasks = Tasks::new(Kept::new(), None);
        let (seen, saw) = tokio::sync::oneshot::channel();
        let id = start(&tasks, |task| async move {
            let unanswered = task.ask_all(vec![("k".into(), roots())], Duration::from_millis(50)).await;
            let _ = seen.send(unanswered);
            // Still running, the question gone.
            std::future::pending::<Result<CallToolResult, TaskExit>>().await
        })
        .await;
        assert_eq!(saw.await.unwrap(), Err(NoAnswer::Unanswered));
        let task = tasks.get(&id, &anyone).await.unwrap();
        assert_eq!(task.payload, TaskPayload::Working);
        tasks.shutdown();
    }

    #[tokio::test]
    async fn a_cancel_withdraws_the_questions_and_the_call_settles_the_task() {
        let tasks = Tasks::new(Kept::new(), None);
        let id = start(&tasks, |task| async move {
            let asked = task.ask_all(vec![("k".into(), roots())], Duration::from_secs(60)).await;
            assert_eq!(asked, Err(NoAnswer::Cancelled));
            assert!(task.is_cancel_requested());
            Err(TaskExit::Cancelled)
        })
        .await;
        until(&tasks, &id, |p| matches!(p, TaskPayload::InputRequired { .. })).await;
        tasks.cancel(&id, &anyone).await.unwrap();
        until(&tasks, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    }

    #[tokio::test]
    async fn when_the_results_kept_are_full_the_tables_oldest_ended_task_goes_first() {
        let tasks = Tasks::new(Kept::of(3000), None);
        let mut ids = Vec::new();
        for text in ["first", "second"] {
            let result = CallToolResult::success(vec![ContentBlock::text(text.repeat(100))]);
            let id = start(&tasks, |_| async move { Ok(result) }).await;
            until(&tasks, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
            ids.push(id);
        }
        assert_eq!(tasks.get(&ids[0], &anyone).await.unwrap_err(), unknown(&ids[0]));
        let kept = tasks.get(&ids[1], &anyone).await.unwrap();
        let TaskPayload::Completed { result } = kept.payload else { panic!("{kept:?}") };
        assert!(result["content"][0]["text"].as_str().unwrap().starts_with("second"));
        // Nothing of the first is left in the indexes.
        let table = tasks.table.lock().unwrap();
        assert_eq!((table.entries.len(), table.deadlines.len(), table.ended.len()), (1, 1, 1));
    }

    #[tokio::test]
    async fn a_result_too_large_to_keep_fails_its_task_and_another_caller_sees_no_task() {
        let tasks = Tasks::new(Kept::of(2048), None);
        let big = "x".repeat(4096);
        let id = start(&tasks, |_| async move { Ok(CallToolResult::success(vec![ContentBlock::text(big)])) })
            .await;
        let failed = until(&tasks, &id, |p| matches!(p, TaskPayload::Failed { .. })).await;
        let TaskPayload::Failed { error } = failed else { unreachable!() };
        assert!(
            error["message"].as_str().unwrap().contains("the results kept for finished tasks"),
            "{error:?}"
        );
        let nobody = |_: &Owner| Err(unknown(&id));
        assert_eq!(tasks.get(&id, &nobody).await.unwrap_err(), unknown(&id));
        assert_eq!(tasks.get("never", &anyone).await.unwrap_err(), unknown("never"));
    }
}
