//! What tracing costs a call (`--only traces`): the demo's `echo` with
//! tracing off, on with sampling 0 % (`OTEL_TRACES_SAMPLER=always_off`),
//! and on at 100 % (`always_on`), exporting to an OTLP endpoint on loopback
//! that takes every batch. Interleaved blocks, so the machine's noise falls
//! on all three alike.

use super::{Scale, echo_interleaved, ms, start_component_with};

pub(super) async fn traces(scale: Scale) {
    // An OTLP endpoint that takes every batch.
    let endpoint = super::harness::serve_posts(|_| {}).await;
    let on = ["--otlp-endpoint", endpoint.as_str()];
    let names = ["tracing off", "on, sampling 0 %", "on, sampling 100 %"];
    let hosts = [
        start_component_with("demo", &[], &[], "warn").await,
        start_component_with("demo", &on, &[("OTEL_TRACES_SAMPLER", "always_off")], "warn").await,
        start_component_with("demo", &on, &[("OTEL_TRACES_SAMPLER", "always_on")], "warn").await,
    ];
    let (samples, rates) = echo_interleaved(&hosts, scale).await;
    println!(
        "## echo with tracing ({} sequential calls each, interleaved; then 32 in flight, median of 5 rounds)\n",
        scale.echo_calls
    );
    println!("| tracing | p50 | p99 | calls/s |\n|---|---|---|---|");
    for ((name, s), rate) in names.iter().zip(&samples).zip(rates) {
        println!("| {name} | {} | {} | {rate:.0} |", ms(s.p50()), ms(s.p99()));
    }
    let off = samples[0].p50().as_secs_f64();
    println!(
        "\nratio to off: p50 {:.2}x (0 %), {:.2}x (100 %); calls/s {:.2}x (0 %), {:.2}x (100 %)\n",
        samples[1].p50().as_secs_f64() / off,
        samples[2].p50().as_secs_f64() / off,
        rates[1] / rates[0],
        rates[2] / rates[0]
    );
}
