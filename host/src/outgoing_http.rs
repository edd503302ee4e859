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
//! Allowed requests get timeouts bounded by what is left of the call, so a
//! silent server gives the tool an error it can report instead of the call
//! running into its own deadline. A stopped call needs nothing from here:
//! a request's task and its connection are owned by resources in the call's
//! store, and dropping the store aborts and closes them.

use std::time::{Duration, Instant};

use http::uri::Scheme;
use http_body_util::BodyExt;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks, default_send_request};

use crate::grants::HostGrants;

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
    call_id: std::sync::Arc<str>,
    /// When the call's time is up; outgoing timeouts end there at the latest.
    deadline: Instant,
    /// Failed requests so far, for [`LOGGED_FAILURES`].
    failures: u32,
}

impl OutgoingHttp {
    /// The policy for call `call_id`, which must end by `deadline`.
    pub fn new(hosts: HostGrants, call_id: std::sync::Arc<str>, deadline: Instant) -> Self {
        Self { hosts, call_id, deadline, failures: 0 }
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
        self.failures += 1;
        if self.failures <= LOGGED_FAILURES {
            tracing::warn!(call_id = &*self.call_id, "outgoing HTTP request {why}");
        } else {
            tracing::debug!(call_id = &*self.call_id, "outgoing HTTP request {why}");
        }
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
        let refusal = match target(request.uri()) {
            Ok((host, port)) if self.hosts.allows(host, port) => None,
            Ok(_) => Some("is not granted (allow it with --allow-host HOST[:PORT])"),
            Err(why) => Some(why),
        };
        if let Some(why) = refusal {
            self.log_failure(format_args!("refused: {authority} {why}"));
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        // The authority only: paths and queries may carry secrets.
        tracing::debug!(call_id = &*self.call_id, host = authority, "outgoing HTTP request");
        let options = self.bounded(options);
        Box::new(async move {
            let (response, connection) = default_send_request(request, Some(options)).await?;
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
        assert_eq!(policy.failures, 4);
    }
}
