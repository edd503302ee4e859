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
use crate::limits::CallLimits;
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
///
/// The limit is for the whole call: every linear memory and every table of
/// every instance in the store counts against one budget, so a component
/// with many memories gets no more than one with a single memory.
pub struct MemoryLimiter {
    max_memory: usize,
    /// Bytes of memories and tables the store holds now.
    used: usize,
    hit: bool,
}

/// What one table element is counted as (a function reference).
const TABLE_ELEMENT_BYTES: usize = 8;

/// Memories, tables and instances one call's store may hold; the pool caps
/// the same per component, so a component beyond them is refused at load.
pub const MAX_MEMORIES: usize = 4;
/// See [`MAX_MEMORIES`].
pub const MAX_TABLES: usize = 16;
/// See [`MAX_MEMORIES`]. Large language runtimes (CPython) link a few dozen.
pub const MAX_CORE_INSTANCES: usize = 64;

impl MemoryLimiter {
    fn new(max_memory: usize) -> Self {
        MemoryLimiter { max_memory, used: 0, hit: false }
    }

    /// Grows the call's total by `current` → `desired`, if it fits.
    fn grow(&mut self, current: usize, desired: usize) -> bool {
        let total = self.used.saturating_sub(current).saturating_add(desired);
        if total > self.max_memory {
            self.hit = true;
            return false;
        }
        self.used = total;
        true
    }
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
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self.grow(current, desired))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self
            .grow(current.saturating_mul(TABLE_ELEMENT_BYTES), desired.saturating_mul(TABLE_ELEMENT_BYTES)))
    }

    fn instances(&self) -> usize {
        MAX_CORE_INSTANCES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
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
            fuel: limits.fuel,
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
        table: {
            // A guest that opens without end is stopped at its own limit,
            // long before the process runs out of descriptors.
            let mut table = ResourceTable::new();
            table.set_max_capacity(budget.max_handles);
            table
        },
        memory: MemoryLimiter::new(budget.max_memory),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_memory_and_table_counts_against_one_budget() {
        let mut limiter = MemoryLimiter::new(256 << 20);
        assert!(limiter.grow(0, 200 << 20), "one memory of 200 MiB fits");
        assert!(!limiter.grow(0, 200 << 20), "a second one does not");
        assert!(limiter.was_hit());
        assert!(limiter.grow(0, 50 << 20));
        assert!(limiter.grow(50 << 20, 56 << 20), "growing counts the difference");
        assert!(!limiter.grow(0, TABLE_ELEMENT_BYTES));
    }

    /// Real wasmtime, the host's own engine and store: two instances of a
    /// module each grow their own memory, and the second growth past the
    /// call's budget fails (before, each memory had the whole budget).
    #[tokio::test]
    async fn two_memories_of_one_call_share_its_budget() {
        use crate::engine::{EngineSettings, build_engine};
        let engine = build_engine(&EngineSettings {
            max_memory: 64 << 20,
            max_stack: 512 << 10,
            max_concurrent_calls: 2,
            fuel_metering: false,
        })
        .unwrap();
        let wat = r#"(component
            (core module $m
                (memory 1)
                (func (export "grow") (param i32) (result i32) local.get 0 memory.grow))
            (core instance $a (instantiate $m))
            (core instance $b (instantiate $m))
            (func (export "grow-a") (param "pages" u32) (result s32) (canon lift (core func $a "grow")))
            (func (export "grow-b") (param "pages" u32) (result s32) (canon lift (core func $b "grow"))))"#;
        let component = wasmtime::component::Component::new(&engine, wat::parse_str(wat).unwrap()).unwrap();
        let budget = StoreBudget {
            fuel: None,
            max_memory: 64 << 20,
            max_handles: 16,
            time_limit: Duration::from_secs(5),
            max_guest_output: 1 << 10,
        };
        let stats = Arc::new(crate::stats::Stats::default());
        let mut store = new_store(
            &engine,
            &Grants::default(),
            &budget,
            CallCancellation::new(),
            "test".into(),
            ClientLink::detached(stats),
        )
        .unwrap();
        let linker = wasmtime::component::Linker::<CallState>::new(&engine);
        let instance = linker.instantiate_async(&mut store, &component).await.unwrap();
        let grow_a = instance.get_typed_func::<(u32,), (i32,)>(&mut store, "grow-a").unwrap();
        let grow_b = instance.get_typed_func::<(u32,), (i32,)>(&mut store, "grow-b").unwrap();
        // 40 MiB in the first memory fits (it returns the old size in pages)...
        assert_eq!(grow_a.call_async(&mut store, (640,)).await.unwrap(), (1,));
        // ...and 40 MiB more in the second does not: -1, the budget is spent.
        assert_eq!(grow_b.call_async(&mut store, (640,)).await.unwrap(), (-1,));
        assert!(store.data().memory.was_hit());
    }
}
