//! One call's memory budget: every linear memory and table of every
//! instance in its store counts against `--max-memory`.

use wasmtime::ResourceLimiter;

use crate::limits::{MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};

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

impl MemoryLimiter {
    pub(super) fn new(max_memory: usize) -> Self {
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
}
