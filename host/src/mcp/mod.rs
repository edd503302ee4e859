//! The MCP face of the host: rmcp types on one side, the host's own on the
//! other.
//!
//! A `tools/call` goes, top to bottom:
//! - [`handler`]: the rmcp `ServerHandler`, which only dispatches;
//! - [`tools`]: the call is routed to the component that offers the tool
//!   and its arguments are checked against the tool's input schema;
//! - [`mode`]: the call travels one of three ways, by what the client
//!   speaks — inside its request, in rounds (2026-07-28) or as a task;
//! - [`crate::call`] runs it; [`result`] turns its outcome into the MCP result.
//!
//! [`status`] is the resource that reports the host's live counts;
//! [`loading`] lets `tools/list` and calls wait for components still
//! compiling while everything else is answered at once.
//!
//! Tasks and paused calls belong to the session that started them
//! ([`SessionCalls`]): a task id or `requestState` from another session is
//! unknown there, and when a session ends, what it still runs is stopped.
//! With `--auth-issuer`, [`access`] also binds them to the caller, and
//! checks its scopes and its share of calls.

mod access;
mod catalog;
mod handler;
mod lists;
mod loading;
mod mode;
mod offered;
mod result;
mod skills;
mod status;
mod subscriptions;
mod tools;

use std::sync::Arc;

use anyhow::Result;
use rmcp::model::{CallToolResponse, ProgressToken, Tool};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};

use crate::ask::{AskPolicy, CallChannel, CallIdentity, Delivery, LogFilter, MissingCapabilities};
use crate::audit;
use crate::auth::Fairness;
use crate::call::{CallOutcome, CallRunner, CallSignals};
use crate::component::ToolComponent;
use crate::operation::Operation;
use crate::request_state::StateKeys;
use crate::stats::Stats;
use crate::tasks::{Kept, TaskStore, Tasks};

pub use handler::Served;
pub(crate) use loading::LOAD_WAIT;
use loading::Loading;
use mode::rounds::PausedCalls;
use tools::{CallPlan, Tools};

/// The MCP server: every tool of every loaded component. One value per MCP
/// session (stdio has one; HTTP makes one per session with
/// [`ToolServer::new_session`]); sessions share the tools and the runner.
#[derive(Clone)]
pub struct ToolServer {
    caller: Caller,
    /// The resources this session follows (`resources/subscribe`).
    following: Arc<subscriptions::Following>,
    /// This session's tasks and paused calls, made when its first request
    /// needs them: a 2026-07-28 request over HTTP is served by a session of
    /// its own that never does (its calls are the sessionless ones), so it
    /// makes none. Running calls hold a [`Caller`], never this, so it is
    /// dropped with the session.
    calls: Arc<std::sync::OnceLock<SessionCalls>>,
}

/// What running a call needs: the server's tools and runner, and the
/// session's log filter. Cloned into calls that outlive their request.
#[derive(Clone)]
struct Caller {
    shared: Arc<Shared>,
    log_filter: Arc<LogFilter>,
}

/// What every session shares.
struct Shared {
    /// The tools new calls are routed to. A reload swaps in a new set; a
    /// call already routed keeps its component until it ends.
    tools: std::sync::RwLock<Arc<Tools>>,
    /// Whether `tools` holds the loaded components yet.
    loading: Loading,
    /// With `--watch`: the clients to tell when the tool list changes.
    list_changes: Option<std::sync::Mutex<Vec<Peer<RoleServer>>>>,
    runner: CallRunner,
    /// How calls may put questions to the user.
    ask_policy: AskPolicy,
    /// With `--state-key-file`: the keys that seal paused calls' state
    /// (protocol 2026-07-28), so no call is parked here.
    state_keys: Option<Arc<StateKeys>>,
    /// With `--auth-issuer`: each caller's share of calls and pauses.
    fairness: Option<Fairness>,
    /// The sessions that follow resources.
    subscribers: Arc<subscriptions::Subscribers>,
    /// Tasks and paused calls of requests that come in no session:
    /// 2026-07-28 over HTTP is stateless, so a request there cannot be tied
    /// to the one that started a call. Their ids (task ids, `requestState`)
    /// are random UUIDs handed only to that client; without auth they act
    /// as bearer tokens, with auth only their caller may use them.
    /// With `--task-store`, their tasks are kept there, for any replica.
    sessionless: Arc<SessionCalls>,
    /// What finished tasks' results may hold, in every session together.
    kept: Kept,
}

/// One session's calls that outlive their request: tasks (the tasks
/// extension) and calls paused for an answer (2026-07-28). Reachable only
/// through the session's own requests; when the session ends, they stop
/// (the calls are cancelled, clean up, and their slots are freed).
struct SessionCalls {
    tasks: Tasks,
    paused: Arc<PausedCalls>,
}

impl SessionCalls {
    fn new(stats: Arc<Stats>, kept: Kept, store: Option<&TaskStore>) -> Self {
        SessionCalls { tasks: Tasks::new(kept, store), paused: PausedCalls::new(stats) }
    }
}

impl Drop for SessionCalls {
    fn drop(&mut self) {
        // Aborting a task's run stops its call (see `crate::tasks`).
        self.tasks.shutdown();
        self.paused.stop_all();
    }
}

impl ToolServer {
    /// A server with no tools yet: it answers `initialize` and `ping`,
    /// while `tools/list` and calls wait for [`ToolServer::finish_loading`].
    /// With `list_changes`, the tool list may change while serving
    /// (`--watch`), and clients are told so.
    pub(crate) fn loading(
        runner: CallRunner,
        ask_policy: AskPolicy,
        state_keys: Option<StateKeys>,
        list_changes: bool,
        fairness: Option<Fairness>,
        task_store: Option<TaskStore>,
    ) -> Result<Self> {
        let stats = runner.stats().clone();
        let kept = Kept::new();
        let shared = Shared {
            tools: std::sync::RwLock::new(Arc::new(Tools::new(Vec::new())?)),
            loading: Loading::new(false),
            list_changes: list_changes.then(std::sync::Mutex::default),
            runner,
            ask_policy,
            state_keys: state_keys.map(Arc::new),
            fairness,
            subscribers: Arc::default(),
            sessionless: Arc::new(SessionCalls::new(stats, kept.clone(), task_store.as_ref())),
            kept,
        };
        let caller = Caller { shared: Arc::new(shared), log_filter: Arc::default() };
        Ok(Self { caller, following: Arc::default(), calls: Arc::default() })
    }

    /// Serves the tools of `components`, loaded in `took`, and lets the
    /// requests waiting for them go on. Two components offering the same
    /// tool name is an error: a client could not tell which one it calls.
    pub(crate) fn finish_loading(
        &self,
        components: Vec<ToolComponent>,
        took: std::time::Duration,
    ) -> Result<()> {
        let tools = Tools::new(components.into_iter().map(Arc::new).collect())?;
        let count = tools.listed().len();
        *self.caller.shared.tools.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(tools);
        // Logged before the waiting requests go on: the log never shows an
        // answer that needed the tools ahead of the line saying they loaded.
        tracing::info!(tools = count, elapsed_ms = took.as_millis() as u64, "loaded");
        self.caller.shared.loading.finish();
        Ok(())
    }

    /// Becomes `true` once every component is loaded.
    pub(crate) fn loaded(&self) -> tokio::sync::watch::Receiver<bool> {
        self.caller.shared.loading.subscribe()
    }

    /// Whether every component is loaded (so `/readyz` can tell a balancer).
    pub(crate) fn is_loaded(&self) -> bool {
        self.caller.shared.loading.is_done()
    }

    /// The same tools for a new MCP session, with its own log filter, tasks
    /// and paused calls.
    pub(crate) fn new_session(&self) -> Self {
        let shared = self.caller.shared.clone();
        Self {
            caller: Caller { shared, log_filter: Arc::default() },
            following: Arc::default(),
            calls: Arc::default(),
        }
    }

    /// The tasks and paused calls `context`'s request may reach: its
    /// session's, or for a request in no HTTP session, the sessionless ones.
    fn calls(&self, context: &RequestContext<RoleServer>) -> &SessionCalls {
        let sessionless = context
            .extensions
            .get::<http::request::Parts>()
            .is_some_and(|request| !request.headers.contains_key("mcp-session-id"));
        let shared = &self.caller.shared;
        if sessionless {
            return &shared.sessionless;
        }
        // A session lives in one replica: its tasks stay here.
        self.calls.get_or_init(|| SessionCalls::new(shared.runner.stats().clone(), shared.kept.clone(), None))
    }

    /// What runs the calls (its engine and guest threads load components too).
    pub(crate) fn runner(&self) -> &CallRunner {
        &self.caller.shared.runner
    }

    /// The scopes tool `name` needs now, if it is one.
    pub(crate) fn scopes_of(&self, name: &str) -> Option<Arc<[String]>> {
        self.caller.shared.tools().scopes_of(name)
    }

    /// Whether tool `name` mirrors a parameter in a header (SEP-2243's
    /// `x-mcp-header`), which rmcp checks on HTTP.
    pub(crate) fn has_header_params(&self, name: &str) -> bool {
        self.caller.shared.tools().has_header_params(name)
    }

    /// Every tool, as listed to clients now.
    pub fn tools(&self) -> Vec<Tool> {
        self.caller.shared.tools().listed().to_vec()
    }

    /// Swaps the component at `index` (in configuration order) for `new`,
    /// for calls routed from now on; calls in flight finish on the old one.
    /// A clash of tool names (or approval rules naming a tool that is
    /// gone) refuses the swap and the old component keeps serving. Returns
    /// the names of the tools now offered.
    pub(crate) fn replace_component(&self, index: usize, new: ToolComponent) -> Result<Vec<String>> {
        let mut tools = self.caller.shared.tools.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let replaced = tools.replacing(index, new)?;
        let names = replaced.listed().iter().map(|tool| tool.name.to_string()).collect();
        if let Some(component) = replaced.component(index) {
            // Its resources may read differently now.
            self.caller.shared.subscribers.reloaded(component);
        }
        *tools = Arc::new(replaced);
        Ok(names)
    }

    /// The component at `index` (in configuration order), as calls are routed to it now.
    pub(crate) fn component(&self, index: usize) -> Option<Arc<ToolComponent>> {
        self.caller.shared.tools().component(index).cloned()
    }

    /// How many components are served.
    pub(crate) fn component_count(&self) -> usize {
        self.caller.shared.tools().component_count()
    }

    /// Swaps `optimized` in for component `index` if `baseline` still serves
    /// there (a version `--watch` loaded since is left alone); calls in
    /// flight finish on the baseline code. Returns whether it swapped.
    pub(crate) fn upgrade_component(
        &self,
        index: usize,
        baseline: &Arc<ToolComponent>,
        optimized: ToolComponent,
    ) -> Result<bool> {
        let mut tools = self.caller.shared.tools.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !tools.component(index).is_some_and(|current| Arc::ptr_eq(current, baseline)) {
            return Ok(false);
        }
        *tools = Arc::new(tools.replacing(index, optimized)?);
        Ok(true)
    }

    /// Sends `list_changed` for tools, resources and prompts to every
    /// connected client and listen stream (only with `--watch`); clients
    /// that are gone are forgotten.
    pub(crate) async fn notify_tools_changed(&self) {
        let Some(peers) = &self.caller.shared.list_changes else { return };
        self.caller.shared.subscribers.lists_changed();
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            peers.retain(|peer| !peer.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            // Resources and prompts come from the same components.
            let told = async {
                peer.notify_tool_list_changed().await?;
                peer.notify_resource_list_changed().await?;
                peer.notify_prompt_list_changed().await
            };
            if let Err(err) = told.await {
                tracing::debug!("cannot tell a client the lists changed: {err}");
            }
        }
    }

    /// Remembers the client of this session, to tell it when the tool list
    /// changes (only with `--watch`).
    fn listen_for_changes(&self, peer: Peer<RoleServer>) {
        if let Some(peers) = &self.caller.shared.list_changes {
            let mut peers = peers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            peers.retain(|peer| !peer.is_transport_closed());
            peers.push(peer);
        }
    }
}

impl Shared {
    /// The current tools (a snapshot: a reload does not change it).
    fn tools(&self) -> Arc<Tools> {
        self.tools.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// The current tools, once the components are loaded; for a request
    /// whose cancellation is `request`.
    async fn loaded_tools(
        &self,
        request: &tokio_util::sync::CancellationToken,
    ) -> Result<Arc<Tools>, McpError> {
        self.loading.wait(request).await?;
        Ok(self.tools())
    }
}

impl Caller {
    /// The call's channel to the user through the client that made `context`.
    /// Boxed: it is handed down through the call's nested futures by value,
    /// and each would otherwise keep room for a copy (a paused call keeps
    /// its future for as long as it waits).
    fn channel(
        &self,
        plan: &CallPlan,
        context: &RequestContext<RoleServer>,
        delivery: Delivery,
        progress_token: Option<ProgressToken>,
    ) -> Box<CallChannel> {
        let identity = CallIdentity { tool: plan.spec().name.clone(), pre_approved: plan.route.pre_approved };
        self.channel_for(identity, &plan.route.component, context, delivery, progress_token)
    }

    /// The channel to the user of a run of `component` by `identity`.
    fn channel_for(
        &self,
        identity: CallIdentity,
        component: &Arc<ToolComponent>,
        context: &RequestContext<RoleServer>,
        delivery: Delivery,
        progress_token: Option<ProgressToken>,
    ) -> Box<CallChannel> {
        // On 2026-07-28 a request asks for log records itself (SEP-2575), and
        // gets none when it does not; before, the session's level applies.
        let log_filter = if mode::rounds::speaks_in_rounds(context) {
            Arc::new(LogFilter::for_request(context.meta.log_level()))
        } else {
            self.log_filter.clone()
        };
        let mut policy = self.shared.ask_policy.clone();
        if let (Some(fairness), Some(caller)) = (&self.shared.fairness, access::caller(context)) {
            policy.paused_share = Some(fairness.paused.of(&caller.key()));
        }
        let mut channel = Box::new(CallChannel::new(
            context.peer.clone(),
            context.client_capabilities(),
            delivery,
            identity,
            progress_token,
            log_filter,
            policy,
            self.shared.runner.stats().clone(),
        ));
        channel.announce_updates_to(self.shared.subscribers.sink_for(component));
        if let Some(stream) = context.extensions.get::<crate::ask::RequestStream>() {
            channel.notify_on(stream.clone());
        }
        channel
    }

    /// Runs a planned call to its MCP response: approval first if the tool
    /// needs it, then the guest, then the result checks.
    /// `who` made the call: its audit record names them.
    async fn execute(
        &self,
        plan: &CallPlan,
        signals: CallSignals,
        channel: Box<CallChannel>,
        who: audit::Who,
    ) -> Result<CallToolResponse, McpError> {
        let outcome = self.run_planned(plan, signals, channel, who).await?;
        result::to_response(&plan.spec().name, outcome)
    }

    /// [`Self::execute`] up to the call's outcome, for a caller that
    /// answers with something else than a `tools/call` response (a task).
    async fn run_planned(
        &self,
        plan: &CallPlan,
        signals: CallSignals,
        channel: Box<CallChannel>,
        who: audit::Who,
    ) -> Result<CallOutcome, McpError> {
        let name = &plan.spec().name;
        let approval = plan.approval_question();
        let needs_approval = approval.is_some();
        let audit = self.shared.runner.stats().audit().call(who, name, &plan.arguments, needs_approval).await;
        let operation = Operation::Tool { name: name.clone(), arguments: plan.arguments.to_string() };
        let component = &plan.route.component;
        let missing = channel.missing_capabilities();
        let outcome = self
            .shared
            .runner
            .run(component, operation, &plan.share, signals, channel, approval, Some(audit))
            .await;
        // A tool that failed after asking for what the client had not
        // declared needed it (SEP-2575): the client is told which.
        if let (CallOutcome::Returned(Err(_)), Some(required)) =
            (&outcome, missing.as_ref().and_then(MissingCapabilities::required))
        {
            return Err(McpError::missing_required_client_capability(required));
        }
        Ok(outcome)
    }
}
