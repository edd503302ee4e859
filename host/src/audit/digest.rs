//! The digest an audit record carries instead of a call's arguments: the
//! SHA-256 of their canonical JSON, so two calls with the same arguments
//! have the same digest whatever order the client wrote the keys in, and
//! whoever holds the arguments can check a record against them, while the
//! record itself says nothing of their values.
//!
//! Canonical here: object keys sorted by their UTF-8 bytes (that is, by
//! code point), no whitespace, strings and numbers written as serde_json
//! writes them. For keys in the Basic Multilingual Plane and integer
//! numbers this is RFC 8785 (JCS).

use std::io::{self, Write};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The hex SHA-256 of `value`'s canonical JSON.
pub fn canonical_sha256(value: &Value) -> String {
    let mut hasher = Hashing(Sha256::new());
    // Writing into a hasher cannot fail, nor can serializing a `Value`.
    let _ = write_canonical(value, &mut hasher);
    hex::encode(hasher.0.finalize())
}

/// The hex SHA-256 of `text`'s bytes, cut to 16 hex digits: enough to tell
/// sessions apart in a log, useless to resume one (see the module doc of
/// [`super`] on session ids).
pub fn short_sha256(text: &[u8]) -> String {
    let mut digest = hex::encode(Sha256::digest(text));
    digest.truncate(16);
    digest
}

/// Writes `value` canonically. Depth is bounded by how the value was
/// parsed (serde_json refuses more than 128 levels).
fn write_canonical(value: &Value, out: &mut impl Write) -> io::Result<()> {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.write_all(b"{")?;
            for (n, (key, item)) in entries.into_iter().enumerate() {
                if n > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, key)?;
                out.write_all(b":")?;
                write_canonical(item, out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(item, out)?;
            }
            out.write_all(b"]")
        }
        scalar => Ok(serde_json::to_writer(out, scalar)?),
    }
}

/// A hasher fed through `io::Write`, so the canonical form is never held whole.
struct Hashing(Sha256);

impl Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_digest_ignores_key_order_and_whitespace_but_not_values() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "é"}], "a": null}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#).unwrap();
        assert_eq!(canonical_sha256(&a), canonical_sha256(&b));
        // The canonical text itself, hashed by hand.
        let expected = hex::encode(Sha256::digest(r#"{"a":null,"b":[1,{"x":"é","y":2}]}"#));
        assert_eq!(canonical_sha256(&a), expected);
        assert_ne!(canonical_sha256(&a), canonical_sha256(&json!({"a": null, "b": [1, {"x": "e", "y": 2}]})));
        assert_eq!(canonical_sha256(&json!({})), hex::encode(Sha256::digest("{}")));
    }

    #[test]
    fn a_short_digest_is_sixteen_hex_digits() {
        let short = short_sha256(b"0b7c1e9e-session");
        assert_eq!(short.len(), 16);
        assert!(short.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
