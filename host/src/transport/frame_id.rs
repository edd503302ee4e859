//! The id of a request the host cannot read whole: a line too long to
//! keep, or broken (or nested too deep) further on. A client's request
//! usually names its id before its bulk (`{"jsonrpc":"2.0","id":7,
//! "method":"tools/call","params":…`), so the first bytes of the line
//! often give it: answering with it ends the client's wait for that very
//! request, where `id: null` would leave it waiting until its own timeout.
//!
//! Only the top level of the object is read, from a bounded prefix, by a
//! small scanner that never recurses and never allocates beyond the id.
//! The id counts only beside a `method` member: a broken *response* from
//! the client (to the host's own question) must not be answered under its
//! id, which the client would take for the answer to a request of its own.

use serde_json::Value;

/// How much of a line is kept to look for its id.
pub(super) const HEAD: usize = 4096;

/// The id of the request that `head` (the start of a line) begins, if its
/// top level names an `id` (a number or a string) and a `method` before
/// the point where it cannot be read further.
pub(super) fn request_id(head: &[u8]) -> Option<Value> {
    let mut scan = Scan { bytes: &head[..head.len().min(HEAD)], at: 0 };
    let (mut id, mut method) = (None, false);
    scan.skip_space();
    scan.eat(b'{')?;
    loop {
        scan.skip_space();
        let key = scan.string()?;
        scan.skip_space();
        scan.eat(b':')?;
        scan.skip_space();
        match key {
            b"id" => id = scan.scalar_id(),
            b"method" => method = scan.string().is_some(),
            _ => scan.skip_value()?,
        }
        if id.is_some() && method {
            return id;
        }
        scan.skip_space();
        match scan.next()? {
            b',' => continue,
            _ => return None,
        }
    }
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn next(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, expected: u8) -> Option<()> {
        (self.next()? == expected).then_some(())
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// A string's raw bytes between its quotes (escapes left as written).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                b'\\' => {
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    /// An id: a number or a string, as JSON; anything else is no id.
    fn scalar_id(&mut self) -> Option<Value> {
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'-' | b'0'..=b'9' => {
                while matches!(self.peek(), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
                    self.at += 1;
                }
            }
            _ => return None,
        }
        serde_json::from_slice(&self.bytes[start..self.at]).ok()
    }

    /// Skips one value of any kind; nesting is counted, not recursed into.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    self.at += 1;
                    depth += 1;
                }
                b'}' | b']' if depth > 0 => {
                    self.at += 1;
                    depth -= 1;
                }
                // The end of the member this value belongs to.
                b',' | b'}' | b']' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0 && matches!(self.peek(), Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')) {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_id_of_a_request_broken_after_its_head_is_found() {
        let deep = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{}"#, "[".repeat(10_000));
        assert_eq!(request_id(deep.as_bytes()), Some(json!(7)));
        let cut = br#"{ "params": {"a": [1, {"b": "}"}]}, "method" : "tools/call", "id": "s-1", "x": "#;
        assert_eq!(request_id(cut), Some(json!("s-1")));
        let escaped = br#"{"method":"a\"b","id":-3}"#;
        assert_eq!(request_id(escaped), Some(json!(-3)));
    }

    #[test]
    fn no_id_without_a_method_or_past_the_head() {
        // A response from the client: not answered under its id.
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":3,"result":{"#), None);
        assert_eq!(request_id(br#"{"id":{"nested":1},"method":"ping"}"#), None);
        assert_eq!(request_id(br#"[{"id":1,"method":"ping"}]"#), None);
        assert_eq!(request_id(b"\xff\xfe"), None);
        let late = format!(r#"{{"params":"{}","id":1,"method":"ping"}}"#, "x".repeat(HEAD));
        assert_eq!(request_id(late.as_bytes()), None);
    }
}
