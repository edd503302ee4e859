//! SEP-2243 over Streamable HTTP on 2026-07-28: a tool parameter its input
//! schema marks with `x-mcp-header` is mirrored by the client into an
//! `Mcp-Param-*` header, and a request whose header disagrees with its
//! body (absent, another value, broken Base64) is refused with HTTP 400 and
//! -32020 before the call starts; a matching one, literal or
//! `=?base64?…?=`, runs.

use serde_json::{Value, json};

use crate::harness::guest;
use crate::http_limits::{HttpHost, Reply};

const VERSION: &str = "2026-07-28";

/// A 2026-07-28 `tools/call` of `test_custom_header` with `region` in the
/// body and `header` (if any) as `Mcp-Param-Region`.
async fn call(host: &HttpHost, region: &str, header: Option<&str>) -> Reply {
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test_custom_header",
        "arguments": { "region": region },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { "name": "http-headers", "version": "1" },
        },
    }});
    let mut headers = vec![
        ("mcp-protocol-version", VERSION),
        ("mcp-method", "tools/call"),
        ("mcp-name", "test_custom_header"),
    ];
    if let Some(value) = header {
        headers.push(("mcp-param-region", value));
    }
    host.post_with(None, message, &headers).await
}

fn text(reply: &Reply) -> Value {
    reply.answer(1)["result"]["content"][0]["text"].clone()
}

fn refused(reply: &Reply) -> bool {
    reply.status == 400 && reply.answer(1)["error"]["code"] == -32020
}

#[tokio::test]
async fn a_mirrored_parameter_runs_only_when_its_header_matches_the_body() {
    let everything = guest("everything");
    let host =
        HttpHost::start_exactly(&["--http", "127.0.0.1:0", "--component", everything.to_str().unwrap()])
            .await;

    let literal = call(&host, "eu-west", Some("eu-west")).await;
    assert_eq!((literal.status, text(&literal)), (200, json!("region: eu-west")), "{literal:?}");
    // "Hello" in Base64, wrapped as SEP-2243 says.
    let encoded = call(&host, "Hello", Some("=?base64?SGVsbG8=?=")).await;
    assert_eq!(text(&encoded), json!("region: Hello"), "{encoded:?}");

    for (body, header) in [
        ("eu-west", None),                         // omitted, though the body has it
        ("eu-west", Some("us-east")),              // another value
        ("Hello", Some("=?base64?SGVsbG8?=")),     // bad padding
        ("Hello", Some("=?base64?SGVs!!!bG8=?=")), // not Base64
    ] {
        let reply = call(&host, body, header).await;
        assert!(refused(&reply), "{body:?} with {header:?}: {reply:?}");
    }
    // None of the refused ones reached the component.
    let started = host.stderr.events().iter().filter(|e| e.message() == "call started").count();
    assert_eq!(started, 2);
}
