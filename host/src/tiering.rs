//! Tiered compilation: a component the compile cache does not have starts
//! serving from baseline code — Winch, which compiles in a fraction of
//! Cranelift's time — while its optimized code compiles in the background.
//! Later calls get the optimized code, swapped in the way `--watch` swaps a
//! new version ([`crate::mcp::ToolServer`]): every call is a fresh instance, so calls in
//! flight finish on the baseline code and the next one runs optimized code.
//! Only optimized code is cached, so a warm start loads it directly and
//! never runs baseline code.
//!
//! Each tier has its own wasmtime engine: Winch compiles for other settings
//! than Cranelift, and a store must come from its component's engine. The
//! baseline engine is configured like the optimizing one (same pool, fuel,
//! epoch interruption, stack; see [`build_engine`]) and joins the host's
//! [`Epochs`], so every limit and every stop holds on baseline code too. It
//! is built on first use and held only by baseline components and their
//! stores: once the last of them is gone, so is the engine. The swap itself
//! is the loader's ([`crate::loader::Loader::spawn_optimize`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, EngineWeak};

use crate::cache::{CacheOutcome, CompileCache};
use crate::engine::{EngineSettings, Epochs, Tier, build_engine};
use crate::log_text::escaped;
use crate::store::{CallState, host_linker};

/// Compiles components for the host: optimized code from the cache when it
/// has it; otherwise baseline code first (with tiering on), or optimized
/// code compiled now (with `--no-tiering`). Cheap to clone.
#[derive(Clone)]
pub struct Compiler {
    /// The optimizing engine every call ends up on.
    optimized: Engine,
    /// The host's imports, resolved for the optimizing engine.
    linker: Linker<CallState>,
    cache: CompileCache,
    /// `None` with `--no-tiering`.
    baseline: Option<Arc<BaselineEngine>>,
}

/// A component's code and what it runs with.
pub struct Compiled {
    /// The compiled component.
    pub component: Component,
    /// The host's imports, resolved for the component's engine.
    pub linker: Linker<CallState>,
    /// Which compiler made it.
    pub tier: Tier,
    /// Whether it came from the compile cache.
    pub cache: CacheOutcome,
}

/// What a component served from baseline code keeps until its optimized
/// code replaces it.
pub struct BaselineCode {
    /// The component's bytes, for the optimizing compile.
    bytes: Arc<[u8]>,
    /// When the baseline code was ready, to log how long it served.
    ready: Instant,
}

/// The baseline engine, built when a component first needs it and shared
/// while any baseline component or store holds it.
struct BaselineEngine {
    settings: EngineSettings,
    epochs: Epochs,
    current: Mutex<Option<EngineWeak>>,
}

impl Compiler {
    /// A compiler for `optimized` (whose imports `linker` resolves) and
    /// `cache`. With `tiering`, cold components get baseline code first, from
    /// an engine built with the same `settings` whose epochs join `epochs`.
    pub fn new(
        optimized: &Engine,
        cache: CompileCache,
        tiering: Option<(EngineSettings, Epochs)>,
    ) -> Result<Self> {
        let baseline = tiering.map(|(settings, epochs)| {
            Arc::new(BaselineEngine { settings, epochs, current: Mutex::default() })
        });
        Ok(Compiler { optimized: optimized.clone(), linker: host_linker(optimized)?, cache, baseline })
    }

    /// The first code for `bytes`: the cached optimized code if there is
    /// some, else baseline code (tiering on) or optimized code compiled now
    /// and cached. Blocks for the compile.
    pub fn first(&self, bytes: &[u8]) -> Result<Compiled> {
        if let Some(component) = self.cache.cached(&self.optimized, bytes) {
            return Ok(self.optimized_code(component, CacheOutcome::Hit));
        }
        let Some(baseline) = &self.baseline else { return self.optimize(bytes) };
        match baseline.compile(bytes) {
            Ok((component, linker)) => {
                let cache = match self.cache {
                    CompileCache::Dir { .. } => CacheOutcome::Miss,
                    CompileCache::Disabled => CacheOutcome::Disabled,
                };
                Ok(Compiled { component, linker, tier: Tier::Baseline, cache })
            }
            // Winch lacks some wasm proposals Cranelift has: such a
            // component is served once optimized code is ready, as without
            // tiering.
            Err(err) => {
                tracing::info!(
                    "no baseline code (optimizing before serving instead): {}",
                    escaped(format!("{err:#}"))
                );
                self.optimize(bytes)
            }
        }
    }

    /// Optimized code for `bytes`, compiled now and cached. Blocks for the
    /// compile.
    pub fn optimize(&self, bytes: &[u8]) -> Result<Compiled> {
        let (component, cache) = self.cache.compile(&self.optimized, bytes)?;
        Ok(self.optimized_code(component, cache))
    }

    fn optimized_code(&self, component: Component, cache: CacheOutcome) -> Compiled {
        Compiled { component, linker: self.linker.clone(), tier: Tier::Optimized, cache }
    }
}

impl BaselineEngine {
    /// Baseline code for `bytes`, and the host's imports resolved for it.
    fn compile(&self, bytes: &[u8]) -> Result<(Component, Linker<CallState>)> {
        let engine = self.engine()?;
        Ok((Component::new(&engine, bytes)?, host_linker(&engine)?))
    }

    /// The live baseline engine, or a new one.
    fn engine(&self) -> Result<Engine> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(engine) = current.as_ref().and_then(EngineWeak::upgrade) {
            return Ok(engine);
        }
        let engine = build_engine(&self.settings, Tier::Baseline).context("the baseline (Winch) engine")?;
        // Ticks and interrupts reach guests on this engine from now on.
        self.epochs.add(&engine);
        *current = Some(engine.weak());
        Ok(engine)
    }
}

impl BaselineCode {
    /// Baseline code made from `bytes`, ready now.
    pub fn new(bytes: Arc<[u8]>) -> Self {
        BaselineCode { bytes, ready: Instant::now() }
    }

    /// The component's bytes, for the optimizing compile.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }

    /// How long the baseline code has been ready.
    pub fn served_for(&self) -> Duration {
        self.ready.elapsed()
    }
}
