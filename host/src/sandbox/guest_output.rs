//! A call's stdout and stderr, as the host's log sees them.
//!
//! A tool's output never reaches the host's stdout (the protocol stream).
//! It goes to the host's log, line by line, as events of target `tool`
//! carrying the call's `call_id` and the `stream`, with control characters
//! escaped: a tool cannot end a line early, move the cursor or pass a line
//! of its own for one of the host's. What one call may write is capped
//! (`--max-guest-output`, stdout and stderr together); past the cap bytes
//! are discarded, yet every write succeeds (a Rust tool's `println!` panics
//! on a write error), and one line at the end of the call says how much was
//! dropped.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::limits::HumanBytes;
use crate::log_text::escape_controls;

/// A line longer than this is logged in pieces, so an endless line is not
/// held back until the call ends; the size of any outside text in a log
/// line (and a traced call's span event), so nothing is cut from a piece.
const LONGEST_LINE: usize = crate::log_text::MAX_LOGGED_TEXT;

/// What a guest may be offered to write at once (wasmtime-wasi's own stdio
/// offers the same).
const WRITE_PERMIT: usize = 64 << 10;

/// Which of the guest's two output streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    Stdout = 0,
    Stderr = 1,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One call's output: the budget both streams share, and each stream's
/// unfinished line.
#[derive(Clone)]
pub struct GuestOutput(Arc<Mutex<Shared>>);

struct Shared {
    call_id: Arc<str>,
    limit: usize,
    /// Bytes still allowed.
    left: usize,
    /// Bytes discarded past the limit.
    dropped: u64,
    /// Each stream's line so far (indexed by [`Stream`]).
    partial: [Vec<u8>; 2],
}

impl GuestOutput {
    /// The output of call `call_id`, capped at `limit` bytes.
    pub fn new(call_id: Arc<str>, limit: usize) -> Self {
        GuestOutput(Arc::new(Mutex::new(Shared {
            call_id,
            limit,
            left: limit,
            dropped: 0,
            partial: [Vec::new(), Vec::new()],
        })))
    }

    /// Names call `call_id` in the lines from now on (a sandbox made ahead
    /// of its call).
    pub fn bind(&self, call_id: Arc<str>) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).call_id = call_id;
    }

    /// The call is over: logs its unfinished lines, and what was discarded,
    /// now rather than when the store goes.
    pub fn finish(&self) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).finish();
    }

    /// The guest's stdout.
    pub fn stdout(&self) -> impl StdoutStream + use<> {
        Writer { output: self.clone(), stream: Stream::Stdout }
    }

    /// The guest's stderr.
    pub fn stderr(&self) -> impl StdoutStream + use<> {
        Writer { output: self.clone(), stream: Stream::Stderr }
    }

    fn take(&self, stream: Stream, bytes: &[u8]) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take(stream, bytes);
    }
}

impl Shared {
    /// Logs every line `bytes` completes, within the budget.
    fn take(&mut self, stream: Stream, bytes: &[u8]) {
        let kept = bytes.len().min(self.left);
        self.left -= kept;
        self.dropped += (bytes.len() - kept) as u64;
        let mut rest = &bytes[..kept];
        while !rest.is_empty() {
            let partial = &mut self.partial[stream as usize];
            let window = &rest[..rest.len().min(LONGEST_LINE - partial.len())];
            match window.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    partial.extend_from_slice(&window[..end]);
                    rest = &rest[end + 1..];
                    self.emit(stream);
                }
                None => {
                    partial.extend_from_slice(window);
                    rest = &rest[window.len()..];
                    if partial.len() >= LONGEST_LINE {
                        self.emit(stream);
                    }
                }
            }
        }
    }

    /// Logs the stream's line so far, if any, and starts a new one.
    fn emit(&mut self, stream: Stream) {
        let line = std::mem::take(&mut self.partial[stream as usize]);
        let text = String::from_utf8_lossy(&line);
        tracing::info!(
            target: "tool",
            call_id = &*self.call_id,
            stream = stream.name(),
            "{}",
            escape_controls(&text)
        );
    }
}

impl Shared {
    /// The call is over: logs unfinished lines, and what was discarded.
    /// Once: what it logged is not logged again.
    fn finish(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            if !self.partial[stream as usize].is_empty() {
                self.emit(stream);
            }
        }
        if self.dropped > 0 {
            tracing::warn!(
                target: "tool",
                call_id = &*self.call_id,
                dropped_bytes = self.dropped,
                "the tool wrote {} more to stdout and stderr than --max-guest-output ({}) lets through; \
                 it was discarded",
                HumanBytes(self.dropped as usize),
                HumanBytes(self.limit)
            );
            self.dropped = 0;
        }
    }
}

impl Drop for Shared {
    /// The store is gone: finish, if the call did not.
    fn drop(&mut self) {
        self.finish();
    }
}

/// One of the two streams, as wasmtime-wasi hands it to the guest (as a
/// `wasi:io` output stream, or as an `AsyncWrite`). Every write succeeds at
/// once: the bytes are logged or discarded, never queued.
#[derive(Clone)]
struct Writer {
    output: GuestOutput,
    stream: Stream,
}

impl IsTerminal for Writer {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Writer {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for Writer {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.output.take(self.stream, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Writer {
    async fn ready(&mut self) {}
}

impl AsyncWrite for Writer {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.output.take(self.stream, buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_at_the_budget_shared_by_both_streams() {
        let output = GuestOutput::new("call-test".into(), 10);
        output.take(Stream::Stdout, b"12345\n");
        output.take(Stream::Stderr, b"67890\nmore");
        let shared = output.0.lock().unwrap();
        assert_eq!(shared.left, 0);
        assert_eq!(shared.dropped, 6);
        assert!(shared.partial[0].is_empty(), "the stdout line was logged");
        assert_eq!(shared.partial[1], b"6789", "stderr's unfinished line waits for its end");
    }

    #[test]
    fn a_line_without_end_is_logged_in_pieces() {
        let output = GuestOutput::new("call-test".into(), 1 << 20);
        output.take(Stream::Stdout, &vec![b'x'; LONGEST_LINE * 2 + 10]);
        let shared = output.0.lock().unwrap();
        assert_eq!(shared.partial[0].len(), 10);
    }
}
