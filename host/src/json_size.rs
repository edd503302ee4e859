//! How many bytes a value is as JSON text, counted as serde_json writes it
//! (escapes included) without building the text: a result's or an answer's
//! size is checked before it is sent on, and the check must cost nothing
//! like a second copy.

use std::io;

use serde::Serialize;

/// The size of `value` as compact JSON, if it is at most `cap` bytes;
/// otherwise `Err` with the bytes counted when the count stopped (just
/// past `cap`): counting ends there, whatever the value's real size.
pub fn json_size(value: &(impl Serialize + ?Sized), cap: usize) -> Result<usize, usize> {
    let mut counter = Counter { bytes: 0, cap };
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => Ok(counter.bytes),
        // The only error this writer raises: past the cap. A value that
        // cannot be serialised at all (never one of ours) counts as over.
        Err(_) => Err(counter.bytes.max(cap.saturating_add(1))),
    }
}

/// A writer that keeps nothing, only counts, and fails once past `cap`.
struct Counter {
    bytes: usize,
    cap: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes = self.bytes.saturating_add(buf.len());
        if self.bytes > self.cap {
            return Err(io::Error::other("past the cap"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_count_is_the_length_of_the_text_serde_json_writes() {
        let value = json!({ "a": "\u{1}\"é", "b": [1, 2.5, null], "c": "x".repeat(100) });
        let text = serde_json::to_string(&value).unwrap();
        assert_eq!(json_size(&value, usize::MAX), Ok(text.len()));
        assert_eq!(json_size(&value, text.len()), Ok(text.len()));
    }

    #[test]
    fn counting_stops_just_past_the_cap() {
        let big = "x".repeat(1 << 20);
        let counted = json_size(&big, 100).unwrap_err();
        assert!(counted > 100, "{counted}");
    }
}

/// What one JSON value costs once parsed, besides its text: a
/// `serde_json::Value` (32 bytes), its share of the array or map holding
/// it, and the copy a call makes of its arguments (plain components
/// convert them again, to wasmtime's `Val`s).
pub const PARSED_VALUE_COST: usize = 96;

/// What holding `text` and its parsed copies costs the host, counted before
/// it is parsed, in one pass: `copies` times its bytes, and
/// [`PARSED_VALUE_COST`] for each value in it. A message's cost is in its
/// values as much as its bytes: `[0,0,0,…]` is two bytes a value as text
/// and over forty once parsed, so a charge by size alone let a 4 MiB body
/// of zeros cost 73 MB before its call ran.
pub fn parsed_cost(text: &[u8], copies: usize) -> usize {
    // Values are the top one, one more for each `,` (a sibling) and each
    // `[` or `{` (a container's first); an empty container over-counts by
    // one, which is fine for a charge.
    let mut values = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b',' | b'[' | b'{' => values += 1,
                _ => {}
            }
        }
    }
    text.len().saturating_mul(copies).saturating_add(values.saturating_mul(PARSED_VALUE_COST))
}

#[cfg(test)]
mod cost_tests {
    use super::*;

    #[test]
    fn a_message_costs_its_bytes_and_its_values() {
        assert_eq!(parsed_cost(b"\"text\"", 3), 18 + PARSED_VALUE_COST);
        // Commas and brackets inside strings are text, not values.
        assert_eq!(parsed_cost(br#"{"a":"x,[{\",y"}"#, 1), 16 + 2 * PARSED_VALUE_COST);
        // A body of zeros is charged for each zero.
        let zeros = format!("[{}0]", "0,".repeat(1000));
        assert_eq!(parsed_cost(zeros.as_bytes(), 0), 1002 * PARSED_VALUE_COST);
    }
}
