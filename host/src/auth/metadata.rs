//! Protected Resource Metadata (RFC 9728): the document that tells a
//! client which authorization server issues tokens for this host, served
//! without a token at `/.well-known/oauth-protected-resource` and at its
//! form suffixed with the resource's path (`…/oauth-protected-resource/mcp`).

use anyhow::{Context as _, Result};
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use reqwest::Url;
use serde_json::json;

use super::AuthSettings;

/// The well-known prefix (RFC 9728 §3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document, rendered once, and where it is served.
pub(super) struct Metadata {
    /// Its URL as clients reach it (in `WWW-Authenticate`).
    url: String,
    /// The paths it answers at.
    paths: [String; 2],
    body: Bytes,
}

impl Metadata {
    pub(super) fn new(settings: &AuthSettings) -> Result<Self> {
        let resource = Url::parse(&settings.resource).context("--auth-resource is not a URL")?;
        // RFC 9728 §3.1: the well-known part goes between the host and the
        // resource's path.
        let suffix = resource.path().trim_end_matches('/');
        let suffixed = format!("{WELL_KNOWN}{suffix}");
        let url = format!("{}{suffixed}", resource.origin().ascii_serialization());
        let mut document = json!({
            "resource": settings.resource,
            "authorization_servers": [settings.issuer],
            "bearer_methods_supported": ["header"],
        });
        let mut supported: Vec<&String> = settings.scopes.iter().chain(&settings.tool_scopes).collect();
        supported.sort_unstable();
        supported.dedup();
        if !supported.is_empty() {
            document["scopes_supported"] = json!(supported);
        }
        let body = Bytes::from(serde_json::to_vec_pretty(&document)?);
        Ok(Metadata { url, paths: [WELL_KNOWN.to_string(), suffixed], body })
    }

    /// Where clients find the document.
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// The answer to a request for `path`, if it is the document's.
    pub(super) fn answer(&self, method: &Method, path: &str) -> Option<Response<Full<Bytes>>> {
        if !self.paths.iter().any(|served| served == path) {
            return None;
        }
        let response = Response::builder().header(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*");
        let response = if method == Method::GET || method == Method::HEAD {
            response
                .status(StatusCode::OK)
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::CACHE_CONTROL, "max-age=300")
                .body(Full::new(if method == Method::GET { self.body.clone() } else { Bytes::new() }))
        } else {
            response
                .status(StatusCode::METHOD_NOT_ALLOWED)
                .header(http::header::ALLOW, "GET, HEAD")
                .body(Full::new(Bytes::from_static(b"Method Not Allowed\n")))
        };
        Some(response.expect("a valid response"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_served_at_both_well_known_paths() {
        let settings = AuthSettings::new(
            "https://login.example.com".into(),
            "https://mcp.example.com/mcp".into(),
            vec!["tools".into()],
        )
        .unwrap();
        let metadata = Metadata::new(&settings).unwrap();
        assert_eq!(metadata.url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        for path in [WELL_KNOWN, "/.well-known/oauth-protected-resource/mcp"] {
            assert_eq!(metadata.answer(&Method::GET, path).unwrap().status(), 200);
        }
        assert!(metadata.answer(&Method::GET, "/.well-known/oauth-protected-resource/other").is_none());
        assert_eq!(metadata.answer(&Method::POST, WELL_KNOWN).unwrap().status(), 405);
    }
}
