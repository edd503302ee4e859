//! The wasmtime engine shared by every component and call. The epoch ticker
//! that lets the host take control back from running guests is the guest
//! pool's ([`crate::sandbox::guest_pool`]): it runs only while a guest does.

use std::time::Duration;

use anyhow::{Context as _, Result};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::limits::{MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};

/// How often the epoch advances while a guest runs. A computing guest yields
/// to the runtime at each tick; cancellation does not wait for it (the
/// canceller bumps the epoch itself), so this only bounds how long a guest
/// can hog a thread.
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

/// Builds the engine: async calls, fuel, epoch interruption and the pooling
/// allocator (a call's store and instance then cost tens of microseconds).
pub fn build_engine(settings: &EngineSettings) -> Result<Engine> {
    let mut config = Config::new();
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

    let slots = settings.max_concurrent_calls;
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
        .decommit_batch_size(16)
        .async_stack_keep_resident(64 << 10)
        .table_keep_resident(16 << 10)
        .linear_memory_keep_resident(4 << 20)
        // Reuse warm slots (least recently used first) instead of touching
        // cold ones: with resident memory kept per slot, the process's RSS
        // then follows the peak number of concurrent calls, not the pool size.
        .max_unused_warm_slots(8)
        .pagemap_scan(wasmtime::Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));

    Engine::new(&config).map_err(anyhow::Error::from).context("cannot configure the wasmtime engine")
}

const WASM_PAGE: usize = 64 << 10;

fn round_up_to_page(bytes: usize) -> usize {
    bytes.div_ceil(WASM_PAGE) * WASM_PAGE
}
