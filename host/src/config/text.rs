//! The config file as text: where in it a mistake is.

/// The error with the line (and column) it is on.
pub(super) fn located(err: &toml_edit::TomlError, text: &str) -> String {
    match err.span() {
        Some(span) => {
            let line = line_of(text, span.start);
            let column = span.start - text[..span.start].rfind('\n').map_or(0, |at| at + 1) + 1;
            format!("line {line}, column {column}: {}", err.message())
        }
        None => err.message().to_string(),
    }
}

/// The line (from 1) byte `offset` of `text` is on.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}
