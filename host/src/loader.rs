//! One configured component, loaded: its file compiled and checked
//! ([`crate::component`]), then given its grants, limits and approval
//! rules. The same steps at start and when `--watch` loads a new version.
//! A component loaded from baseline code gets its optimized code later
//! ([`Loader::spawn_optimize`], see [`crate::tiering`]).

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow};

use crate::call::CallRunner;
use crate::component::{ToolComponent, apply_selection};
use crate::config::ComponentSettings;
use crate::log_text::error_chain;
use crate::mcp::ToolServer;
use crate::registry;
use crate::tiering::Compiler;

/// What loading needs beyond the runner's guest threads.
#[derive(Clone)]
pub struct Loader {
    /// Compiles components (or loads them from the compile cache), with
    /// the host's imports resolved once per engine.
    pub compiler: Compiler,
}

impl Loader {
    /// Loads the component `settings` names (for an `oci://` component, the
    /// file already pulled into the store), running list-tools on `runner`'s
    /// guest threads.
    pub async fn load(&self, settings: &ComponentSettings, runner: &CallRunner) -> Result<ToolComponent> {
        let mut component = ToolComponent::load(&settings.path, &self.compiler, runner.guests()).await?;
        if let Some(reference) = &settings.oci {
            component.name = registry::short_name(reference);
        }
        component.grants = settings.grants.clone();
        component.limits = settings.limits.clone();
        component.approvals = settings.approvals.clone();
        component.scopes = settings.scopes.clone();
        let tools = std::mem::take(&mut component.tools);
        component.tools = apply_selection(&settings.selection, tools)
            .with_context(|| component.path.display().to_string())?;
        if !settings.selection.prefix.is_empty() {
            component.offers.apply_prefix(&settings.selection.prefix);
        }
        Ok(component)
    }

    /// If component `index` of `server` runs baseline code, compiles its
    /// optimized code in the background and swaps it in when ready (the
    /// hook to call once a component is being served).
    pub fn spawn_optimize(&self, server: &ToolServer, index: usize) {
        let Some(baseline) = server.component(index) else { return };
        let Some(code) = &baseline.baseline else { return };
        let (compiler, bytes) = (self.compiler.clone(), code.bytes().clone());
        let (done, compiled) = tokio::sync::oneshot::channel();
        // A plain thread rather than `spawn_blocking`: the compile takes
        // seconds and must not hold one of the runtime's blocking threads
        // (WASI file I/O runs there).
        let started = Instant::now();
        let thread = std::thread::Builder::new().name("optimize".into()).spawn(move || {
            let _ = done.send(compiler.optimize(&bytes));
        });
        if let Err(err) = thread {
            tracing::warn!(component = %baseline.name, "cannot start the optimizing compile: {err}");
            return;
        }
        let server = server.clone();
        tokio::spawn(async move {
            let compiled = compiled.await.unwrap_or_else(|_| Err(anyhow!("the compile thread panicked")));
            let compile_ms = started.elapsed().as_secs_f64() * 1e3;
            let swapped = compiled.and_then(|compiled| {
                let optimized = baseline.with_code(&compiled.component, &compiled.linker)?;
                server.upgrade_component(index, &baseline, optimized)
            });
            let served_ms = baseline.baseline.as_ref().map(|code| code.served_for().as_secs_f64() * 1e3);
            let replaced = swapped.is_ok();
            match swapped {
                Ok(true) => tracing::info!(
                    component = %baseline.name,
                    tier = "optimized",
                    compile_ms,
                    baseline_served_ms = served_ms,
                    "optimized code replaced the baseline code; calls from now on run it"
                ),
                Ok(false) => tracing::info!(
                    component = %baseline.name,
                    "optimized code not swapped in: a new version was loaded meanwhile (--watch)"
                ),
                Err(err) => tracing::warn!(
                    component = %baseline.name,
                    reason = %error_chain(&err),
                    "cannot optimize; the baseline code keeps serving"
                ),
            }
            // Still serving (the optimizing compile failed): the baseline
            // engine stays, and there is no release to wait for and log.
            if !replaced {
                return;
            }
            // The compiler's code has nothing left to do until a reload.
            crate::code_pages::unmap_run_once_code();
            // The baseline engine goes once no component or call holds it.
            let engine = baseline.code.engine().weak();
            drop(baseline);
            let swapped_at = Instant::now();
            while engine.upgrade().is_some() {
                tokio::time::sleep(RELEASE_POLL).await;
            }
            tracing::info!(
                after_ms = swapped_at.elapsed().as_secs_f64() * 1e3,
                "the baseline engine was released (no component or call holds it)"
            );
        });
    }

    /// [`Loader::spawn_optimize`] for every component of `server`.
    pub fn spawn_optimize_all(&self, server: &ToolServer) {
        (0..server.component_count()).for_each(|index| self.spawn_optimize(server, index));
    }
}

/// How often to look whether the baseline engine is gone (only for the log).
const RELEASE_POLL: Duration = Duration::from_millis(50);
