//! A guest's future: polled on the caller's thread while it is a short
//! call, then on the pool (see the parent module).
#![forbid(unsafe_code)]

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
    /// The call's turn to start, given back at the guest's first pause.
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

    /// Holds `turn` until the guest first pauses, then gives it back.
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
            let poll = guest.as_mut().poll(cx);
            // Returned, blocked or yielded: the next call may start.
            this.turn = None;
            if let Poll::Ready(output) = poll {
                this.place = Place::Gone;
                return Poll::Ready(output);
            }
            *ran += thread_cpu_time().saturating_sub(cpu);
            *polled += started.elapsed();
            if *ran < SHORT_CALL && *polled < HELD_TOO_LONG {
                return Poll::Pending;
            }
            // Not a short call: on to the pool, below the protocol threads.
            let Place::Here { guest, running, .. } = std::mem::replace(&mut this.place, Place::Gone) else {
                unreachable!("matched above")
            };
            let runtime = this.pool.runtime.as_ref().expect("the pool is running until dropped");
            this.place = Place::Pool(runtime.spawn(async move {
                let _running = running;
                guest.await
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

impl<T> Drop for GuestTask<'_, T> {
    fn drop(&mut self) {
        if let Place::Pool(handle) = &self.place {
            handle.abort();
        }
    }
}
