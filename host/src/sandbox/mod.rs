//! The sandbox one call runs in: exactly the WASI capabilities the user
//! granted ([`grants`]), the call's memory budget and fuel, and a yield to
//! the host at every epoch tick. It knows nothing of MCP: the store's data
//! type (see [`crate::store`]) holds a [`Sandbox`] and hands it out through
//! [`SandboxView`].
//!
//! Deny by default: no preopened directories, no environment variables, no
//! sockets, no name lookups, no stdin, and outgoing HTTP (`wasi:http`) only to
//! the hosts the user granted ([`outgoing_http`]). Files open only if they
//! are regular files or directories ([`open_guard`]), and never into the
//! descriptors the host keeps for itself ([`descriptors`]). A guest's stdout and
//! stderr go to the host's log, capped and tagged with the call
//! ([`guest_output`]), never to the protocol stream on stdout. Guest code
//! runs on threads of its own, below the protocol's ([`guest_pool`]).

pub mod descriptors;
pub mod grants;
pub mod guest_output;
pub mod guest_pool;
mod http_fields;
mod memory;
pub mod open_guard;
pub mod outgoing_http;
mod wasi_config;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView};

use crate::limits::CallLimits;
use grants::Grants;
use guest_output::GuestOutput;
use outgoing_http::OutgoingHttp;

pub use memory::{MemoryHit, MemoryLimiter, default_total_memory, host_memory, release_when_idle};
pub use wasi_config::ConfigVars;

/// What one call's store holds of the sandbox.
pub struct Sandbox {
    /// `None` once the call is over ([`Sandbox::release`]).
    wasi: Option<WasiCtx>,
    http: WasiHttpCtx,
    /// Decides and sends the guest's outgoing HTTP requests.
    outgoing: OutgoingHttp,
    /// Host-side handles the guest holds (files, pollables, `cancelled`).
    /// Dropping the store closes all of them.
    table: ResourceTable,
    /// Memory accounting for `--max-memory`.
    memory: MemoryLimiter,
    /// Which call this store serves, for log lines.
    call_id: Arc<str>,
    /// The guest's stdout and stderr, which name the call in their lines.
    output: GuestOutput,
    /// Its component's `wasi:config` values.
    config: ConfigVars,
}

/// A store data type that holds a [`Sandbox`].
pub trait SandboxView: Send {
    /// The store's sandbox.
    fn sandbox(&mut self) -> &mut Sandbox;
}

impl Sandbox {
    /// The sandbox for call `call_id`: `grants` applied, `budget` enforced.
    pub fn new(grants: &Grants, budget: &StoreBudget, call_id: Arc<str>) -> Result<Self> {
        let deadline = Instant::now() + budget.time_limit;
        let output = GuestOutput::new(call_id.clone(), budget.max_guest_output);
        Ok(Sandbox {
            wasi: Some(grants.wasi_ctx(&output)?),
            http: WasiHttpCtx::new(),
            outgoing: OutgoingHttp::new(grants.hosts.clone(), call_id.clone(), deadline),
            table: {
                // A guest that opens without end is stopped at its own limit,
                // long before the process runs out of descriptors.
                let mut table = ResourceTable::new();
                table.set_max_capacity(budget.max_handles);
                table
            },
            memory: MemoryLimiter::new(budget.max_memory),
            call_id,
            output,
            config: grants.config.clone(),
        })
    }

    /// The call is over: closes every handle the guest held (files,
    /// sockets, HTTP requests, pollables, its granted directories) and logs
    /// the rest of its output, now, whenever the store itself goes. No guest
    /// code runs in this sandbox afterwards.
    pub fn release(&mut self) {
        drop(std::mem::take(&mut self.table));
        self.wasi = None;
        self.output.finish();
    }

    /// Hands a sandbox made ahead of its call (see `component::ahead`) to call
    /// `call_id`: log lines name it, and its outgoing requests must end
    /// within `time_limit` from now.
    pub fn bind(&mut self, call_id: Arc<str>, time_limit: Duration) {
        self.output.bind(call_id.clone());
        self.outgoing.bind(call_id.clone(), Instant::now() + time_limit);
        self.call_id = call_id;
    }

    /// The handles the guest holds.
    pub fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// Which call this sandbox serves.
    pub fn call_id(&self) -> &Arc<str> {
        &self.call_id
    }

    /// Which memory budget the guest ran out of, if it did.
    pub fn memory_was_hit(&self) -> Option<MemoryHit> {
        self.memory.was_hit()
    }

    /// The call's memory budget, for what the host allocates on its behalf.
    pub fn memory(&mut self) -> &mut MemoryLimiter {
        &mut self.memory
    }

    /// Its component's `wasi:config` values.
    pub fn config(&self) -> &ConfigVars {
        &self.config
    }

    /// WASI's view, for the store's `WasiView`.
    pub fn wasi(&mut self) -> WasiCtxView<'_> {
        let ctx = self.wasi.as_mut().expect("no guest code runs in a released sandbox");
        WasiCtxView { ctx, table: &mut self.table }
    }

    /// `wasi:http`'s view, for the store's `WasiHttpView`.
    pub fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.outgoing }
    }
}

/// What a new store is limited to.
pub struct StoreBudget {
    /// Fuel; ignored when the engine does not meter fuel.
    pub fuel: Option<u64>,
    /// Linear memory and tables in bytes, all of the store's together.
    pub max_memory: usize,
    /// Host handles the store's resource table may hold at once.
    pub max_handles: usize,
    /// How long the store's call may run. The caller enforces it; the store
    /// uses it to bound the timeouts of outgoing requests.
    pub time_limit: Duration,
    /// Bytes of stdout and stderr the store's guest may have logged.
    pub max_guest_output: usize,
}

impl StoreBudget {
    /// What a call of a component with `limits` gets.
    pub fn for_call(limits: &CallLimits) -> Self {
        StoreBudget {
            fuel: limits.metered_fuel(),
            max_memory: limits.max_memory,
            max_handles: limits.max_handles,
            time_limit: limits.timeout,
            max_guest_output: limits.max_guest_output,
        }
    }

    /// What its `cleanup` gets: the same, with cleanup's own fuel and time.
    pub fn for_cleanup(limits: &CallLimits) -> Self {
        StoreBudget {
            fuel: Some(limits.cleanup_fuel),
            time_limit: limits.cleanup_timeout,
            ..StoreBudget::for_call(limits)
        }
    }
}

/// Adds what the sandbox offers to `linker`: WASI 0.2 (with the grants
/// applied per store; `open-at` through [`open_guard`]), outgoing
/// `wasi:http`, and `wasi:config` (the component's configured values).
pub fn add_to_linker<T: SandboxView + WasiView + wasmtime_wasi_http::WasiHttpView + 'static>(
    linker: &mut Linker<T>,
) -> Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    open_guard::add_to_linker(linker)?;
    // `wasi:http/types` and `outgoing-handler` only (the rest of the proxy
    // world is already in WASI). Every request passes `outgoing_http`'s
    // --allow-host check, so linking it grants nothing by itself.
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    http_fields::add_to_linker(linker)?;
    wasi_config::add_to_linker(linker)?;
    Ok(())
}

/// A store for `data`, limited to `budget` (memory, fuel), that yields to
/// the host at every epoch tick once a call has run for
/// [`SHORT_CALL`](guest_pool::SHORT_CALL).
pub fn new_store<T: SandboxView + 'static>(
    engine: &Engine,
    data: T,
    budget: &StoreBudget,
) -> Result<Store<T>> {
    let mut store = Store::new(engine, data);
    store.limiter(|data| &mut data.sandbox().memory);
    refuel(&mut store, budget)?;
    // Yield to the async runtime on every epoch tick, so a guest that computes
    // never holds a runtime thread for long, and so the host regains control
    // promptly when a call is cancelled (the canceller bumps the epoch
    // itself). Stopping is done by dropping the call future.
    //
    // Except during a call's first `SHORT_CALL` of CPU time: a short call
    // runs through on the thread that started it. Yielding there put it
    // behind every request that arrived meanwhile, and each of those made an
    // instance of its own and could be interrupted in turn: 32 Python calls
    // in flight held 22 instances (and their memory slots) at once, 9
    // without the yield (docs/benchmarks-archive.md). CPU time, not the
    // time since the call entered its guest (`guest_pool::short_call_ran`):
    // counted in wall time, a call preempted on a busy machine yielded all
    // the same. The cost: a cancel that arrives in that window is seen up
    // to `SHORT_CALL` later, bounded like the rest by the tick.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|_store| {
        if let Some(ran) = guest_pool::short_call_ran() {
            // Halfway through it, a guest is likely to be a long one: the
            // ticker's fast ticks are then under way when it gets there.
            if ran >= guest_pool::SHORT_CALL / 2 {
                guest_pool::computing_long();
            }
            return Ok(UpdateDeadline::Continue(1));
        }
        // The kernel's turn too (`sched_yield`): with lazy preemption a
        // thread woken on this CPU (the one reading the client's cancel)
        // waits for a preemption point, and a guest computing in user space
        // offers none until the scheduler tick, up to 4 ms away. One
        // syscall per tick gives it one (`spin` cancel p99 about halved,
        // docs/benchmarks-archive.md), and the ticker ticks faster while we compute.
        std::thread::yield_now();
        guest_pool::computing_long();
        guest_pool::yielding();
        // `yield_now` rather than wasmtime's own yield: tokio then runs the
        // worker's other tasks (the protocol, other calls) before resuming
        // the guest, instead of resuming it at once from the worker's LIFO
        // slot.
        Ok(UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now())))
    });
    Ok(store)
}

/// Fills the store's fuel to `budget`'s.
pub fn refuel<T>(store: &mut Store<T>, budget: &StoreBudget) -> Result<()> {
    // `get_fuel` fails when the engine was built without fuel metering
    // (`--fuel 0`); then only the epoch-driven deadlines bound the call.
    if let Some(fuel) = budget.fuel
        && store.get_fuel().is_ok()
    {
        store.set_fuel(fuel)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
