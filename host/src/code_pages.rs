//! Once start-up is over, the host stops mapping the code only start-up ran
//! (and, after a cold start, the optimizing compiler's).
//!
//! Start-up runs a great deal of code once and never again: the dynamic
//! loader's relocations, the command line, the settings, the linker of
//! every WASI interface, wasmtime's loading of a compiled component. The
//! kernel maps the binary's pages into the process as they are first
//! touched, 64 KiB around each (fault-around), and they stay mapped, so
//! resident memory kept counting them for the life of the process.
//!
//! [`unmap_run_once_code`] drops those mappings (`MADV_DONTNEED` on the
//! binary's read-only segments). The pages stay in the page cache, so what
//! calls run next is mapped again by a minor fault, and what only start-up
//! ran is no longer counted. Only segments the process never writes are
//! touched: their pages are the file's, so dropping them loses nothing (and
//! the file cannot change under a running program: writing to it fails with
//! `ETXTBSY`). The relocated (RELRO) and writable segments, whose pages
//! differ from the file, are left alone.
//!
//! Measured on a `dist` build serving the demo, after 20 000 `echo` calls at
//! 32 in flight: 25.0 MiB resident before, 17.7 MiB with this (the code
//! 13.9 → 8.0 MiB, the read-only data 2.8 → 1.4 MiB); calls a second and
//! warm starts the same (BENCHMARKS.md). What is left of the code is what
//! a call runs: one `echo` faults about 120 pages of the binary in, each
//! with its 64 KiB around it.
//!
//! A breakpoint or uprobe set in the host's code before this runs is
//! dropped with the mapping (the kernel put it in a private copy of the
//! page, and the page comes back from the file): docs/operating.md tells
//! whoever debugs the host to attach after the `debug` line below.
//!
//! It runs when the components have loaded (`startup`), and again when a
//! component's optimized code replaced its baseline code (`loader`): the
//! optimizing compiler, several MiB of code, then has nothing left to do
//! until a reload.

/// Drops the process's mappings of its own read-only code and data; see
/// the module's doc. Linux only; elsewhere it does nothing.
pub fn unmap_run_once_code() {
    #[cfg(target_os = "linux")]
    {
        let dropped = linux::drop_read_only_segments();
        tracing::debug!(bytes = dropped, "unmapped the code run once (paged in again as calls use it)");
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::c_void;

    /// `MADV_DONTNEED` on every page of the main program's loaded segments
    /// that are neither writable nor under `PT_GNU_RELRO`; the bytes dropped.
    pub(super) fn drop_read_only_segments() -> usize {
        let mut dropped = 0usize;
        // SAFETY: `dl_iterate_phdr` calls `main_program` with a valid
        // `dl_phdr_info` for each loaded object, the main program first;
        // `dropped` outlives the call.
        unsafe { libc::dl_iterate_phdr(Some(main_program), (&raw mut dropped).cast()) };
        dropped
    }

    /// The callback of `dl_iterate_phdr`: handles the first object (the
    /// main program) and stops the iteration.
    unsafe extern "C" fn main_program(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> i32 {
        // SAFETY: the loader hands a valid `info` whose `dlpi_phdr` points at
        // `dlpi_phnum` program headers; `data` is the `usize` passed above.
        let (info, dropped) = unsafe { (&*info, &mut *data.cast::<usize>()) };
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let page = page_size();
        let relro: Vec<(usize, usize)> = headers
            .iter()
            .filter(|header| header.p_type == libc::PT_GNU_RELRO)
            .map(|header| bounds(info.dlpi_addr as usize, header.p_vaddr as usize, header.p_memsz as usize))
            .collect();
        for header in headers {
            if header.p_type != libc::PT_LOAD || header.p_flags & libc::PF_W != 0 {
                continue;
            }
            let (start, end) =
                bounds(info.dlpi_addr as usize, header.p_vaddr as usize, header.p_memsz as usize);
            if relro.iter().any(|&(r_start, r_end)| start < r_end && r_start < end) {
                continue;
            }
            // Whole pages only: a page the segment shares with another stays.
            let (start, end) = (start.next_multiple_of(page), end / page * page);
            if start >= end {
                continue;
            }
            // SAFETY: the range lies inside a read-only, never-written
            // mapping of the program's file; dropping it only makes the next
            // access fault the same bytes in again from the page cache.
            if unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_DONTNEED) } == 0 {
                *dropped += end - start;
            }
        }
        // Non-zero stops the iteration: the main program comes first.
        1
    }

    /// Where a segment lies in this process: its start and end addresses.
    fn bounds(load_bias: usize, vaddr: usize, size: usize) -> (usize, usize) {
        let start = load_bias.wrapping_add(vaddr);
        (start, start.saturating_add(size))
    }

    fn page_size() -> usize {
        // SAFETY: `sysconf` reads a constant of the system.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// KiB of this process's own executable code resident now (the test
    /// binary's `r-xp` mappings, from `/proc/self/smaps`).
    fn resident_code_kib() -> u64 {
        let exe = std::env::current_exe().unwrap();
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut in_code = false;
        let mut kib = 0;
        for line in smaps.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.first().is_some_and(|first| first.contains('-') && !first.ends_with(':')) {
                in_code =
                    fields.get(1) == Some(&"r-xp") && fields.get(5).map(std::path::Path::new) == Some(&exe);
            } else if in_code && fields.first() == Some(&"Rss:") {
                kib += fields[1].parse::<u64>().unwrap();
            }
        }
        kib
    }

    #[test]
    fn the_programs_own_code_is_unmapped_and_runs_on() {
        let before = resident_code_kib();
        let dropped = super::linux::drop_read_only_segments();
        let after = resident_code_kib();
        assert!(dropped > 0, "nothing dropped");
        assert!(after < before, "resident code {before} KiB before, {after} KiB after");
        // The code faults back in: this formats, parses and allocates.
        let formatted = format!("{:?}", (1..4).map(|n| n * 2).collect::<Vec<_>>());
        assert_eq!(formatted, "[2, 4, 6]");
    }
}
