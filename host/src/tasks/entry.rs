//! One task this process runs: its state, the questions its call waits on,
//! and the [`TaskHandle`] through which the call asks them and the task's
//! requests (`tasks/update`, `tasks/cancel`) reach it. Every change is
//! written to the task store, when there is one, before anyone is told.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, DetailedTask, InputRequest, InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::task_manager::{TaskExit, current_timestamp};
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::Owner;
use crate::budget::Charge;
use crate::log_text::escaped;

/// Where a task's changes are written besides its entry: the task store,
/// if there is one.
#[cfg(feature = "task-store")]
pub(super) type Sink = Option<Arc<super::store::Store>>;
/// Where a task's changes are written besides its entry: nowhere, in a
/// build without the task store.
#[cfg(not(feature = "task-store"))]
#[derive(Clone, Default)]
pub(super) struct Sink;

/// Why a task's questions got no answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// `tasks/cancel` withdrew them, or the task was dropped.
    Cancelled,
    /// The lease ran out first, or they could not be shown; they were
    /// withdrawn from the task's status.
    Unanswered,
}

/// A task this process runs.
pub(super) struct Entry {
    id: String,
    owner: Owner,
    created: Instant,
    /// How long the task is kept: running, at most this (the call's own
    /// bounds end it first); ended, this long after its end.
    ttl: Duration,
    state: Mutex<State>,
    /// Flips to `true` on `tasks/cancel`.
    cancel: watch::Sender<bool>,
    #[cfg_attr(not(feature = "task-store"), expect(dead_code, reason = "only the store writes"))]
    /// Orders the task's writes to the store: a snapshot is taken and
    /// written under it, so an older one never lands after a newer one.
    writing: tokio::sync::Mutex<()>,
}

struct State {
    task: Task,
    end: Option<TaskPayload>,
    ended_at: Option<Instant>,
    /// The questions waiting for `tasks/update`, by `inputRequests` key.
    pending: BTreeMap<String, (InputRequest, oneshot::Sender<Value>)>,
    /// Every `inputRequests` key the task has shown: a key is never reused
    /// over the task's life, since a late answer to the old question must
    /// not answer the new one.
    used: HashSet<String>,
    cancel_requested: bool,
    /// The run, aborted if the task is dropped while it still runs.
    join: Option<JoinHandle<()>>,
    /// The end was written to the store.
    stored: bool,
    /// Pays for keeping the end in this process.
    _kept: Option<Charge>,
}

impl Entry {
    pub(super) fn new(owner: Owner, ttl: Duration, poll: Duration) -> Arc<Self> {
        let id = uuid::Uuid::new_v4().to_string();
        let now = current_timestamp();
        let mut task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now);
        task.ttl_ms = Some(ttl.as_millis().try_into().unwrap_or(u64::MAX));
        task.poll_interval_ms = Some(poll.as_millis().try_into().unwrap_or(u64::MAX));
        let state = State {
            task,
            end: None,
            ended_at: None,
            pending: BTreeMap::new(),
            used: HashSet::new(),
            cancel_requested: false,
            join: None,
            stored: false,
            _kept: None,
        };
        Arc::new(Entry {
            id,
            owner,
            created: Instant::now(),
            ttl,
            state: Mutex::new(state),
            cancel: watch::channel(false).0,
            writing: tokio::sync::Mutex::new(()),
        })
    }

    pub(super) fn id(&self) -> &str {
        &self.id
    }

    pub(super) fn owner(&self) -> &Owner {
        &self.owner
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the task is let go of: its time to live after its end, or
    /// twice it after its start if it never ended.
    pub(super) fn expires(&self) -> Instant {
        match self.state().ended_at {
            Some(ended) => ended + self.ttl,
            None => self.created + 2 * self.ttl,
        }
    }

    /// How long the store should keep what is written now.
    #[cfg_attr(not(feature = "task-store"), expect(dead_code, reason = "only the store keeps"))]
    fn keep_for(&self) -> Duration {
        self.expires().saturating_duration_since(Instant::now()).max(Duration::from_secs(1))
    }

    /// Whether the task has ended.
    #[cfg_attr(not(feature = "task-store"), expect(dead_code, reason = "only the store asks"))]
    pub(super) fn ended(&self) -> bool {
        self.state().end.is_some()
    }

    /// The task as `tasks/get` shows it now.
    pub(super) fn snapshot(&self) -> DetailedTask {
        let state = self.state();
        let payload = match &state.end {
            Some(end) => end.clone(),
            None if state.pending.is_empty() => TaskPayload::Working,
            None => TaskPayload::InputRequired {
                input_requests: state
                    .pending
                    .iter()
                    .map(|(key, (request, _))| (key.clone(), request.clone()))
                    .collect(),
            },
        };
        DetailedTask::new(state.task.clone(), payload)
    }

    /// Keeps the run's handle, so dropping the task can stop it.
    pub(super) fn hold(&self, join: JoinHandle<()>) {
        let mut state = self.state();
        if state.end.is_none() {
            state.join = Some(join);
        }
    }

    /// Stops the run (the session ended, or the task expired): its guard
    /// stops the call, which still cleans up.
    pub(super) fn abort(&self) {
        let mut state = self.state();
        state.pending.clear();
        if let Some(join) = state.join.take() {
            join.abort();
        }
    }
}

impl State {
    fn touch(&mut self) {
        self.task.last_updated_at = current_timestamp();
    }
}

/// The handle to a task: how its call asks questions and learns of a
/// cancel, and how the task's requests reach it.
#[derive(Clone)]
pub struct TaskHandle {
    entry: Arc<Entry>,
    #[cfg_attr(not(feature = "task-store"), expect(dead_code, reason = "nowhere to write"))]
    sink: Sink,
}

impl TaskHandle {
    pub(super) fn new(entry: Arc<Entry>, sink: Sink) -> Self {
        TaskHandle { entry, sink }
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        self.entry.id()
    }

    /// Shows `questions` in the task's `input_required` status (each under
    /// its key, or a fresh one if the task used that key before) and waits
    /// for all their answers, in order, for at most `lease`. Unanswered in
    /// time, they are withdrawn.
    pub async fn ask_all(
        &self,
        questions: Vec<(String, InputRequest)>,
        lease: Duration,
    ) -> Result<Vec<Value>, NoAnswer> {
        let mut keys = Vec::with_capacity(questions.len());
        let mut waits = Vec::with_capacity(questions.len());
        {
            let mut state = self.entry.state();
            if state.cancel_requested || state.end.is_some() {
                return Err(NoAnswer::Cancelled);
            }
            for (key, request) in questions {
                let key = unique_key(&mut state.used, key);
                let (answer, answered) = oneshot::channel();
                state.pending.insert(key.clone(), (request, answer));
                keys.push(key);
                waits.push(answered);
            }
            state.touch();
        }
        if self.publish().await.is_err() {
            self.withdraw(&keys).await;
            return Err(NoAnswer::Unanswered);
        }
        let answered = async {
            let mut answers = Vec::with_capacity(waits.len());
            for answered in waits {
                // A dropped sender: `tasks/cancel` cleared the questions.
                answers.push(answered.await.map_err(|_| NoAnswer::Cancelled)?);
            }
            Ok(answers)
        };
        match tokio::time::timeout(lease, answered).await {
            Ok(answers) => answers,
            Err(_) => {
                self.withdraw(&keys).await;
                Err(NoAnswer::Unanswered)
            }
        }
    }

    /// Resolves once `tasks/cancel` reached the task (at once if it has).
    pub async fn cancelled(&self) {
        let mut cancel = self.entry.cancel.subscribe();
        // An error: the sender is gone, which the entry never lets happen
        // while a handle lives; treat it as no cancel.
        let _ = cancel.wait_for(|cancelled| *cancelled).await;
    }

    /// Whether `tasks/cancel` reached the task.
    pub fn is_cancel_requested(&self) -> bool {
        *self.entry.cancel.borrow()
    }

    /// Hands `answers` to the questions they name; others are ignored.
    pub(super) async fn answer(&self, answers: InputResponses) -> Result<(), McpError> {
        {
            let mut state = self.entry.state();
            for (key, answer) in answers {
                if let Some((_, waiting)) = state.pending.remove(&key) {
                    // A call that moved on no longer listens: nothing to do.
                    let _ = waiting.send(answer);
                }
            }
            state.touch();
        }
        self.publish().await
    }

    /// Asks the call to stop: its questions are withdrawn (their waits end
    /// as cancelled) and the call settles the task.
    pub(super) async fn cancel(&self) {
        {
            let mut state = self.entry.state();
            state.cancel_requested = true;
            if state.end.is_none() {
                state.pending.clear();
                state.touch();
            }
        }
        self.entry.cancel.send_replace(true);
        if let Err(error) = self.publish().await {
            tracing::warn!(task = %self.id(), error = %escaped(&error.message), "the task's cancel could not be written to the task store");
        }
    }

    /// Settles the task with how its run `ended`, keeping the end for its
    /// time to live under a charge `keep` makes for its bytes (a result it
    /// cannot keep fails the task instead, saying why).
    pub(super) async fn finish(
        &self,
        ended: Result<CallToolResult, TaskExit>,
        keep: impl FnOnce(usize) -> Result<Charge, String>,
    ) {
        let mut end = match ended {
            Ok(result) => TaskPayload::Completed { result: to_object(&result) },
            Err(TaskExit::Cancelled) => TaskPayload::Cancelled,
            Err(TaskExit::Error(error)) => TaskPayload::Failed { error: to_object(&error) },
        };
        let bytes = match &end {
            TaskPayload::Completed { result: object } | TaskPayload::Failed { error: object } => {
                crate::json_size::json_size(object, usize::MAX).unwrap_or(usize::MAX)
            }
            _ => 0,
        };
        let charge = match keep(bytes) {
            Ok(charge) => Some(charge),
            Err(why) => {
                let error = McpError::internal_error(format!("the task's result is not kept: {why}"), None);
                end = TaskPayload::Failed { error: to_object(&error) };
                None
            }
        };
        {
            let mut state = self.entry.state();
            state.task.status = end.status();
            state.end = Some(end);
            state.ended_at = Some(Instant::now());
            state.pending.clear();
            state.join = None;
            state._kept = charge;
            state.touch();
        }
        // The end must reach the store, or other replicas read the task as
        // running until its replica's lease runs out: tried a few times.
        for wait in [0, 200, 1000, 3000] {
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            match self.publish().await {
                Ok(()) => {
                    self.entry.state().stored = self.has_store();
                    return;
                }
                Err(error) => {
                    tracing::warn!(task = %self.id(), error = %escaped(&error.message), "the task's end could not be written to the task store")
                }
            }
        }
    }

    /// Whether the task's end is in the store, so this process need not
    /// keep it.
    pub(super) fn stored(&self) -> bool {
        self.entry.state().stored
    }

    /// Writes the task as it is now to the store, if there is one.
    pub(super) async fn publish(&self) -> Result<(), McpError> {
        #[cfg(feature = "task-store")]
        if let Some(store) = &self.sink {
            let _in_order = self.entry.writing.lock().await;
            let task = self.entry.snapshot();
            return store.write(&self.entry.owner, &task, self.entry.keep_for()).await;
        }
        Ok(())
    }

    fn has_store(&self) -> bool {
        #[cfg(feature = "task-store")]
        return self.sink.is_some();
        #[cfg(not(feature = "task-store"))]
        return false;
    }

    /// Takes back questions nobody answered.
    async fn withdraw(&self, keys: &[String]) {
        {
            let mut state = self.entry.state();
            for key in keys {
                state.pending.remove(key);
            }
            state.touch();
        }
        if let Err(error) = self.publish().await {
            tracing::warn!(task = %self.id(), error = %escaped(&error.message), "a withdrawn question could not be written to the task store");
        }
    }
}

/// `key`, or `key-2`, `key-3`, ... if `used` has it: a task's
/// `inputRequests` keys are unique over its lifetime, while a tool may ask
/// under the same key in two rounds. At most `--max-questions` keys a call.
fn unique_key(used: &mut HashSet<String>, key: String) -> String {
    let mut candidate = key.clone();
    let mut n = 1;
    while !used.insert(candidate.clone()) {
        n += 1;
        candidate = format!("{key}-{n}");
    }
    candidate
}

/// `value` as the JSON object the task's `result` or `error` is.
fn to_object(value: &impl serde::Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_asked_again_in_a_task_gets_a_fresh_name() {
        let mut used = HashSet::new();
        let keys: Vec<String> = ["confirm", "confirm", "name", "confirm"]
            .iter()
            .map(|key| unique_key(&mut used, key.to_string()))
            .collect();
        assert_eq!(keys, ["confirm", "confirm-2", "name", "confirm-3"]);
        // A tool's own key that looks like a fresh one is kept apart too.
        assert_eq!(unique_key(&mut used, "confirm-2".into()), "confirm-2-2");
    }
}
