//! `wasi:http/outgoing-handler`: the sandbox's only way to the network.
//!
//! A tool's outgoing HTTP request is sent only if its authority (host and
//! port) is covered by an `--allow-host` grant. Anything else fails with
//! `error-code::http-request-denied` before any name lookup or connection is
//! made, and the host logs which host was refused and the flag that would
//! allow it: the guest's error code carries no text, so the explanation is
//! for the user reading the host's stderr. Raw sockets are not granted at all
//! (see [`crate::sandbox`]).
//!
//! A granted name is resolved here, and the request goes to an address that
//! was checked, never to a second lookup's answer: loopback, private,
//! link-local and the other addresses of [`addresses`] are refused (also
//! `http-request-denied`) unless the user granted that IP literal or passed
//! `--allow-private-addresses` (see [`send`]).
//!
//! Allowed requests get timeouts bounded by what is left of the call, so a
//! silent server gives the tool an error it can report instead of the call
//! running into its own deadline. A stopped call needs nothing from here:
//! a request's task and its connection are owned by resources in the call's
//! store, and dropping the store aborts and closes them.

mod addresses;
mod send;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use http::uri::Scheme;
use http_body_util::BodyExt;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::grants::{HostGrants, ip_literal};

/// The longest a connection (TCP and TLS) may take to open, whatever the
/// guest asks: a host that does not answer by then is not going to.
const MAX_CONNECT: Duration = Duration::from_secs(30);

/// Failed requests (refused, or failed to connect) logged at `warn` per
/// call; later ones go to `debug`, so a tool that retries in a loop cannot
/// flood the host's stderr.
const LOGGED_FAILURES: u32 = 3;

/// What `send_request` hands back to wasmtime-wasi-http: the response, and a
/// future that drives the connection while the guest reads the body.
type Sent = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;

/// One call's outgoing-HTTP policy: its grants, its deadline, and who to
/// name in the log.
pub struct OutgoingHttp {
    hosts: HostGrants,
    /// When the call's time is up; outgoing timeouts end there at the latest.
    deadline: Instant,
    log: FailureLog,
}

/// Where one call's failed requests are logged, within [`LOGGED_FAILURES`];
/// shared with the requests' own tasks, which may fail after a lookup.
#[derive(Clone)]
struct FailureLog {
    call_id: Arc<str>,
    /// Failed requests so far.
    failures: Arc<AtomicU32>,
}

impl FailureLog {
    /// Logs why a request failed: at `warn` for the first few of the call.
    fn log(&self, why: std::fmt::Arguments<'_>) {
        let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if failures <= LOGGED_FAILURES {
            tracing::warn!(call_id = &*self.call_id, "outgoing HTTP request {why}");
        } else {
            tracing::debug!(call_id = &*self.call_id, "outgoing HTTP request {why}");
        }
    }
}

impl OutgoingHttp {
    /// The policy for call `call_id`, which must end by `deadline`.
    pub fn new(hosts: HostGrants, call_id: Arc<str>, deadline: Instant) -> Self {
        Self { hosts, deadline, log: FailureLog { call_id, failures: Arc::default() } }
    }

    /// Serves call `call_id` instead, which must end by `deadline` (a
    /// sandbox made ahead of its call; no request has been made yet).
    pub fn bind(&mut self, call_id: Arc<str>, deadline: Instant) {
        self.deadline = deadline;
        self.log.call_id = call_id;
    }

    /// The guest's timeouts (or none), each cut to what is left of the call.
    fn bounded(&self, asked: Option<RequestOptions>) -> RequestOptions {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let asked = asked.unwrap_or_default();
        let cap = |asked: Option<Duration>, most: Duration| Some(asked.map_or(most, |a| a.min(most)));
        RequestOptions {
            connect_timeout: cap(asked.connect_timeout, left.min(MAX_CONNECT)),
            first_byte_timeout: cap(asked.first_byte_timeout, left),
            between_bytes_timeout: cap(asked.between_bytes_timeout, left),
        }
    }

    /// Logs why a request failed: at `warn` for the first few of the call.
    fn log_failure(&mut self, why: std::fmt::Arguments<'_>) {
        self.log.log(why);
    }
}

/// Why a granted request has nowhere it may connect to.
enum Unreachable {
    /// The name did not resolve.
    Lookup(std::io::Error),
    /// It resolved only to addresses a name grant does not reach.
    Restricted(IpAddr, addresses::Restricted),
}

/// The addresses a request to `host` (as in its URI authority) on `port`
/// may connect to. An IP literal is its own address: it passed the grant
/// check only through a grant of that very address. A name is resolved, and
/// its restricted addresses are dropped unless `allow_private`.
async fn destinations(host: &str, port: u16, allow_private: bool) -> Result<Vec<SocketAddr>, Unreachable> {
    if let Some(ip) = ip_literal(host) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let resolved: Vec<SocketAddr> =
        tokio::net::lookup_host((host, port)).await.map_err(Unreachable::Lookup)?.collect();
    if allow_private {
        return Ok(resolved);
    }
    let mut refused = None;
    let allowed: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|addr| match addresses::restriction(addr.ip()) {
            Some(class) => {
                refused.get_or_insert((addr.ip(), class));
                false
            }
            None => true,
        })
        .collect();
    match refused {
        Some((ip, class)) if allowed.is_empty() => Err(Unreachable::Restricted(ip, class)),
        _ => Ok(allowed),
    }
}

/// The host and port a request will connect to, or why it names none
/// plainly. Credentials in the authority (`user@host`) are refused: the
/// connection would be made to the whole authority, not to the host checked.
fn target(uri: &http::Uri) -> Result<(&str, u16), &'static str> {
    let authority = uri.authority().ok_or("it names no host")?;
    if authority.as_str().contains('@') {
        return Err("user info (`user@`) in the authority is not supported");
    }
    let port = match authority.port_u16() {
        Some(port) => port,
        None if uri.scheme() == Some(&Scheme::HTTPS) => 443,
        None => 80,
    };
    Ok((authority.host(), port))
}

impl WasiHttpHooks for OutgoingHttp {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _response_errors: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let authority = request.uri().authority().map_or("", |a| a.as_str()).to_string();
        let (host, port) = match target(request.uri()) {
            Ok((host, port)) if self.hosts.allows(host, port) => (host.to_string(), port),
            refused => {
                let why = refused.err().unwrap_or("is not granted (allow it with --allow-host HOST[:PORT])");
                self.log_failure(format_args!("refused: {authority} {why}"));
                return Box::new(async { Err(Error::HttpRequestDenied) });
            }
        };
        // The authority only: paths and queries may carry secrets.
        tracing::debug!(call_id = &*self.log.call_id, host = authority, "outgoing HTTP request");
        let options = self.bounded(options);
        let allow_private = self.hosts.allow_private_addresses();
        let log = self.log.clone();
        Box::new(async move {
            // The lookup and the TCP connect share the connect timeout, as in
            // wasmtime-wasi-http; so does the TLS and HTTP handshake after.
            let connect_timeout = options.connect_timeout.unwrap_or(MAX_CONNECT);
            let connect_deadline = tokio::time::Instant::now() + connect_timeout;
            let addrs = match tokio::time::timeout_at(
                connect_deadline,
                destinations(&host, port, allow_private),
            )
            .await
            {
                Err(_) => return Err(Error::ConnectionTimeout),
                Ok(Ok(addrs)) => addrs,
                Ok(Err(Unreachable::Lookup(err))) => return Err(Error::Connect(err)),
                Ok(Err(Unreachable::Restricted(ip, class))) => {
                    log.log(format_args!(
                        "refused: {authority} resolves to {ip} ({class}), which a grant by name does not \
                         reach (grant that address itself, e.g. --allow-host {}, or pass --allow-private-addresses)",
                        SocketAddr::new(ip, port)
                    ));
                    return Err(Error::HttpRequestDenied);
                }
            };
            let stream = send::connect(&addrs, connect_deadline).await?;
            let (response, connection) = send::send(request, stream, connect_deadline, options).await?;
            let connection: Box<dyn Future<Output = _> + Send> = Box::new(connection);
            Ok((response.map(BodyExt::boxed_unsync), connection))
        })
    }

    // The defaults of these three log every failure at `warn`; these keep
    // the same error codes and log through the per-call budget instead.

    fn p2_error_from_connect(&mut self, err: &std::io::Error) -> ErrorCode {
        self.log_failure(format_args!("could not connect: {err}"));
        ErrorCode::ConnectionRefused
    }

    fn p2_error_from_tls(&mut self, err: &std::io::Error) -> ErrorCode {
        self.log_failure(format_args!("failed in TLS: {err}"));
        ErrorCode::TlsProtocolError
    }

    fn p2_error_from_hyper(&mut self, err: &hyper::Error) -> ErrorCode {
        self.log_failure(format_args!("failed in HTTP: {err}"));
        ErrorCode::HttpProtocolError
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(grants: &[&str], left: Duration) -> OutgoingHttp {
        let hosts = HostGrants::new(grants.iter().map(|g| g.parse().unwrap()).collect());
        OutgoingHttp::new(hosts, "call-test".into(), Instant::now() + left)
    }

    #[test]
    fn the_port_a_request_connects_to_defaults_by_scheme() {
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        assert_eq!(target(&uri("http://example.com/x")), Ok(("example.com", 80)));
        assert_eq!(target(&uri("https://example.com/x")), Ok(("example.com", 443)));
        assert_eq!(target(&uri("https://[::1]:8443/")), Ok(("[::1]", 8443)));
        assert!(target(&uri("http://user@example.com/")).is_err());
    }

    #[test]
    fn timeouts_never_outlast_the_call() {
        let short = policy(&[], Duration::from_secs(2));
        let asked =
            RequestOptions { first_byte_timeout: Some(Duration::from_secs(600)), ..Default::default() };
        let bounded = short.bounded(Some(asked));
        for timeout in [bounded.connect_timeout, bounded.first_byte_timeout, bounded.between_bytes_timeout] {
            assert!(timeout.unwrap() <= Duration::from_secs(2), "{bounded:?}");
        }
        let long = policy(&[], Duration::from_secs(3600)).bounded(None);
        assert_eq!(long.connect_timeout, Some(MAX_CONNECT));
        let asked = RequestOptions { connect_timeout: Some(Duration::from_millis(5)), ..Default::default() };
        assert_eq!(
            policy(&[], Duration::from_secs(60)).bounded(Some(asked)).connect_timeout,
            Some(asked.connect_timeout.unwrap())
        );
    }

    #[tokio::test]
    async fn a_request_to_a_host_not_granted_is_denied_without_connecting() {
        let mut policy = policy(&["example.com:443"], Duration::from_secs(60));
        let refused = [
            "http://example.com/",
            "https://example.com:8443/",
            "https://127.0.0.1/",
            "https://u@example.com/",
        ];
        for uri in refused {
            let request = http::Request::get(uri)
                .body(http_body_util::Empty::new().map_err(|never| match never {}).boxed_unsync())
                .unwrap();
            let sent = std::pin::Pin::from(policy.send_request(request, None, Box::new(async { Ok(()) })));
            assert!(matches!(sent.await, Err(Error::HttpRequestDenied)), "{uri}");
        }
        assert_eq!(policy.log.failures.load(Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn a_granted_name_that_resolves_to_loopback_is_denied_without_connecting() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut policy = policy(&["localhost"], Duration::from_secs(60));
        let request = http::Request::get(format!("http://localhost:{port}/"))
            .body(http_body_util::Empty::new().map_err(|never| match never {}).boxed_unsync())
            .unwrap();
        let sent = std::pin::Pin::from(policy.send_request(request, None, Box::new(async { Ok(()) })));
        assert!(matches!(sent.await, Err(Error::HttpRequestDenied)));
        assert_eq!(policy.log.failures.load(Ordering::Relaxed), 1);
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(err) if err.kind() == std::io::ErrorKind::WouldBlock),
            "a connection reached the listener: {accepted:?}"
        );
    }

    #[tokio::test]
    async fn an_ip_literal_is_its_own_destination_and_a_name_may_opt_in() {
        let literal = destinations("127.0.0.1", 8080, false).await.ok().unwrap();
        assert_eq!(literal, vec!["127.0.0.1:8080".parse().unwrap()]);
        let literal = destinations("[::1]", 8080, false).await.ok().unwrap();
        assert_eq!(literal, vec!["[::1]:8080".parse().unwrap()]);
        assert!(matches!(
            destinations("localhost", 8080, false).await,
            Err(Unreachable::Restricted(_, addresses::Restricted::Loopback))
        ));
        let opted_in = destinations("localhost", 8080, true).await.ok().unwrap();
        assert!(opted_in.iter().all(|addr| addr.ip().is_loopback() && addr.port() == 8080), "{opted_in:?}");
    }
}
