//! Fairness between callers: with `--auth-issuer`, each principal (a
//! token's issuer and subject) gets a share of the host's calls
//! (`--max-calls-per-principal`) and of its paused calls
//! (`--max-paused-per-principal`), so one caller cannot take every slot
//! from the others. A share is a semaphore per principal; a call holds a
//! permit for as long as it lives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AuthSettings;

/// Each principal's shares.
pub struct Fairness {
    /// Of calls running or waiting (`--max-calls-per-principal`).
    pub calls: Shares,
    /// Of calls waiting for the user (`--max-paused-per-principal`).
    pub paused: Shares,
}

impl Fairness {
    /// The shares `settings` give each principal.
    pub fn new(settings: &AuthSettings) -> Self {
        Fairness {
            calls: Shares::new(settings.max_calls_per_principal),
            paused: Shares::new(settings.max_paused_per_principal),
        }
    }
}

/// Principals remembered before the idle ones (no permit out) are dropped.
const REMEMBERED: usize = 1024;

/// Each principal's share of one kind of slot.
pub struct Shares {
    /// Slots per principal.
    max: u32,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    by_principal: HashMap<String, Arc<Semaphore>>,
    /// Prune when the table grows past this (doubles, so pruning is
    /// amortized over inserts).
    prune_at: usize,
}

impl Shares {
    /// `max` slots for each principal (at least one).
    pub fn new(max: u32) -> Self {
        Shares { max: max.max(1), table: Mutex::new(Table { prune_at: REMEMBERED, ..Table::default() }) }
    }

    /// Slots per principal.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// The semaphore of `principal`'s share.
    pub fn of(&self, principal: &str) -> Arc<Semaphore> {
        let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(share) = table.by_principal.get(principal) {
            return share.clone();
        }
        if table.by_principal.len() >= table.prune_at {
            // A share with no permit out holds nothing worth keeping: its
            // semaphore is only referenced from here.
            table.by_principal.retain(|_, share| Arc::strong_count(share) > 1);
            table.prune_at = (table.by_principal.len() * 2).max(REMEMBERED);
        }
        let share = Arc::new(Semaphore::new(self.max as usize));
        table.by_principal.insert(principal.to_string(), share.clone());
        share
    }

    /// A slot of `principal`'s share, if one is free.
    pub fn take(&self, principal: &str) -> Option<OwnedSemaphorePermit> {
        self.of(principal).try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_principal_has_its_own_share_and_idle_ones_are_forgotten() {
        let shares = Shares::new(2);
        let a1 = shares.take("a").unwrap();
        let _a2 = shares.take("a").unwrap();
        assert!(shares.take("a").is_none());
        assert!(shares.take("b").is_some());
        drop(a1);
        let _a3 = shares.take("a").unwrap();
        for n in 0..5 * REMEMBERED {
            drop(shares.take(&n.to_string()));
        }
        let held = shares.table.lock().unwrap().by_principal.len();
        assert!(held <= 2 * REMEMBERED + 1, "{held} principals remembered");
        // "a" still holds its permits, so its share survived the pruning.
        assert!(shares.take("a").is_none());
    }
}
