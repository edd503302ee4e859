//! Per-call resource limits, and how a call that hit one is described to the
//! client. Limits come from the command line; every call gets the same set.

use std::fmt;
use std::time::Duration;

/// What one tool call may use. A call that exceeds any of these is stopped and
/// answered with `isError: true` naming the limit.
#[derive(Clone, Debug)]
pub struct CallLimits {
    /// Fuel (roughly, wasm instructions) per call; `None` = unmetered.
    pub fuel: Option<u64>,
    /// Wall-clock time per call.
    pub timeout: Duration,
    /// Linear memory per call, in bytes.
    pub max_memory: usize,
    /// How long a cancelled call may take to return by itself before the host
    /// stops it.
    pub cancel_grace: Duration,
    /// Fuel for the `cleanup` export.
    pub cleanup_fuel: u64,
    /// Wall-clock time for the `cleanup` export.
    pub cleanup_timeout: Duration,
    /// Bytes a result may take as the client receives it (its JSON: every
    /// content block and structured content together), or an error's message.
    pub max_output: usize,
    /// Content blocks a result may hold (`--max-content-blocks`).
    pub max_content_blocks: usize,
    /// Host handles (files, streams, pollables, HTTP bodies) held at once.
    pub max_handles: usize,
    /// Bytes of one log record's data or one progress message; longer ones
    /// are cut (`--max-log-record`).
    pub max_log_record: usize,
    /// Bytes of one question to the user: an elicitation's message and
    /// schema, a URL elicitation's message and URL, a sampling request
    /// (`--max-question`).
    pub max_question: usize,
    /// Bytes of one answer from the client, as JSON: an elicitation's
    /// result or a sampling result (`--max-answer`).
    pub max_answer: usize,
    /// Bytes of notifications (log records, progress) one call may queue
    /// for the client (`--max-notification-bytes`).
    pub max_notification_bytes: usize,
    /// Bytes of stdout and stderr one call may write to the host's log
    /// (`--max-guest-output`); the rest is discarded.
    pub max_guest_output: usize,
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            fuel: Some(10_000_000_000),
            timeout: Duration::from_secs(60),
            max_memory: 256 << 20,
            cancel_grace: Duration::from_millis(100),
            cleanup_fuel: 100_000_000,
            cleanup_timeout: Duration::from_millis(500),
            max_output: 16 << 20,
            max_content_blocks: 1024,
            max_handles: 4096,
            max_log_record: 16 << 10,
            max_question: 64 << 10,
            max_answer: 1 << 20,
            max_notification_bytes: 1 << 20,
            max_guest_output: 64 << 10,
        }
    }
}

/// Memories, tables and instances one call's store may hold; the pool caps
/// the same per component, so a component beyond them is refused at load.
pub const MAX_MEMORIES: usize = 4;
/// See [`MAX_MEMORIES`].
pub const MAX_TABLES: usize = 16;
/// See [`MAX_MEMORIES`]. Large language runtimes (CPython) link a few dozen.
pub const MAX_CORE_INSTANCES: usize = 64;

/// The longest URI a client or a guest may name to be matched (read,
/// subscribed to, announced as updated): longer is no resource of ours, and
/// is refused before any template is tried or anything is kept.
pub const MAX_MATCHED_URI: usize = 8 << 10;

/// A limit a call ran into, as reported to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitHit {
    /// It used up `--fuel`.
    Fuel(u64),
    /// It ran past `--timeout`.
    Deadline(Duration),
    /// It tried to grow its memory past `--max-memory`.
    Memory(usize),
    /// It tried to grow its memory while the calls running together held
    /// all of `--max-total-memory`.
    TotalMemory(usize),
    /// It overflowed the wasm stack (`--max-stack`).
    Stack,
    /// Its result was larger than `--max-output` (the size it had, the limit).
    Output(usize, usize),
    /// It held more host handles than `--max-handles` allows.
    Handles(usize),
    /// Its result held more content blocks than `--max-content-blocks`
    /// allows (the number it had, the limit).
    ContentBlocks(usize, usize),
}

impl fmt::Display for LimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitHit::Fuel(fuel) => write!(f, "it used up its fuel limit of {fuel} (--fuel)"),
            LimitHit::Deadline(d) => {
                write!(f, "it exceeded its time limit of {} (--timeout)", HumanDuration(*d))
            }
            LimitHit::Memory(bytes) => {
                write!(f, "it exceeded its memory limit of {} (--max-memory)", HumanBytes(*bytes))
            }
            LimitHit::TotalMemory(bytes) => write!(
                f,
                "it needed more memory while the host's memory for all calls together, {}, was in use (--max-total-memory)",
                HumanBytes(*bytes)
            ),
            LimitHit::Stack => write!(f, "it overflowed its stack (--max-stack)"),
            LimitHit::Handles(limit) => {
                write!(f, "it held more than its limit of {limit} open handles (--max-handles)")
            }
            LimitHit::Output(size, limit) => write!(
                f,
                "its result of {} is larger than its output limit of {} (--max-output)",
                HumanBytes(*size),
                HumanBytes(*limit)
            ),
            LimitHit::ContentBlocks(count, limit) => write!(
                f,
                "its result of {count} content blocks has more than its limit of {limit} \
                 (--max-content-blocks)"
            ),
        }
    }
}

/// Formats a duration the way a user typed it: `250ms`, `2s`, `1.5s`.
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms < 1000 {
            write!(f, "{ms}ms")
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{}s", self.0.as_secs_f64())
        }
    }
}

/// Formats a byte count in binary units: `64 MiB`.
pub struct HumanBytes(pub usize);

impl fmt::Display for HumanBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit < UNITS.len() - 1 {
            value /= 1024.0;
            unit += 1;
        }
        if value.fract() == 0.0 {
            write!(f, "{value} {}", UNITS[unit])
        } else {
            write!(f, "{value:.1} {}", UNITS[unit])
        }
    }
}

/// Parses `500ms`, `2s`, `1.5s`, `1m` or a bare number of milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 0.001)
    };
    let value: f64 =
        number.trim().parse().map_err(|_| format!("`{text}` is not a duration (try 500ms, 2s or 1m)"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` is not a duration (try 500ms, 2s or 1m)"));
    }
    Ok(Duration::from_secs_f64(value * scale))
}

/// Parses `64MiB`, `512KiB`, `1GiB`, `64M`, or a bare number of bytes.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let lower = text.trim().to_ascii_lowercase();
    let units: [(&str, usize); 7] = [
        ("gib", 1 << 30),
        ("mib", 1 << 20),
        ("kib", 1 << 10),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
        ("b", 1),
    ];
    let (number, scale) = units
        .iter()
        .find_map(|(suffix, scale)| lower.strip_suffix(suffix).map(|n| (n, *scale)))
        .unwrap_or((lower.as_str(), 1));
    let value: usize =
        number.trim().parse().map_err(|_| format!("`{text}` is not a size (try 64MiB or 512KiB)"))?;
    value.checked_mul(scale).ok_or_else(|| format!("`{text}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_the_units_users_type() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("40"), Ok(Duration::from_millis(40)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("512k"), Ok(512 << 10));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn limits_are_named_as_the_flags_that_set_them() {
        assert_eq!(
            LimitHit::Memory(64 << 20).to_string(),
            "it exceeded its memory limit of 64 MiB (--max-memory)"
        );
        assert_eq!(
            LimitHit::Deadline(Duration::from_millis(1500)).to_string(),
            "it exceeded its time limit of 1.5s (--timeout)"
        );
    }
}
