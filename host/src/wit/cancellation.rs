//! The host side of `mcp:tool/cancellation`: the guest's `cancelled`
//! resource, backed by the call's [`CallCancellation`].
//!
//! A guest's handle is the generated `Cancelled` type; the table entry
//! behind it is a [`GuestCancelled`]. The handle is converted by its
//! representation (the table checks the entry's type on every access), so
//! the contract's generated types need no host code.

use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::p2::{DynPollable, Pollable};

use crate::cancellation::CallCancellation;
use crate::contract::cancellation::{Cancelled, Host, HostCancelled};
use crate::contract::types::StopReason;

/// What `cancellation` needs of a call's store: the table its handles live in.
pub struct CancellationCtxView<'a> {
    /// The store's resource table.
    pub table: &'a mut ResourceTable,
}

/// A store that gives the `cancellation` interface its view.
pub trait CancellationView: Send {
    /// The view into this store.
    fn cancellation(&mut self) -> CancellationCtxView<'_>;
}

/// The `HasData` marker that hands `cancellation` its view.
pub struct HasCancellation;

impl HasData for HasCancellation {
    type Data<'a> = CancellationCtxView<'a>;
}

/// The table entry behind a guest's `cancelled` handle.
pub struct GuestCancelled(CallCancellation);

#[wasmtime_wasi::async_trait]
impl Pollable for GuestCancelled {
    async fn ready(&mut self) {
        self.0.cancelled().await
    }
}

/// Puts `cancellation` in `table` and returns the handle the guest gets
/// (owned by the guest, which drops it).
pub fn hand_to_guest(
    table: &mut ResourceTable,
    cancellation: &CallCancellation,
) -> wasmtime::Result<Resource<Cancelled>> {
    let entry = table.push(GuestCancelled(cancellation.clone()))?;
    Ok(Resource::new_own(entry.rep()))
}

/// The table entry behind `handle`, borrowed.
fn entry(handle: &Resource<Cancelled>) -> Resource<GuestCancelled> {
    Resource::new_borrow(handle.rep())
}

impl Host for CancellationCtxView<'_> {}

impl HostCancelled for CancellationCtxView<'_> {
    fn is_cancelled(&mut self, this: Resource<Cancelled>) -> wasmtime::Result<bool> {
        Ok(self.table.get(&entry(&this))?.0.is_cancelled())
    }

    fn reason(&mut self, this: Resource<Cancelled>) -> wasmtime::Result<Option<StopReason>> {
        Ok(self.table.get(&entry(&this))?.0.reason())
    }

    fn subscribe(&mut self, this: Resource<Cancelled>) -> wasmtime::Result<Resource<DynPollable>> {
        // Checked first, so a stale or foreign handle traps here. The
        // pollable borrows the resource; the table keeps the parent alive
        // until every child pollable is dropped.
        self.table.get(&entry(&this))?;
        wasmtime_wasi::p2::subscribe(self.table, entry(&this))
    }

    fn drop(&mut self, this: Resource<Cancelled>) -> wasmtime::Result<()> {
        self.table.delete(Resource::<GuestCancelled>::new_own(this.rep()))?;
        Ok(())
    }
}
