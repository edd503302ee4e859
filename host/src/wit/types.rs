//! The host side of `mcp:tool/types`: the interface has no functions, only
//! the records every other interface uses. What the host needs to know
//! about those records lives here.

use wasmtime::component::HasData;

use crate::contract::types::{Host, StopReason};

/// The (empty) host of `types`; its linker entry exists so components that
/// import the interface resolve.
pub struct TypesHost;

impl Host for TypesHost {}

impl HasData for TypesHost {
    type Data<'a> = TypesHost;
}

/// A stop reason's name in logs (the WIT case name).
pub fn stop_reason_name(reason: StopReason) -> &'static str {
    match reason {
        StopReason::ClientCancelled => "client-cancelled",
        StopReason::DeadlineExceeded => "deadline-exceeded",
        StopReason::Shutdown => "shutdown",
        StopReason::NoAnswer => "no-answer",
        StopReason::LimitExceeded => "limit-exceeded",
    }
}
