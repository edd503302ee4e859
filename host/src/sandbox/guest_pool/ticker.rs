//! The epoch ticker: advances the epoch of every live engine (the
//! optimizing one, and a baseline one while it serves) while a guest runs,
//! and sleeps 10 ms after the last one ended, so an idle host uses no CPU.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;

use crate::engine::{EPOCH_TICK, Epochs};
use anyhow::{Context as _, Result};

/// Ticks the ticker keeps going after the last guest task ended before it
/// sleeps. Waking it costs the call that does a syscall and a context
/// switch; calls served back to back (an `echo` every ~0.1 ms) would pay
/// that every time: +10 % on `echo` measured, against 10 wake-ups once
/// the host goes idle.
const LINGER_TICKS: u32 = 10;

/// Advances the engines' epochs every [`EPOCH_TICK`] while a guest task
/// exists, and for [`LINGER_TICKS`] after; then sleeps until the next
/// guest task. A plain thread: it must keep ticking even if every runtime
/// thread is busy running guests.
pub(super) struct Ticker {
    state: Mutex<TickerState>,
    wake: Condvar,
}

#[derive(Default)]
pub(super) struct TickerState {
    /// Guest tasks alive on the pool.
    pub(super) running: usize,
    /// Whether the ticker thread waits for a guest (and must be woken).
    pub(super) parked: bool,
    /// Set when the pool is dropped: the thread ends.
    stopped: bool,
}

impl Ticker {
    pub(super) fn start(epochs: Epochs) -> Result<Arc<Ticker>> {
        let ticker = Arc::new(Ticker { state: Mutex::default(), wake: Condvar::new() });
        let shared = ticker.clone();
        thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || shared.run(epochs))
            .context("cannot start the epoch ticker thread")?;
        Ok(ticker)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, TickerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn run(&self, epochs: Epochs) {
        let mut idle_ticks = 0;
        loop {
            {
                let mut state = self.lock();
                idle_ticks = if state.running == 0 { idle_ticks + 1 } else { 0 };
                if idle_ticks > LINGER_TICKS {
                    while state.running == 0 && !state.stopped {
                        state.parked = true;
                        state = self.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
                    }
                    idle_ticks = 0;
                }
                state.parked = false;
                if state.stopped {
                    return;
                }
            }
            // Sleep first: a call shorter than a tick is never interrupted.
            thread::sleep(EPOCH_TICK);
            if !epochs.increment() {
                return;
            }
        }
    }

    pub(super) fn stop(&self) {
        self.lock().stopped = true;
        self.wake.notify_one();
    }
}

/// Counts one guest task in while it lives, waking the ticker for the first.
pub(super) struct Running(Arc<Ticker>);

impl Running {
    pub(super) fn new(ticker: &Arc<Ticker>) -> Self {
        let mut state = ticker.lock();
        state.running += 1;
        if state.parked {
            state.parked = false;
            ticker.wake.notify_one();
        }
        Running(ticker.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.lock().running -= 1;
    }
}
