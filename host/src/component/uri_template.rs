//! Resource templates (RFC 6570, level 1: `{name}` expressions only) and
//! matching a URI against one. A `{name}` matches one or more characters
//! other than `/`, up to the first place the text after it matches: one
//! pass over the URI, however hostile the template or the URI (each literal
//! is found with `str::find`, linear in what it scans, and what it scans is
//! then consumed), and no URI past [`MAX_MATCHED_URI`] is looked at at all.

use crate::limits::MAX_MATCHED_URI;

/// The most variables one template holds.
const MAX_VARIABLES: usize = 16;

/// A parsed template.
#[derive(Clone, Debug)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug)]
enum Part {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Parses `text`; a template with other RFC 6570 operators (`{+x}`,
    /// `{?x}`, ...), unbalanced braces or two variables in a row is refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or("its URI template has an unclosed `{`")?;
                    let name = &rest[1..end];
                    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                        return Err(
                            "its URI template has a variable other than `{name}` (letters, digits, _)".into(),
                        );
                    }
                    if matches!(parts.last(), Some(Part::Variable(_))) {
                        return Err("its URI template has two variables with no text between them".into());
                    }
                    parts.push(Part::Variable(name.to_string()));
                    rest = &rest[end + 1..];
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    if rest[..end].contains('}') {
                        return Err("its URI template has a `}` with no `{`".into());
                    }
                    parts.push(Part::Literal(rest[..end].to_string()));
                    rest = &rest[end..];
                }
            }
        }
        let variables = parts.iter().filter(|part| matches!(part, Part::Variable(_))).count();
        if variables == 0 {
            return Err("its URI template has no `{variable}` (list it as a resource)".into());
        }
        if variables > MAX_VARIABLES {
            return Err(format!("its URI template has more than {MAX_VARIABLES} variables"));
        }
        Ok(UriTemplate { text: text.to_string(), parts })
    }

    /// The template as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The variables' values if `uri` matches, in order. Linear in the
    /// URI's length; a URI past [`MAX_MATCHED_URI`] matches nothing.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        if uri.len() > MAX_MATCHED_URI {
            return None;
        }
        let mut rest = uri;
        let mut values = Vec::new();
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(text) => rest = rest.strip_prefix(text.as_str())?,
                Part::Variable(name) => {
                    // The value ends at the next `/` or where the next literal starts.
                    let segment_end = rest.find('/').unwrap_or(rest.len());
                    let end = match parts.peek() {
                        // The first place after one character, within the
                        // segment, where the literal follows: one search
                        // from the second character, over the segment and
                        // no more than the literal past it.
                        Some(Part::Literal(next)) => {
                            let from = rest.chars().next()?.len_utf8();
                            let mut to = (segment_end + next.len()).min(rest.len());
                            // An occurrence ends at a character boundary.
                            while !rest.is_char_boundary(to) {
                                to -= 1;
                            }
                            let window = rest.get(from..to)?;
                            let at = from + window.find(next.as_str())?;
                            if at > segment_end {
                                return None;
                            }
                            at
                        }
                        _ => segment_end,
                    };
                    if end == 0 {
                        return None;
                    }
                    values.push((name.clone(), rest[..end].to_string()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_takes_one_segment_or_part_of_one() {
        let template = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(template.matches("test://template/123/data").unwrap(), [("id".into(), "123".into())]);
        assert!(template.matches("test://template/1/2/data").is_none());
        assert!(template.matches("test://template//data").is_none());
        assert!(template.matches("test://template/123/data/more").is_none());
        let files = UriTemplate::parse("file:///{dir}/{name}.txt").unwrap();
        let got = files.matches("file:///notes/today.txt").unwrap();
        assert_eq!(got, [("dir".into(), "notes".into()), ("name".into(), "today".into())]);
        let tail = UriTemplate::parse("db://orders/{id}").unwrap();
        assert_eq!(tail.matches("db://orders/42").unwrap(), [("id".into(), "42".into())]);
        assert!(tail.matches("db://orders/42/x").is_none());
    }

    #[test]
    fn templates_beyond_level_one_are_refused() {
        for bad in ["a://{+x}", "a://{x", "a://x}", "a://{x}{y}", "a://plain", "a://{}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_long_hostile_uri_is_matched_in_one_pass() {
        let template = UriTemplate::parse("a://{x}b{y}b{z}c").unwrap();
        let uri = format!("a://{}", "b".repeat(2000));
        assert!(template.matches(&uri).is_none());
        // A long literal after a variable, against a URI of near misses:
        // was the segment's length times the literal's.
        let literal = "ab".repeat(500);
        let template = UriTemplate::parse(&format!("x://{{v}}{literal}c")).unwrap();
        let uri = format!("x://{}", "ab".repeat(MAX_MATCHED_URI / 2 - 8));
        let started = std::time::Instant::now();
        for _ in 0..250 {
            assert!(template.matches(&uri).is_none());
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        assert!(template.matches(&"x".repeat(MAX_MATCHED_URI + 1)).is_none());
    }

    #[test]
    fn the_value_ends_where_the_literal_first_follows_within_its_segment() {
        let template = UriTemplate::parse("a://{x}.b{y}").unwrap();
        assert_eq!(
            template.matches("a://é.b.b1").unwrap(),
            [("x".into(), "é".into()), ("y".into(), ".b1".into())]
        );
        // The literal must start within the segment, not past its `/`.
        assert!(UriTemplate::parse("a://{x}/y").unwrap().matches("a://q/y").is_some());
        assert!(UriTemplate::parse("a://{x}z").unwrap().matches("a://q/z").is_none());
        assert!(UriTemplate::parse("a://{x}.txt").unwrap().matches("a://.txt").is_none());
    }
}
