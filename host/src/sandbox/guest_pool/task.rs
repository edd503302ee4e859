//! A guest's future: polled on the caller's thread while it is a short
//! call, then on the pool (see the parent module).
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use super::ticker::Running;
use super::{GuestPool, StartTurn};

/// How much CPU time a guest uses on the caller's thread before it moves
/// to the pool. Most calls finish sooner and never pay for the two thread
/// hand-offs the pool costs (tens of microseconds on a small machine, a
/// third of an `echo`); a computing guest yields at every epoch tick, so it
/// moves within a tick or two.
pub const SHORT_CALL: Duration = Duration::from_micros(500);

/// How long a guest's polls may hold the caller's thread, computing or not,
/// before it moves to the pool: past the longest a preempted thread waits
/// for a CPU here (a 4 ms scheduler tick), so only a guest that blocks its
/// thread gets there before `SHORT_CALL` of CPU.
const HELD_TOO_LONG: Duration = Duration::from_millis(10);

/// How much CPU time a guest that only yields (it neither returned nor
/// blocked in a host call) may use before it gives its turn to start back
/// (see the parent module). Long enough for an interpreter's call with its
/// instantiation (a Python `echo` takes about `SHORT_CALL` and often a
/// little more), short enough that guests computing for long hold up the
/// calls behind them for at most this.
pub const TURN_FOR: Duration = Duration::from_millis(5);

thread_local! {
    /// The short call this thread is polling, if any (see [`short_call_ran`]).
    static POLLING: Cell<Option<Polling>> = const { Cell::new(None) };
    /// Whether the guest this thread polls paused to yield at an epoch tick
    /// (see [`yielding`]), rather than to wait for a host call.
    static YIELDED: Cell<bool> = const { Cell::new(false) };
}

/// Notes that the guest this thread runs is yielding at an epoch tick,
/// not waiting: it keeps its turn to start (up to [`TURN_FOR`]).
pub fn yielding() {
    YIELDED.set(true);
}

/// A short call's poll under way on this thread.
#[derive(Clone, Copy)]
struct Polling {
    /// The guest's CPU time before this poll.
    ran: Duration,
    /// The time its polls took before this one.
    polled: Duration,
    /// The thread's CPU time when this poll began.
    cpu_at: Duration,
    /// When this poll began.
    at: Instant,
}

/// The CPU time the guest this thread runs has used, while it is still a
/// short call: polled by its caller, with less than [`SHORT_CALL`] of CPU
/// and [`HELD_TOO_LONG`] of polls behind it. `None` otherwise (on the
/// pool, past its short call, or no call's guest at all).
///
/// CPU time, not the time since the call entered the guest: on a busy
/// machine a short call preempted by the kernel is still a short call, and
/// if it yielded at the next tick its turn would go to another call, which
/// would make an instance (and fill a memory slot) of its own: with that
/// and the turns given back at the first yield, 32 Python calls in flight
/// on two cores held some 25 instances at once.
pub fn short_call_ran() -> Option<Duration> {
    let polling = POLLING.get()?;
    let ran = polling.ran + thread_cpu_time().saturating_sub(polling.cpu_at);
    (ran < SHORT_CALL && polling.polled + polling.at.elapsed() < HELD_TOO_LONG).then_some(ran)
}

/// The CPU time the calling thread has used.
pub(super) fn thread_cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(now.tv_sec.try_into().unwrap_or(0), now.tv_nsec.try_into().unwrap_or(0))
}

/// A guest future started by [`GuestPool::spawn`]; awaiting it gives its
/// output. Dropping it drops the guest. It borrows the pool, so the pool
/// cannot shut down under it.
#[must_use = "dropping a GuestTask stops its guest"]
pub struct GuestTask<'pool, T> {
    place: Place<T>,
    pool: &'pool GuestPool,
    /// The call's turn to start, given back when the guest waits for a host
    /// call or has computed for [`TURN_FOR`] (see [`StartTurn`]).
    turn: Option<StartTurn>,
}

/// Where a guest runs now.
enum Place<T> {
    /// Polled by whoever awaits the task, until it is no longer a short call.
    Here {
        guest: Pin<Box<dyn Future<Output = T> + Send>>,
        /// How long it has run so far: the CPU time its polls used, not the
        /// time since it started nor the time its polls took, so a short
        /// call that waited for a busy thread (many calls in flight) or was
        /// preempted (a busy machine) is still a short call.
        ran: Duration,
        /// The time its polls took, which bounds `ran` from the other side:
        /// a guest blocked inside a poll (a host call that blocks its
        /// thread) uses no CPU but holds the thread.
        polled: Duration,
        running: Running,
    },
    /// On the pool.
    Pool(JoinHandle<T>),
    /// Finished or stopped.
    Gone,
}

impl<'pool, T: Send + 'static> GuestTask<'pool, T> {
    /// `guest`, to run first here, then on `pool`; `running` keeps the
    /// epoch ticking while it exists.
    pub(super) fn new(
        pool: &'pool GuestPool,
        guest: Pin<Box<dyn Future<Output = T> + Send>>,
        running: Running,
    ) -> Self {
        let place = Place::Here { guest, ran: Duration::ZERO, polled: Duration::ZERO, running };
        GuestTask { place, pool, turn: None }
    }

    /// Holds `turn` until the guest waits for a host call or has computed
    /// for [`TURN_FOR`], then gives it back; a guest that returns leaves it
    /// to the caller's clone (see [`StartTurn`]).
    pub fn holding(mut self, turn: StartTurn) -> Self {
        self.turn = Some(turn);
        self
    }

    /// Stops the guest and waits until its future (and the store it owns)
    /// has been dropped. A computing guest on the pool is dropped at its
    /// next epoch yield: bump the epoch first to make that now.
    pub async fn stop(mut self) {
        if let Place::Pool(handle) = std::mem::replace(&mut self.place, Place::Gone) {
            handle.abort();
            if let Err(err) = handle.await
                && err.is_panic()
            {
                std::panic::resume_unwind(err.into_panic());
            }
        }
    }
}

impl<T: Send + 'static> Future for GuestTask<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        if let Place::Here { guest, ran, polled, .. } = &mut this.place {
            let (started, cpu) = (Instant::now(), thread_cpu_time());
            let polling = Polling { ran: *ran, polled: *polled, cpu_at: cpu, at: started };
            let outer = POLLING.replace(Some(polling));
            YIELDED.set(false);
            let poll = guest.as_mut().poll(cx);
            let yielded = YIELDED.take();
            POLLING.set(outer);
            if let Poll::Ready(output) = poll {
                // Returned: the caller gives the turn back once the store is gone.
                this.turn = None;
                this.place = Place::Gone;
                return Poll::Ready(output);
            }
            *ran += thread_cpu_time().saturating_sub(cpu);
            *polled += started.elapsed();
            if !yielded && let Some(turn) = this.turn.take() {
                // Waiting for a host call: the next call may start meanwhile.
                turn.give_back();
            }
            if *ran < SHORT_CALL && *polled < HELD_TOO_LONG {
                return Poll::Pending;
            }
            // Not a short call: on to the pool, below the protocol threads,
            // with its turn if it still holds it.
            let Place::Here { guest, running, ran, .. } = std::mem::replace(&mut this.place, Place::Gone)
            else {
                unreachable!("matched above")
            };
            let runtime = this.pool.runtime.as_ref().expect("the pool is running until dropped");
            let pooled = Pooled { guest, turn: this.turn.take(), ran };
            this.place = Place::Pool(runtime.spawn(async move {
                let _running = running;
                pooled.await
            }));
        }
        let Place::Pool(handle) = &mut this.place else {
            panic!("a GuestTask is not polled after it finished")
        };
        let joined = std::task::ready!(Pin::new(handle).poll(cx));
        this.place = Place::Gone;
        match joined {
            Ok(output) => Poll::Ready(output),
            // A bug in host code the guest called: fail the caller the same way.
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            Err(_) => unreachable!("a guest task is aborted only by its GuestTask, and the pool outlives it"),
        }
    }
}

/// A guest on the pool that may still hold its turn to start: it gives it
/// back once it waits for a host call or has computed for [`TURN_FOR`] in
/// all, and leaves it to the caller when it returns (see [`StartTurn`]).
/// Until then the calls behind it wait: on a busy
/// machine the pool's lowered threads get the CPU last, and a guest that
/// gave its turn back at its first yield left its instance (and its
/// memory slot) waiting there while the next call made another.
struct Pooled<T> {
    guest: Pin<Box<dyn Future<Output = T> + Send>>,
    turn: Option<StartTurn>,
    /// Its CPU time so far, counted while it holds its turn.
    ran: Duration,
}

impl<T> Future for Pooled<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        if this.turn.is_none() {
            return this.guest.as_mut().poll(cx);
        }
        let cpu = thread_cpu_time();
        YIELDED.set(false);
        let poll = this.guest.as_mut().poll(cx);
        let yielded = YIELDED.take();
        this.ran += thread_cpu_time().saturating_sub(cpu);
        if poll.is_ready() {
            // Returned: the caller gives the turn back once the store is gone.
            this.turn = None;
        } else if (!yielded || this.ran >= TURN_FOR)
            && let Some(turn) = this.turn.take()
        {
            turn.give_back();
        }
        poll
    }
}

impl<T> Drop for GuestTask<'_, T> {
    fn drop(&mut self) {
        if let Place::Pool(handle) = &self.place {
            handle.abort();
        }
    }
}
