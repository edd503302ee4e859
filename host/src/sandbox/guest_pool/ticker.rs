//! The epoch ticker: advances the epoch of every live engine (the
//! optimizing one, and a baseline one while it serves) while a guest runs,
//! four times as often while one computes long, and sleeps 10 ms after the
//! last one ended, so an idle host uses no CPU.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use crate::engine::{EPOCH_TICK, Epochs};
use anyhow::{Context as _, Result};

/// The tick while a guest computes past its short call. Each tick is a
/// `sched_yield` for such a guest (`sandbox::new_store`), so a thread woken
/// on its CPU, such as the one reading a client's cancel, waits for at most
/// this long instead of a whole [`EPOCH_TICK`]: `spin` cancel p99, median
/// of a day's runs, went from 4.1 to 2.9 ms for Python and 3.6 to 2.3 ms
/// for JavaScript (docs/benchmarks-archive.md, "Fast ticks while a guest
/// computes long"). Only while a guest computes that long: ticking this
/// fast whenever any guest ran cost 5 % of `echo` throughput, short calls
/// that never see a tick paying for the ticker's wake-ups.
const FAST_TICK: Duration = Duration::from_micros(250);

/// Fast ticks the ticker keeps after the last word from a long guest, so
/// ticks stay fast while one computes even when its word comes just after
/// the ticker looked (a guest says so at each tick it sees).
const FAST_TICKS_HELD: u32 = 8;

/// Word from guests computing long to the process's tickers (the host has
/// one; tests may run several, which then share it, harmlessly).
struct LongGuests {
    state: Mutex<LongState>,
    wake: Condvar,
}

struct LongState {
    /// A guest computes long: set at each tick it sees, taken by the ticker.
    asked: bool,
    /// The ticker is on fast ticks: no need to wake it.
    fast: bool,
}

static LONG_GUESTS: LongGuests =
    LongGuests { state: Mutex::new(LongState { asked: false, fast: false }), wake: Condvar::new() };

impl LongGuests {
    fn lock(&self) -> std::sync::MutexGuard<'_, LongState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Tells the ticker a guest is computing long: it ticks at [`FAST_TICK`]
/// for the next [`FAST_TICKS_HELD`] ticks. A ticker on a slow tick is woken
/// to start at once: the first fast tick is then at most [`FAST_TICK`]
/// away, not up to a whole [`EPOCH_TICK`] (a cancel often comes within the
/// guest's first milliseconds).
pub fn computing_long() {
    let mut state = LONG_GUESTS.lock();
    state.asked = true;
    if !state.fast {
        LONG_GUESTS.wake.notify_all();
    }
}

/// Ticks the ticker keeps going after the last guest task ended before it
/// sleeps. Waking it costs the call that does a syscall and a context
/// switch; calls served back to back (an `echo` every ~0.1 ms) would pay
/// that every time: +10 % on `echo` measured, against 10 wake-ups once
/// the host goes idle.
const LINGER_TICKS: u32 = 10;

/// Advances the engines' epochs every [`EPOCH_TICK`] (or [`FAST_TICK`])
/// while a guest task exists, and for [`LINGER_TICKS`] after; then sleeps
/// until the next guest task. A plain thread: it must keep ticking even if
/// every runtime thread is busy running guests.
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
        let mut fast_ticks = 0;
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
            let mut long = LONG_GUESTS.lock();
            if std::mem::take(&mut long.asked) {
                fast_ticks = FAST_TICKS_HELD;
            }
            long.fast = fast_ticks > 0;
            let tick = if long.fast {
                fast_ticks -= 1;
                FAST_TICK
            } else {
                EPOCH_TICK
            };
            // Sleep first: a call shorter than a tick is never interrupted.
            // A slow tick ends early when a guest asks for fast ones.
            drop(LONG_GUESTS.wake.wait_timeout_while(long, tick, |long| long.fast || !long.asked));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Ticks of a guest that says it computes long from its first tick on:
    /// once it has, they come at [`FAST_TICK`]. Sleeping guarantees a
    /// tick's minimum, so 16 slow ticks cannot take less than 16 ms; a
    /// machine too busy to show fast ticks gets five tries.
    #[test]
    fn a_guest_computing_long_gets_fast_ticks() {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let ticker = Ticker::start(Epochs::new(&engine)).unwrap();
        let _running = Running::new(&ticker);
        let wasm = wat::parse_str(r#"(module (func (export "run") (loop br 0)))"#).unwrap();
        let module = wasmtime::Module::new(&engine, wasm).unwrap();
        let sixteen_ticks = || {
            let mut store = wasmtime::Store::new(&engine, Vec::<Instant>::new());
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(|mut store| {
                computing_long();
                store.data_mut().push(Instant::now());
                if store.data().len() < 24 {
                    Ok(wasmtime::UpdateDeadline::Continue(1))
                } else {
                    Err(wasmtime::Error::msg("enough ticks"))
                }
            });
            let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
            let run = instance.get_typed_func::<(), ()>(&mut store, "run").unwrap();
            assert!(run.call(&mut store, ()).is_err());
            // The first eight may still be slow: the ticker was asleep.
            store.data()[23] - store.data()[7]
        };
        let tries: Vec<Duration> = (0..5).map(|_| sixteen_ticks()).collect();
        assert!(tries.iter().any(|took| *took < 16 * EPOCH_TICK), "16 ticks took {tries:?}");
        ticker.stop();
    }
}
