//! Lays out the host binary's code in the order a call runs it.
//!
//! A call runs a few hundred functions spread over 14 MiB of code, and the
//! kernel maps a faulted page with the 64 KiB around it: a Rust `echo` kept
//! 8 MiB of the binary resident. `link-order.txt` lists the functions an
//! `echo` burst sampled, hottest first (`just link-order` remakes it), and
//! lld places them together, so the same burst keeps 4 MiB of code
//! resident (BENCHMARKS.md). The names are v0 symbols (.cargo/config.toml),
//! which stay put across source changes; a name the build no longer has is
//! skipped silently, so a stale file costs only the saving.
//!
//! Only lld has `--symbol-ordering-file`; it is the linker on
//! `x86_64-unknown-linux-gnu` since Rust 1.90 (our `rust-version` is later).
//! Anything that swaps the linker, or a target other than that one, gets no
//! order rather than a failed link.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-changed=build.rs");
    if !wants_link_order() {
        return;
    }
    let order = format!("{}/link-order.txt", env::var("CARGO_MANIFEST_DIR").unwrap());
    let bin = "mcp-wasm-host";
    println!("cargo:rustc-link-arg-bin={bin}=-Wl,--symbol-ordering-file={order}");
    // A missing name is expected (another profile, an older file), not news.
    println!("cargo:rustc-link-arg-bin={bin}=-Wl,--no-warn-symbol-ordering");
}

/// Whether this build links with the default rust-lld and optimizes (an
/// order made from an optimized build means nothing to a debug one).
fn wants_link_order() -> bool {
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("TARGET") != "x86_64-unknown-linux-gnu" || var("OPT_LEVEL") == "0" {
        return false;
    }
    // `[target.*] linker` in a cargo config, or a `CARGO_TARGET_*_LINKER`.
    if env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let swaps_linker = flags
        .split('\x1f')
        .any(|flag| ["linker", "link-self-contained", "fuse-ld"].iter().any(|word| flag.contains(word)));
    !swaps_linker
}
