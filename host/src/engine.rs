//! The wasmtime engines: the optimizing one shared by every component and
//! call, and — while a large component is served from baseline code (see
//! [`crate::tiering`]) — a baseline one, configured the same but compiling
//! with Winch. [`Epochs`] reaches every live engine, so the ticker, a cancel
//! and shutdown interrupt guests whichever engine runs them. The epoch
//! ticker that lets the host take control back from running guests is the
//! guest pool's ([`crate::sandbox::guest_pool`]): it runs only while a
//! guest does.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, Result};
use wasmtime::{Config, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use crate::limits::{MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};

/// How often the epoch advances while a guest runs (four times as often
/// while one computes past its short call: `sandbox::guest_pool::ticker`).
/// A computing guest yields to the runtime at each tick; cancellation does
/// not wait for it (the canceller bumps the epoch itself), so this only
/// bounds how long a guest can hog a thread.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Engine-wide settings from the command line.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Largest linear memory any call may have, in bytes.
    pub max_memory: usize,
    /// Wasm stack per call, in bytes.
    pub max_stack: usize,
    /// Calls (and cleanups) that may be in flight at once.
    pub max_concurrent_calls: u32,
    /// Whether compiled code counts fuel. Off (`--fuel 0`) leaves epoch
    /// interruption as the only brake on a computing guest, which is faster.
    pub fuel_metering: bool,
}

/// Which compiler an engine's code comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Cranelift, optimizing: what calls run in the steady state, and what
    /// the compile cache holds.
    Optimized,
    /// Winch, wasmtime's baseline compiler: code ready in a fraction of
    /// Cranelift's time, slower to run; served only until the optimized
    /// code is ready.
    Baseline,
}

/// Builds an engine for `tier`: async calls, fuel, epoch interruption and
/// the pooling allocator (a call's store and instance then cost tens of
/// microseconds). Both tiers get the same limits; only the compiler differs.
pub fn build_engine(settings: &EngineSettings, tier: Tier) -> Result<Engine> {
    let mut config = Config::new();
    config.strategy(match tier {
        Tier::Optimized => Strategy::Cranelift,
        Tier::Baseline => Strategy::Winch,
    });
    config
        .epoch_interruption(true)
        .consume_fuel(settings.fuel_metering)
        .max_wasm_stack(settings.max_stack)
        // The async fiber stack also has to hold the host functions the guest
        // calls into, on top of the wasm stack.
        .async_stack_size(settings.max_stack + (1 << 20))
        // Component-model async is not used: turning its bookkeeping off
        // roughly halves the per-call cost of a store and instance.
        .concurrency_support(false);

    // The calls' slots, one per instance made ahead of its call, and one per
    // store dropped behind its call.
    let slots = settings.max_concurrent_calls + AHEAD + BEHIND;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(slots)
        // Per component: what one call's store may hold (`sandbox`); a
        // component that needs more is refused when it loads.
        .max_memories_per_component(MAX_MEMORIES as u32)
        .max_tables_per_component(MAX_TABLES as u32)
        .max_core_instances_per_component(MAX_CORE_INSTANCES as u32)
        // A Rust component has a handful of core instances (the module, the
        // WASI adapter, shims); leave room for larger ones.
        .total_core_instances(slots * 16)
        .total_memories(slots * 4)
        .total_tables(slots * 8)
        .total_stacks(slots)
        .max_memory_size(round_up_to_page(settings.max_memory) + WASM_PAGE)
        // Decommit a store's pages when it goes, not in batches: a batch
        // of 16 held up to 16 ended calls' memory resident (12 sequential
        // calls of 200 MiB each left 1.4 GB behind). What a slot keeps is
        // `linear_memory_keep_resident`, reset in place, and counted by
        // `--max-total-memory` (`sandbox::memory`). Small calls queue no
        // decommit at all (their pages are all kept), so they pay nothing.
        .decommit_batch_size(1)
        .async_stack_keep_resident(64 << 10)
        // A call fills in its function table lazily, one entry per function
        // it calls indirectly, so every page of the table it touches is a
        // page fault (and a TLB shootdown on the other core) if the slot
        // does not keep it: a JavaScript guest's table is 9 315 entries
        // (73 KiB) and took 70 µs of faults a call at 16 KiB. 128 KiB keeps
        // the tables of the examples whole; the kept pages count against
        // `--max-total-memory` with the memories' (`sandbox::memory`).
        .table_keep_resident(128 << 10)
        .linear_memory_keep_resident(4 << 20)
        // Reuse warm slots (least recently used first) instead of touching
        // cold ones: with resident memory kept per slot, the process's RSS
        // then follows the peak number of concurrent calls, not the pool size.
        .max_unused_warm_slots(8)
        .pagemap_scan(wasmtime::Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));

    Engine::new(&config).map_err(anyhow::Error::from).context("cannot configure the wasmtime engine")
}

/// Every engine guest code may run on, held weakly: a baseline engine is
/// gone once its last component and store are, and drops out of the set.
/// Cheap to clone; clones share the set.
#[derive(Clone)]
pub struct Epochs(Arc<Mutex<Vec<EngineWeak>>>);

impl Epochs {
    /// The set of `engine` alone.
    pub fn new(engine: &Engine) -> Self {
        Epochs(Arc::new(Mutex::new(vec![engine.weak()])))
    }

    /// Adds `engine` (a baseline engine) to the set.
    pub fn add(&self, engine: &Engine) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(engine.weak());
    }

    /// Advances the epoch of every live engine, forgetting the dropped
    /// ones. False once none is left (the host is shutting down).
    pub fn increment(&self) -> bool {
        let mut engines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        engines.retain(|weak| match weak.upgrade() {
            Some(engine) => {
                engine.increment_epoch();
                true
            }
            None => false,
        });
        !engines.is_empty()
    }
}

/// How many instances may be made ahead of their calls at once, across
/// the host (`component::ahead`). The pool has these slots on top of the calls'.
pub const AHEAD: u32 = 4;

/// How many calls' stores may be waiting to be dropped behind their calls at
/// once, across the host (`component::behind`); past that, a call drops its
/// own. The pool has these slots on top of the calls' too.
pub const BEHIND: u32 = 2;

const WASM_PAGE: usize = 64 << 10;

fn round_up_to_page(bytes: usize) -> usize {
    bytes.div_ceil(WASM_PAGE) * WASM_PAGE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> EngineSettings {
        EngineSettings {
            max_memory: 1 << 20,
            max_stack: 512 << 10,
            max_concurrent_calls: 2,
            fuel_metering: true,
        }
    }

    /// The ticker goes on while the optimizing engine lives, and a baseline
    /// engine leaves the set (and nothing keeps it alive) once dropped.
    #[test]
    fn epochs_reach_every_live_engine_and_forget_dropped_ones() {
        let optimized = build_engine(&settings(), Tier::Optimized).unwrap();
        let epochs = Epochs::new(&optimized);
        let baseline = build_engine(&settings(), Tier::Baseline).unwrap();
        epochs.add(&baseline);
        assert!(epochs.increment());
        assert_eq!(epochs.0.lock().unwrap().len(), 2);
        drop(baseline);
        assert!(epochs.increment());
        assert_eq!(epochs.0.lock().unwrap().len(), 1, "the dropped baseline engine is forgotten");
        drop(optimized);
        assert!(!epochs.increment(), "no engine left: the ticker stops");
    }
}
