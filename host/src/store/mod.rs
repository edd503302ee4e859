//! The data of a call's wasmtime `Store`, the linker that resolves a
//! component against it, and a component's code of either kind ([`Code`]:
//! the `mcp:tool` contract, or plain functions) that its stores run.
//!
//! A store holds three things: the [`Sandbox`] (WASI, outgoing HTTP, the
//! handle table, the memory budget), the call's stop signal, and its
//! [`CallChannel`] to the user. Each interface the guest may import gets a
//! view of just what it needs — WASI and `wasi:http` the sandbox,
//! `mcp:tool/cancellation` the table, `mcp:tool/client` the channel — so no
//! interface's host code reaches into another's state.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use anyhow::Result;
use wasmtime::component::Linker;
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use crate::ask::CallChannel;
use crate::budget::Budget;
use crate::cancellation::CallCancellation;
use crate::contract::resources_export::{ReadError, ResourceContents};
use crate::contract::types::{CallError, CallResult, StopReason};
use crate::operation::Operation;
use crate::plain::PlainCode;
use crate::sandbox::grants::Grants;
use crate::sandbox::{self, Sandbox, SandboxView, StoreBudget};
use crate::stats::Stats;
use crate::wit::{self, CancellationCtxView, CancellationView, ClientCtxView, ClientView};

mod exports;

pub use exports::{ContractCode, Listing, LoadedBody, ReadAtLoad};

/// The most fixed resources one component has read at load.
pub const MAX_READ_AT_LOAD: usize = 1024;

/// An instance of a component, by its kind.
enum Instance {
    Contract(wasmtime::component::Instance),
    Plain(wasmtime::component::Instance),
}

/// The data of one call's store (or one cleanup's, or one `list-tools`').
pub struct CallState {
    sandbox: Sandbox,
    /// This call's stop signal, handed to the guest as `cancelled`.
    cancellation: CallCancellation,
    /// The call's channel to the user (log, progress, questions).
    channel: CallChannel,
}

impl CallState {
    /// The call's channel to the user.
    pub fn channel(&mut self) -> &mut CallChannel {
        &mut self.channel
    }

    /// Which memory budget the guest ran out of, if it did.
    pub fn memory_was_hit(&mut self) -> Option<crate::sandbox::MemoryHit> {
        self.sandbox.memory_was_hit()
    }

    /// The call is over: its handles closed and its output logged now, the
    /// store kept only to be dropped (`Sandbox::release`).
    pub fn release(&mut self) {
        self.sandbox.release();
    }
}

impl SandboxView for CallState {
    fn sandbox(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.sandbox.wasi()
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.sandbox.http()
    }
}

impl CancellationView for CallState {
    fn cancellation(&mut self) -> CancellationCtxView<'_> {
        CancellationCtxView { table: self.sandbox.table() }
    }
}

impl ClientView for CallState {
    fn client(&mut self) -> ClientCtxView<'_> {
        ClientCtxView {
            channel: &mut self.channel,
            cancellation: &self.cancellation,
            call_id: self.sandbox.call_id(),
        }
    }
}

/// The linker every component is resolved against: what the sandbox offers
/// (WASI 0.2, outgoing `wasi:http`) and the `mcp:tool` host interfaces.
pub fn host_linker(engine: &Engine) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    sandbox::add_to_linker(&mut linker)?;
    wit::add_to_linker(&mut linker)?;
    Ok(linker)
}

/// What a store made ahead counts into until a call takes it ([`Guest::bind`]
/// swaps its channel): one for the process, since a `Stats` is a whole
/// metrics registry, too much to build for every instance.
static UNBOUND_STATS: LazyLock<Arc<Stats>> = LazyLock::new(Arc::default);

/// A component's exports, run in a fresh store: every run of guest code —
/// listing tools, a call, a cleanup — starts here.
pub struct Guest {
    store: Store<CallState>,
    code: Code,
    /// The instance, when it was made ahead of the call (`component::ahead`).
    ready: Option<Instance>,
    /// How long making the instance took, whether the call made it or it
    /// was made ahead: `component::ahead` keeps timing both, so a component
    /// stops being made ahead once its instances turn out cheap to make.
    instantiated_in: Option<Duration>,
}

impl Guest {
    /// A fresh store for call `call_id` of the component `code`, with
    /// `grants` and limited to `budget`. The store comes from `code`'s own
    /// engine: baseline and optimized code each need theirs.
    pub fn new(
        code: &Code,
        grants: &Grants,
        budget: &StoreBudget,
        cancellation: CallCancellation,
        call_id: Arc<str>,
        channel: CallChannel,
    ) -> Result<Self> {
        let state = CallState { sandbox: Sandbox::new(grants, budget, call_id)?, cancellation, channel };
        Ok(Guest {
            store: sandbox::new_store(code.engine(), state, budget)?,
            code: code.clone(),
            ready: None,
            instantiated_in: None,
        })
    }

    /// A fresh store with an instance of `code` already in it, made before
    /// the call it will serve: nothing in it is the call's until [`bind`].
    ///
    /// [`bind`]: Guest::bind
    pub async fn ahead(code: &Code, grants: &Grants, budget: &StoreBudget) -> Result<Self> {
        let channel = CallChannel::detached(UNBOUND_STATS.clone());
        let mut guest =
            Guest::new(code, grants, budget, CallCancellation::new(), Arc::from("ahead"), channel)?;
        guest.ready = Some(guest.instantiate().await?);
        Ok(guest)
    }

    /// Hands a guest made [`ahead`] to call `call_id`: its stop signal and
    /// channel, and its clock and fuel starting now, as if it were new.
    ///
    /// [`ahead`]: Guest::ahead
    pub fn bind(
        &mut self,
        budget: &StoreBudget,
        cancellation: CallCancellation,
        call_id: Arc<str>,
        channel: CallChannel,
    ) -> Result<()> {
        let state = self.store.data_mut();
        state.sandbox.bind(call_id, budget.time_limit);
        state.cancellation = cancellation;
        state.channel = channel;
        sandbox::refuel(&mut self.store, budget)
    }

    /// The instance made ahead, or a new one in this store.
    async fn instance(&mut self) -> wasmtime::Result<Instance> {
        if let Some(instance) = self.ready.take() {
            return Ok(instance);
        }
        self.instantiate().await
    }

    /// A new instance in this store, timed ([`Guest::instantiated_in`]).
    async fn instantiate(&mut self) -> wasmtime::Result<Instance> {
        let started = Instant::now();
        let instance = match &self.code {
            Code::Contract(code) => Instance::Contract(code.pre.instantiate_async(&mut self.store).await?),
            Code::Plain(plain) => Instance::Plain(plain.pre.instantiate_async(&mut self.store).await?),
        };
        self.instantiated_in = Some(started.elapsed());
        Ok(instance)
    }

    /// A new instance of a contract component, with its code.
    async fn contract(&mut self) -> wasmtime::Result<(wasmtime::component::Instance, Arc<ContractCode>)> {
        match (self.instance().await?, &self.code) {
            (Instance::Contract(instance), Code::Contract(code)) => Ok((instance, code.clone())),
            _ => Err(wasmtime::format_err!("a plain component has no mcp:tool exports")),
        }
    }

    /// How long this store took to make its instance (by its call or ahead
    /// of it), if it made one.
    pub fn instantiated_in(&self) -> Option<Duration> {
        self.instantiated_in
    }

    /// Everything a contract component offers (`list-tools`,
    /// `list-resources`, ...), read in this store's instance; then, in the
    /// same instance, the first [`MAX_READ_AT_LOAD`] of its fixed resources
    /// that `read_now` picks, each kept only if `budget` takes its bytes.
    ///
    /// A read that fails, or does not fit, is kept as its reason; after a
    /// trap the instance is done, so the reads left are not made.
    pub async fn list(
        &mut self,
        read_now: fn(&str) -> bool,
        budget: &Arc<Budget>,
    ) -> wasmtime::Result<Listing> {
        let (instance, code) = self.contract().await?;
        let mut listing = code.list(&mut self.store, &instance).await?;
        let uris: Vec<String> = listing
            .resources
            .iter()
            .filter(|info| read_now(&info.uri))
            .take(MAX_READ_AT_LOAD)
            .map(|info| info.uri.clone())
            .collect();
        let mut trapped = None;
        for uri in uris {
            let got = match &trapped {
                Some(why) => Err(format!("not read: an earlier read trapped ({why})")),
                None => {
                    // What one read lifts is bounded like a call's result:
                    // by the store's hostcall fuel, here its memory.
                    let fuel = self.store.hostcall_fuel().min(budget.limit());
                    self.store.set_hostcall_fuel(fuel);
                    let state = self.store.data_mut();
                    let cancelled =
                        wit::cancellation::hand_to_guest(state.sandbox.table(), &state.cancellation)?;
                    match code.read(&mut self.store, &instance, &uri, cancelled).await {
                        Ok(read) => loaded_body(&uri, read, budget),
                        Err(trap) => {
                            let why = format!("{trap:#}");
                            trapped = Some(why.clone());
                            Err(why)
                        }
                    }
                }
            };
            listing.read.push(ReadAtLoad { uri, got });
        }
        Ok(listing)
    }

    /// Runs `operation` (named as the component names things), with the
    /// call's `cancelled` handed to the guest; for a plain component, the
    /// tool's function, its result lifted and converted within
    /// `max_memory` of host memory (the call's `--max-memory`).
    pub async fn call(
        &mut self,
        call_id: &str,
        operation: &Operation,
        max_memory: usize,
    ) -> wasmtime::Result<Result<CallResult, CallError>> {
        // What wasmtime may allocate on the host for data the guest hands
        // over in one go (a host call's arguments, the call's result) is
        // charged to its "hostcall fuel" (128 MiB by default): no more than
        // the call's own memory budget, so `--max-memory` bounds that too.
        // Honest guests never need more: what they hand over is in their
        // memory, except a plain result's `Val`s (tens of bytes an element).
        let fuel = self.store.hostcall_fuel().min(max_memory);
        self.store.set_hostcall_fuel(fuel);
        let (instance, code) = match (self.instance().await?, &self.code) {
            (Instance::Contract(instance), Code::Contract(code)) => (instance, code.clone()),
            (Instance::Plain(instance), Code::Plain(plain)) => {
                let Operation::Tool { name, arguments } = operation else {
                    return Err(wasmtime::format_err!("a plain component offers only tools"));
                };
                let plain = plain.clone();
                return plain.call(&mut self.store, &instance, name, arguments, max_memory).await;
            }
            _ => return Err(wasmtime::format_err!("a component made an instance of the other kind")),
        };
        let state = self.store.data_mut();
        let cancelled = wit::cancellation::hand_to_guest(state.sandbox.table(), &state.cancellation)?;
        code.run(&mut self.store, &instance, call_id, operation, cancelled).await
    }

    /// `tool.cleanup` for `call_id`, stopped for `reason`.
    pub async fn cleanup(&mut self, call_id: &str, reason: StopReason) -> wasmtime::Result<()> {
        let (instance, code) = self.contract().await?;
        code.cleanup(&mut self.store, &instance, call_id, reason).await
    }

    /// Fuel the call burnt of the `given` it started with (none when the
    /// engine does not meter fuel).
    pub fn fuel_used(&self, given: Option<u64>) -> Option<u64> {
        let left = self.store.get_fuel().ok()?;
        Some(given?.saturating_sub(left))
    }

    /// The store's data.
    pub fn state(&mut self) -> &mut CallState {
        self.store.data_mut()
    }
}

/// A component's instance-to-be, imports resolved once.
#[derive(Clone)]
pub enum Code {
    /// It exports interfaces of the `mcp:tool` contract.
    Contract(Arc<ContractCode>),
    /// It exports plain functions.
    Plain(Arc<PlainCode<CallState>>),
}

/// Which kind of component it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Written for the `mcp:tool` contract: its tools are cancelled
    /// cooperatively first, and cleaned up after a stop.
    Contract,
    /// Plain functions: no `cancelled` to watch and no `cleanup`, so a
    /// stop is forced at once.
    Plain,
}

impl Kind {
    /// How `inspect` and the logs name it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Contract => "mcp:tool",
            Kind::Plain => "plain",
        }
    }
}

impl Code {
    /// The engine its code was compiled for (baseline or optimized).
    pub fn engine(&self) -> &Engine {
        match self {
            Code::Contract(code) => code.pre.engine(),
            Code::Plain(plain) => plain.pre.engine(),
        }
    }

    /// Which kind of component it is.
    pub fn kind(&self) -> Kind {
        match self {
            Code::Contract(_) => Kind::Contract,
            Code::Plain(_) => Kind::Plain,
        }
    }

    /// Whether a stopped run has a `cleanup` to run: a contract component
    /// that exports `tool`.
    pub fn has_cleanup(&self) -> bool {
        matches!(self, Code::Contract(code) if code.has_tool())
    }
}

/// The piece of `read` that is `uri`'s (a read may return several), kept
/// if `budget` takes its bytes.
fn loaded_body(
    uri: &str,
    read: Option<Result<Vec<ResourceContents>, ReadError>>,
    budget: &Arc<Budget>,
) -> Result<LoadedBody, String> {
    let pieces = match read {
        None => return Err("the component does not export `resources`".into()),
        Some(Ok(pieces)) => pieces,
        Some(Err(ReadError::NotFound)) => return Err("its read answered not-found".into()),
        Some(Err(ReadError::Failed(why))) => return Err(format!("its read failed: {why}")),
        Some(Err(ReadError::Cancelled)) => return Err("its read was cancelled".into()),
    };
    let piece = pieces
        .into_iter()
        .find(|piece| piece.uri == uri)
        .ok_or_else(|| "its read returned no contents for that URI".to_string())?;
    let charge = budget.charge_owned(piece.body.as_bytes().len()).map_err(|over| over.to_string())?;
    Ok(LoadedBody { body: piece.body, charge })
}
