//! Sending a granted request over a connection to an address the host chose.
//!
//! wasmtime-wasi-http's `default_send_request` takes only the request and
//! resolves its authority again when it connects, so what it reaches is up to
//! DNS at that moment. This is the same client (adapted from
//! wasmtime-wasi-http 48.0.8, `default_send_request.rs`: same TLS roots,
//! same HTTP/1.1 handshake, same error codes, same body timeouts), except
//! that it connects to the socket addresses it is given and nowhere else.
//! The URI's host still names the server for TLS (SNI and the certificate);
//! the TLS handshake is bounded by the connect timeout too.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::uri::Scheme;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// The timeout wasmtime-wasi-http uses when the guest asks for none (never
/// reached here: the host always bounds every timeout by the call).
const UNSET: Duration = Duration::from_secs(600);

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T> Stream for T where T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}

/// The response, with a body that enforces the between-bytes timeout.
pub type Response = http::Response<IncomingResponseBody>;

/// Opens a TCP connection to the first of `addrs` that answers, before
/// `deadline`; the same error codes as wasmtime-wasi-http's own connect.
pub async fn connect(addrs: &[SocketAddr], deadline: Instant) -> Result<TcpStream, Error> {
    let attempt = async {
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    // A request written in pieces (its head, then each chunk
                    // of a body the guest streams) must not wait for the
                    // server's delayed ACK between them (Nagle's algorithm).
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no address to connect to")))
    };
    match tokio::time::timeout_at(deadline, attempt).await {
        Ok(stream) => stream.map_err(Error::Connect),
        Err(_) => Err(Error::ConnectionTimeout),
    }
}

/// Sends `req` over `stream` (TLS first for `https`), the handshakes bounded
/// by `connect_deadline`. Returns the response and the future that drives
/// the connection while the body is read, as `default_send_request` does.
pub async fn send(
    mut req: http::Request<WasiBody>,
    stream: TcpStream,
    connect_deadline: Instant,
    options: RequestOptions,
) -> Result<(Response, impl Future<Output = Result<(), Error>> + Send), Error> {
    let uri = req.uri();
    let authority = uri.authority().ok_or(Error::HttpRequestUriInvalid)?;
    let use_tls = uri.scheme() == Some(&Scheme::HTTPS);
    let authority = match authority.port() {
        Some(_) => authority.to_string(),
        None => format!("{authority}:{}", if use_tls { 443 } else { 80 }),
    };
    let first_byte_timeout = options.first_byte_timeout.unwrap_or(UNSET);
    let between_bytes_timeout = options.between_bytes_timeout.unwrap_or(UNSET);

    let stream: Box<dyn Stream> = if use_tls {
        let connector = tokio_rustls::TlsConnector::from(tls_config());
        let domain = tls_server_name(&authority)?;
        match tokio::time::timeout_at(connect_deadline, connector.connect(domain, stream)).await {
            Ok(stream) => Box::new(stream.map_err(Error::Tls)?),
            Err(_) => return Err(Error::ConnectionTimeout),
        }
    } else {
        Box::new(stream)
    };
    let (mut sender, conn) = tokio::time::timeout_at(
        connect_deadline,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The request carries the scheme and authority; on the wire they belong
    // only in requests to a proxy.
    *req.uri_mut() = http::Uri::builder()
        .path_and_query(req.uri().path_and_query().map_or("/", |p| p.as_str()))
        .build()
        .expect("comes from a valid request");

    let send = async move {
        let res = tokio::time::timeout(first_byte_timeout, sender.send_request(req))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)?
            .map_err(Error::from)?;
        // Tokio panics on a zero interval.
        let between_bytes_timeout = between_bytes_timeout.max(Duration::from_nanos(1));
        let mut timeout = tokio::time::interval(between_bytes_timeout);
        timeout.reset();
        Ok(res.map(|incoming| IncomingResponseBody { incoming, timeout }))
    };
    let mut send = pin!(send);
    let mut conn = Some(conn);
    // Wait for the response while driving the connection's I/O.
    let res = poll_fn(|cx| match send.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(result),
        Poll::Pending => {
            let Some(fut) = conn.as_mut() else { return Poll::Pending };
            let res = ready!(Pin::new(fut).poll(cx));
            conn = None;
            match res {
                // The connection finished; the response may be ready now.
                Ok(()) => send.as_mut().poll(cx),
                Err(err) => Poll::Ready(Err(Error::from(err))),
            }
        }
    })
    .await?;
    Ok((res, async move {
        let Some(conn) = conn.take() else { return Ok(()) };
        match conn.await {
            Ok(()) => Ok(()),
            Err(err) if err.is_timeout() => Err(Error::HttpResponseTimeout),
            Err(err) => Err(err.into()),
        }
    }))
}

/// The TLS client settings wasmtime-wasi-http uses (the webpki roots, no
/// client certificate), built once.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
            Arc::new(rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth())
        })
        .clone()
}

/// The name the server must prove it is, from a `host:port` authority (an
/// IPv6 host in brackets); as wasmtime-wasi-http's `tls_server_name`.
fn tls_server_name(authority: &str) -> Result<rustls::pki_types::ServerName<'static>, Error> {
    use rustls::pki_types::ServerName;
    if let Ok(addr) = authority.parse::<SocketAddr>() {
        return Ok(ServerName::from(addr.ip()));
    }
    let host = authority.split_once(':').map_or(authority, |(host, _port)| host);
    Ok(ServerName::try_from(host)?.to_owned())
}

/// A response body that fails when the server goes quiet for longer than
/// the between-bytes timeout.
pub struct IncomingResponseBody {
    incoming: hyper::body::Incoming,
    timeout: tokio::time::Interval,
}

impl Body for IncomingResponseBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(err))) if err.is_timeout() => {
                Poll::Ready(Some(Err(Error::HttpResponseTimeout)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(Error::from(err)))),
            Poll::Ready(Some(Ok(frame))) => {
                self.timeout.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(self.timeout.poll_tick(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::ServerName;

    #[test]
    fn the_tls_name_is_the_uri_host_without_its_port() {
        assert_eq!(tls_server_name("example.com:443").unwrap(), ServerName::try_from("example.com").unwrap());
        assert_eq!(tls_server_name("127.0.0.1:80").unwrap(), ServerName::from(std::net::Ipv4Addr::LOCALHOST));
        assert_eq!(tls_server_name("[::1]:443").unwrap(), ServerName::from(std::net::Ipv6Addr::LOCALHOST));
    }
}
