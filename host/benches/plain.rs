//! A plain component's `echo` next to the `mcp:tool` demo's (`--only
//! plain`): the same text in and out, once through the contract's JSON
//! strings and once through wasmtime's dynamic `Func`/`Val` API and the
//! host's JSON conversions (`host/src/plain`). Both Rust, both built for
//! wasm32-wasip2 in release, driven by rmcp's client in interleaved blocks
//! so the machine's noise falls on both alike.

use super::{Scale, echo_interleaved, ms, start_component};

pub(super) async fn plain(scale: Scale) {
    let names = ["demo (mcp:tool)", "plain-types (plain)"];
    let hosts =
        [start_component("demo", &[], "warn").await, start_component("plain-types", &[], "warn").await];
    let (samples, rates) = echo_interleaved(&hosts, scale).await;
    println!(
        "## echo: a plain component against the mcp:tool demo ({} sequential calls each, interleaved; \
         then 32 in flight, median of 5 rounds)\n",
        scale.echo_calls
    );
    println!("| component | p50 | p99 | calls/s |\n|---|---|---|---|");
    for ((name, s), rate) in names.iter().zip(&samples).zip(rates) {
        println!("| {name} | {} | {} | {rate:.0} |", ms(s.p50()), ms(s.p99()));
    }
    println!(
        "\nratio (plain / mcp:tool): p50 {:.2}x, calls/s {:.2}x\n",
        samples[1].p50().as_secs_f64() / samples[0].p50().as_secs_f64(),
        rates[1] / rates[0]
    );
}
