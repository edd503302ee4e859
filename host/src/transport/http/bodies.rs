//! Request bodies in memory. Each `POST /mcp` body is read whole (rmcp
//! parses it as one JSON message) under `--http-body-timeout` and rmcp's
//! 4 MiB cap, into one buffer sized from its `Content-Length`. All bodies
//! together, from their first byte until their answer is written, share
//! one server-wide budget (`--max-request-memory`): past it a request is
//! answered `503` with `Retry-After` and its connection closed, before
//! more of it is read.
//!
//! A body costs about three times its size while its call lives: the
//! bytes, rmcp's parsed message, and the call's own copy of its arguments.
//! So each is charged [`COPIES`] times its size as it is read, and once read
//! (before rmcp parses it) topped up to what its parsed values cost
//! ([`crate::json_size::parsed_cost`]): an array of zeros is many times its
//! size once parsed. Without the budget, 300 connections each sending a
//! 4 MiB `tools/call` to a host running one call at a time held 3 GB within
//! 3 s; charged by size alone, 40 bodies of zeros queued behind one call did.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::BytesMut;
use http::{Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::{Bytes, Incoming};

use super::{Body, MAX_BODY, closing, plain};
use crate::budget::{Budget, Charge};
use crate::limits::HumanBytes;

/// What one body byte is charged: the bytes, the parsed message, the
/// call's arguments.
const COPIES: usize = 3;

/// How long a client refused for the budget is asked to wait.
const RETRY_AFTER_SECS: u32 = 1;

/// The server-wide budget for request bodies in memory.
pub(super) struct BodyBudget(Arc<Budget>);

/// A request body, read, with its charge against the budget.
pub(super) struct HeldBody {
    /// The body.
    pub(super) bytes: Bytes,
    charge: Option<Charge>,
}

/// Why a body was not read.
#[derive(Debug)]
pub(super) enum Refusal {
    /// Over rmcp's 4 MiB cap.
    TooLarge,
    /// What its values would cost parsed is more than the whole budget.
    TooCostly(usize, usize),
    /// The connection failed mid-body.
    Unreadable(String),
    /// It did not arrive within `--http-body-timeout`.
    TimedOut(Duration),
    /// Bodies in flight hold the whole budget (its size).
    Busy(usize),
}

impl BodyBudget {
    /// A budget of `limit` bytes (what bodies are charged, see [`COPIES`]).
    pub(super) fn new(limit: usize) -> Self {
        BodyBudget(Budget::shared("--max-request-memory", limit))
    }

    /// Reads `body` (which says it has `declared` bytes, if it does) within
    /// `timeout`, charging it as it comes.
    pub(super) async fn read(
        &self,
        body: Incoming,
        declared: Option<usize>,
        timeout: Duration,
    ) -> Result<HeldBody, Refusal> {
        let mut held = HeldBody { bytes: Bytes::new(), charge: None };
        if let Some(declared) = declared {
            if declared > MAX_BODY {
                return Err(Refusal::TooLarge);
            }
            self.charge(&mut held, declared)?;
        }
        // A body that comes in one frame (nearly every request's) is kept
        // as hyper read it; only one in several frames is copied together.
        // That frame is a slice of the connection's read buffer: keeping it
        // allocates nothing, and what it pins is hyper's own per-connection
        // buffer (at most hyper's buffer limit, a connection answering one
        // request at a time, under --max-connections).
        let mut whole = Bytes::new();
        let mut joined: Option<BytesMut> = None;
        let read = async {
            let mut body = body;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|err| Refusal::Unreadable(err.to_string()))?;
                let Ok(data) = frame.into_data() else { continue };
                let size = whole
                    .len()
                    .saturating_add(joined.as_ref().map_or(0, BytesMut::len))
                    .saturating_add(data.len());
                if size > MAX_BODY {
                    return Err(Refusal::TooLarge);
                }
                self.charge(&mut held, size)?;
                if whole.is_empty() && joined.is_none() {
                    whole = data;
                    continue;
                }
                let buffer = joined.get_or_insert_with(|| {
                    let mut buffer = BytesMut::with_capacity(declared.unwrap_or(0).max(size));
                    buffer.extend_from_slice(&std::mem::take(&mut whole));
                    buffer
                });
                buffer.extend_from_slice(&data);
            }
            Ok(())
        };
        // Polled once before a timer is armed: a body that came with its
        // headers is read at once, and registers no timer to cancel.
        let outcome = {
            let mut read = std::pin::pin!(read);
            match std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await {
                Poll::Ready(outcome) => Ok(outcome),
                Poll::Pending => tokio::time::timeout(timeout, read).await,
            }
        };
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(refusal)) => return Err(refusal),
            Err(_) => return Err(Refusal::TimedOut(timeout)),
        }
        let buffer = match joined {
            Some(joined) => joined.freeze(),
            None => whole,
        };
        // Before anything parses it: what its values will cost.
        self.charge_cost(&mut held, crate::json_size::parsed_cost(&buffer, COPIES))?;
        held.bytes = buffer;
        Ok(held)
    }

    /// Makes `held`'s charge cover a body of `size` bytes.
    fn charge(&self, held: &mut HeldBody, size: usize) -> Result<(), Refusal> {
        self.charge_cost(held, size.saturating_mul(COPIES))
    }

    /// Makes `held`'s charge cover `needed` bytes of host memory.
    fn charge_cost(&self, held: &mut HeldBody, needed: usize) -> Result<(), Refusal> {
        let limit = self.0.limit();
        if needed > limit {
            // It could never be served, however long it waited.
            return Err(Refusal::TooCostly(needed, limit));
        }
        let grown = match &mut held.charge {
            Some(charge) if needed <= charge.bytes() => return Ok(()),
            Some(charge) => charge.resize(needed),
            None => self.0.charge_owned(needed).map(|charge| held.charge = Some(charge)),
        };
        grown.map_err(|_| Refusal::Busy(limit))
    }
}

impl HeldBody {
    /// The body's charge, for its response to keep until it is written
    /// (for a call: until its answer), when hyper drops it.
    pub(super) fn into_charge(self) -> Option<Charge> {
        self.charge
    }
}

impl Refusal {
    /// The answer: `413`, `400`, `408`, or `503` with `Retry-After`; the
    /// connection is closed after it (the rest of the body may still be on
    /// its way).
    pub(super) fn response(&self) -> Response<Body> {
        let mut response = match self {
            Refusal::TooLarge => plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {MAX_BODY} bytes"),
            ),
            Refusal::TooCostly(cost, limit) => plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "Payload Too Large: the request would take {} of memory once parsed, more than \
                     all request bodies may hold at once ({}, --max-request-memory)",
                    HumanBytes(*cost),
                    HumanBytes(*limit)
                ),
            ),
            Refusal::Unreadable(err) => {
                plain(StatusCode::BAD_REQUEST, format!("Bad Request: unreadable body: {err}"))
            }
            Refusal::TimedOut(timeout) => plain(
                StatusCode::REQUEST_TIMEOUT,
                format!("Request Timeout: the body did not arrive within {timeout:?} (--http-body-timeout)"),
            ),
            Refusal::Busy(limit) => {
                tracing::debug!("request refused: bodies in flight hold --max-request-memory");
                let mut response = plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "Service Unavailable: requests in flight hold all of the server's {} for request bodies \
                         (--max-request-memory); retry later",
                        HumanBytes(*limit)
                    ),
                );
                response
                    .headers_mut()
                    .insert(http::header::RETRY_AFTER, http::HeaderValue::from(RETRY_AFTER_SECS));
                response
            }
        };
        response = closing(response);
        response
    }
}
