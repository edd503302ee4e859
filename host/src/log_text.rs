//! One rule for text the host did not write itself — a tool's name or
//! output, a registry's error message, a client's words, a file's
//! contents — whenever it goes into a log line, an error, a span, a header
//! or a terminal: what could act on the reader is escaped and the text is
//! cut to a bounded length.
//!
//! Escaped, such text cannot end a line early and pass the rest off as a
//! line of the host's own, move the cursor, clear the terminal or set its
//! title (ESC, BEL and the C1 controls are all escaped), nor reorder what a
//! person reads (the bidirectional overrides and isolates, U+202A–U+202E and
//! U+2066–U+2069) or break a line where only Unicode sees one (U+2028,
//! U+2029). Cut, it cannot fill the log with one line. Call sites wrap the
//! text in [`escaped`] (`%escaped(&name)` in a `tracing` field, `{}` in a
//! message); the log's writer ([`OneLinePerEvent`]) is the backstop for a
//! field that was not. JSON shown to a person goes through [`safe_json`],
//! which writes the same characters as `\u` escapes (the same JSON value).
//!
//! The sinks themselves take text only through this module, so an
//! unescaped path does not pass `cargo clippy -D warnings`:
//! - the terminal: [`say`] (stderr, each line escaped). The library denies
//!   `print!`, `println!`, `eprint!` and `eprintln!` (`clippy::print_stdout`,
//!   `clippy::print_stderr`); stdout carries protocol frames and `--json`
//!   output written through [`safe_json`];
//! - HTTP headers: [`header_value`], escaped and cut. `clippy.toml`
//!   disallows `HeaderValue::from_str`, `from_bytes` and `from_maybe_shared`
//!   everywhere else;
//! - spans: the exporter escapes every text of a span on its way out
//!   (`telemetry::escaping`), whoever wrote the field;
//! - log lines: the writer ([`OneLinePerEvent`]) escapes whatever a field
//!   left raw.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};

/// How much of a text from outside goes into one log line or error, in
/// bytes (before escaping); the rest is cut, with a marker saying how much.
pub const MAX_LOGGED_TEXT: usize = 1 << 10;

/// An error's chain (`{err:#}`: a fatal error, a refused reload) is mostly
/// the host's own words around such texts, each already cut where it was
/// quoted: it gets more room, still bounded.
pub const MAX_ERROR_TEXT: usize = 4 << 10;

/// `err` with its whole chain, as it may appear in a log line or an error
/// message: escaped, and cut to [`MAX_ERROR_TEXT`].
pub fn error_chain(err: &anyhow::Error) -> Escaped<String> {
    escaped_to(format!("{err:#}"), MAX_ERROR_TEXT)
}

/// Whether `c` could act on whoever reads a text rather than be read: a
/// control character (C0, DEL, C1), a bidirectional mark, embedding,
/// override or isolate, or a Unicode line or paragraph separator.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character ([`is_unsafe`]: C0, DEL, C1, `\n`,
/// `\r`, ESC, BEL, the bidi controls, …) written as an escape (`\n`, `\r`,
/// `\u{1b}`, `\u{7}`, `\u{202e}`).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    // Printable ASCII needs no look at its chars.
    if text.bytes().all(|b| (b' '..=b'~').contains(&b)) || !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_debug());
        } else if is_unsafe(c) {
            // `escape_debug` leaves these printable characters alone.
            escaped.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// `value` as pretty JSON safe to show a person: the same JSON value as
/// `serde_json::to_string_pretty` writes, with every unsafe character
/// ([`is_unsafe`]) in a string written as a `\uXXXX` escape. (serde_json
/// escapes C0 itself but writes DEL, C1 and the bidi controls raw; outside
/// strings JSON holds none of them, only the pretty printer's newlines.)
pub fn safe_json<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    if !text.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Ok(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c != '\n' && is_unsafe(c) {
            // All of them are in the Basic Multilingual Plane: one escape.
            safe.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            safe.push(c);
        }
    }
    Ok(safe)
}

/// `text` cut to its first `max` bytes (at a character boundary), with a
/// marker saying how much was cut; `text` itself when it fits.
pub fn cut_to(mut text: String, max: usize) -> String {
    let keep = boundary_at(&text, max);
    if keep == text.len() {
        return text;
    }
    let cut = text.len() - keep;
    text.truncate(keep);
    text.push_str(&format!("…[cut {cut} bytes]"));
    text
}

/// The largest character boundary of `text` at or below `max`.
fn boundary_at(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut keep = max;
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    keep
}

/// `text` as it may appear in a log line or an error: escaped, and cut to
/// [`MAX_LOGGED_TEXT`]. Formats lazily; nothing is copied until written.
pub fn escaped<T: AsRef<str>>(text: T) -> Escaped<T> {
    Escaped { text, max: MAX_LOGGED_TEXT }
}

/// [`escaped`] with room for `max` bytes.
pub fn escaped_to<T: AsRef<str>>(text: T, max: usize) -> Escaped<T> {
    Escaped { text, max }
}

/// Text from outside, shown escaped and cut (see [`escaped`]).
pub struct Escaped<T> {
    text: T,
    max: usize,
}

impl<T: AsRef<str>> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.text.as_ref();
        let keep = boundary_at(text, self.max);
        f.write_str(&escape_controls(&text[..keep]))?;
        if keep < text.len() {
            write!(f, "…[cut {} bytes]", text.len() - keep)?;
        }
        Ok(())
    }
}

impl<T: AsRef<str>> fmt::Debug for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `text` for the person at the terminal, on stderr: each of its lines
/// escaped, so neither a tool's words nor a path quoted in it can move the
/// cursor, set the title or pass a line off as another. The only way the
/// library writes to the terminal (it denies the print macros).
#[allow(clippy::print_stderr)]
pub fn say(text: impl fmt::Display) {
    let text = text.to_string();
    let mut stderr = io::stderr().lock();
    for line in text.split('\n') {
        // A closed stderr has nobody to tell.
        let _ = writeln!(stderr, "{}", escape_controls(line));
    }
}

/// `text` as an HTTP header value: escaped (no CR, LF or other control can
/// end the header early or start another) and cut to [`MAX_ERROR_TEXT`].
/// The only way the host makes a header value of text at run time
/// (`clippy.toml` disallows the raw constructors elsewhere). Fails only
/// for what no escaping makes a header value, which escaped text never is.
#[allow(clippy::disallowed_methods)]
pub fn header_value(text: impl fmt::Display) -> Result<http::HeaderValue, http::header::InvalidHeaderValue> {
    let shown = escaped_to(text.to_string(), MAX_ERROR_TEXT).to_string();
    http::HeaderValue::from_str(&shown).or_else(|_| http::HeaderValue::from_bytes(shown.as_bytes()))
}

/// The text log's writer: `tracing-subscriber`'s fmt layer formats each
/// event whole and hands it over in one write, ending in `\n`. Any other
/// line break or control character in it came from a field nobody escaped,
/// and is escaped here, so one event is always one line. ESC is left alone
/// when the log is coloured (the layer's own colours are ESC sequences; the
/// layer escapes ESC in field values itself).
pub struct OneLinePerEvent<W> {
    inner: W,
    keep_esc: bool,
}

impl<W> OneLinePerEvent<W> {
    /// Writes events to `inner`; `coloured` when the layer writes ANSI colours.
    pub fn new(inner: W, coloured: bool) -> Self {
        OneLinePerEvent { inner, keep_esc: coloured }
    }
}

impl<W: Write> Write for OneLinePerEvent<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (body, end) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (buf, &b""[..]),
        };
        // Most lines are printable ASCII, tabs and spaces: nothing to
        // escape, and a byte test is far cheaper than decoding each char.
        if body.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b)) {
            self.inner.write_all(buf)?;
            return Ok(buf.len());
        }
        let text = String::from_utf8_lossy(body);
        let keep_esc = self.keep_esc;
        let stray = |c: char| is_unsafe(c) && c != '\t' && !(keep_esc && c == '\x1b');
        if !text.contains(stray) {
            self.inner.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut line = String::with_capacity(text.len() + 16);
        for c in text.chars() {
            if stray(c) {
                line.push_str(&escape_controls(c.encode_utf8(&mut [0; 4])));
            } else {
                line.push(c);
            }
        }
        line.push_str(std::str::from_utf8(end).unwrap_or_default());
        self.inner.write_all(line.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_left_alone() {
        assert_eq!(escape_controls("plain text, ünïcode"), "plain text, ünïcode");
        assert_eq!(escape_controls("a\nb\rc\td"), r"a\nb\rc\td");
        assert_eq!(escape_controls("\x1b[2J\u{9b}1A\u{7f}\x07"), r"\u{1b}[2J\u{9b}1A\u{7f}\u{7}");
    }

    #[test]
    fn bidi_overrides_and_unicode_line_breaks_are_escaped_too() {
        assert_eq!(escape_controls("a\u{202e}b\u{2028}c\u{2066}"), r"a\u{202e}b\u{2028}c\u{2066}");
        assert_eq!(escape_controls("\u{9b}31m\u{9d}0;t"), r"\u{9b}31m\u{9d}0;t");
    }

    #[test]
    fn json_for_people_is_the_same_value_with_nothing_raw() {
        let value = serde_json::json!({ "t\u{9b}": "x\u{9d}0;title\u{7}\u{202e}y\u{7f}\né" });
        let shown = safe_json(&value).unwrap();
        assert!(!shown.chars().any(|c| c != '\n' && is_unsafe(c)), "{shown:?}");
        assert!(shown.contains(r"\u009d0;title\u0007\u202ey\u007f\né"), "{shown}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), value);
    }

    #[test]
    fn cut_text_keeps_its_head_and_says_how_much_went() {
        assert_eq!(cut_to("short".into(), 16), "short");
        assert_eq!(cut_to("x".repeat(100), 10), format!("{}…[cut 90 bytes]", "x".repeat(10)));
        // Never inside a character: "é" is two bytes.
        assert_eq!(cut_to("aéé".into(), 2), "a…[cut 4 bytes]");
    }

    #[test]
    fn escaped_text_is_one_bounded_line() {
        let forged = format!("evil\nINFO forged\x1b]0;title\x07\x1b[2J{}", "x".repeat(10 << 10));
        let shown = escaped(&forged).to_string();
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert!(shown.starts_with(r"evil\nINFO forged\u{1b}]0;title\u{7}\u{1b}[2J"), "{shown}");
        let cut = forged.len() - MAX_LOGGED_TEXT;
        assert!(shown.ends_with(&format!("x…[cut {cut} bytes]")), "{shown}");
        assert!(shown.len() < MAX_LOGGED_TEXT + 64, "{} bytes", shown.len());
        assert_eq!(escaped("plain").to_string(), "plain");
        assert_eq!(escaped_to("aéé", 2).to_string(), "a…[cut 4 bytes]");
    }

    #[test]
    fn a_header_value_of_outside_text_is_one_header() {
        let value = header_value("Bearer scope=\"a\r\nSet-Cookie: x\u{7f}\"").unwrap();
        assert_eq!(value.to_str().unwrap(), r#"Bearer scope="a\r\nSet-Cookie: x\u{7f}""#);
        assert!(header_value("é\u{202e}").is_ok(), "text past ASCII is obs-text, still one value");
    }

    fn through_writer(event: &[u8], coloured: bool) -> String {
        let mut out = Vec::new();
        let mut writer = OneLinePerEvent::new(&mut out, coloured);
        assert_eq!(writer.write(event).unwrap(), event.len());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_log_writer_keeps_each_event_on_one_line() {
        assert_eq!(through_writer(b"INFO plain\ttab\n", false), "INFO plain\ttab\n");
        assert_eq!(
            through_writer(b"WARN reason=a\nINFO forged\x07\x1b[2J\n", false),
            "WARN reason=a\\nINFO forged\\u{7}\\u{1b}[2J\n"
        );
        // Coloured: the layer's own ESC sequences stay; line breaks never do.
        assert_eq!(through_writer(b"\x1b[32mINFO\x1b[0m a\rb\n", true), "\x1b[32mINFO\x1b[0m a\\rb\n");
    }
}
