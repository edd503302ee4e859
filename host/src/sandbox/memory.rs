//! Memory budgets: one call's (`--max-memory`: every linear memory and
//! table of every instance in its store, and what the host allocates on
//! its behalf) inside the host's (`--max-total-memory`: every call's
//! together, and the pool's memory that ended calls leave resident).

use std::sync::{Mutex, OnceLock, PoisonError};

use wasmtime::{Engine, ResourceLimiter};

use crate::budget::{Budget, Charge};
use crate::limits::{MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};

/// Which budget a call ran out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryHit {
    /// Its own, `--max-memory`.
    Call,
    /// The host's, `--max-total-memory` (its limit in bytes): the calls
    /// running together hold all of it.
    Host(usize),
}

/// Refuses growth past either budget and remembers that it did, so a trap
/// that follows (a Rust guest aborts on allocation failure) is reported as
/// the limit it hit rather than as a crash.
///
/// The call's limit is for the whole call: every linear memory and every
/// table of every instance in the store counts against one budget, so a
/// component with many memories gets no more than one with a single memory.
/// What the host allocates for the guest (header fields, see
/// `outgoing_http::fields`) counts against the same budget.
///
/// It is wasmtime's side of the ledger (`crate::budget`): the call's own
/// limit is checked here, where wasmtime asks, and every byte of it is a
/// charge of the host's budget ([`HostMemory`]).
pub struct MemoryLimiter {
    max_memory: usize,
    /// Bytes of memories, tables and host allocations the store holds now,
    /// charged to [`HostMemory`] and given back when the limiter (the
    /// store) goes.
    used: Charge<&'static Budget>,
    hit: Option<MemoryHit>,
}

/// What one table element is counted as (a function reference).
const TABLE_ELEMENT_BYTES: usize = 8;

impl MemoryLimiter {
    pub(super) fn new(max_memory: usize) -> Self {
        MemoryLimiter { max_memory, used: host_memory().budget.nothing(), hit: None }
    }

    /// Grows the call's total by `current` → `desired`, if it fits in the
    /// call's budget and the host's.
    fn grow(&mut self, current: usize, desired: usize) -> bool {
        let total = self.used.bytes().saturating_sub(current).saturating_add(desired);
        self.set_total(total)
    }

    /// Charges `bytes` the host allocates for the guest, if they fit.
    pub fn charge(&mut self, bytes: usize) -> bool {
        self.set_total(self.used.bytes().saturating_add(bytes))
    }

    fn set_total(&mut self, total: usize) -> bool {
        if total > self.max_memory {
            self.hit = Some(MemoryHit::Call);
            return false;
        }
        let held = self.used.bytes();
        if total <= held {
            self.used.shrink(held - total);
            return true;
        }
        if let Err(limit) = host_memory().reserve(&mut self.used, total - held) {
            self.hit = Some(MemoryHit::Host(limit));
            return false;
        }
        true
    }

    /// Which budget the guest (or the host on its behalf) ran out of.
    pub fn was_hit(&self) -> Option<MemoryHit> {
        self.hit
    }
}

// Dropped with the store, its charge gives the host its bytes back: the
// store's memory slots are reset and their pages decommitted (all but what
// the pool keeps resident, which `HostMemory` counts on its own), and its
// host allocations freed.

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

/// The host's memory budget (`--max-total-memory`), one per process like
/// the memory it accounts for: what every live call's store holds
/// (memories, tables, host allocations for the guest, through each
/// [`MemoryLimiter`]) plus what the engines' pools keep resident of ended
/// calls. Without a limit set ([`HostMemory::configure`]) nothing is refused.
pub struct HostMemory {
    budget: Budget,
    /// The engines whose pools' slots hold ended calls' resident pages.
    pools: Mutex<Vec<Engine>>,
}

/// The process's [`HostMemory`].
pub fn host_memory() -> &'static HostMemory {
    static HOST_MEMORY: OnceLock<HostMemory> = OnceLock::new();
    HOST_MEMORY.get_or_init(|| HostMemory {
        budget: Budget::new("--max-total-memory", usize::MAX),
        pools: Mutex::new(Vec::new()),
    })
}

impl HostMemory {
    /// Sets the budget, in bytes.
    pub fn configure(&self, limit: usize) {
        self.budget.set_limit(limit);
    }

    /// Counts what `engine`'s pool keeps resident of ended calls. The
    /// optimizing engine only: it lives as long as the process. A baseline
    /// engine's pool serves a component for its first seconds, and its
    /// resident pages go with it.
    pub fn watch_pool(&self, engine: &Engine) {
        self.pools.lock().unwrap_or_else(PoisonError::into_inner).push(engine.clone());
    }

    /// Bytes the pools keep resident for slots no call holds.
    pub fn pool_resident(&self) -> usize {
        let pools = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
        pools
            .iter()
            .filter_map(Engine::pooling_allocator_metrics)
            .map(|pool| pool.unused_memory_bytes_resident() + pool.unused_table_bytes_resident())
            .sum()
    }

    /// Releases what the pools keep resident of ended calls; returns how
    /// many bytes that was.
    fn release_pools(&self) -> usize {
        let pools = self.pools.lock().unwrap_or_else(PoisonError::into_inner);
        pools.iter().map(Engine::release_idle_pool_memory).sum()
    }

    /// Bytes live calls hold.
    pub fn used(&self) -> usize {
        self.budget.held()
    }

    /// The budget, in bytes (`usize::MAX`: none).
    pub fn limit(&self) -> usize {
        self.budget.limit()
    }

    /// Grows `charge` by `bytes`, or says the budget it would break (its
    /// limit). What the pools keep resident counts against the limit too.
    fn reserve(&self, charge: &mut Charge<&'static Budget>, bytes: usize) -> Result<(), usize> {
        if self.limit() == usize::MAX {
            return charge.grow(bytes).map_err(|over| over.limit);
        }
        // Growth is rare (a call's first pages, then large steps), so the
        // pools' resident count is read each time rather than tracked.
        let resident = self.pool_resident();
        match charge.grow_beside(bytes, resident) {
            Ok(()) => return Ok(()),
            // What ended calls left resident is only a cache of pages:
            // under steady load it is never released by idleness, so give
            // it back before refusing a call for it.
            Err(over) if resident == 0 || self.release_pools() == 0 => return Err(over.limit),
            Err(_) => {}
        }
        charge.grow_beside(bytes, self.pool_resident()).map_err(|over| over.limit)
    }
}

/// How long no call may have started before the pool's resident memory
/// of ended calls is released.
pub const IDLE_RELEASE: std::time::Duration = std::time::Duration::from_secs(1);

/// Releases what the pools keep resident of ended calls once no call
/// has started for [`IDLE_RELEASE`] (`calls_started` counts them): after a
/// burst the host's memory goes back to its idle size instead of staying
/// at the burst's peak. Under load nothing is released, so the pages a
/// slot keeps (`linear_memory_keep_resident`) save the next call its page
/// faults. Runs until the runtime stops.
pub fn release_when_idle(calls_started: impl Fn() -> u64 + Send + 'static) {
    tokio::spawn(async move {
        let mut seen = calls_started();
        let mut allocator_released = false;
        let mut ticks = tokio::time::interval(IDLE_RELEASE);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let now = calls_started();
            if now == seen && host_memory().pool_resident() > 0 {
                let released = host_memory().release_pools();
                tracing::debug!(released, "released the pool's resident memory of ended calls (idle)");
            }
            // Once per idle spell: what the allocator holds free goes back
            // too (the artifact's load, the burst's buffers).
            if now == seen && !allocator_released {
                crate::allocator::release_free_memory();
            }
            allocator_released = now == seen;
            seen = now;
        }
    });
}

/// The default `--max-total-memory`: three quarters of what the process
/// may use (its cgroup's `memory.max`, else the machine's memory), so the
/// host's own memory and the rest of the machine keep a quarter.
pub fn default_total_memory() -> usize {
    let physical = physical_memory();
    let limit = cgroup_limit().map_or(physical, |cgroup| cgroup.min(physical));
    limit / 4 * 3
}

/// `MemTotal` from `/proc/meminfo`; 4 GiB where there is none to read.
fn physical_memory() -> usize {
    const FALLBACK: usize = 4 << 30;
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else { return FALLBACK };
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().strip_suffix("kB")?.trim().parse::<usize>().ok())
        .map_or(FALLBACK, |kib| kib.saturating_mul(1024))
}

/// The memory limit of the process's cgroup (v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), if it has one.
fn cgroup_limit() -> Option<usize> {
    let read = |path: &str| std::fs::read_to_string(path).ok()?.trim().parse::<usize>().ok();
    let own = std::fs::read_to_string("/proc/self/cgroup").ok().and_then(|text| {
        // The v2 line: `0::/path`.
        let path = text.lines().find_map(|line| line.strip_prefix("0::"))?.to_string();
        read(&format!("/sys/fs/cgroup{}/memory.max", path.trim_end_matches('/')))
    });
    // v1 reports "no limit" as a huge number; anything past the machine's
    // memory is no limit either (the caller takes the smaller).
    own.or_else(|| read("/sys/fs/cgroup/memory.max"))
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_memory_and_table_counts_against_one_budget() {
        let mut limiter = MemoryLimiter::new(256 << 20);
        assert!(limiter.grow(0, 200 << 20), "one memory of 200 MiB fits");
        assert!(!limiter.grow(0, 200 << 20), "a second one does not");
        assert_eq!(limiter.was_hit(), Some(MemoryHit::Call));
        assert!(limiter.grow(0, 50 << 20));
        assert!(limiter.grow(50 << 20, 56 << 20), "growing counts the difference");
        assert!(!limiter.grow(0, TABLE_ELEMENT_BYTES));
        assert!(!limiter.charge(1), "host allocations share the call's budget");
    }

    #[test]
    fn the_host_budget_counts_every_call_together() {
        let host: &'static HostMemory = Box::leak(Box::new(HostMemory {
            budget: Budget::new("--max-total-memory", 300 << 20),
            pools: Mutex::new(Vec::new()),
        }));
        let (mut first, mut second) = (host.budget.nothing(), host.budget.nothing());
        assert_eq!(host.reserve(&mut first, 200 << 20), Ok(()));
        assert_eq!(
            host.reserve(&mut second, 200 << 20),
            Err(300 << 20),
            "two calls of 200 MiB do not fit in 300"
        );
        drop(first);
        assert_eq!(host.reserve(&mut second, 200 << 20), Ok(()), "the first call's memory came back");
        assert_eq!(host.used(), 200 << 20);
    }

    #[test]
    fn the_default_host_budget_fits_the_machine() {
        let budget = default_total_memory();
        assert!(budget > 0 && budget < physical_memory(), "{budget} of {}", physical_memory());
    }
}
