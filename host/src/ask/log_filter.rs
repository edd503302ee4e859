//! The log level a session's client chose (`logging/setLevel`).

use std::sync::Mutex;

use rmcp::model::LoggingLevel;

/// The minimum level of the log records a session's client receives. One
/// per MCP session, shared by its calls.
#[derive(Debug, Default)]
pub struct LogFilter {
    /// `None` until the client sets a level; then everything from `info` up goes out.
    minimum: Mutex<Option<LoggingLevel>>,
}

impl LogFilter {
    /// Records the client's `logging/setLevel`.
    pub fn set(&self, level: LoggingLevel) {
        *self.minimum.lock().unwrap() = Some(level);
    }

    /// Whether a record at `level` goes to the client.
    pub(super) fn lets_through(&self, level: LoggingLevel) -> bool {
        let minimum = self.minimum.lock().unwrap().unwrap_or(LoggingLevel::Info);
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
}
