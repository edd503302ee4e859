//! One configured component, loaded: its file compiled and checked
//! ([`crate::component`]), then given its grants, limits and approval
//! rules. The same steps at start and when `--watch` loads a new version.

use anyhow::Result;
use wasmtime::component::Linker;

use crate::cache::CompileCache;
use crate::call::CallRunner;
use crate::component::ToolComponent;
use crate::config::ComponentSettings;
use crate::registry;
use crate::store::CallState;

/// What loading needs beyond the runner's engine and guest threads.
#[derive(Clone)]
pub struct Loader {
    /// The host's imports, resolved once per engine.
    pub linker: Linker<CallState>,
    /// Compiled components kept between runs.
    pub cache: CompileCache,
}

impl Loader {
    /// Loads the component `settings` names (for an `oci://` component, the
    /// file already pulled into the store) with `runner`'s engine.
    pub async fn load(&self, settings: &ComponentSettings, runner: &CallRunner) -> Result<ToolComponent> {
        let mut component =
            ToolComponent::load(&settings.path, runner.engine(), &self.linker, &self.cache, runner.guests())
                .await?;
        if let Some(reference) = &settings.oci {
            component.name = registry::short_name(reference);
        }
        component.grants = settings.grants.clone();
        component.limits = settings.limits.clone();
        component.approvals = settings.approvals.clone();
        Ok(component)
    }
}
