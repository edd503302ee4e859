//! The guest threads' priority: lowered once, when each starts, below the
//! host's (see the parent module for why).
#![forbid(unsafe_code)]

/// How much lower than the host a guest runs (added to the nice value).
#[cfg(target_os = "linux")]
pub(super) const GUEST_NICENESS: i32 = 10;

/// What a guest thread does to its own priority when it starts.
#[derive(Clone, Copy)]
pub(super) struct Lowering {
    /// The nice value guest threads take.
    #[cfg(target_os = "linux")]
    nice: Option<i32>,
}

impl Lowering {
    /// Guest threads go [`GUEST_NICENESS`] below the calling thread's priority.
    #[cfg(target_os = "linux")]
    pub(super) fn from_this_thread() -> Self {
        // `None`: the calling thread (per-thread on Linux).
        let host = rustix::process::getpriority_process(None);
        Lowering { nice: host.ok().map(|nice| (nice + GUEST_NICENESS).min(19)) }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn from_this_thread() -> Self {
        Lowering {}
    }

    /// Lowers the calling thread's priority; never raises it (a thread
    /// started by a guest thread has the lowered value already).
    #[cfg(target_os = "linux")]
    pub(super) fn apply(self) {
        use rustix::process::{getpriority_process, setpriority_process};
        let Some(nice) = self.nice else { return };
        if getpriority_process(None).is_ok_and(|now| now >= nice) {
            return;
        }
        if let Err(err) = setpriority_process(None, nice) {
            tracing::debug!("guest thread keeps the host's priority: {err}");
        }
    }

    #[cfg(target_os = "macos")]
    pub(super) fn apply(self) {
        use thread_priority::{ThreadPriority, set_current_thread_priority};
        if let Err(err) = set_current_thread_priority(ThreadPriority::Min) {
            tracing::debug!("guest thread keeps the host's priority: {err:?}");
        }
    }

    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    pub(super) fn apply(self) {}
}
