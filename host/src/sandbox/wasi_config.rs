//! `wasi:config/store`: settings and API keys for components written for
//! other hosts, from `[component.config]`, `--config-var` and
//! `--config-var-file`. Read-only and per component; nothing but the keys the
//! user set.
//!
//! Components in the wild import it at two versions with the same
//! functions: `@0.2.0-rc.1`, which `wasmtime-wasi-config` implements, and
//! the older `@0.2.0-draft` (the peer host's example components). Both are
//! served from the same values; the draft through bindings of its own here.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use wasmtime::component::{HasData, Linker};
use wasmtime_wasi_config::{WasiConfig, WasiConfigVariables};

use super::SandboxView;

/// The `@0.2.0-draft` interface (the same functions as `@0.2.0-rc.1`).
mod draft {
    wasmtime::component::bindgen!({
        inline: "
            package wasi:config@0.2.0-draft;
            interface store {
                variant error { upstream(string), io(string) }
                get: func(key: string) -> result<option<string>, error>;
                get-all: func() -> result<list<tuple<string, string>>, error>;
            }
            world imports { import store; }
        ",
        imports: { default: trappable },
    });
}
use draft::wasi::config::store as draft_store;

/// A component's configuration values, shared by its calls.
#[derive(Clone, Default)]
pub struct ConfigVars {
    pairs: Arc<BTreeMap<String, String>>,
    /// The same, as `wasmtime-wasi-config` holds them.
    vars: Arc<WasiConfigVariables>,
}

impl ConfigVars {
    /// These values (a later key replaces an earlier one).
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let pairs: BTreeMap<String, String> = pairs.into_iter().collect();
        let vars = pairs.iter().map(|(key, value)| (key.as_str(), value.as_str())).collect();
        ConfigVars { pairs: Arc::new(pairs), vars: Arc::new(vars) }
    }

    /// The keys set, for messages (values are often secrets: never shown).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.pairs.keys().map(String::as_str)
    }
}

impl std::fmt::Debug for ConfigVars {
    /// Keys only: a value may be an API key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.keys()).finish()
    }
}

/// Adds `wasi:config/store` at both versions to `linker`, reading the
/// store's sandbox's values.
pub fn add_to_linker<T: SandboxView + 'static>(linker: &mut Linker<T>) -> Result<()> {
    wasmtime_wasi_config::add_to_linker(linker, rc1::<T>)?;
    draft_store::add_to_linker::<T, Draft>(linker, |data: &mut T| DraftView(&data.sandbox().config().pairs))?;
    Ok(())
}

fn rc1<T: SandboxView>(data: &mut T) -> WasiConfig<'_> {
    WasiConfig::from(&*data.sandbox().config().vars)
}

struct Draft;

impl HasData for Draft {
    type Data<'a> = DraftView<'a>;
}

/// The draft interface's view of a store's values.
struct DraftView<'a>(&'a BTreeMap<String, String>);

impl draft_store::Host for DraftView<'_> {
    fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, draft_store::Error>> {
        Ok(Ok(self.0.get(&key).cloned()))
    }

    fn get_all(&mut self) -> wasmtime::Result<Result<Vec<(String, String)>, draft_store::Error>> {
        Ok(Ok(self.0.iter().map(|(key, value)| (key.clone(), value.clone())).collect()))
    }
}
