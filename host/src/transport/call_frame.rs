//! A `tools/call` line read straight into rmcp's message: the commonest
//! frame on stdio, read without rmcp's generic path.
//!
//! rmcp reads a client message as an untagged enum of message kinds, each
//! holding an untagged enum of every request type: the line is buffered
//! into serde's `Content` twice, its keys walked once more for its shape,
//! and a `tools/call` is tried as each of the thirteen request types
//! before it (each failure formats and allocates an error). That was 9 %
//! of the host's CPU serving `echo` calls, more than any part of the
//! host's own call path; reading a call here takes 7 % off the host's CPU
//! a call (BENCHMARKS.md). Here the envelope's fields
//! are read by name and only the request's own part is buffered, once,
//! into rmcp's own `CallToolRequest` (its `Deserialize`, so `_meta` and
//! the parameters come out as rmcp makes them).
//!
//! Only a frame this reads exactly as rmcp would is taken: any failure
//! (another method, a missing or ill-typed field, a duplicate key, a stray
//! `result` or `error`, which rmcp refuses in a request) leaves the line to
//! rmcp's path, with its errors. The tests compare the two on the same
//! lines. A line without the bytes `"tools/call"` anywhere is not read
//! here at all: the client's other messages (an answer to the host's own
//! question may be megabytes) cost one scan, not a second parse.

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, ClientRequest, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::RxJsonRpcMessage;
use serde::Deserialize;

/// `line` as rmcp reads it, if it is a `tools/call` request; `None` leaves
/// it to rmcp.
pub(super) fn read(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    // The method as it is written unescaped, as every client writes it; a
    // call that escapes a character of it is read by rmcp all the same.
    memchr::memmem::find(line, br#""tools/call""#)?;
    let frame: CallFrame = serde_json::from_slice(line).ok()?;
    if frame.result.0 || frame.error.0 {
        return None;
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: frame.jsonrpc,
        id: frame.id,
        request: ClientRequest::CallToolRequest(frame.request),
    }))
}

/// A request's envelope, its `tools/call` inside.
#[derive(Deserialize)]
struct CallFrame {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    /// Named so that it is not handed to the request, and seen: rmcp
    /// refuses a request that has either.
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
    #[serde(flatten)]
    request: CallToolRequest,
}

/// Whether a key was there, whatever its value (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp's own reading of `line`.
    fn rmcps(line: &str) -> Result<RxJsonRpcMessage<RoleServer>, serde_json::Error> {
        serde_json::from_str(line)
    }

    #[test]
    fn a_call_reads_as_rmcp_reads_it() {
        let calls = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            r#"{"id":"a-1","method":"tools/call","jsonrpc":"2.0","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.5,"big":18446744073709551615,"neg":-3,"list":[null,true,{"x":"\u00e9\n"}]},"_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{},"task":{"ttl":60000}},"extra":"ignored"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{}}}"#,
        ];
        for line in calls {
            let fast = read(line.as_bytes()).unwrap_or_else(|| panic!("not read: {line}"));
            let rmcp = rmcps(line).unwrap();
            assert!(
                matches!(&fast, JsonRpcMessage::Request(request) if matches!(request.request, ClientRequest::CallToolRequest(_)))
            );
            // What the message says, `_meta` (rmcp keeps it in the
            // request's extensions) included.
            assert_eq!(serde_json::to_value(&fast).unwrap(), serde_json::to_value(&rmcp).unwrap(), "{line}");
        }
    }

    #[test]
    fn anything_else_is_left_to_rmcp() {
        let others = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"error":null}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}"#,
        ];
        for line in others {
            assert!(read(line.as_bytes()).is_none(), "read: {line}");
        }
        // A call whose method is written with an escape is rmcp's to read.
        let escaped = r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"echo"}}"#;
        assert!(read(escaped.as_bytes()).is_none());
        assert!(matches!(rmcps(escaped), Ok(JsonRpcMessage::Request(_))));
        // Those rmcp reads, it reads as what they are.
        assert!(matches!(rmcps(others[0]), Ok(JsonRpcMessage::Request(_))));
        assert!(rmcps(others[3]).is_err());
    }
}
