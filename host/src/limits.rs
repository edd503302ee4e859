//! Per-call resource limits, and how a call that hit one is described to the
//! client. Each limit is defined once, here: a flag, a config-file key and
//! a field (see [`CallLimits`]); each component has its own set.

use std::fmt;
use std::time::Duration;

/// The `--help` heading of the limits (`config::heading::LIMITS`).
pub const HELP_HEADING: &str = "Limits";

/// What one tool call may use. A call that exceeds any of these is stopped
/// and answered with `isError: true` naming the limit. Each field is its
/// own flag and config-file key (`[defaults]`, `[[component]]`), defined
/// here once: its doc is its help, its attribute its default.
#[derive(Clone, Debug, clap::Args)]
pub struct CallLimits {
    /// Fuel per call (about one unit per wasm instruction).
    ///
    /// 0 = unmetered (epoch deadlines still apply). A call that runs out
    /// gets an isError result.
    #[arg(long, value_name = "N", default_value_t = 10_000_000_000, help_heading = HELP_HEADING)]
    pub fuel: u64,

    /// Wall-clock limit per call.
    ///
    /// E.g. 30s, 500ms. The call is cancelled, cleaned up, and answered
    /// with an isError result.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        value_parser = parse_duration,
        help_heading = HELP_HEADING
    )]
    pub timeout: Duration,

    /// Memory per call.
    ///
    /// Every linear memory and table of the call together, and the
    /// wasi:http header fields the host holds for it (e.g. 256MiB).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "256MiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_memory: usize,

    /// Largest result a call may return, as the client receives it.
    ///
    /// Measured as its JSON: every field, media in base64. A larger one
    /// becomes an isError result naming the limit.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "16MiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_output: usize,

    /// Content blocks a call's result may hold.
    ///
    /// More is an isError result naming the limit.
    #[arg(long, value_name = "N", default_value_t = 1024, help_heading = HELP_HEADING)]
    pub max_content_blocks: usize,

    /// Largest log record or progress message a tool may send.
    ///
    /// A log record is measured by its data. A longer one is cut, with a
    /// marker saying how much was cut (`…[cut N bytes]`); cut JSON data
    /// goes out as a string.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "16KiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_log_record: usize,

    /// Largest question a tool may put to the user.
    ///
    /// An elicitation's message and schema, a URL elicitation's message and
    /// URL, or a sampling request. A larger one fails in the tool with
    /// `request-error::failed` naming this flag, without reaching the
    /// client.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64KiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_question: usize,

    /// Largest answer a tool may get from the client.
    ///
    /// An elicitation's result or a sampling result, as JSON. A larger one
    /// fails in the tool with `request-error::failed` naming this flag, as
    /// an accepted form that breaks its requested schema does; both are
    /// logged.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1MiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_answer: usize,

    /// Log records and progress one call may send to the client, in bytes.
    ///
    /// Past it they are dropped, and counted (`dropped_notes` in the `call
    /// ended` line). Those still queued when the call's --timeout runs out
    /// are dropped too.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1MiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_notification_bytes: usize,

    /// What one call may write to stdout and stderr together.
    ///
    /// It goes to the host's log line by line, tagged with the call (target
    /// `tool`, with `call_id` and `stream`; control characters escaped).
    /// The rest is discarded (the tool's writes still succeed) and one line
    /// says how much.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64KiB",
        value_parser = parse_bytes,
        help_heading = HELP_HEADING
    )]
    pub max_guest_output: usize,

    /// Host handles one call may hold at once.
    ///
    /// Open files and directories, streams, pollables, HTTP requests and
    /// bodies. A call past it is stopped with an isError result naming the
    /// limit. When the open-file limit is low, this is lowered at start
    /// (with a warning) to a quarter of the descriptors left to calls.
    #[arg(long, value_name = "N", default_value_t = 4096, help_heading = HELP_HEADING)]
    pub max_handles: usize,

    /// How long a cancelled tool may take to stop by itself.
    ///
    /// After a cancel, the time a tool has to stop by itself before the
    /// host stops it (e.g. 100ms; 0 stops it at once).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "100ms",
        value_parser = parse_duration,
        help_heading = HELP_HEADING
    )]
    pub cancel_grace: Duration,

    /// Wall-clock limit for a component's `cleanup` export.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "500ms",
        value_parser = parse_duration,
        help_heading = HELP_HEADING
    )]
    pub cleanup_timeout: Duration,

    /// Fuel for a component's `cleanup` export.
    #[arg(long, value_name = "N", default_value_t = 100_000_000, help_heading = HELP_HEADING)]
    pub cleanup_fuel: u64,
}

impl CallLimits {
    /// Fuel per call, `None` when unmetered (`--fuel 0`).
    pub fn metered_fuel(&self) -> Option<u64> {
        (self.fuel > 0).then_some(self.fuel)
    }
}

impl Default for CallLimits {
    /// Every flag's default, read from the flags' own definitions once.
    /// Once, because calls ask for it: every call's channel starts from the
    /// defaults. Building the flags' clap command and parsing an empty
    /// command line on each call was 1.8 % of the host's CPU under load in
    /// its own code, and as much again in the copies and allocations it
    /// made; reading them once gave the demo's `echo` 17 % more calls a
    /// second at 32 in flight (BENCHMARKS.md).
    fn default() -> Self {
        static DEFAULTS: std::sync::LazyLock<CallLimits> = std::sync::LazyLock::new(|| {
            use clap::{Args as _, FromArgMatches as _};
            let matches = CallLimits::augment_args(clap::Command::new("limits")).get_matches_from(["limits"]);
            CallLimits::from_arg_matches(&matches).expect("every limit has a default")
        });
        DEFAULTS.clone()
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
