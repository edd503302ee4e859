//! Where guest code runs: a tokio runtime of its own whose threads run at a
//! lower OS priority than the protocol's, and the epoch ticker that keeps
//! guests preemptible while — and only while — one runs.
//!
//! A guest that computes keeps a thread busy between epoch yields. On a
//! small machine that thread competes with the threads that read the
//! client's messages, including the cancel meant to stop it. The guest
//! pool's threads lower their own priority once, when they start; lowering
//! needs no privilege (raising it back would, which is why the host never
//! changes the priority of a thread that also runs protocol tasks). The
//! kernel then lets protocol handling, and the client, preempt a guest.
//!
//! - Linux: the thread's nice value goes [`GUEST_NICENESS`](priority::GUEST_NICENESS) above the
//!   host's (nice is per thread there).
//! - macOS: the thread's scheduling priority goes to the minimum of its
//!   policy (`thread-priority`; not a QoS class, for which no well-kept
//!   crate offers a safe call).
//! - Elsewhere: guests run at the host's priority. (The host does not build
//!   for Windows.)
//!
//! A guest starts on the thread of whoever awaits it and moves to the pool
//! once it has computed for [`SHORT_CALL`] in all (CPU time, so a call
//! preempted on a busy machine is still a short one; or once its polls held
//! the thread for 10 ms, computing or not): most calls are done by then and
//! skip the two thread hand-offs, and a computing guest moves at its next
//! epoch yield. Epochs advance every
//! [`EPOCH_TICK`](crate::engine::EPOCH_TICK) while a guest task exists,
//! every quarter of it while one computes past its short call, so a
//! computing guest yields and can be stopped; 10 ms after the last one,
//! the ticker sleeps and an idle host uses no CPU.
//!
//! Calls take turns to start: at most two per core are between making
//! their instance and their store's end (after the guest returned), their
//! guest's first wait for a host call, or [`TURN_FOR`](task::TURN_FOR) of
//! computing (yielding at epoch ticks on the way keeps the turn). A burst
//! of calls then makes instances as fast as they can run, instead of all
//! at once: each instance holds a memory slot, and a big guest's slot maps
//! megabytes of its image. 32 Python calls in flight on two cores held some
//! 25 instances at once, 380–460 MiB of RSS, when a guest gave its turn
//! back at its first yield (the yielded ones waited on the pool's lowered
//! threads while new calls made instances) or as it returned (the next
//! instance took a slot while the last one's was being reset); now 116–124
//! MiB, and more calls a second (BENCHMARKS.md). A guest that blocks or
//! computes long gives its turn back, so neither slow nor hostile guests
//! hold up the calls behind them.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use crate::engine::{AHEAD, BEHIND, Epochs};
use anyhow::{Context as _, Result};
use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

mod priority;
mod task;
mod ticker;

pub use ticker::computing_long;

use priority::Lowering;
pub use task::{GuestTask, SHORT_CALL, short_call_ran, yielding};
use ticker::{Running, Ticker};

/// The runtime guest code runs on, and its epoch ticker. One per server;
/// dropping it stops both without waiting for what still runs.
pub struct GuestPool {
    /// `Some` until dropped.
    runtime: Option<Runtime>,
    ticker: Arc<Ticker>,
    /// One permit per instance that may be made ahead of its call.
    ahead: Arc<Semaphore>,
    /// One permit per call that may be starting (see the module's doc).
    starting: Arc<Semaphore>,
    /// How many calls may be starting at once.
    turns: usize,
    /// One permit per store that may be waiting to be dropped on the pool.
    behind: Arc<Semaphore>,
}

/// A call's turn to start (see the module's doc): taken before its
/// instance is made and held by the call, which lends it to its
/// [`GuestTask`] ([`GuestTask::holding`]). The task gives it back when the
/// guest waits for a host call or has computed for
/// [`TURN_FOR`](task::TURN_FOR); a guest that returns leaves it to the
/// call, which gives it back once its store is gone, so the next call's instance does not take a memory slot of its
/// own while the last one's is still being reset. Cloning shares the one
/// turn; it is given back at the first [`StartTurn::give_back`] or when
/// the last clone goes.
#[derive(Clone)]
pub struct StartTurn(Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>);

impl StartTurn {
    fn new(permit: OwnedSemaphorePermit) -> Self {
        StartTurn(Arc::new(std::sync::Mutex::new(Some(permit))))
    }

    /// Whether the turn is still held (not given back yet).
    fn is_held(&self) -> bool {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_some()
    }

    /// Gives the turn back now, for every clone.
    pub fn give_back(&self) {
        drop(self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take());
    }
}

impl GuestPool {
    /// Starts one guest thread per core (at lower priority) and the epoch
    /// ticker for every engine in `epochs`.
    pub fn start(epochs: &Epochs) -> Result<GuestPool> {
        let threads = thread::available_parallelism().map_or(2, |n| n.get());
        let lower = Lowering::from_this_thread();
        let next = AtomicUsize::new(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name_fn(move || format!("guest-{}", next.fetch_add(1, Ordering::Relaxed)))
            // Also runs for the runtime's blocking threads (WASI file I/O).
            .on_thread_start(move || lower.apply())
            .enable_all()
            .build()
            .context("cannot start the guest threads")?;
        let ticker = Ticker::start(epochs.clone())?;
        let turns = threads * STARTING_PER_THREAD;
        Ok(GuestPool {
            runtime: Some(runtime),
            ticker,
            ahead: Arc::new(Semaphore::new(AHEAD as usize)),
            starting: Arc::new(Semaphore::new(turns)),
            turns,
            behind: Arc::new(Semaphore::new(BEHIND as usize)),
        })
    }

    /// A turn to start a call if one is free now (see the module's doc).
    pub fn try_start_turn(&self) -> Option<StartTurn> {
        let permit = self.starting.clone().try_acquire_owned().ok()?;
        Some(StartTurn::new(permit))
    }

    /// Waits for a turn to start a call (see the module's doc).
    pub async fn start_turn(&self) -> StartTurn {
        let permit = self.starting.clone().acquire_owned().await;
        StartTurn::new(permit.expect("the start semaphore is never closed"))
    }

    /// Runs `guest`: on the caller's thread at first, then — once it has
    /// computed for [`SHORT_CALL`] and is waiting to be polled again — on
    /// the pool. The epoch ticks for as long as the task exists; dropping the
    /// returned [`GuestTask`] drops `guest`, which stops a guest still
    /// running (on the pool: at its next yield).
    pub fn spawn<F>(&self, guest: F) -> GuestTask<'_, F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        GuestTask::new(self, Box::pin(guest), Running::new(&self.ticker))
    }

    /// Runs `work` on the pool from the start, detached, if one of the
    /// [`AHEAD`] places is free: guest work done ahead of a call, off the
    /// protocol threads. `work` gets the place, to hold for as long as what
    /// it made holds a pool slot. The epoch ticks while it runs; it is
    /// dropped unfinished if the pool shuts down first. False when every
    /// place is taken.
    pub fn spawn_ahead<F, W>(&self, work: W) -> bool
    where
        W: FnOnce(OwnedSemaphorePermit) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let (Some(runtime), Ok(place)) = (&self.runtime, self.ahead.clone().try_acquire_owned()) else {
            return false;
        };
        let running = Running::new(&self.ticker);
        let work = work(place);
        runtime.spawn(async move {
            let _running = running;
            work.await
        });
        true
    }

    /// Runs `drop_store` (which drops a call's or a cleanup's store) on the
    /// pool, while its call answers, when no other call is starting: for a big
    /// guest, dropping a store is mostly resetting its memory slot for the
    /// next instance, a kernel scan of the guest's whole memory plus a copy
    /// of what it wrote (a fifth of a Python `echo`). That helps only while
    /// a thread is free for it; with calls waiting to start it would only
    /// move the work and keep the slot longer (a burst then holds more
    /// slots at once), so the store is dropped here, as it is past
    /// [`BEHIND`] waiting or while the pool shuts down.
    /// `turn` is the dropping call's own, if it has one (a cleanup has
    /// none) and still holds it: that one does not make the pool busy.
    pub fn drop_behind(&self, drop_store: impl FnOnce() + Send + 'static, turn: Option<&StartTurn>) {
        let own = usize::from(turn.is_some_and(StartTurn::is_held));
        let idle = self.starting.available_permits() + own == self.turns;
        let place = idle.then(|| self.behind.clone().try_acquire_owned().ok()).flatten();
        match (&self.runtime, place) {
            (Some(runtime), Some(place)) => {
                runtime.spawn(async move {
                    drop_store();
                    drop(place);
                });
            }
            _ => drop_store(),
        }
    }
}

impl Drop for GuestPool {
    fn drop(&mut self) {
        self.ticker.stop();
        // Never blocks: the pool may be dropped inside the async runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// How many calls per guest thread may be starting at once: two, so one
/// can make its instance while another's guest runs.
const STARTING_PER_THREAD: usize = 2;

#[cfg(test)]
mod tests {
    use super::task::thread_cpu_time;
    use super::*;
    use std::time::{Duration, Instant};

    fn engine() -> wasmtime::Engine {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        wasmtime::Engine::new(&config).unwrap()
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[tokio::test]
    async fn epochs_advance_only_while_a_guest_runs() {
        let engine = engine();
        let pool = GuestPool::start(&Epochs::new(&engine)).unwrap();
        wait_until("the ticker parks with no guest", || pool.ticker.lock().parked);

        // A guest that loops forever is interrupted by the ticker's epochs.
        let wasm = wat::parse_str(r#"(module (func (export "run") (loop br 0)))"#).unwrap();
        let module = wasmtime::Module::new(&engine, wasm).unwrap();
        let spinning = pool.spawn(async move {
            let mut store = wasmtime::Store::new(module.engine(), 0u32);
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(|mut store| {
                *store.data_mut() += 1;
                if *store.data() < 3 {
                    Ok(wasmtime::UpdateDeadline::Continue(1))
                } else {
                    Err(wasmtime::Error::msg("three ticks"))
                }
            });
            let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
            let run = instance.get_typed_func::<(), ()>(&mut store, "run").unwrap();
            let trapped = run.call(&mut store, ()).is_err();
            (trapped, *store.data())
        });
        assert_eq!(spinning.await, (true, 3));
        wait_until("the ticker parks again", || pool.ticker.lock().parked);
        assert_eq!(pool.ticker.lock().running, 0);
    }

    #[tokio::test]
    async fn dropping_a_task_drops_its_guest() {
        let engine = engine();
        let pool = GuestPool::start(&Epochs::new(&engine)).unwrap();
        let (held, released) = tokio::sync::oneshot::channel::<()>();
        let task = pool.spawn(async move {
            let _held = held;
            std::future::pending::<()>().await
        });
        drop(task);
        assert!(released.await.is_err(), "the guest's future was dropped");
        assert_eq!(pool.ticker.lock().running, 0);
    }

    /// Where a guest that yields once after `runs_for` ends up, and at
    /// which nice value (on Linux).
    async fn place_after(pool: &GuestPool, runs_for: Duration) -> (Option<String>, i32) {
        pool.spawn(async move {
            // Computes (a guest's time is CPU time), then yields.
            let started = thread_cpu_time();
            while thread_cpu_time().saturating_sub(started) < runs_for {
                std::hint::spin_loop();
            }
            tokio::task::yield_now().await;
            let nice = if cfg!(target_os = "linux") {
                rustix::process::getpriority_process(None).unwrap()
            } else {
                0
            };
            (thread::current().name().map(String::from), nice)
        })
        .await
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_short_guest_stays_and_a_longer_one_moves_to_the_lowered_threads() {
        let host = rustix::process::getpriority_process(None).unwrap();
        let engine = engine();
        let pool = GuestPool::start(&Epochs::new(&engine)).unwrap();
        let here = thread::current().name().map(String::from);
        assert_eq!(place_after(&pool, Duration::ZERO).await, (here, host));
        let (thread, nice) = place_after(&pool, SHORT_CALL).await;
        assert!(thread.is_some_and(|name| name.starts_with("guest-")));
        #[cfg(target_os = "linux")]
        assert_eq!(nice, (host + priority::GUEST_NICENESS).min(19));
        // The calling thread is untouched.
        assert_eq!(rustix::process::getpriority_process(None).unwrap(), host);
    }

    #[tokio::test]
    async fn stopping_a_guest_on_the_pool_waits_until_it_is_gone() {
        let engine = engine();
        let pool = GuestPool::start(&Epochs::new(&engine)).unwrap();
        let (held, mut released) = tokio::sync::oneshot::channel::<()>();
        let (moved_tx, moved) = tokio::sync::oneshot::channel::<()>();
        let mut task = pool.spawn(async move {
            let _held = held;
            thread::sleep(SHORT_CALL);
            tokio::task::yield_now().await;
            let _ = moved_tx.send(());
            std::future::pending::<()>().await
        });
        tokio::select! {
            () = &mut task => unreachable!(),
            _ = moved => {}
        }
        task.stop().await;
        assert_eq!(released.try_recv(), Err(tokio::sync::oneshot::error::TryRecvError::Closed));
        assert_eq!(pool.ticker.lock().running, 0);
    }
}
