//! Opening files in a grant: only regular files and directories.
//!
//! wasmtime-wasi opens a file in a blocking thread of the runtime's pool.
//! Opening a FIFO blocks until the other end is opened too, which may be
//! never; the call ends at its `--timeout` but the thread stays stuck in
//! `open(2)` for good, and a tool could pile them up call after call. Some
//! devices block on open the same way. So `open-at` (the only way a guest
//! opens anything) is shadowed here: it looks at what the path names first
//! (`stat-at`, with the same path flags, through wasmtime-wasi's own
//! sandboxed lookup — a stat never blocks on a FIFO) and refuses FIFOs,
//! character and block devices, sockets and anything it cannot classify,
//! with `access`, before wasmtime-wasi's own `open-at` runs. A file opened
//! into the descriptors the host keeps for itself is closed again and
//! refused with `insufficient-memory` (see [`descriptors`]).
//!
//! Why this and not an open with `O_NONBLOCK` followed by `fstat`, which
//! would leave no window: wasmtime-wasi 48 does not let its caller add open
//! flags, and reimplementing its sandboxed open (the path walk that keeps a
//! guest inside its grant) to add one would put the sandbox's most delicate
//! code in our hands. The check costs one `stat` per open.
//!
//! What remains (time of check to time of use): between the check and the
//! open, something else can put a FIFO or a device at the checked path. A
//! guest cannot create one (WASI has no `mkfifo` or `mknod`), so this needs
//! such a node to exist inside a grant already — made by another process on
//! the host — and then a swap under the checked name: by that process, or
//! by a concurrent call renaming or relinking within a writable grant. Do
//! not put FIFOs or device nodes inside granted directories.

use std::os::fd::AsRawFd as _;

use anyhow::Result;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorType, ErrorCode, Host as _, HostDescriptor as _, OpenFlags, PathFlags,
};

use wasmtime_wasi::WasiView;

use super::{SandboxView, descriptors};

/// The `wasi:filesystem/types` instance wasmtime-wasi 48 defines (guests
/// importing an older 0.2 version are linked to it too).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

type OpenAtParams = (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags);

/// Replaces wasmtime-wasi's `[method]descriptor.open-at` with
/// [`open_at`]. Call after `wasmtime_wasi::p2::add_to_linker_async`.
pub fn add_to_linker<T: SandboxView + WasiView + 'static>(linker: &mut Linker<T>) -> Result<()> {
    linker.allow_shadowing(true);
    linker.instance(FILESYSTEM_TYPES)?.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, T>, (dir, path_flags, path, open_flags, flags): OpenAtParams| {
            Box::new(async move {
                Ok((open_at(store.data_mut(), dir, path_flags, path, open_flags, flags).await?,))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// `open-at`, for regular files and directories only.
async fn open_at<T: SandboxView + WasiView>(
    state: &mut T,
    dir: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Result<Resource<Descriptor>, ErrorCode>> {
    let call_id = state.sandbox().call_id().clone();
    let mut fs = state.filesystem();
    // A borrow of the same handle: `stat-at` must not consume the guest's.
    let same_dir = Resource::new_borrow(dir.rep());
    // An error here (nothing there yet — the open may create a regular
    // file — or nothing the guest may see) is left to the open to report.
    if let Ok(stat) = fs.stat_at(same_dir, path_flags, path.clone()).await
        // A symbolic link is only seen without `symlink-follow`: the open
        // then fails by itself, without blocking.
        && !matches!(
            stat.type_,
            DescriptorType::RegularFile | DescriptorType::Directory | DescriptorType::SymbolicLink
        )
    {
        tracing::warn!(
            call_id = &*call_id,
            // Debug-formatted: quoted, control characters escaped.
            path = ?path,
            kind = ?stat.type_,
            "refused to open a file that is not a regular file or a directory"
        );
        return Ok(Err(ErrorCode::Access));
    }
    let opened = match fs.open_at(dir, path_flags, path, open_flags, flags).await {
        Ok(opened) => opened,
        // The guest-visible error code, or a trap when it is the host's own.
        Err(err) => return Ok(Err(fs.convert_error_code(err)?)),
    };
    // Past the descriptors calls may share, the file is closed at once:
    // the rest is the host's, to make a neighbour's sandbox and serve.
    let table = state.ctx().table;
    let fd = match table.get(&opened)? {
        Descriptor::File(file) => file.file.as_raw_fd(),
        Descriptor::Dir(dir) => dir.dir.as_raw_fd(),
    };
    if descriptors::in_reserve(fd) {
        table.delete(opened)?;
        tracing::debug!(call_id = &*call_id, "refused an open: the descriptors calls may share are in use");
        return Ok(Err(ErrorCode::InsufficientMemory));
    }
    Ok(Ok(opened))
}
