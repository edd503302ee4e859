//! What one audit record says, as the JSON object it is written as: who
//! called (from the request, never its token), and the call's or the
//! host's event. Every text that came from outside (tool names, request
//! ids, subjects, client ids) is cut to [`MAX_LOGGED_TEXT`] bytes here;
//! serde_json escapes what is left, so no field can end its line early.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::RoleServer;
use rmcp::model::NumberOrString;
use rmcp::service::RequestContext;
use serde::Serialize;
use serde_json::Value;

use super::digest::short_sha256;
use crate::approval::Decline;
use crate::auth::Principal;
use crate::log_text::{MAX_LOGGED_TEXT, cut_to};

/// Who made a request, as an audit record names them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Who {
    /// The token's `iss` and `sub`; `null` over stdio and without `--auth-issuer`.
    principal: Option<Caller>,
    /// The OAuth client the token was issued to, if it says.
    client_id: Option<String>,
    /// The MCP session, as a short digest of its id (see [`super`]).
    session: Option<String>,
    /// The JSON-RPC id of the request, as the client wrote it.
    request: Value,
}

/// A principal, as records name it: `iss` and `sub`, nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Caller {
    issuer: String,
    subject: String,
}

impl Who {
    /// The caller of `context`'s request.
    pub fn of(context: &RequestContext<RoleServer>) -> Who {
        let session = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|request| request.headers.get("mcp-session-id"));
        let request = match &context.id {
            NumberOrString::Number(n) => Value::from(*n),
            NumberOrString::String(text) => Value::from(text.as_ref()),
        };
        Who::of_request(Principal::of(&context.extensions), session.map(|id| id.as_bytes()), &request)
    }

    /// `principal`'s request whose JSON-RPC id is `request`, in the session
    /// whose id is `session`: for a request answered before an MCP handler
    /// saw it (the HTTP layer's `403`). An id that is neither an integer
    /// nor a string (JSON-RPC allows no other) is recorded as `null`.
    pub fn of_request(principal: Option<&Principal>, session: Option<&[u8]>, request: &Value) -> Who {
        let request = match request {
            Value::Number(n) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
            Value::String(text) => Value::from(bounded(text)),
            _ => Value::Null,
        };
        Who {
            principal: principal
                .map(|who| Caller { issuer: bounded(&who.issuer), subject: bounded(&who.subject) }),
            client_id: principal.and_then(|who| who.client_id.as_deref()).map(bounded),
            session: session.map(short_sha256),
            request,
        }
    }
}

/// How a call's approval went, for a tool that needs one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The tool needs no approval (or the user gave it up front, `--no-approval`).
    NotRequired,
    /// The user said yes.
    Approved,
    /// The user said no, or dismissed the question.
    Declined,
    /// No answer within `--approval-timeout` (or the pause's lease ran out).
    Timeout,
    /// The call was cancelled (or the host stopped) while the question was open.
    Cancelled,
    /// The question went to the client in a sealed `requestState`: its
    /// answer is recorded where it lands.
    HandedOff,
    /// The user could not be asked (the client cannot show a form, or the
    /// answer was malformed): declined, failing closed.
    Failed,
}

impl Verdict {
    /// The verdict a [`Decline`] stands for.
    pub fn of_decline(why: &Decline) -> Verdict {
        match why {
            Decline::Declined | Decline::Dismissed => Verdict::Declined,
            Decline::NoAnswer(_) => Verdict::Timeout,
            Decline::Cancelled => Verdict::Cancelled,
            Decline::CannotAsk { .. }
            | Decline::NoClient
            | Decline::Wording(_)
            | Decline::Malformed(_)
            | Decline::Failed(_) => Verdict::Failed,
        }
    }

    /// Whether someone answered: only then is there a `by`.
    fn answered(self) -> bool {
        matches!(self, Verdict::Approved | Verdict::Declined)
    }
}

/// How a call ended, in the labels the host's log and metrics use.
#[derive(Clone, Copy, Debug)]
pub struct CallEnd {
    /// `ok`, `tool-error`, `stopped`, `limit`, `crashed`, `declined`,
    /// `bad-output`, `handed-off`; `refused` for a call that never started.
    pub outcome: &'static str,
    /// Why, where the outcome has reasons (`client-cancelled`, `timeout`, …).
    pub reason: Option<&'static str>,
    /// How its approval went; `None` for a refused call.
    pub approval: Option<Verdict>,
}

/// One `call` record.
#[derive(Serialize)]
pub(super) struct CallRecord<'a> {
    time: String,
    event: &'static str,
    #[serde(flatten)]
    who: &'a Who,
    tool: String,
    arguments_sha256: &'a str,
    outcome: &'static str,
    reason: Option<&'static str>,
    approval: Option<Approval<'a>>,
    duration_ms: f64,
}

/// The approval part of a call record.
#[derive(Serialize)]
struct Approval<'a> {
    verdict: Verdict,
    /// Who answered: the principal whose session the question went to.
    by: Option<&'a Caller>,
}

impl<'a> CallRecord<'a> {
    pub(super) fn new(
        who: &'a Who,
        tool: &str,
        arguments_sha256: &'a str,
        end: CallEnd,
        took: Duration,
    ) -> Self {
        let approval = end.approval.map(|verdict| Approval {
            verdict,
            by: if verdict.answered() { who.principal.as_ref() } else { None },
        });
        CallRecord {
            time: now(),
            event: "call",
            who,
            tool: bounded(tool),
            arguments_sha256,
            outcome: end.outcome,
            reason: end.reason,
            approval,
            // Microseconds are plenty, and keep the number short.
            duration_ms: (took.as_secs_f64() * 1e6).round() / 1e3,
        }
    }
}

/// A lifecycle record: the time, `event`, then its `fields` (an object).
#[derive(Serialize)]
pub(super) struct Event {
    time: String,
    event: &'static str,
    #[serde(flatten)]
    fields: Value,
}

/// The `event` record with `fields`, stamped with the time.
pub(super) fn event(event: &'static str, fields: Value) -> Event {
    Event { time: now(), event, fields }
}

/// `text` from outside, cut to [`MAX_LOGGED_TEXT`] bytes (the log's rule).
pub(super) fn bounded(text: &str) -> String {
    cut_to(text.to_owned(), MAX_LOGGED_TEXT)
}

/// Now, in RFC 3339 UTC with milliseconds: `2026-12-02T06:42:13.123Z`.
pub(super) fn now() -> String {
    rfc3339(SystemTime::now())
}

fn rfc3339(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (days, seconds) = (since.as_secs() / 86_400, since.as_secs() % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let at = UNIX_EPOCH + Duration::from_millis(951_782_400_007); // 2000-02-29
        assert_eq!(rfc3339(at), "2000-02-29T00:00:00.007Z");
        let at = UNIX_EPOCH + Duration::from_secs(1_796_185_333); // 2026-12-02
        assert_eq!(rfc3339(at), "2026-12-02T04:22:13.000Z");
    }

    #[test]
    fn outside_text_is_cut_and_cannot_break_the_line() {
        let who = Who { request: Value::from(bounded(&"x\n".repeat(5_000))), ..Who::default() };
        let end = CallEnd { outcome: "ok", reason: None, approval: Some(Verdict::NotRequired) };
        let record = CallRecord::new(&who, "tool\n\u{1b}[2J", "00", end, Duration::from_millis(3));
        let line = serde_json::to_string(&record).unwrap();
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(line.len() < 3 * MAX_LOGGED_TEXT, "{}", line.len());
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["tool"], "tool\n\u{1b}[2J");
        assert_eq!(parsed["principal"], Value::Null);
        assert_eq!(parsed["approval"], serde_json::json!({ "verdict": "not-required", "by": null }));
        assert_eq!(parsed["duration_ms"], 3.0);
    }
}
