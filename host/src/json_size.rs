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
