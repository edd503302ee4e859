//! The config file as text: where in it a mistake is, and the values
//! written as text (durations, sizes, lists of rules) read with the same
//! parsers as the command line's.

use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::limits::{parse_bytes, parse_duration};

/// The error with the line (and column) it is on.
pub(super) fn located(err: &toml::de::Error, text: &str) -> String {
    match err.span() {
        Some(span) => {
            let line = line_of(text, span.start);
            let column = span.start - text[..span.start].rfind('\n').map_or(0, |at| at + 1) + 1;
            format!("line {line}, column {column}: {}", err.message())
        }
        None => err.message().to_string(),
    }
}

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn parse_with<'de, D, T, E: Display>(
    d: D,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
{
    use serde::de::Error as _;
    let text = String::deserialize(d)?;
    parse(&text).map(Some).map_err(D::Error::custom)
}

pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    parse_with(d, parse_duration)
}

pub(super) fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    parse_with(d, parse_bytes)
}

pub(super) fn parsed_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    use serde::de::Error as _;
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|text| text.parse().map_err(D::Error::custom))
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
}
