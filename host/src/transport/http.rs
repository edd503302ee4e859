//! Serving over Streamable HTTP (`--http ADDR`): the same tools, limits,
//! cancel path and cleanup as stdio, with stateful sessions (so tools can
//! ask the user questions) and Host/Origin checks against DNS rebinding.
//!
//! On protocol 2026-07-28 (no sessions) a request whose first message is
//! its answer gets it as `application/json`, and the connection is free for
//! the next request at once; one that sends progress or log records first
//! gets an SSE stream with every message. A plain `tools/call` of that
//! version, the commonest request, is answered by the host itself (see
//! [`direct`]); everything else by rmcp's Streamable HTTP service.
//!
//! Loopback by default: requests must name a loopback host
//! (`localhost`, `127.0.0.1`, `[::1]`), and browser requests must come from
//! a loopback origin, unless `--http-allow-host` / `--http-allow-origin`
//! widen that.
//!
//! Bounded against careless and hostile peers:
//! - at most `--max-connections` connections; one more is answered `503`
//!   and closed at once (waiting would let a flood fill the listen queue
//!   unseen);
//! - a request's headers must arrive within `--http-header-timeout` (an
//!   idle kept-alive connection is closed after that long too), and its
//!   body within `--http-body-timeout` (else `408`), and all bodies
//!   together within `--max-request-memory` (else `503`, see [`bodies`]);
//! - at most `--max-sessions` sessions, idle ones closed after
//!   `--http-idle-timeout` or to make room (see [`sessions`]).
//!
//! Beside `/mcp`: `/healthz`, `/readyz` and `/metrics` (see [`probes`]).
//! All of it over HTTPS with `--tls-cert` (see [`tls`]).
//!
//! With `--auth-issuer`, `/mcp` admits only requests with a valid access
//! token, checked before their body is read, and the Protected Resource
//! Metadata is served beside it (see [`crate::auth`]).
//!
//! On SIGTERM (or SIGINT) the host drains: `/readyz` fails at once, new
//! calls and sessions get `503` with `Retry-After`, and calls in flight
//! get `--drain-timeout` to finish; then the rest are stopped and cleaned
//! up, as on stdio. A second signal skips the wait.

mod answers;
mod bodies;
mod callers;
mod direct;
mod probes;
mod sessions;
mod tls;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthSettings, Gate};
use crate::mcp::ToolServer;
use crate::stats::Stats;
use crate::transport::signal::{Signals, drain_calls, wait_for_calls};
use answers::Answers;
use bodies::BodyBudget;
use sessions::{BoundedSessions, watch_refusal};

/// Serves until a signal arrives; then drains (new calls refused, calls in
/// flight given `--drain-timeout` to finish), stops every call left and
/// gives them a bounded time to clean up.
pub(crate) async fn serve_until_signal(
    server: ToolServer,
    options: HttpOptions,
    mut signals: Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    let draining = CancellationToken::new();
    let drain_timeout = options.drain_timeout;
    let answers = Arc::new(Answers::default());
    let serving = serve(server, options, shutdown.clone(), draining.clone(), stats.clone(), answers.clone());
    tokio::pin!(serving);
    tokio::select! {
        result = &mut serving => return result,
        () = signals.recv() => draining.cancel(),
    }
    stats.audit().drain(crate::audit::Drain::Signal);
    let calls = stats.snapshot().live_calls;
    tracing::info!(
        calls,
        drain_timeout_ms = drain_timeout.as_millis() as u64,
        "draining: refusing new calls"
    );
    // Still serving: probes, and the answers of calls in flight.
    tokio::select! {
        result = &mut serving => return result,
        left = wait_for_calls(&stats, drain_timeout) => match left {
            0 => {
                tracing::info!("drained: every call has finished");
                // A call counts as ended just before its answer is written:
                // keep serving until the last answers reach their clients.
                tokio::select! {
                    result = &mut serving => return result,
                    () = answers.written(ANSWER_FLUSH) => {}
                }
            }
            calls => tracing::info!(calls, "drain timeout (--drain-timeout); stopping the calls left"),
        },
        () = signals.recv() => tracing::info!("second signal; stopping the calls left now"),
    }
    shutdown.cancel();
    drain_calls(&stats).await;
    // Each connection shuts down gracefully: what hyper has yet to write
    // (the last answers, the stopped calls' errors) goes out before it closes.
    if let Ok(result) = tokio::time::timeout(ANSWER_FLUSH, serving).await {
        result?;
    }
    Ok(())
}

/// Where and for whom to serve.
pub(crate) struct HttpOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// Extra `Host` values to accept besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// How many sessions may exist at once.
    pub max_sessions: usize,
    /// How long a session may stay idle before it is closed.
    pub idle_timeout: Duration,
    /// How long a request's headers may take to arrive.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive, after its headers.
    pub body_timeout: Duration,
    /// How many connections may be open at once.
    pub max_connections: usize,
    /// Bytes request bodies may hold in memory at once, all together.
    pub max_request_memory: usize,
    /// After a signal, how long calls in flight may take to finish.
    pub drain_timeout: Duration,
    /// With `--auth-issuer`: the token every request to `/mcp` needs.
    pub auth: Option<AuthSettings>,
    /// With `--tls-cert`: serve HTTPS with these files.
    pub tls: Option<crate::config::TlsFiles>,
}

/// The largest request body rmcp accepts (its default, 4 MiB); read here
/// under the body timeout, so the same limit and answer apply.
const MAX_BODY: usize = 4 << 20;

/// After an accept error that is not about one connection (out of file
/// descriptors, say), how long to wait before accepting again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// After the last call of a drain ended, the longest its answer gets to be
/// written before the listener closes (a client that reads slowly does not
/// hold the exit up longer).
const ANSWER_FLUSH: Duration = Duration::from_millis(500);

/// How often the connection cap may be logged at `warn`.
const CAP_WARNING_EVERY: Duration = Duration::from_secs(10);

pub(super) type Body = BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<ToolServer, BoundedSessions>;

/// Serves `server` at `http://ADDR/mcp` until `shutdown` fires, refusing
/// new work once `draining` fires.
async fn serve(
    server: ToolServer,
    options: HttpOptions,
    shutdown: CancellationToken,
    draining: CancellationToken,
    stats: Arc<Stats>,
    answers: Arc<Answers>,
) -> Result<()> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"].map(String::from).to_vec();
    hosts.extend(options.allowed_hosts);
    let mut origins: Vec<String> =
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).to_vec();
    origins.extend(options.allowed_origins);
    // A 2026-07-28 request whose first message is its answer gets that
    // answer as `application/json`, not as a one-event SSE stream: no
    // stream, keep-alive timer or chunked framing for the common call. One
    // that logs, reports progress or streams first still gets SSE, so
    // nothing is lost (rmcp falls back per request). Sessions (before
    // 2026-07-28) keep SSE either way.
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_BODY)
        .with_cancellation_token(shutdown.child_token());
    let sessions = Arc::new(BoundedSessions::new(options.max_sessions, stats.metrics().mcp_sessions()));
    sessions.reap_idle(options.idle_timeout, shutdown.clone());
    let tools = server.clone();
    let direct = direct::Direct::new(server.clone(), &hosts, shutdown.child_token());
    let service = StreamableHttpService::new(move || Ok(server.new_session()), sessions.clone(), config);
    let body_timeout = options.body_timeout;
    let bodies = BodyBudget::new(options.max_request_memory);
    let gate = options.auth.map(Gate::new).transpose()?;
    let handler = Arc::new(Handler {
        service,
        direct,
        tools,
        body_timeout,
        bodies,
        stats,
        sessions,
        draining,
        answers,
        gate,
    });
    let listener = TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() && handler.gate.is_none() {
        tracing::warn!(%local, "listening beyond loopback: anyone who can reach this address can call the tools");
    }
    let tls = options.tls.map(tls::Tls::new).transpose()?.map(Arc::new);
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Announce the real port (useful with port 0) on stderr, for scripts and tests.
    crate::log_text::say(format_args!(
        "mcp-wasm-host: serving MCP over Streamable HTTP at {scheme}://{local}/mcp"
    ));

    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1.timer(TokioTimer::new()).header_read_timeout(options.header_timeout);
    let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let mut cap_warned: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(err) if is_connection_error(&err) => continue,
            Err(err) => {
                tracing::warn!(%err, "cannot accept HTTP connections; retrying");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        unbuffered(&stream);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if cap_warned.is_none_or(|at| at.elapsed() >= CAP_WARNING_EVERY) {
                cap_warned = Some(Instant::now());
                tracing::warn!(
                    max = options.max_connections,
                    "refusing HTTP connections: all --max-connections are open"
                );
            }
            refuse_busy(stream);
            continue;
        };
        let (http1, handler, shutdown) = (http1.clone(), handler.clone(), shutdown.clone());
        match tls.clone() {
            // The handshake holds the slot, bounded by the header timeout.
            Some(tls) => tokio::spawn(async move {
                if let Some(stream) = tls.accept(stream, options.header_timeout).await {
                    serve_connection(stream, http1, handler, shutdown, slot).await;
                }
            }),
            None => tokio::spawn(serve_connection(stream, http1, handler, shutdown, slot)),
        };
    }
    // Every connection holds a slot until it has closed: wait for them all.
    let all = u32::try_from(options.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// Accept errors that concern only the connection being accepted.
fn is_connection_error(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(err.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// Makes each write on `stream` go out at once. With Nagle's algorithm on
/// (the default of hyper and axum alike), a response written in more than
/// one piece (an SSE stream: its priming event, then each notification and
/// the result) had every piece after the first wait for the client's
/// delayed ACK: about 40 ms on every call of a 2025-11-25 session
/// (BENCHMARKS.md).
fn unbuffered(stream: &TcpStream) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%err, "cannot set TCP_NODELAY on an HTTP connection");
    }
}

/// Tells a connection over the cap so, without waiting for it, and closes it.
fn refuse_busy(stream: TcpStream) {
    const WHY: &str = "Server busy: too many connections (--max-connections); try again later\n";
    let busy = format!(
        "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\n\r\n{WHY}",
        WHY.len()
    );
    let _ = stream.try_write(busy.as_bytes());
}

/// Serves one connection until it closes, or gracefully once `shutdown`
/// fires; its slot is free again when this returns.
async fn serve_connection(
    stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    http1: hyper::server::conn::http1::Builder,
    handler: Arc<Handler>,
    shutdown: CancellationToken,
    _slot: OwnedSemaphorePermit,
) {
    let service = hyper::service::service_fn(move |request| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler.handle(request).await) }
    });
    let connection = http1.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(err) = result {
        // A header timeout, a reset, a malformed request: that client's problem.
        tracing::debug!(%err, "HTTP connection ended with an error");
    }
}

/// Answers probes; reads each MCP request's body under a timeout, then
/// hands it to rmcp (unless draining refuses it).
struct Handler {
    service: Mcp,
    /// The host's own answer to a plain 2026-07-28 `tools/call`.
    direct: direct::Direct,
    /// The server sessions are made from; asked whether its tools are loaded.
    tools: ToolServer,
    body_timeout: Duration,
    /// Request bodies in memory, all together (`--max-request-memory`).
    bodies: BodyBudget,
    stats: Arc<Stats>,
    sessions: Arc<BoundedSessions>,
    /// Fires on the first signal: new calls and sessions are refused.
    draining: CancellationToken,
    /// `POST /mcp` answers not yet written, for the drain.
    answers: Arc<Answers>,
    /// With `--auth-issuer`: admits only requests with a valid token.
    gate: Option<Gate>,
}

impl Handler {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let path = request.uri().path();
        if let Some(response) = self.probe(request.method(), path) {
            return response;
        }
        if let Some(metadata) = self.gate.as_ref().and_then(|gate| gate.metadata(request.method(), path)) {
            return metadata.map(|body| body.boxed());
        }
        if path != "/mcp" && !path.starts_with("/mcp/") {
            return plain(StatusCode::NOT_FOUND, "Not Found: MCP is served at /mcp".into());
        }
        let (mut parts, body) = request.into_parts();
        // Before the body is read: a request without a valid token takes
        // nothing from the bodies' budget.
        // The awaits of this future that are large are boxed: hyper keeps
        // each request's future inline and moves it, so its size is copied
        // for every request (rmcp's answer made it 18 KiB; now 1.4 KiB,
        // `tests::a_requests_future_stays_small`).
        let caller = match &self.gate {
            None => None,
            Some(gate) => match Box::pin(callers::admit(gate, &mut parts, &self.sessions)).await {
                Ok(caller) => Some(caller),
                Err(refusal) => return refusal,
            },
        };
        let answering = (parts.method == http::Method::POST).then(|| self.answers.enter());
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
        let held = match self.bodies.read(body, declared, self.body_timeout).await {
            Ok(held) => held,
            Err(refusal) => return refusal.response(),
        };
        let body = held.bytes.clone();
        if let Some(refused) = self.refuse_while_draining(&body) {
            return refused;
        }
        if let Some(caller) = &caller
            && let Some(forbidden) = Box::pin(caller.forbid(&self.tools, &body)).await
        {
            return forbidden;
        }
        let response = match self.direct.take(&parts, &body) {
            Some(call) => Box::pin(self.direct.answer(call, parts)).await,
            None => {
                let new_session = !parts.headers.contains_key(callers::SESSION);
                let request = Request::from_parts(parts, Full::new(body.clone()));
                let (response, refused) = watch_refusal(Box::pin(self.service.handle(request))).await;
                if refused {
                    return busy_sessions(&body);
                }
                if let Some(caller) = caller.filter(|_| new_session) {
                    caller.own_new_session(&response, &self.sessions);
                }
                response
            }
        };
        // One wrapper keeps both until the answer is written (hyper drops
        // its body then): the body's charge and the answer's count.
        match (held.into_charge(), answering) {
            (None, None) => response,
            guards => answers::keeping(response, guards),
        }
    }
}

pub(super) fn plain(status: StatusCode, message: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from(message)).boxed())
        .expect("a valid response")
}

/// The response, with the connection closed after it (the rest of the
/// request may still be on its way).
pub(super) fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

/// `503` with a JSON-RPC error answering the `initialize` in `body`: every
/// session is busy, so none can make room for a new one.
fn busy_sessions(body: &Bytes) -> Response<Body> {
    let request = serde_json::from_slice::<serde_json::Value>(body).unwrap_or_default();
    probes::unavailable(&request, "server busy: every session (--max-sessions) is in use; try again later")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `handle` returns (never run: only its type).
    fn future_size<'a, A, F: Future>(_handle: impl Fn(&'a Handler, A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[tokio::test]
    async fn accepted_connections_send_each_write_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        assert!(!stream.nodelay().unwrap(), "Linux accepts with Nagle's algorithm on");
        unbuffered(&stream);
        assert!(stream.nodelay().unwrap());
    }

    /// hyper holds each request's future inline and moves it; an await of
    /// rmcp's answer, or of the gate, left unboxed makes it 18 KiB again.
    #[test]
    fn a_requests_future_stays_small() {
        let size = future_size(Handler::handle);
        assert!(size <= 2048, "a request's future is {size} bytes: is a large await no longer boxed?");
    }
}
