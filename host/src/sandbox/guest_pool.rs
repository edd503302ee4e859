//! Guest code runs at a lower OS scheduling priority than the host.
//!
//! A guest that computes keeps a runtime thread busy between epoch yields.
//! On a small machine that thread competes with the threads that read the
//! client's messages — including the cancel that is meant to stop it. While
//! a guest's future is being polled, its thread runs at a higher nice value,
//! so the kernel lets protocol handling (and the client itself) preempt it.
//! The priority is restored before the thread goes back to other tasks.
//!
//! Only once a guest has been running for [`SHORT_CALL`]: most calls finish
//! sooner, and changing a thread's priority costs more than the syscalls —
//! the kernel reschedules — which measured as a third of a short call's
//! overhead (`echo`: 1.5× the native server with it, 1.3× without). A guest
//! that computes yields at every epoch tick (1 ms), so it is repolled, and
//! lowered, within a millisecond or two.
//!
//! Linux only (nice is per thread there), and only where the process may
//! raise a thread's priority back afterwards (root, or a permissive
//! `RLIMIT_NICE`): otherwise every runtime thread would end up lowered for
//! good, so the host leaves priorities alone. Elsewhere this is a no-op.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How much lower than the host a guest runs (added to the thread's nice value).
const GUEST_NICENESS: i32 = 10;

/// How long a guest runs at the host's priority before it is lowered.
const SHORT_CALL: Duration = Duration::from_micros(500);

/// Polls `inner` at guest priority once it has run for [`SHORT_CALL`].
pub struct AtGuestPriority<F> {
    inner: F,
    first_polled: Option<Instant>,
}

/// Runs `future` with guest priority whenever it is polled, once it is no
/// longer a short call.
pub fn at_guest_priority<F: Future>(future: F) -> AtGuestPriority<F> {
    AtGuestPriority { inner: future, first_polled: None }
}

impl<F: Future> Future for AtGuestPriority<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned and never moved;
        // `first_polled` is plain data, not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let running_for = this.first_polled.get_or_insert_with(Instant::now).elapsed();
        let _lowered = (running_for >= SHORT_CALL).then(Lowered::now);
        inner.poll(cx)
    }
}

/// Lowers the current thread's priority until dropped.
struct Lowered {
    #[cfg(target_os = "linux")]
    previous: Option<i32>,
}

impl Lowered {
    #[cfg(target_os = "linux")]
    fn now() -> Self {
        if !*CAN_RESTORE.get_or_init(can_restore_priority) {
            return Lowered { previous: None };
        }
        // SAFETY: plain syscalls on the calling thread's own id.
        unsafe {
            let tid = libc::gettid() as libc::id_t;
            // getpriority can legitimately return -1; errno tells failures apart.
            *libc::__errno_location() = 0;
            let previous = libc::getpriority(libc::PRIO_PROCESS, tid);
            if *libc::__errno_location() != 0 {
                return Lowered { previous: None };
            }
            let lowered = (previous + GUEST_NICENESS).min(19);
            if libc::setpriority(libc::PRIO_PROCESS, tid, lowered) != 0 {
                return Lowered { previous: None };
            }
            Lowered { previous: Some(previous) }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn now() -> Self {
        Lowered {}
    }
}

#[cfg(target_os = "linux")]
static CAN_RESTORE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Whether a thread of this process can lower its priority and raise it back.
/// Probed once, on a throw-away thread.
#[cfg(target_os = "linux")]
fn can_restore_priority() -> bool {
    std::thread::spawn(|| {
        // SAFETY: syscalls on this probe thread only.
        unsafe {
            let tid = libc::gettid() as libc::id_t;
            *libc::__errno_location() = 0;
            let base = libc::getpriority(libc::PRIO_PROCESS, tid);
            *libc::__errno_location() == 0
                && libc::setpriority(libc::PRIO_PROCESS, tid, (base + 1).min(19)) == 0
                && libc::setpriority(libc::PRIO_PROCESS, tid, base) == 0
        }
    })
    .join()
    .unwrap_or(false)
}

impl Drop for Lowered {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(previous) = self.previous {
            // Allowed: `can_restore_priority` checked this process may.
            // SAFETY: as above.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, previous);
            }
        }
    }
}
