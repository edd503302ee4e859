//! What tracing costs a call (`--only traces`): the demo's `echo` with
//! tracing off, on with sampling 0 % (`OTEL_TRACES_SAMPLER=always_off`),
//! and on at 100 % (`always_on`), exporting to an OTLP endpoint on loopback
//! that takes every batch. Interleaved blocks, so the machine's noise falls
//! on all three alike.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

use super::{Samples, Scale, calls_per_second, echo_times, ms, start_component_with};

/// An OTLP/HTTP endpoint that answers every export with 200; its base URL.
async fn sink() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let (mut length, mut line) = (0usize, String::new());
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    if stream.get_mut().write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

pub(super) async fn traces(scale: Scale) {
    let endpoint = sink().await;
    let on = ["--otlp-endpoint", endpoint.as_str()];
    let names = ["tracing off", "on, sampling 0 %", "on, sampling 100 %"];
    let hosts = [
        start_component_with("demo", &[], &[], "warn").await,
        start_component_with("demo", &on, &[("OTEL_TRACES_SAMPLER", "always_off")], "warn").await,
        start_component_with("demo", &on, &[("OTEL_TRACES_SAMPLER", "always_on")], "warn").await,
    ];
    for host in &hosts {
        echo_times(host, 200).await;
    }
    let mut times: [Vec<Duration>; 3] = Default::default();
    for _ in 0..10 {
        for (host, times) in hosts.iter().zip(&mut times) {
            times.extend(echo_times(host, scale.echo_calls / 10).await.0);
        }
    }
    let mut rates: [Vec<f64>; 3] = Default::default();
    for _ in 0..5 {
        for (host, rates) in hosts.iter().zip(&mut rates) {
            rates.push(calls_per_second(host, scale.concurrent_calls / 5, 32).await);
        }
    }
    let samples = times.map(Samples::new);
    let rates = rates.map(|mut rates| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    });
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
