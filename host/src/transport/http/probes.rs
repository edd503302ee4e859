//! What load balancers and monitoring ask, answered before MCP: plain
//! `GET`s that need no session and pass no Host/Origin check (a kubelet
//! probe names the pod's address), each cheap.
//!
//! - `/healthz`: `200` while the process serves;
//! - `/readyz`: `200` while new calls are welcome; `503` while the
//!   components still load (the listener opens at once, so a cold compile
//!   does not hold up `initialize`) and once draining;
//! - `/metrics`: Prometheus metrics (see `metrics`).
//!
//! Also the answer to work refused while draining: `503` with `Retry-After`.

use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;

use super::{Body, Handler, plain};
use crate::metrics::CONTENT_TYPE;

/// What a refused client is told to wait before trying again (by then a
/// load balancer has seen `/readyz` fail and sends it elsewhere).
const RETRY_AFTER_SECS: u64 = 1;

impl Handler {
    /// The answer to a probe or scrape at `path`, or `None` for anything else.
    pub(super) fn probe(&self, method: &Method, path: &str) -> Option<Response<Body>> {
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        let draining = self.draining.is_cancelled();
        Some(match path {
            "/healthz" => plain(StatusCode::OK, "ok\n".into()),
            "/readyz" if draining => plain(StatusCode::SERVICE_UNAVAILABLE, "draining\n".into()),
            "/readyz" if !self.tools.is_loaded() => {
                plain(StatusCode::SERVICE_UNAVAILABLE, "loading\n".into())
            }
            "/readyz" => plain(StatusCode::OK, "ready\n".into()),
            "/metrics" => {
                let text = self.stats.render_metrics(self.sessions.count() as u64, draining);
                Response::builder()
                    .header(http::header::CONTENT_TYPE, CONTENT_TYPE)
                    .body(Full::new(Bytes::from(text)).boxed())
                    .expect("a valid response")
            }
            _ => return None,
        })
    }

    /// While draining, the answer to a request in `body` that would start
    /// new work (a `tools/call`, a new session's `initialize`); `None` lets
    /// the request through (calls in flight still get their answers,
    /// cancels and replies to questions still arrive).
    pub(super) fn refuse_while_draining(&self, body: &Bytes) -> Option<Response<Body>> {
        if !self.draining.is_cancelled() {
            return None;
        }
        let message = serde_json::from_slice::<serde_json::Value>(body).ok()?;
        let starts_work = |message: &serde_json::Value| {
            matches!(message.get("method").and_then(|m| m.as_str()), Some("tools/call" | "initialize"))
        };
        let refused = match &message {
            serde_json::Value::Array(batch) => batch.iter().find(|m| starts_work(m))?,
            single if starts_work(single) => single,
            _ => return None,
        };
        let mut response = unavailable(
            refused,
            "server draining: it is shutting down and takes no new calls; retry on another instance",
        );
        let headers = response.headers_mut();
        headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(RETRY_AFTER_SECS));
        headers.insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
        Some(response)
    }
}

/// `503` with a JSON-RPC error (`-32000`, `message`) answering `request`.
pub(super) fn unavailable(request: &serde_json::Value, message: &str) -> Response<Body> {
    let id = request.get("id").cloned().unwrap_or_default();
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": -32000, "message": message },
    });
    Response::builder()
        .status(StatusCode::SERVICE_UNAVAILABLE)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(error.to_string())).boxed())
        .expect("a valid response")
}
