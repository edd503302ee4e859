//! The sandbox one call runs in: a fresh wasmtime `Store` holding exactly the
//! WASI capabilities the user granted, the call's memory and fuel limits, and
//! its cancellation state.
//!
//! Deny by default: no preopened directories, no environment variables, no
//! sockets, no name lookups, no stdin. A guest's stdout and stderr go to the
//! host's stderr, never to the protocol stream on stdout.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::cancellation::CallCancellation;
use crate::client::ClientLink;

/// A host directory the user made visible to tools (`--dir HOST[::GUEST][:ro]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the guest sees it.
    pub guest: String,
    /// Whether the guest may only read.
    pub read_only: bool,
}

impl std::str::FromStr for DirGrant {
    type Err = String;

    /// `HOST`, `HOST::GUEST`, either with a `:ro` suffix for read-only.
    fn from_str(spec: &str) -> Result<Self, String> {
        let (spec, read_only) = match spec.strip_suffix(":ro") {
            Some(rest) => (rest, true),
            None => (spec, false),
        };
        let (host, guest) = match spec.split_once("::") {
            Some((host, guest)) => (host, guest.to_string()),
            None => (spec, spec.to_string()),
        };
        if host.is_empty() || guest.is_empty() {
            return Err(format!("`{spec}`: expected HOST[::GUEST][:ro]"));
        }
        Ok(DirGrant { host: PathBuf::from(host), guest, read_only })
    }
}

/// An environment variable the user made visible to tools (`--env KEY[=VALUE]`;
/// a bare `KEY` passes the host's value through).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvGrant {
    /// The variable's name.
    pub key: String,
    /// Its value inside the sandbox.
    pub value: String,
}

impl std::str::FromStr for EnvGrant {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        match spec.split_once('=') {
            Some(("", _)) => Err(format!("`{spec}`: empty variable name")),
            Some((key, value)) => Ok(EnvGrant { key: key.into(), value: value.into() }),
            None => match std::env::var(spec) {
                Ok(value) => Ok(EnvGrant { key: spec.into(), value }),
                Err(_) => Err(format!("`{spec}` is not set in the host environment")),
            },
        }
    }
}

/// Everything the user granted to the tools, applied to every call.
#[derive(Clone, Debug, Default)]
pub struct Grants {
    /// Directories tools may see.
    pub dirs: Vec<DirGrant>,
    /// Environment variables tools may see.
    pub env: Vec<EnvGrant>,
}

impl Grants {
    /// Checks that every granted directory exists, so a typo fails at start
    /// rather than on the first call.
    pub fn validate(&self) -> Result<()> {
        for dir in &self.dirs {
            if !dir.host.is_dir() {
                bail!("--dir {}: not a directory", dir.host.display());
            }
        }
        Ok(())
    }

    fn wasi_ctx(&self) -> Result<WasiCtx> {
        let mut builder = WasiCtxBuilder::new();
        // Guest output must never reach stdout: that is the protocol stream.
        builder
            .stdout(tokio::io::stderr())
            .stderr(tokio::io::stderr())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for env in &self.env {
            builder.env(&env.key, &env.value);
        }
        for dir in &self.dirs {
            let perms = if dir.read_only { FsPerms::ReadOnly } else { FsPerms::ReadWrite };
            builder
                .preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("cannot open --dir {}", dir.host.display()))?;
        }
        Ok(builder.build())
    }
}

/// The data of one call's `Store`.
pub struct CallState {
    wasi: WasiCtx,
    /// Host-side handles the guest holds (files, pollables, `cancelled`).
    /// Dropping the store closes all of them.
    pub table: ResourceTable,
    /// Memory accounting for `--max-memory`.
    pub memory: MemoryLimiter,
    /// This call's stop signal, handed to the guest as `cancelled`.
    pub cancellation: CallCancellation,
    /// Which call this store serves, for the guest's log lines.
    pub call_id: Arc<str>,
    /// The call's line to the MCP client (logging, progress, questions).
    pub client: ClientLink,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Refuses memory growth past the limit and remembers that it did, so a trap
/// that follows (a Rust guest aborts on allocation failure) is reported as
/// "memory limit exceeded" rather than as a crash.
pub struct MemoryLimiter {
    max_memory: usize,
    hit: bool,
}

impl MemoryLimiter {
    /// Whether the guest asked for more memory than allowed.
    pub fn was_hit(&self) -> bool {
        self.hit
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far beyond any real tool.
        Ok(desired <= 1_000_000)
    }
}

/// What a new store is limited to.
pub struct StoreBudget {
    /// Fuel; ignored when the engine does not meter fuel.
    pub fuel: Option<u64>,
    /// Linear memory in bytes.
    pub max_memory: usize,
}

/// Builds the store for one call (or one cleanup, or one `list-tools`).
pub fn new_store(
    engine: &Engine,
    grants: &Grants,
    budget: &StoreBudget,
    cancellation: CallCancellation,
    call_id: Arc<str>,
    client: ClientLink,
) -> Result<Store<CallState>> {
    let state = CallState {
        wasi: grants.wasi_ctx()?,
        table: ResourceTable::new(),
        memory: MemoryLimiter { max_memory: budget.max_memory, hit: false },
        cancellation,
        call_id,
        client,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.memory);
    // `get_fuel` fails when the engine was built without fuel metering
    // (`--fuel 0`); then only the epoch-driven deadlines bound the call.
    if let Some(fuel) = budget.fuel
        && store.get_fuel().is_ok()
    {
        store.set_fuel(fuel)?;
    }
    // Yield to the async runtime on every epoch tick, so a guest that computes
    // never holds a runtime thread for longer than one tick, and so the host
    // regains control promptly when a call is cancelled (the canceller bumps
    // the epoch itself). Stopping is done by dropping the call future.
    store.set_epoch_deadline(1);
    // `yield_now` rather than wasmtime's own yield: tokio then runs the
    // worker's other tasks (the protocol, other calls) before resuming the
    // guest, instead of resuming it at once from the worker's LIFO slot.
    store.epoch_deadline_callback(|_| Ok(UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now()))));
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_grants_parse_host_guest_and_read_only() {
        let grant: DirGrant = "/data::/mnt:ro".parse().unwrap();
        assert_eq!(grant, DirGrant { host: "/data".into(), guest: "/mnt".into(), read_only: true });
        let grant: DirGrant = "/data".parse().unwrap();
        assert_eq!(grant.guest, "/data");
        assert!(!grant.read_only);
        assert!("::/mnt".parse::<DirGrant>().is_err());
    }

    #[test]
    fn env_grants_take_a_value_or_pass_the_hosts_through() {
        let grant: EnvGrant = "MODE=fast".parse().unwrap();
        assert_eq!(grant, EnvGrant { key: "MODE".into(), value: "fast".into() });
        assert!("MCP_WASM_HOST_SURELY_UNSET_VAR".parse::<EnvGrant>().is_err());
        assert!("=x".parse::<EnvGrant>().is_err());
    }
}
