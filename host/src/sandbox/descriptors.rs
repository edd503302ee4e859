//! Descriptors: one limit for the whole process (`RLIMIT_NOFILE`), shared
//! by the host and every call.
//!
//! Every file or directory a call holds open is a descriptor of the host's
//! process. A call that took them all would leave a neighbour unable to
//! create its sandbox (each sandbox opens its `--dir` grants anew), or the
//! host unable to accept a connection. So, at start:
//!
//! - the soft limit is raised to the hard limit ([`raise_limit`]);
//! - a reserve is kept from calls ([`reserve`]): the host's own
//!   descriptors, its connections, and the grants of every sandbox that may
//!   exist at once;
//! - `--max-handles` is lowered, if need be, so one call can hold at most a
//!   quarter of the rest ([`fit_handles`]), with a log line saying so;
//! - and a file a guest opens is refused once the process's descriptors
//!   reach into the reserve ([`in_reserve`], called by `open_guard`). The
//!   kernel hands out the lowest free number, so a new descriptor numbered
//!   past the calls' share means the share is used up: calls together,
//!   however many, never take the reserve.

use std::sync::atomic::{AtomicU64, Ordering};

/// Descriptors the host keeps for itself besides its connections and the
/// sandboxes' grants: standard streams, the runtime's epoll and event
/// descriptors, log, cache and component files, with room to spare.
const HOST_OWN: u64 = 256;

/// One call's `--max-handles` may take at most this share of what calls
/// may hold together (one quarter).
const SHARE: u64 = 4;

/// Handles a call gets whatever the limit: enough for a tool's standard
/// streams, grants and a few files.
const MIN_HANDLES: usize = 16;

/// Descriptors numbered from here on are the host's reserve; set at start.
static CEILING: AtomicU64 = AtomicU64::new(u64::MAX);

/// Raises the soft limit on open files to the hard limit: every call's
/// handles are capped, and the process as a whole should run into those
/// caps, not into a low default soft limit.
pub fn raise_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit { current: limit.maximum, ..limit };
        if let Err(err) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!("cannot raise the open-file limit: {err}");
        }
    }
}

/// The soft limit on open files in force.
pub fn limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Descriptors kept from calls: the host's own, `connections` (with
/// `--http`), and `grants` directories for each of `sandboxes` that may
/// exist at once. At most half of `limit`: below that, calls could hardly
/// open a file (start-up says so).
pub fn reserve(limit: u64, sandboxes: u64, grants: u64, connections: u64) -> u64 {
    HOST_OWN.saturating_add(connections).saturating_add(sandboxes.saturating_mul(grants)).min(limit / 2)
}

/// `requested` handles per call, or a quarter of what calls may hold
/// together under `limit` if that is less.
pub fn fit_handles(requested: usize, limit: u64, reserve: u64) -> usize {
    let share = limit.saturating_sub(reserve) / SHARE;
    requested.min(usize::try_from(share).unwrap_or(usize::MAX).max(MIN_HANDLES))
}

/// From now on, guests' opens past `limit - reserve` descriptors are refused.
pub fn keep_reserve(limit: u64, reserve: u64) {
    CEILING.store(limit.saturating_sub(reserve), Ordering::Relaxed);
}

/// Whether descriptor `fd`, just opened for a guest, is numbered in the
/// host's reserve: the calls' share is used up.
pub fn in_reserve(fd: std::os::fd::RawFd) -> bool {
    u64::try_from(fd).is_ok_and(|fd| fd >= CEILING.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_low_limit_lowers_the_handles_of_a_call_to_a_quarter_of_the_calls_share() {
        // 128 calls: 257 sandboxes with one grant each, over stdio.
        let reserve = reserve(4096, 257, 1, 0);
        assert_eq!(reserve, 256 + 257);
        assert_eq!(fit_handles(4096, 4096, reserve), (4096 - 513) / 4);
        // A high limit leaves --max-handles as it is.
        assert_eq!(fit_handles(4096, 1 << 20, reserve), 4096);
        // A reserve larger than half the limit is cut to half; a tiny
        // limit still leaves a call a few handles.
        assert_eq!(super::reserve(1024, 257, 10, 512), 512);
        assert_eq!(fit_handles(4096, 64, 32), MIN_HANDLES);
    }
}
