//! Stores dropped behind the calls that used them.
//!
//! Dropping a call's store resets its instance's memory slot for the next
//! instance: the kernel scans the guest's whole memory for the pages it
//! wrote (`PAGEMAP_SCAN`) and the image is copied back over them. For a
//! Rust tool that is a few microseconds, less than handing the store to
//! another thread; for an interpreter it is a fifth of a call (CPython and
//! SpiderMonkey here). So calls time the drops they do themselves, and once
//! a component's typical drop takes [`WORTH_DROPPING_BEHIND`] or more, its
//! stores are dropped on the guest pool, after the response. What the call
//! held is closed before its response either way (`Sandbox::release`).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::ahead::smoothed;
use crate::sandbox::guest_pool::{GuestPool, StartTurn};

/// How a component's stores are dropped: empty until a call has timed one.
#[derive(Default)]
pub struct Behind {
    /// How long the drops calls did themselves took, smoothed.
    typical: Mutex<Option<Duration>>,
}

/// A store that takes less than this to drop is dropped by its call.
const WORTH_DROPPING_BEHIND: Duration = Duration::from_micros(30);

impl Behind {
    /// Drops `store`, a released call's store (with what counts it live):
    /// here and timed, or on `guests` when this component's drops are slow.
    /// `turn` is the call's turn to start (see `GuestPool::drop_behind`).
    pub fn drop_store<S: Send + 'static>(&self, store: S, guests: &GuestPool, turn: &StartTurn) {
        let typical = *self.lock();
        if typical.is_some_and(|typical| typical >= WORTH_DROPPING_BEHIND) {
            guests.drop_behind(store, turn);
            return;
        }
        let started = Instant::now();
        drop(store);
        let mut typical = self.lock();
        *typical = Some(smoothed(*typical, started.elapsed()));
    }

    fn lock(&self) -> MutexGuard<'_, Option<Duration>> {
        self.typical.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
