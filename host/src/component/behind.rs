//! Stores dropped behind the calls that used them: a call's own, and its
//! cleanup's.
//!
//! Dropping a call's store resets its instance's memory slot for the next
//! instance: the kernel scans the guest's whole memory for the pages it
//! wrote (`PAGEMAP_SCAN`) and the image is copied back over them. For a
//! Rust tool that is a few microseconds, less than handing the store to
//! another thread; for an interpreter it is a fifth of a call (CPython and
//! SpiderMonkey here). So every drop is timed, and while a component's
//! typical drop takes [`WORTH_DROPPING_BEHIND`] or more, its stores are
//! dropped on the guest pool, after the response. Drops on the pool are
//! timed too, so a component whose first drops were slow (cold pages) goes
//! back to dropping its own once they are cheap. What the call (or the
//! cleanup) held is closed before the call ends either way
//! (`Sandbox::release`).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::ahead::Typical;
use crate::sandbox::guest_pool::{GuestPool, StartTurn};

/// How a component's stores are dropped: empty until a call has timed one.
#[derive(Default)]
pub struct Behind {
    /// How long its stores took to drop, smoothed: every drop is timed,
    /// on the pool too, so a component whose first (cold) drops were slow
    /// goes back to dropping its stores itself once they are cheap.
    typical: Arc<Mutex<Typical>>,
}

/// A store that takes less than this to drop is dropped by its call.
const WORTH_DROPPING_BEHIND: Duration = Duration::from_micros(30);

impl Behind {
    /// Drops `store`, a released call's or cleanup's store (with what
    /// counts it live): here, or on `guests` when this component's drops
    /// are slow; timed either way. `turn` is the call's turn to start, if
    /// the store's run held one (see `GuestPool::drop_behind`).
    pub fn drop_store<S: Send + 'static>(&self, store: S, guests: &GuestPool, turn: Option<&StartTurn>) {
        if lock(&self.typical).at_least(WORTH_DROPPING_BEHIND) {
            let typical = self.typical.clone();
            guests.drop_behind(move || timed_drop(store, &typical), turn);
        } else {
            timed_drop(store, &self.typical);
        }
    }
}

/// Drops `store` and counts how long that took into `typical`.
fn timed_drop<S>(store: S, typical: &Mutex<Typical>) {
    let started = Instant::now();
    drop(store);
    let took = started.elapsed();
    lock(typical).note(took);
}

fn lock(typical: &Mutex<Typical>) -> MutexGuard<'_, Typical> {
    typical.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Epochs;
    use std::sync::mpsc;
    use std::thread;

    /// A store stand-in: takes `takes` to drop, then says on which thread.
    struct Store {
        takes: Duration,
        dropped: mpsc::Sender<Option<String>>,
    }

    impl Drop for Store {
        fn drop(&mut self) {
            thread::sleep(self.takes);
            let _ = self.dropped.send(thread::current().name().map(String::from));
        }
    }

    /// Drops that turned slow go behind, and once they are cheap again —
    /// timed on the pool too — the calls drop their stores themselves: a
    /// few slow first drops (a cold slot) do not send every later one to
    /// another thread.
    #[test]
    fn drops_go_behind_while_they_are_slow_and_come_back_once_cheap() {
        let engine = wasmtime::Engine::default();
        let guests = GuestPool::start(&Epochs::new(&engine)).unwrap();
        let here = thread::current().name().map(String::from);
        let behind = Behind::default();
        let (dropped, on) = mpsc::channel();
        let drop_one = |takes: Duration| {
            let turn = guests.try_start_turn().expect("no call is starting");
            behind.drop_store(Store { takes, dropped: dropped.clone() }, &guests, Some(&turn));
            drop(turn);
            on.recv_timeout(Duration::from_secs(10)).expect("the store was dropped")
        };

        assert_eq!(drop_one(Duration::from_millis(2)), here, "the first drop is the call's own");
        let slow = drop_one(Duration::ZERO);
        assert!(slow.as_deref().is_some_and(|name| name.starts_with("guest-")), "{slow:?}");
        // 2 ms smoothed by 3/4 a drop falls under 30 µs within 15 cheap
        // ones; from then on the calls drop their own.
        let places: Vec<_> = (0..30).map(|_| drop_one(Duration::ZERO)).collect();
        assert!(places[25..].iter().all(|place| *place == here), "{places:?}");
    }
}
