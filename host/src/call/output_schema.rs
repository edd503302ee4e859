//! A successful tool result checked against the tool's output schema,
//! within the call's slot and deadline: a hostile output schema costs this
//! call's time, not the host's.

use std::sync::Arc;

use serde_json::Value;

use super::CallRunner;
use crate::component::ToolComponent;
use crate::contract::types::CallResult;
use crate::limits::HumanDuration;
use crate::schema::CheckFailure;

impl CallRunner {
    /// Why a successful result breaks the tool's output schema, if it does.
    /// Structured content that is not JSON at all is left for the result
    /// mapping to report.
    pub(super) async fn check_output(
        &self,
        component: &ToolComponent,
        tool: &str,
        result: &CallResult,
        deadline: tokio::time::Instant,
    ) -> Option<String> {
        let spec = component.tools.iter().find(|spec| spec.name == tool)?;
        let schema = spec.output.as_ref()?;
        if result.is_error {
            return None;
        }
        let Some(text) = result.structured_content.as_deref() else {
            return Some("it declares an output schema but returned no structured content".into());
        };
        let structured: Value = serde_json::from_str(text).ok()?;
        match self.checker.check(schema, Arc::new(structured), deadline).await {
            Ok(()) => None,
            Err(CheckFailure::Invalid(why)) => Some(why),
            Err(CheckFailure::TooSlow(_)) => Some(format!(
                "checking it took longer than the call had left of its time limit of {} (--timeout)",
                HumanDuration(component.limits.timeout)
            )),
        }
    }
}
