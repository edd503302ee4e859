//! The host's own answer to the commonest request over HTTP: a well-formed
//! 2026-07-28 `tools/call`, which names no session.
//!
//! rmcp's Streamable HTTP service makes, for every such request, a server,
//! a peer, a one-message transport and a service loop of its own (a task),
//! parses the body through serde's buffered `Content`, and copies the whole
//! message into a `serde_json::Value` to check its headers; that was a
//! fifth of the host's CPU under load (BENCHMARKS.md), more than the
//! sandboxed call's instantiation. Here the body is parsed once, straight
//! into the call's parameters; the call runs in the request's own future,
//! and its answer is written as `application/json`; a call that sends a
//! notification first gets an SSE stream of every message instead, as
//! from rmcp.
//!
//! Only what this can answer exactly as rmcp would is taken
//! ([`Direct::take`]): anything else (another method or version, a
//! session, an `Origin`, a `Host` not plainly allowed, `Mcp-Param-*`
//! headers or a tool whose schema names any, a body rmcp would refuse)
//! goes to rmcp unchanged, with its checks and its errors.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::request::Parts;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::{Bytes, Frame};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ErrorCode, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RequestContext, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler as _};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{Body, callers};
use crate::ask::RequestStream;
use crate::mcp::ToolServer;

/// How long an SSE answer may be silent before a comment keeps it open
/// (rmcp's default, for the same proxies).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Messages of one answer waiting to be written (the call's notifier has
/// its own bounded queue before this one).
const STREAM_QUEUE: usize = 16;

/// The version this answers; every other goes to rmcp.
const VERSION: &str = "2026-07-28";

/// Answers the requests [`Direct::take`] accepts.
pub(super) struct Direct {
    server: ToolServer,
    /// A peer for the requests' contexts, which rmcp's handler API needs
    /// (rmcp makes a peer only with a service loop). Nothing is routed
    /// through it: a 2026-07-28 call asks its questions in its result, and
    /// its notifications go down its own answer ([`RequestStream`]); a
    /// message sent to it fails.
    unrouted: RunningService<RoleServer, ToolServer>,
    /// `--http-allow-host` and the loopback names that allow any port,
    /// lowercased and without brackets: a `Host` among them is one rmcp
    /// accepts too. Any other goes to rmcp, which checks it in full.
    hosts: Vec<String>,
    shutdown: CancellationToken,
}

/// A request [`Direct`] answers: a `tools/call`'s id and parameters.
pub(super) struct Taken {
    id: RequestId,
    params: CallToolRequestParams,
}

/// A 2026-07-28 `tools/call`, as far as it is read here.
#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    params: CallToolRequestParams,
}

impl Direct {
    /// Answers calls to `server`'s tools for clients naming one of `hosts`
    /// (as given to rmcp), until `shutdown`.
    pub(super) fn new(server: ToolServer, hosts: &[String], shutdown: CancellationToken) -> Self {
        let transport = Unrouted(shutdown.clone());
        let unrouted = rmcp::service::serve_directly(server.clone(), transport, None);
        Direct { server, unrouted, hosts: any_port(hosts), shutdown }
    }

    /// The request, if it is one this answers exactly as rmcp would;
    /// `None` sends it to rmcp. Cheap checks of the headers first, then the
    /// body is parsed (once; rmcp parses it again only if it gets it).
    pub(super) fn take(&self, parts: &Parts, body: &[u8]) -> Option<Taken> {
        let name = plain_call(parts, &self.hosts)?;
        let taken = parse_call(body, name)?;
        (!self.server.has_header_params(&taken.params.name)).then_some(taken)
    }

    /// Runs the call `taken` to its answer: JSON when its first message is
    /// the answer, else an SSE stream of every message.
    ///
    /// The call runs in this future while nothing has been written; if the
    /// client goes before that (hyper drops this future), the call is
    /// cancelled and finishes on a task of its own (its stop and cleanup
    /// run as for any cancelled call).
    pub(super) async fn answer(&self, taken: Taken, parts: Parts) -> Response<Body> {
        let Taken { id, mut params } = taken;
        let cancel = self.shutdown.child_token();
        let (sender, mut receiver) = mpsc::channel(STREAM_QUEUE);
        let mut context = RequestContext::new(id, self.unrouted.peer().clone());
        context.ct = cancel.clone();
        context.meta = params.meta.take().unwrap_or_default();
        context.extensions.insert(parts);
        context.extensions.insert(RequestStream(sender.clone()));
        let server = self.server.clone();
        let mut running = Running { call: Some(Box::pin(respond(server, params, context))), cancel };
        // Whichever comes first decides the answer's form.
        let answer = tokio::select! {
            biased;
            Some(note) = receiver.recv() => Err(note),
            answer = running.call.as_mut().expect("running") => Ok(answer),
        };
        let note = match answer {
            Ok(answer) => {
                running.call = None;
                // Notes the call queued as it ended still go first.
                let mut messages = VecDeque::new();
                while let Ok(note) = receiver.try_recv() {
                    messages.push_back(note);
                }
                if messages.is_empty() {
                    return json(&answer);
                }
                messages.push_back(answer);
                return events(Events::new(messages, None, None));
            }
            Err(note) => note,
        };
        // A notification first: the call goes on on a task of its own, and
        // its messages stream until the answer.
        let call = running.call.take().expect("running");
        let guard = running.cancel.clone().drop_guard();
        tokio::spawn(async move {
            let answer = call.await;
            let _ = sender.send(answer).await;
        });
        events(Events::new(VecDeque::from([note]), Some(receiver), Some(guard)))
    }
}

/// Of `hosts` (as given to rmcp), those that allow any port, as rmcp reads
/// them (an authority with a port allows only that port, and is left to
/// rmcp), lowercased and without brackets.
fn any_port(hosts: &[String]) -> Vec<String> {
    let normal = |host: &str| host.trim_matches(['[', ']']).to_ascii_lowercase();
    hosts
        .iter()
        .map(|host| host.trim())
        .filter(|host| !host.is_empty())
        .filter_map(|host| match host.parse::<http::uri::Authority>() {
            Ok(authority) => authority.port_u16().is_none().then(|| normal(authority.host())),
            Err(_) => Some(normal(host)),
        })
        .collect()
}

/// The `Mcp-Name` of a request whose method and headers are those of a
/// plain 2026-07-28 `tools/call`: no session, no `Origin`, one `Host`
/// among `hosts`, the media types rmcp wants, the standard headers once
/// each and no `Mcp-Param-*`. `None` for anything else.
fn plain_call<'a>(parts: &'a Parts, hosts: &[String]) -> Option<&'a str> {
    let headers = &parts.headers;
    let plain = parts.method == http::Method::POST
        && parts.uri.authority().is_none()
        && !headers.contains_key(callers::SESSION)
        && !headers.contains_key(http::header::ORIGIN)
        && host_among(headers, hosts)
        && accepts_json_and_sse(headers)
        && media_type_is_json(only(headers, http::header::CONTENT_TYPE.as_str())?)
        && only(headers, "mcp-protocol-version")? == VERSION
        && only(headers, "mcp-method")? == "tools/call"
        && !headers.keys().any(|name| name.as_str().starts_with("mcp-param-"));
    plain.then(|| only(headers, "mcp-name")).flatten()
}

/// `body`, if it is a 2026-07-28 `tools/call` of tool `name` whose `_meta`
/// has what that version requires.
fn parse_call(body: &[u8], name: &str) -> Option<Taken> {
    let call: Call = serde_json::from_slice(body).ok()?;
    let meta = call.params.meta.as_ref()?;
    let version = ProtocolVersion::V_2026_07_28;
    let plain = call.jsonrpc == "2.0"
        && call.method == "tools/call"
        && call.params.name == name
        && meta.protocol_version().as_ref() == Some(&version)
        && meta.missing_required_keys(&version).is_empty();
    plain.then_some(Taken { id: call.id, params: call.params })
}

/// Whether `headers` name exactly one `Host`, one of `hosts` on any port.
fn host_among(headers: &HeaderMap, hosts: &[String]) -> bool {
    let Some(host) = only(headers, http::header::HOST.as_str()) else { return false };
    let Ok(authority) = host.parse::<http::uri::Authority>() else { return false };
    let name = authority.host().trim_matches(['[', ']']);
    hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(name))
}

/// The call's answer to `params` in `context`, as rmcp's handler makes it.
async fn respond(
    server: ToolServer,
    params: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> ServerJsonRpcMessage {
    let id = context.id.clone();
    let declared_tasks = context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
    let answer = match server.call_tool(params, context).await {
        // SEP-2663, as rmcp guards it: no task to a client that cannot read one.
        Ok(CallToolResponse::Task(_)) if !declared_tasks => {
            Err(McpError::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ))
        }
        answer => answer,
    };
    match answer {
        Ok(response) => ServerJsonRpcMessage::response(ServerResult::from(response), id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

type CallFuture = Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>;

/// A call still running in the request's future: dropped before it ended
/// (the client went), it is cancelled and left to finish on a task.
struct Running {
    call: Option<CallFuture>,
    cancel: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else { return };
        self.cancel.cancel();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(call);
        }
    }
}

/// The status rmcp gives a 2026-07-28 answer (its `jsonrpc_http_status`).
fn status_of(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else { return StatusCode::OK };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// `answer` as the whole response.
fn json(answer: &ServerJsonRpcMessage) -> Response<Body> {
    let body = serde_json::to_vec(answer).unwrap_or_else(|err| unwritable(answer, &err));
    Response::builder()
        .status(status_of(answer))
        .header(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(http_body_util::Full::new(Bytes::from(body)).boxed())
        .expect("a valid response")
}

/// An SSE response of `events`.
fn events(events: Events) -> Response<Body> {
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"))
        .header(http::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))
        .header("x-accel-buffering", HeaderValue::from_static("no"))
        .body(events.boxed())
        .expect("a valid response")
}

/// A message that cannot be written as JSON (none the host makes): an
/// internal error in its place, so the client is not left waiting.
fn unwritable(message: &ServerJsonRpcMessage, err: &serde_json::Error) -> Vec<u8> {
    tracing::error!(%err, "cannot write an answer as JSON");
    let id = match message {
        ServerJsonRpcMessage::Response(response) => Some(response.id.clone()),
        ServerJsonRpcMessage::Error(error) => error.id.clone(),
        _ => None,
    };
    let error =
        ServerJsonRpcMessage::error(McpError::internal_error("the answer could not be written", None), id);
    serde_json::to_vec(&error).unwrap_or_default()
}

/// An answer's messages as SSE events: those already in hand, then what
/// the call sends, up to its answer. Dropped before the answer (the client
/// went), it cancels the call.
struct Events {
    ready: VecDeque<ServerJsonRpcMessage>,
    more: Option<mpsc::Receiver<ServerJsonRpcMessage>>,
    cancel_if_dropped: Option<DropGuard>,
    keep_alive: Pin<Box<tokio::time::Sleep>>,
    ended: bool,
}

impl Events {
    fn new(
        ready: VecDeque<ServerJsonRpcMessage>,
        more: Option<mpsc::Receiver<ServerJsonRpcMessage>>,
        cancel_if_dropped: Option<DropGuard>,
    ) -> Self {
        let keep_alive = Box::pin(tokio::time::sleep(KEEP_ALIVE));
        Events { ready, more, cancel_if_dropped, keep_alive, ended: false }
    }

    /// The call's answer is out: dropping the stream no longer cancels.
    fn end(&mut self) {
        self.ended = true;
        if let Some(guard) = self.cancel_if_dropped.take() {
            guard.disarm();
        }
    }
}

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let next = match this.ready.pop_front() {
            Some(message) => Some(message),
            None => match this.more.as_mut().map(|more| more.poll_recv(cx)) {
                Some(Poll::Pending) => {
                    if this.keep_alive.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.keep_alive.as_mut().reset(tokio::time::Instant::now() + KEEP_ALIVE);
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b":\n\n")))));
                }
                Some(Poll::Ready(message)) => message,
                None => None,
            },
        };
        let Some(message) = next else {
            // The call ended without an answer (it cannot, but a stream
            // must end): the guard, still armed, cancels what is left.
            this.ended = true;
            return Poll::Ready(None);
        };
        if matches!(message, ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)) {
            this.end();
        }
        let json = serde_json::to_vec(&message).unwrap_or_else(|err| unwritable(&message, &err));
        let mut event = Vec::with_capacity(json.len() + 8);
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(&json);
        event.extend_from_slice(b"\n\n");
        this.keep_alive.as_mut().reset(tokio::time::Instant::now() + KEEP_ALIVE);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

/// The only value of header `name`, as text; `None` when it is missing,
/// repeated or not text (rmcp refuses a repeated one: it decides then).
fn only<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// Whether `Accept` names both `application/json` and `text/event-stream`
/// (no wildcard counts, as for rmcp).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for media in value.split(',') {
            let essence = media.split(';').next().unwrap_or_default().trim();
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

/// Whether a `Content-Type` value is JSON's.
fn media_type_is_json(value: &str) -> bool {
    value.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json")
}

/// The transport of [`Direct`]'s peer: it receives nothing, and refuses
/// what it is given to send, until the host shuts down.
struct Unrouted(CancellationToken);

impl Transport<RoleServer> for Unrouted {
    type Error = std::io::Error;

    fn send(
        &mut self,
        _message: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(Err(std::io::Error::other(
            "a request the host answers itself is written to its own answer, not to a peer",
        )))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        let shutdown = self.0.clone();
        async move {
            shutdown.cancelled().await;
            None
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue as V;
    use serde_json::{Value, json};

    use super::*;

    /// The parts of a request with the headers a 2026-07-28 client sends
    /// for a call of `echo`.
    fn parts() -> Parts {
        let request = http::Request::post("/mcp")
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json; charset=utf-8")
            .header("accept", "text/event-stream, application/json")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo");
        request.body(()).unwrap().into_parts().0
    }

    fn hosts() -> Vec<String> {
        any_port(&["localhost", "127.0.0.1", "::1", "[::1]", "Example.COM", "pinned:9000"].map(String::from))
    }

    #[test]
    fn hosts_allowed_on_any_port_are_read_as_rmcp_reads_them() {
        assert_eq!(hosts(), ["localhost", "127.0.0.1", "::1", "::1", "example.com"]);
    }

    #[test]
    fn only_a_plain_calls_headers_are_taken() {
        let hosts = hosts();
        assert_eq!(plain_call(&parts(), &hosts), Some("echo"));
        for host in ["[::1]:1", "EXAMPLE.com", "localhost"] {
            let mut parts = parts();
            parts.headers.insert("host", V::from_static(host));
            assert_eq!(plain_call(&parts, &hosts), Some("echo"), "{host}");
        }
        // Each of these goes to rmcp, which checks it in full.
        type Change = fn(&mut HeaderMap);
        let cases: [(&str, Change); 14] = [
            ("an Origin", |h| _ = h.insert("origin", V::from_static("http://localhost:1"))),
            ("a session", |h| _ = h.insert("mcp-session-id", V::from_static("s"))),
            ("a host allowed on one port", |h| _ = h.insert("host", V::from_static("pinned:9000"))),
            ("another host", |h| _ = h.insert("host", V::from_static("evil.example"))),
            ("no host", |h| _ = h.remove("host")),
            ("two hosts", |h| _ = h.append("host", V::from_static("localhost"))),
            ("an older version", |h| _ = h.insert("mcp-protocol-version", V::from_static("2025-11-25"))),
            ("two methods", |h| _ = h.append("mcp-method", V::from_static("tools/call"))),
            ("another method", |h| _ = h.insert("mcp-method", V::from_static("tools/list"))),
            ("two names", |h| _ = h.append("mcp-name", V::from_static("echo"))),
            ("a parameter header", |h| _ = h.insert("mcp-param-region", V::from_static("eu"))),
            ("no SSE accepted", |h| _ = h.insert("accept", V::from_static("application/json"))),
            ("a wildcard accepted", |h| _ = h.insert("accept", V::from_static("*/*"))),
            ("another body type", |h| _ = h.insert("content-type", V::from_static("text/plain"))),
        ];
        for (what, change) in cases {
            let mut parts = parts();
            change(&mut parts.headers);
            assert_eq!(plain_call(&parts, &hosts), None, "{what}");
        }
        let mut get = parts();
        get.method = http::Method::GET;
        assert_eq!(plain_call(&get, &hosts), None);
    }

    fn body(method: &str, name: &str, meta: &Value) -> Vec<u8> {
        let call = json!({ "jsonrpc": "2.0", "id": 7, "method": method,
                           "params": { "name": name, "arguments": {}, "_meta": meta } });
        call.to_string().into_bytes()
    }

    #[test]
    fn only_a_2026_call_of_the_named_tool_with_its_meta_is_taken() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "1" },
        });
        let taken = parse_call(&body("tools/call", "echo", &meta), "echo").expect("taken");
        assert_eq!((taken.id, taken.params.name.as_ref()), (RequestId::Number(7), "echo"));
        assert!(parse_call(&body("tools/call", "echo", &meta), "other").is_none());
        assert!(parse_call(&body("tools/list", "echo", &meta), "echo").is_none());
        let mut older = meta.clone();
        older["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
        assert!(parse_call(&body("tools/call", "echo", &older), "echo").is_none());
        let mut lacking = meta.clone();
        lacking.as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
        assert!(parse_call(&body("tools/call", "echo", &lacking), "echo").is_none());
        assert!(parse_call(b"{\"jsonrpc\":\"2.0\",", "echo").is_none());
    }
}
