//! Instances made ahead of the calls that will use them.
//!
//! A big guest spends a good part of a call just being instantiated: the
//! CPython component fills tables of ~5 000 function references and
//! resolves ~2 000 imports between its core modules, 0.5 ms of a 1 ms
//! `echo` here. None of that depends on the call. So once its calls have
//! shown a component's instances take 100 µs or more to make, the host
//! keeps one instance of it made ahead: the next
//! call takes it, and the one after is made on the guest pool meanwhile,
//! off the call's path. A cleanup after a stopped call takes one too.
//! Instances made ahead are timed like the ones calls make, so a component
//! goes back to making its own once they turn out cheap: a Rust tool's first
//! instance, made cold, can take 100 µs, and making the next ones ahead
//! would then cost every call two thread hand-offs for ~15 µs of work.
//!
//! It is still a fresh instance per call. It has never run guest code
//! other than its own start functions, its store was made for the
//! component's grants and limits alone, and it is bound to its call — id,
//! stop signal, channel, clock and fuel — when taken
//! ([`Guest::bind`]). Instances made ahead are bounded across the host by
//! [`crate::engine::AHEAD`], and the engine's pool has that many slots on
//! top of the calls', so one never holds a slot a call needs. A component
//! that is replaced (`--watch`, optimized code taking over) drops its
//! instance with it.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, watch};

use super::ToolComponent;
use crate::ask::CallChannel;
use crate::cancellation::CallCancellation;
use crate::log_text::escaped;
use crate::sandbox::StoreBudget;
use crate::sandbox::guest_pool::GuestPool;
use crate::store::Guest;

/// A component's instance made ahead, if any. Empty until calls have
/// shown that its instances are slow to make.
#[derive(Default)]
pub struct Ahead(Arc<Mutex<Slot>>);

/// An instance that takes less than this to make is made by its call: a
/// Rust tool's takes ~10 µs, less than handing the work to another thread.
const WORTH_MAKING_AHEAD: Duration = Duration::from_micros(100);

/// How long a call waits for an instance being made before it makes its
/// own: the one under way is nearer done than a new one would be, unless
/// something is wrong with it.
const WAIT_FOR_MAKING: Duration = Duration::from_millis(20);

#[derive(Default)]
struct Slot {
    ready: Option<Made>,
    /// Set while an instance is being made: turns true when it is done.
    making: Option<watch::Receiver<bool>>,
    /// A call waits for it (only one does: the instance serves one call).
    awaited: bool,
    /// How long its instances took to make, by their calls or ahead.
    typical: Typical,
}

struct Made {
    guest: Guest,
    /// The place among the host's instances made ahead.
    _place: OwnedSemaphorePermit,
}

impl Ahead {
    /// A store and instance of `component` for call `call_id` (its run or
    /// its cleanup) within `budget`: the instance made ahead, bound to it,
    /// or else a new store. The flag says which.
    pub async fn guest(
        &self,
        component: &ToolComponent,
        guests: &GuestPool,
        budget: &StoreBudget,
        cancellation: CallCancellation,
        call_id: Arc<str>,
        channel: CallChannel,
    ) -> (anyhow::Result<Guest>, bool) {
        match self.take(component, guests).await {
            Some(mut guest) => (guest.bind(budget, cancellation, call_id, channel).map(|()| guest), true),
            None => {
                let made =
                    Guest::new(&component.code, &component.grants, budget, cancellation, call_id, channel);
                (made, false)
            }
        }
    }

    /// The instance made ahead for a call of `component` (to be bound to
    /// the call), if one is ready or nearly so; either way, the next one is
    /// started.
    async fn take(&self, component: &ToolComponent, guests: &GuestPool) -> Option<Guest> {
        let mut done = {
            let mut slot = self.lock();
            match (slot.ready.take(), slot.making.clone()) {
                (Some(made), _) => {
                    slot.making = slot.next(&self.0, component, guests);
                    return Some(made.guest);
                }
                (None, Some(done)) if !slot.awaited => {
                    slot.awaited = true;
                    done
                }
                (None, Some(_)) => return None,
                (None, None) => {
                    slot.making = slot.next(&self.0, component, guests);
                    return None;
                }
            }
        };
        // A sequential client's next call often comes before the instance
        // for it is done: waiting for the rest beats starting over.
        let _ = tokio::time::timeout(WAIT_FOR_MAKING, done.wait_for(|done| *done)).await;
        let mut slot = self.lock();
        slot.awaited = false;
        let made = slot.ready.take()?;
        slot.making = slot.next(&self.0, component, guests);
        Some(made.guest)
    }

    /// A call's instance took `took` to make (by the call or ahead of it):
    /// whether later calls' are worth making ahead.
    pub fn note_instantiation(&self, took: Duration) {
        let mut slot = self.lock();
        slot.typical.note(took);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Slot {
    /// Starts making the next instance ahead, if instances of this
    /// component are slow enough to make for that to pay; the receiver to
    /// wait on, as for [`make`].
    fn next(
        &self,
        slot: &Arc<Mutex<Slot>>,
        component: &ToolComponent,
        guests: &GuestPool,
    ) -> Option<watch::Receiver<bool>> {
        let worth = self.typical.at_least(WORTH_MAKING_AHEAD);
        worth.then(|| make(Arc::downgrade(slot), component, guests)).flatten()
    }
}

/// How long something a component's calls do typically takes (making an
/// instance, dropping a store): an exponential moving average weighing the
/// newest measurement by 1/4, so one slow case after an idle spell does not
/// flip a choice made on it. Empty until the first measurement.
#[derive(Clone, Copy, Default)]
pub(super) struct Typical(Option<Duration>);

impl Typical {
    /// Counts a new measurement, `took`, in.
    pub(super) fn note(&mut self, took: Duration) {
        self.0 = Some(self.0.map_or(took, |typical| (typical * 3 + took) / 4));
    }

    /// Whether it typically takes `bound` or more (false before any
    /// measurement).
    pub(super) fn at_least(self, bound: Duration) -> bool {
        self.0.is_some_and(|typical| typical >= bound)
    }
}

/// Starts making an instance of `component` into `slot`; `None` if every
/// place for one is taken.
fn make(
    slot: Weak<Mutex<Slot>>,
    component: &ToolComponent,
    guests: &GuestPool,
) -> Option<watch::Receiver<bool>> {
    let (done, making) = watch::channel(false);
    let code = component.code.clone();
    let grants = component.grants.clone();
    let budget = StoreBudget::for_call(&component.limits);
    let name = component.name.clone();
    let started = guests.spawn_ahead(move |place| async move {
        // Bounded like the call it is for: a start function that never
        // returns is dropped at the deadline, like a call would be.
        let made = tokio::time::timeout(budget.time_limit, Guest::ahead(&code, &grants, &budget)).await;
        let made = match made {
            Ok(Ok(guest)) => {
                tracing::debug!(component = name, "instance made ahead");
                Some(Made { guest, _place: place })
            }
            Ok(Err(err)) => {
                // The call that takes no instance makes its own and reports
                // the same failure to its caller.
                tracing::debug!(
                    component = name,
                    "cannot make an instance ahead: {}",
                    escaped(format!("{err:#}"))
                );
                None
            }
            Err(_) => {
                tracing::debug!(component = name, "making an instance ahead took longer than a call may");
                None
            }
        };
        // The component may be gone (replaced): then so is the instance.
        if let Some(slot) = slot.upgrade() {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            slot.ready = made;
            slot.making = None;
        }
        done.send_replace(true);
    });
    started.then_some(making)
}
