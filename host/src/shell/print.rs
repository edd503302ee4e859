//! A call's result, printed for a person or a pipe: text content on stdout
//! as the tool wrote it, structured content as JSON with `--json`, other
//! content summarised on stderr, an `isError` result's text on stderr.
//!
//! Everything here came from the guest. Only the result's text goes to
//! stdout as it is, and only into a pipe or a file (which may need it byte
//! for byte); whatever reaches a terminal has its control characters
//! escaped.

use std::io::{self, IsTerminal as _, Write};

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::log_text::{escape_controls, safe_json};

/// Prints `result`; `json` prints its structured content (or, if it has
/// none, the whole result) as JSON instead of its text. An `isError`
/// result's text goes to stderr, and nothing to stdout.
pub(super) fn result(result: &CallToolResult, json: bool) -> io::Result<()> {
    let blocks: Vec<Value> =
        result.content.iter().filter_map(|block| serde_json::to_value(block).ok()).collect();
    let mut stdout = io::stdout().lock();
    let mut stderr = io::stderr().lock();
    if result.is_error == Some(true) {
        for block in &blocks {
            match text_of(block) {
                Some(text) => lines_escaped(&mut stderr, "error: ", text)?,
                None => summarise(&mut stderr, block)?,
            }
        }
        return stderr.flush();
    }
    if json {
        let shown = match &result.structured_content {
            // The same JSON value, with no raw C1 or bidi control in it.
            Some(structured) => safe_json(structured),
            None => safe_json(result),
        };
        writeln!(stdout, "{}", shown.map_err(io::Error::other)?)?;
        return stdout.flush();
    }
    // On a terminal a tool's escape sequences could move the cursor or
    // rewrite what the user sees: escaped there, byte for byte into a pipe.
    let terminal = io::stdout().is_terminal();
    for block in &blocks {
        match text_of(block) {
            Some(text) if terminal => lines_escaped(&mut stdout, "", text)?,
            Some(text) => writeln!(stdout, "{text}")?,
            None => summarise(&mut stderr, block)?,
        }
    }
    stdout.flush()
}

/// A text block's text.
fn text_of(block: &Value) -> Option<&str> {
    (block.get("type")? == "text").then(|| block.get("text")?.as_str())?
}

/// `text`, each line after `lead` and escaped: a tool's message can neither
/// move the cursor nor pass a line of its own off as the host's.
pub(super) fn lines_escaped(out: &mut impl Write, lead: &str, text: &str) -> io::Result<()> {
    for line in text.lines() {
        writeln!(out, "{lead}{}", escape_controls(line))?;
    }
    Ok(())
}

/// One line saying what a block that is not text holds: its kind, media
/// type and size; never its bytes, which a terminal would try to show.
fn summarise(out: &mut impl Write, block: &Value) -> io::Result<()> {
    let field = |value: &Value, name: &str| value.get(name).and_then(Value::as_str).map(str::to_string);
    let kind = field(block, "type").unwrap_or_else(|| "unknown".into());
    let (about, mime, size) = match kind.as_str() {
        "image" | "audio" => {
            (None, field(block, "mimeType"), field(block, "data").map(|data| decoded(&data)))
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            let size = match (field(&resource, "text"), field(&resource, "blob")) {
                (Some(text), _) => Some(text.len()),
                (None, Some(blob)) => Some(decoded(&blob)),
                (None, None) => None,
            };
            (field(&resource, "uri"), field(&resource, "mimeType"), size)
        }
        "resource_link" => (field(block, "uri"), field(block, "mimeType"), None),
        _ => (None, None, None),
    };
    let mut line = format!("[{kind} content");
    if let Some(about) = about {
        line.push_str(&format!(" {about}"));
    }
    if let Some(mime) = mime {
        line.push_str(&format!(", {mime}"));
    }
    if let Some(size) = size {
        line.push_str(&format!(", {size} bytes"));
    }
    line.push_str(" not shown; --json prints it]");
    writeln!(out, "{}", escape_controls(&line))
}

/// The size of what base64 text of `encoded` length decodes to.
fn decoded(encoded: &str) -> usize {
    let padding = encoded.bytes().rev().take_while(|byte| *byte == b'=').count();
    (encoded.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary(block: Value) -> String {
        let mut out = Vec::new();
        summarise(&mut out, &block).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn media_is_summarised_not_dumped() {
        let image = summary(json!({ "type": "image", "mimeType": "image/png", "data": "AAAA" }));
        assert_eq!(image, "[image content, image/png, 3 bytes not shown; --json prints it]\n");
        let resource = summary(json!({
            "type": "resource",
            "resource": { "uri": "file:///x\x1b[2J", "mimeType": "text/plain", "text": "hello" }
        }));
        assert_eq!(
            resource,
            "[resource content file:///x\\u{1b}[2J, text/plain, 5 bytes not shown; --json prints it]\n"
        );
    }

    #[test]
    fn error_text_is_escaped_line_by_line() {
        let mut out = Vec::new();
        lines_escaped(&mut out, "error: ", "first\nsecond \x1b]0;title\x07").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "error: first\nerror: second \\u{1b}]0;title\\u{7}\n");
    }

    #[test]
    fn base64_sizes_count_the_padding() {
        assert_eq!(decoded("AAAA"), 3);
        assert_eq!(decoded("AAA="), 2);
        assert_eq!(decoded("AA=="), 1);
    }
}
