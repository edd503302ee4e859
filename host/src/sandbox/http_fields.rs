//! `wasi:http/types.fields`, charged to the call: the header names and
//! values a guest puts into `fields` live in host memory, so they count
//! against the call's memory budget (`--max-memory`, and with it the
//! host's `--max-total-memory`, see [`super::memory`]).
//!
//! wasmtime-wasi-http bounds each `fields` (128 KiB) but not how many a
//! call makes: 4,000 of them, each filled from one small guest buffer, held
//! 457 MiB of host memory under `--max-memory 32MiB`. The functions that
//! add bytes to a `fields` (append, set, from-list, clone) are defined
//! again over wasmtime-wasi-http's own (the linker's shadowing): each
//! charges first, then calls wasmtime-wasi-http's implementation. A call
//! past its budget traps and is answered naming the limit, like a guest
//! that grows its memory too far.
//!
//! Charges are not given back when a `fields` is dropped (that would mean
//! redefining the resource itself): what a call puts into header fields
//! counts until it ends. Real tools send a few kilobytes of headers per
//! request, far inside any memory limit.

use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi_http::p2::HeaderResult;
use wasmtime_wasi_http::p2::bindings::http::types::{HeaderError, Host as _, HostFields};
use wasmtime_wasi_http::{FieldMap, WasiHttpCtxView, WasiHttpView};

use super::SandboxView;

/// The `wasi:http/types` version wasmtime-wasi-http defines; imports of
/// earlier 0.2 versions resolve to it.
const TYPES: &str = "wasi:http/types@0.2.12";

/// What an `http::HeaderMap` entry costs beyond its name and value
/// (index, bucket, `Bytes` headers), rounded up.
const ENTRY_OVERHEAD: usize = 64;

/// Redefines the byte-adding `fields` functions of `linker` (which already
/// has wasmtime-wasi-http's) to charge the call first.
pub fn add_to_linker<T: SandboxView + WasiHttpView + 'static>(linker: &mut Linker<T>) -> Result<()> {
    linker.allow_shadowing(true);
    let mut http = linker.instance(TYPES)?;
    http.func_wrap(
        "[method]fields.append",
        |mut store: StoreContextMut<'_, T>, (fields, name, value): (Resource<FieldMap>, String, Vec<u8>)| {
            charge(store.data_mut(), entry_size(&name, value.len()))?;
            let mut view = store.data_mut().http();
            let result = HostFields::append(&mut view, fields, name, value);
            Ok((header_result(&mut view, result)?,))
        },
    )?;
    http.func_wrap(
        "[method]fields.set",
        |mut store: StoreContextMut<'_, T>,
         (fields, name, values): (Resource<FieldMap>, String, Vec<Vec<u8>>)| {
            let bytes = values.iter().map(|value| entry_size(&name, value.len())).sum();
            charge(store.data_mut(), bytes)?;
            let mut view = store.data_mut().http();
            let result = HostFields::set(&mut view, fields, name, values);
            Ok((header_result(&mut view, result)?,))
        },
    )?;
    http.func_wrap(
        "[static]fields.from-list",
        |mut store: StoreContextMut<'_, T>, (entries,): (Vec<(String, Vec<u8>)>,)| {
            let bytes = entries.iter().map(|(name, value)| entry_size(name, value.len())).sum();
            charge(store.data_mut(), bytes)?;
            let mut view = store.data_mut().http();
            let result = HostFields::from_list(&mut view, entries);
            Ok((header_result(&mut view, result)?,))
        },
    )?;
    http.func_wrap(
        "[method]fields.clone",
        |mut store: StoreContextMut<'_, T>, (fields,): (Resource<FieldMap>,)| {
            let bytes = {
                let view = store.data_mut().http();
                let map = view.table.get(&fields)?;
                map.iter().map(|(name, value)| entry_size(name.as_str(), value.len())).sum()
            };
            charge(store.data_mut(), bytes)?;
            let mut view = store.data_mut().http();
            Ok((HostFields::clone(&mut view, fields)?,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Host bytes of one header entry.
fn entry_size(name: &str, value: usize) -> usize {
    name.len().saturating_add(value).saturating_add(ENTRY_OVERHEAD)
}

/// Charges `bytes` to the call's memory budget, or traps: the call's
/// outcome then names the budget it ran out of.
fn charge<T: SandboxView>(data: &mut T, bytes: usize) -> wasmtime::Result<()> {
    let sandbox = data.sandbox();
    if sandbox.memory().charge(bytes) {
        return Ok(());
    }
    tracing::debug!(call_id = &**sandbox.call_id(), bytes, "header fields past the call's memory budget");
    Err(wasmtime::format_err!("header fields past the call's memory budget"))
}

/// wasmtime-wasi-http's result as the guest gets it: its `header-error`,
/// or a trap for anything else.
fn header_result<R>(
    view: &mut WasiHttpCtxView<'_>,
    result: HeaderResult<R>,
) -> wasmtime::Result<Result<R, HeaderError>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(err) => Ok(Err(view.convert_header_error(err)?)),
    }
}
