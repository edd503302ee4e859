//! The process's allocator: mimalloc, and the one way to hand its free
//! pages back to the system.
//!
//! Why not glibc's malloc: a call's memory is allocated on whichever tokio
//! worker runs it and freed on another, and in a profile of a busy host
//! glibc's arenas spent a fifth of the CPU in `_int_malloc`,
//! `malloc_consolidate` and their locks. With mimalloc the demo's `echo`
//! serves a quarter more calls a second (BENCHMARKS.md).
//!
//! What mimalloc keeps: pages freed but still in a thread's heap. A host
//! that goes idle after a burst would keep them, so the host calls
//! [`release_free_memory`] once it is idle (`sandbox::memory`), as it
//! releases the pool's slots then.

/// mimalloc for every allocation of the host (and of its tests). A build
/// with the `system-allocator` feature keeps the C library's malloc instead:
/// heap profilers such as heaptrack see only malloc (BENCHMARKS.md, "Where
/// a paused call's memory goes").
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_arena_eager_commit` and `mi_option_purge_delay` in mimalloc
/// 3's `mimalloc.h` (the Rust bindings name no constants for them).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets mimalloc's options before the first allocation (Rust's runtime
/// allocates before `main`, so this runs from `.init_array`, as the C
/// runtime's constructors do). An idle host with the Python example held
/// 116 MiB with mimalloc's defaults, against 61 MiB with glibc's malloc:
/// - eager commit off: on, mimalloc counts its arenas as committed and
///   never returns their freed pages;
/// - purge at once: by default freed pages go back 10 ms later, and only
///   when mimalloc next runs, which an idle host never does.
///
/// With both, the same host holds 61 MiB, and the demo's `echo` still
/// costs a fifth less CPU than with glibc.
extern "C" fn configure() {
    // SAFETY: sets plain integer options; no other thread exists yet.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static CONFIGURE: extern "C" fn() = configure;

/// Hands the pages mimalloc holds free back to the system now, instead of
/// at its next allocation.
pub fn release_free_memory() {
    // SAFETY: `mi_collect` may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
}
