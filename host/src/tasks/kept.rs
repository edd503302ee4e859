//! What the host keeps of finished tasks until their time to live runs
//! out: their results, charged to one budget for the whole process, so
//! a client that starts task after task and never reads them cannot grow
//! the host's memory without bound. A result that does not fit is not
//! kept: the task fails, saying which limit it met.

use std::sync::Arc;

use crate::budget::{Budget, Charge};

/// Bytes of finished tasks' results (and the bookkeeping around each) the
/// process keeps together.
pub const MAX_KEPT: usize = 64 << 20;

/// What the bookkeeping of a task costs beside its result: the entry, its
/// id and owner, the table's slots.
pub const ENTRY_BYTES: usize = 1024;

/// The budget finished tasks' results are charged to (one per process,
/// shared by every session's table).
#[derive(Clone, Debug)]
pub struct Kept(Arc<Budget>);

impl Kept {
    /// The budget, of [`MAX_KEPT`] bytes.
    pub fn new() -> Self {
        Kept(Budget::shared("the results kept for finished tasks", MAX_KEPT))
    }

    /// A budget of `bytes`, for tests.
    #[cfg(test)]
    pub(super) fn of(bytes: usize) -> Self {
        Kept(Budget::shared("the results kept for finished tasks", bytes))
    }

    /// A charge for keeping `bytes` of a result, or why it cannot be kept.
    pub(super) fn charge(&self, bytes: usize) -> Result<Charge, String> {
        self.0.charge_owned(bytes.saturating_add(ENTRY_BYTES)).map_err(|over| over.to_string())
    }
}

impl Default for Kept {
    fn default() -> Self {
        Self::new()
    }
}
