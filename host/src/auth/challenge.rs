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

fn answer(status: StatusCode, challenge: String, message: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::WWW_AUTHENTICATE, challenge)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from(message)))
        .expect("a valid response")
}
