//! The sandbox one call runs in: a fresh wasmtime `Store` holding exactly the
//! WASI capabilities the user granted ([`crate::grants`]), the call's memory
//! and fuel limits, and its cancellation state.
//!
//! Deny by default: no preopened directories, no environment variables, no
//! sockets, no name lookups, no stdin, and outgoing HTTP (`wasi:http`) only to
//! the hosts the user granted (see [`crate::outgoing_http`]). A guest's stdout
//! and stderr go to the host's log, capped and tagged with the call
//! ([`crate::guest_output`]), never to the protocol stream on stdout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::cancellation::CallCancellation;
use crate::client::ClientLink;
use crate::grants::Grants;
use crate::guest_output::GuestOutput;
use crate::outgoing_http::OutgoingHttp;

/// The data of one call's `Store`.
pub struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    /// Decides and sends the guest's outgoing HTTP requests.
    outgoing: OutgoingHttp,
    /// Host-side handles the guest holds (files, pollables, `cancelled`).
    /// Dropping the store closes all of them.
    pub table: ResourceTable,
    /// Memory accounting for `--max-memory`.
    pub memory: MemoryLimiter,
    /// This call's stop signal, handed to the guest as `cancelled`.
    pub cancellation: CallCancellation,
    /// Which call this store serves, for the guest's log lines.
    pub call_id: Arc<str>,
    /// The call's line to the MCP client (logging, progress, questions).
    pub client: ClientLink,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.outgoing }
    }
}

/// Refuses memory growth past the limit and remembers that it did, so a trap
/// that follows (a Rust guest aborts on allocation failure) is reported as
/// "memory limit exceeded" rather than as a crash.
pub struct MemoryLimiter {
    max_memory: usize,
    hit: bool,
}

impl MemoryLimiter {
    /// Whether the guest asked for more memory than allowed.
    pub fn was_hit(&self) -> bool {
        self.hit
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far beyond any real tool.
        Ok(desired <= 1_000_000)
    }
}

/// What a new store is limited to.
pub struct StoreBudget {
    /// Fuel; ignored when the engine does not meter fuel.
    pub fuel: Option<u64>,
    /// Linear memory in bytes.
    pub max_memory: usize,
    /// How long the store's call may run. The caller enforces it; the store
    /// uses it to bound the timeouts of outgoing requests.
    pub time_limit: Duration,
    /// Bytes of stdout and stderr the store's guest may have logged.
    pub max_guest_output: usize,
}

/// Builds the store for one call (or one cleanup, or one `list-tools`).
pub fn new_store(
    engine: &Engine,
    grants: &Grants,
    budget: &StoreBudget,
    cancellation: CallCancellation,
    call_id: Arc<str>,
    client: ClientLink,
) -> Result<Store<CallState>> {
    let deadline = Instant::now() + budget.time_limit;
    let state = CallState {
        wasi: grants.wasi_ctx(&GuestOutput::new(call_id.clone(), budget.max_guest_output))?,
        http: WasiHttpCtx::new(),
        outgoing: OutgoingHttp::new(grants.hosts.clone(), call_id.clone(), deadline),
        table: ResourceTable::new(),
        memory: MemoryLimiter { max_memory: budget.max_memory, hit: false },
        cancellation,
        call_id,
        client,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.memory);
    // `get_fuel` fails when the engine was built without fuel metering
    // (`--fuel 0`); then only the epoch-driven deadlines bound the call.
    if let Some(fuel) = budget.fuel
        && store.get_fuel().is_ok()
    {
        store.set_fuel(fuel)?;
    }
    // Yield to the async runtime on every epoch tick, so a guest that computes
    // never holds a runtime thread for longer than one tick, and so the host
    // regains control promptly when a call is cancelled (the canceller bumps
    // the epoch itself). Stopping is done by dropping the call future.
    store.set_epoch_deadline(1);
    // `yield_now` rather than wasmtime's own yield: tokio then runs the
    // worker's other tasks (the protocol, other calls) before resuming the
    // guest, instead of resuming it at once from the worker's LIFO slot.
    store.epoch_deadline_callback(|_| Ok(UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now()))));
    Ok(store)
}
