//! Step 5 of a call's life: `tool.cleanup` for a call that did not return
//! normally, in a new store and instance with its own fuel and deadline, so
//! external state the call held is released. (The instance may have been
//! made ahead: `component::ahead`.)

use std::sync::Arc;

use super::CallRunner;
use super::outcome::CleanupOutcome;
use crate::ask::CallChannel;
use crate::cancellation::CallCancellation;
use crate::component::ToolComponent;
use crate::contract::types::StopReason;
use crate::log_text::escaped;
use crate::sandbox::StoreBudget;

impl CallRunner {
    /// Runs the component's `cleanup` for `call_id` in a new store.
    pub(super) async fn cleanup(
        &self,
        component: &ToolComponent,
        call_id: &Arc<str>,
        reason: StopReason,
    ) -> CleanupOutcome {
        self.stats.cleanup_ran();
        let limits = &component.limits;
        let budget = StoreBudget::for_cleanup(limits);
        let mut detached = CallChannel::detached(self.stats.clone());
        detached.limit_payloads(limits);
        // An instance made ahead serves a cleanup as well as a call: its
        // store differs from a call's only in the fuel and time bound here.
        let (made, _) = component
            .ahead
            .guest(component, &self.guests, &budget, CallCancellation::new(), call_id.clone(), detached)
            .await;
        let mut guest = match made {
            Ok(guest) => guest,
            Err(err) => {
                tracing::warn!(call_id = &**call_id, "cannot create a store for cleanup: {err:#}");
                return CleanupOutcome::Failed;
            }
        };
        let store_live = self.stats.store();
        let mut run = self.guests.spawn({
            let call_id = call_id.clone();
            async move {
                let done = guest.cleanup(&call_id, reason).await;
                (done, guest)
            }
        });
        // The timeout fires on the protocol threads whatever the cleanup
        // does; stopping `run` then drops it and its store.
        match tokio::time::timeout(limits.cleanup_timeout, &mut run).await {
            Ok((done, mut guest)) => {
                // The cleanup is over when it returns: what it opened is
                // closed now, and its store goes as a call's does, behind
                // the call's end for an interpreter, whose slot takes a
                // fifth of a call to reset (`component::behind`).
                guest.state().release();
                component.behind.drop_store((guest, store_live), &self.guests, None);
                match done {
                    Ok(()) => CleanupOutcome::Done,
                    Err(err) => {
                        // The error may quote the guest (names from its custom sections).
                        let err = escaped(format!("{err:#}"));
                        tracing::warn!(call_id = &**call_id, component = %component.name, "cleanup trapped: {err}");
                        CleanupOutcome::Failed
                    }
                }
            }
            Err(_) => {
                self.interrupt_guests();
                run.stop().await;
                tracing::warn!(
                    call_id = &**call_id,
                    component = %component.name,
                    "cleanup did not finish within {:?} and was stopped",
                    limits.cleanup_timeout
                );
                CleanupOutcome::Failed
            }
        }
    }
}
