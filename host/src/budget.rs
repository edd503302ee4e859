//! The one ledger of host memory made because of someone else: a guest's
//! result lifted to JSON, a client's request bodies and frames, the URIs a
//! session follows, the schemas a component's functions get at load, and
//! what every call's store holds. Each is a [`Budget`] named by the setting
//! that sizes it; whatever allocates on a guest's or a client's behalf first
//! takes a [`Charge`] of it, for as many bytes as it is about to allocate,
//! and the charge is given back when it is dropped (with what it paid for).
//!
//! Why one type: before it, the host had a semaphore of permits for
//! bodies, a map of sizes for stdio frames, a counter per session for
//! subscriptions, a `&mut usize` for lifted results and a field in the
//! schema writer, each with its own check and its own refusal, and each
//! new surface had to remember to write one more. A surface now asks the
//! budget its setting names for a charge before it allocates, and the
//! refusal ([`OverBudget`]) names that setting, its limit and what is held.
//!
//! A charge is taken *before* the allocation it pays for, in bytes the
//! allocation may reach at most; where a crate allocates out of sight
//! (serde_json parsing a body, wasmtime lifting a result), the charge is
//! the bound its input guarantees, and the call site says so.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::limits::HumanBytes;

/// A number of bytes of host memory that what it pays for may hold
/// together, and how many they hold now.
#[derive(Debug)]
pub struct Budget {
    /// The setting that sizes it (`--max-request-memory`), or what it is
    /// when nothing can set it: the name a refusal gives.
    setting: &'static str,
    limit: AtomicUsize,
    held: AtomicUsize,
}

/// Bytes taken from a [`Budget`], given back when dropped. `B` is how the
/// charge reaches its budget: `&Budget` for a budget that outlives it in
/// one scope (a result being lifted), `Arc<Budget>` for a charge that
/// travels (a request body until its answer is written).
#[derive(Debug)]
#[must_use = "a charge is given back as soon as it is dropped"]
pub struct Charge<B: Deref<Target = Budget> = Arc<Budget>> {
    budget: B,
    bytes: usize,
}

/// A charge its budget could not take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// The setting that sizes the budget.
    pub setting: &'static str,
    /// The budget, in bytes.
    pub limit: usize,
    /// What was held when it was refused (this charge's own bytes included).
    pub held: usize,
    /// The bytes asked for.
    pub asked: usize,
}

impl Budget {
    /// A budget of `limit` bytes, sized by `setting`.
    pub const fn new(setting: &'static str, limit: usize) -> Self {
        Budget { setting, limit: AtomicUsize::new(limit), held: AtomicUsize::new(0) }
    }

    /// A budget of `limit` bytes, to share between the charges that travel.
    pub fn shared(setting: &'static str, limit: usize) -> Arc<Self> {
        Arc::new(Budget::new(setting, limit))
    }

    /// Sets the limit (for a budget made before its setting was read);
    /// charges already taken stay.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// The bytes charges hold now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A charge of nothing yet, to [`Charge::grow`] as what it pays for is
    /// built.
    pub fn nothing(&self) -> Charge<&Budget> {
        Charge { budget: self, bytes: 0 }
    }

    /// Takes `bytes` for as long as the returned charge lives (and travels
    /// with what it pays for), or says why not.
    pub fn charge_owned(self: &Arc<Self>, bytes: usize) -> Result<Charge, OverBudget> {
        let mut charge = Charge { budget: self.clone(), bytes: 0 };
        charge.grow(bytes)?;
        Ok(charge)
    }

    /// Takes `bytes` if, with what is held and `besides` (bytes the budget
    /// counts that no charge holds), they fit the limit.
    fn take(&self, bytes: usize, besides: usize) -> Result<(), OverBudget> {
        let limit = self.limit();
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                let after = held.checked_add(bytes)?;
                (after.saturating_add(besides) <= limit).then_some(after)
            })
            .map(drop)
            .map_err(|held| OverBudget {
                setting: self.setting,
                limit,
                held: held.saturating_add(besides),
                asked: bytes,
            })
    }

    fn give_back(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }
}

impl<B: Deref<Target = Budget>> Charge<B> {
    /// The bytes this charge holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Takes `more` bytes on top of what the charge holds.
    pub fn grow(&mut self, more: usize) -> Result<(), OverBudget> {
        self.grow_beside(more, 0)
    }

    /// [`Charge::grow`], where the budget also counts `besides` bytes that
    /// no charge holds (the pages a pool keeps resident of ended calls).
    pub fn grow_beside(&mut self, more: usize, besides: usize) -> Result<(), OverBudget> {
        if more == 0 {
            return Ok(());
        }
        self.budget.take(more, besides)?;
        self.bytes += more;
        Ok(())
    }

    /// Makes the charge hold `total` bytes: grows it if `total` is more, or
    /// gives the difference back if less.
    pub fn resize(&mut self, total: usize) -> Result<(), OverBudget> {
        if total >= self.bytes {
            return self.grow(total - self.bytes);
        }
        self.shrink(self.bytes - total);
        Ok(())
    }

    /// Gives `bytes` of the charge back (what they paid for is freed).
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.bytes);
        self.budget.give_back(bytes);
        self.bytes -= bytes;
    }
}

impl<B: Deref<Target = Budget>> Drop for Charge<B> {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

impl OverBudget {
    /// Whether the charge could never be taken, however much were given
    /// back: it alone is more than the budget. (Otherwise, waiting for what
    /// is held to be freed may help.)
    pub fn never_fits(&self) -> bool {
        self.asked > self.limit
    }
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.never_fits() {
            write!(
                f,
                "{} is more than {} allows ({})",
                HumanBytes(self.asked),
                self.setting,
                HumanBytes(self.limit)
            )
        } else {
            write!(
                f,
                "{} more would pass {} ({}, of which {} is held)",
                HumanBytes(self.asked),
                self.setting,
                HumanBytes(self.limit),
                HumanBytes(self.held)
            )
        }
    }
}

impl std::error::Error for OverBudget {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_holds_its_bytes_until_it_is_dropped() {
        let budget = Budget::shared("--max-test", 100);
        let first = budget.charge_owned(60).unwrap();
        assert_eq!(budget.held(), 60);
        let refused = budget.charge_owned(41).unwrap_err();
        assert_eq!(refused, OverBudget { setting: "--max-test", limit: 100, held: 60, asked: 41 });
        assert!(!refused.never_fits());
        assert!(refused.to_string().contains("--max-test"), "{refused}");
        drop(first);
        assert_eq!(budget.held(), 0);
        assert!(budget.nothing().grow(101).unwrap_err().never_fits());
    }

    #[test]
    fn a_charge_grows_and_shrinks_within_its_budget() {
        let budget = Budget::shared("--max-test", 100);
        let mut charge = budget.charge_owned(10).unwrap();
        charge.grow(50).unwrap();
        assert!(charge.grow(41).is_err());
        assert_eq!(charge.bytes(), 60, "a refused growth takes nothing");
        charge.resize(20).unwrap();
        assert_eq!(budget.held(), 20);
        // Bytes no charge holds count against the limit too.
        assert!(charge.grow_beside(50, 31).is_err());
        charge.grow_beside(50, 30).unwrap();
        drop(charge);
        assert_eq!(budget.held(), 0);
    }
}
