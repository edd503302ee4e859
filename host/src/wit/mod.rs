//! The host's side of the `mcp:tool` contract, one file per WIT interface,
//! as wasmtime-wasi-http does it: each interface gets a view into the
//! call's store ([`ClientView`], [`CancellationView`]) and knows nothing
//! else of it. The contract's types themselves are [`crate::contract`].

pub mod cancellation;
pub mod client;
pub mod types;

use anyhow::Result;
use wasmtime::component::Linker;

use crate::contract;
pub use cancellation::{CancellationCtxView, CancellationView};
pub use client::{ClientCtxView, ClientView};

/// Adds the `mcp:tool` interfaces a tool may import — `types`,
/// `cancellation` and `client` — to `linker`, each reaching the store
/// through its view. Interface by interface: the world-level `add_to_linker`
/// would also add `wasi:io`, which WASI has already provided.
pub fn add_to_linker<T: CancellationView + ClientView + 'static>(linker: &mut Linker<T>) -> Result<()> {
    contract::types::add_to_linker::<T, types::TypesHost>(linker, |_| types::TypesHost)?;
    contract::cancellation::add_to_linker::<T, cancellation::HasCancellation>(linker, T::cancellation)?;
    contract::client::add_to_linker::<T, client::HasClient>(linker, T::client)?;
    Ok(())
}
