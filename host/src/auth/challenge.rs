//! The answers that refuse a request, each with the `WWW-Authenticate`
//! challenge (RFC 6750 §3, RFC 9728 §5.1) that tells an MCP client what
//! to do next: get a token from the authorization server the metadata
//! names (`401`), or step up to more scopes (`403 insufficient_scope`).

use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;

/// The challenge for one refusal.
pub(super) struct Challenge<'a> {
    metadata_url: &'a str,
    scopes: &'a [String],
}

impl<'a> Challenge<'a> {
    pub(super) fn new(metadata_url: &'a str, scopes: &'a [String]) -> Self {
        Challenge { metadata_url, scopes }
    }

    /// `401`: no token, or (with `error`, a code and a description) a
    /// token that is not accepted.
    pub(super) fn unauthorized(&self, error: Option<(&str, &str)>) -> Response<Full<Bytes>> {
        let mut header = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if !self.scopes.is_empty() {
            header.push_str(&format!(", scope=\"{}\"", self.scopes.join(" ")));
        }
        let message = match error {
            Some((code, description)) => {
                header.push_str(&format!(", error=\"{code}\", error_description=\"{description}\""));
                format!("Unauthorized: {description}\n")
            }
            None => "Unauthorized: this server needs an OAuth access token (Authorization: Bearer); \
                     see the resource_metadata URL in WWW-Authenticate\n"
                .to_string(),
        };
        answer(StatusCode::UNAUTHORIZED, header, message)
    }
}

impl Challenge<'_> {
    /// `403 insufficient_scope`: the token (holding `granted`) is good but
    /// lacks what `verdict` says. The challenge's `scope` is every scope to
    /// ask for in the step-up — those the token has and those it lacks — so
    /// the new token loses none.
    pub(super) fn insufficient_scope(
        &self,
        verdict: &super::Lacking,
        granted: &[String],
    ) -> Response<Full<Bytes>> {
        let (tool, lacking) = (&verdict.tool, &verdict.lacking);
        // Every scope here is a scope token (configured ones are checked at
        // start, a token's are filtered as it is read); one that is not is
        // left out all the same, so no quote can open a parameter of its own.
        let mut wanted: Vec<&str> = (granted.iter().map(String::as_str))
            .chain(lacking.iter().map(String::as_str))
            .filter(|scope| super::scopes::is_scope(scope))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let lacking = lacking.join(" ");
        // The tool name is checked at load (no quotes or controls in it).
        let description = format!("tool {tool} needs scope {lacking}");
        let header = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", \
             error_description=\"{description}\"",
            wanted.join(" "),
            self.metadata_url
        );
        let message = format!("Forbidden: {description}; get a token with it (step up) and call again\n");
        answer(StatusCode::FORBIDDEN, header, message)
    }
}

/// The refusal itself. A challenge that is not a valid header value (it
/// cannot be one, as its parts are checked, but a panic here would leave the
/// client with no answer at all) is sent as the bare `Bearer` scheme.
fn answer(status: StatusCode, challenge: String, message: String) -> Response<Full<Bytes>> {
    let challenge =
        crate::log_text::header_value(challenge).unwrap_or_else(|_| http::HeaderValue::from_static("Bearer"));
    let mut response = Response::new(Full::new(Bytes::from(message)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(http::header::WWW_AUTHENTICATE, challenge);
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain"));
    response
}
