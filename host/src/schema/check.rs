//! Running schema checks without letting one cost the host: cheap ones
//! inline, costly ones on a few blocking threads, each within its deadline.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use super::{CHECK_THREADS, Schema};

/// Why a check did not pass.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckFailure {
    /// The instance breaks the schema: the first violation.
    Invalid(String),
    /// The check did not end within the time the call had left.
    TooSlow(Duration),
}

/// Runs schema checks: cheap ones inline, the rest on at most
/// [`CHECK_THREADS`] blocking threads, each bounded by a deadline.
#[derive(Clone, Debug)]
pub struct Checker {
    pub(super) threads: Arc<Semaphore>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker { threads: Arc::new(Semaphore::new(CHECK_THREADS)) }
    }
}

impl Checker {
    /// Checks `instance` against `schema`, giving up at `deadline` (the
    /// caller's answer then says so; the thread finishes in the background,
    /// still holding its permit).
    pub async fn check(
        &self,
        schema: &Arc<Schema>,
        instance: Arc<Value>,
        deadline: tokio::time::Instant,
    ) -> Result<(), CheckFailure> {
        if schema.passes_unchecked(&instance) {
            return Ok(());
        }
        if schema.inline {
            return schema.first_violation(&instance).map_or(Ok(()), |why| Err(CheckFailure::Invalid(why)));
        }
        let budget = deadline.saturating_duration_since(tokio::time::Instant::now());
        let run = async {
            let permit =
                self.threads.clone().acquire_owned().await.expect("the check semaphore is never closed");
            let schema = schema.clone();
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                schema.first_violation(&instance)
            })
            .await
        };
        match tokio::time::timeout_at(deadline, run).await {
            Ok(Ok(None)) => Ok(()),
            Ok(Ok(Some(why))) => Err(CheckFailure::Invalid(why)),
            Ok(Err(panicked)) => Err(CheckFailure::Invalid(format!("the schema check failed: {panicked}"))),
            Err(_) => Err(CheckFailure::TooSlow(budget)),
        }
    }
}
