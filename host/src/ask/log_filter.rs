//! The log level a client chose: for a session, with `logging/setLevel`
//! (up to protocol 2025-11-25); for one request on 2026-07-28, with
//! `_meta["io.modelcontextprotocol/logLevel"]` (SEP-2575), without which
//! that request gets no log records at all.

use std::sync::Mutex;

use rmcp::model::LoggingLevel;

/// The minimum level of the log records a client receives: one per MCP
/// session, shared by its calls, or one per request on 2026-07-28.
#[derive(Debug, Default)]
pub struct LogFilter {
    /// `None` until the client sets a level; then everything from `info` up goes out.
    minimum: Mutex<Option<LoggingLevel>>,
    /// Nothing goes out until a level is set (a 2026-07-28 request).
    silent_unset: bool,
}

impl LogFilter {
    /// The filter of one 2026-07-28 request: records at `level` and up, or
    /// none when the request names no level.
    pub fn for_request(level: Option<LoggingLevel>) -> Self {
        LogFilter { minimum: Mutex::new(level), silent_unset: true }
    }

    /// Records the client's `logging/setLevel`.
    pub fn set(&self, level: LoggingLevel) {
        *self.minimum.lock().unwrap() = Some(level);
    }

    /// Whether a record at `level` goes to the client.
    pub(super) fn lets_through(&self, level: LoggingLevel) -> bool {
        let minimum = match *self.minimum.lock().unwrap() {
            Some(minimum) => minimum,
            None if self.silent_unset => return false,
            None => LoggingLevel::Info,
        };
        severity(level) >= severity(minimum)
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_and_up_until_the_client_sets_a_level() {
        let filter = LogFilter::default();
        assert!(!filter.lets_through(LoggingLevel::Debug));
        assert!(filter.lets_through(LoggingLevel::Info));
        filter.set(LoggingLevel::Error);
        assert!(!filter.lets_through(LoggingLevel::Warning));
        assert!(filter.lets_through(LoggingLevel::Emergency));
    }

    #[test]
    fn a_2026_request_gets_no_records_unless_it_names_a_level() {
        assert!(!LogFilter::for_request(None).lets_through(LoggingLevel::Emergency));
        let debug = LogFilter::for_request(Some(LoggingLevel::Debug));
        assert!(debug.lets_through(LoggingLevel::Debug));
        let error = LogFilter::for_request(Some(LoggingLevel::Error));
        assert!(!error.lets_through(LoggingLevel::Warning));
    }
}
