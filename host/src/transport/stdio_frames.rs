//! Frames on stdio: one JSON-RPC message per line each way, and an answer
//! for every line the host cannot read.
//!
//! rmcp's own line transport drops some frames in silence: a line over its
//! 16 MiB cap, and a line that is not JSON (nested past serde_json's depth
//! limit included); the client then waits for an answer that never comes.
//! Here each such frame is answered with a JSON-RPC error: `-32700` for a
//! line that cannot be read as JSON (too long to keep, or not JSON),
//! `-32600` for JSON that is not a message. The error carries the
//! request's id when it can be recovered cheaply ([`frame_id`]), `null`
//! otherwise. A line over the cap is skipped as it streams by, never held
//! whole, and the next line is served. A broken notification (a `method`
//! and no `id`) gets no answer, as JSON-RPC has it.
//!
//! [`frame_id`]: super::frame_id

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

use super::frame_id::{HEAD, request_id};
use super::stdio_end::{Ending, Ledger};

/// The longest line read (rmcp's own cap, so stdio takes what HTTP takes).
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// What a request holds while it lives, in copies of its text: the parsed
/// message (its strings) and the call's own arguments. The line itself is
/// reused for the next one.
const FRAME_COPIES: usize = 2;

/// The JSON-RPC error for a frame refused for want of memory: a server
/// error, which a client may retry.
const BUSY: i64 = -32000;

/// The server's side of stdio as an rmcp transport.
pub(crate) struct StdioFrames<R, W> {
    read: BufReader<R>,
    /// The line read so far. It survives a `receive` dropped mid-line
    /// (rmcp polls it in a `select!`), so no byte is lost.
    line: Vec<u8>,
    /// Inside a line over the cap: skipping to its end.
    skipping: bool,
    /// The first bytes of the line being skipped, for its id.
    head: Vec<u8>,
    /// An error answer not yet handed to the writer.
    reply: Option<Vec<u8>>,
    write: Arc<Writer<W>>,
    /// What the end of input means, and the answers still owed.
    ending: Ending,
    ledger: Arc<Ledger>,
}

/// What one read of a line came to.
enum LineRead {
    /// A whole line is in `line`.
    Whole,
    /// A line over the cap ended; `head` holds its start.
    TooLong,
    /// The input ended (or failed).
    End,
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> StdioFrames<R, W> {
    /// Frames read from `input` and written to `output`; at the end of
    /// `input`, `ending` says when to stop reading.
    pub(crate) fn new(input: R, output: W, ending: Ending) -> Self {
        StdioFrames {
            ledger: ending.ledger().clone(),
            ending,
            read: BufReader::new(input),
            line: Vec::new(),
            skipping: false,
            head: Vec::new(),
            reply: None,
            write: Arc::new(Writer::new(output)),
        }
    }

    /// Reads up to the end of a line, never keeping more than [`MAX_LINE`]
    /// bytes of it: the buffer is checked before each append.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (used, ended) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) if !available.is_empty() => available,
                    Ok(_) => return LineRead::End,
                    Err(err) => {
                        tracing::debug!("cannot read stdin: {err}");
                        return LineRead::End;
                    }
                };
                let newline = available.iter().position(|byte| *byte == b'\n');
                let take = newline.map_or(available.len(), |at| at + 1);
                if !self.skipping && self.line.len().saturating_add(take) > MAX_LINE {
                    // Keep the line's head (for its id) and drop the rest.
                    self.head.clear();
                    self.head.extend_from_slice(&self.line[..self.line.len().min(HEAD)]);
                    let more = HEAD - self.head.len();
                    self.head.extend_from_slice(&available[..take.min(more)]);
                    self.line.clear();
                    self.skipping = true;
                } else if !self.skipping {
                    self.line.extend_from_slice(&available[..take]);
                }
                (take, newline.is_some())
            };
            self.read.consume(used);
            if ended {
                if std::mem::take(&mut self.skipping) {
                    return LineRead::TooLong;
                }
                return LineRead::Whole;
            }
        }
    }

    /// Hands the pending error answer to the writer and writes it.
    async fn send_reply(&mut self) -> io::Result<()> {
        if self.reply.is_none() {
            return Ok(());
        }
        // Queued and forgotten here in one step, with no wait between: a
        // `receive` dropped from here on leaves the rest to the next write.
        let frame = self.write.queue(self.reply.take());
        self.write.write(frame).await
    }
}

impl<R, W> Transport<RoleServer> for StdioFrames<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = io::Result<()>> + Send + 'static {
        // Noted and queued now, in the order rmcp sends (it writes each
        // frame from a task of its own), not when the write runs.
        let queued = self.ledger.write(&item).then(|| {
            serde_json::to_vec(&item).map(|mut frame| {
                frame.push(b'\n');
                self.write.queue(Some(frame))
            })
        });
        let (write, ledger) = (self.write.clone(), self.ledger.clone());
        async move {
            let Some(queued) = queued else { return Ok(()) };
            let written = write.write(queued.map_err(io::Error::other)?).await;
            if let Err(err) = &written {
                ledger.output_failed(err);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // An answer left over from a `receive` dropped mid-way goes first.
            self.send_reply().await.ok()?;
            if self.ending.has_begun() {
                return self.ending.next().await;
            }
            match self.read_line().await {
                LineRead::End => return self.ending.next().await,
                LineRead::TooLong => {
                    tracing::debug!("a frame over {MAX_LINE} bytes was skipped");
                    let message =
                        format!("the frame is longer than {MAX_LINE} bytes, the most the host reads");
                    self.reply = Some(error_frame(request_id(&self.head), -32700, &message));
                    self.head = Vec::new();
                }
                LineRead::Whole => {
                    // Charged before it is parsed: a line of zeros costs many
                    // times its size as a message.
                    let cost = crate::json_size::parsed_cost(&self.line, FRAME_COPIES);
                    let charge = match self.ledger.charge(cost) {
                        Ok(charge) => charge,
                        Err(why) => {
                            tracing::debug!("a frame was refused: {why}");
                            self.reply = Some(error_frame(request_id(&self.line), BUSY, &why));
                            self.line.clear();
                            continue;
                        }
                    };
                    let parsed = read_frame(&self.line);
                    self.line.clear();
                    match parsed {
                        Frame::Message(message) => {
                            self.ledger.read(&message, charge);
                            return Some(message);
                        }
                        Frame::Nothing => {}
                        Frame::Unreadable(reply) => self.reply = Some(reply),
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        let frame = self.write.queue(None);
        self.write.write(frame).await
    }
}

/// What a whole line holds.
// Unboxed: a frame is matched at once and never kept, and boxing would cost
// every message an allocation.
#[allow(clippy::large_enum_variant)]
enum Frame {
    /// A message for rmcp.
    Message(RxJsonRpcMessage<RoleServer>),
    /// Nothing to answer: a blank line, or a notification that cannot be read.
    Nothing,
    /// The error answer to a line that is not a message.
    Unreadable(Vec<u8>),
}

/// Reads a line as rmcp does (a leading byte-order mark and a trailing
/// `\r` allowed), answering what rmcp would drop.
fn read_frame(line: &[u8]) -> Frame {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Frame::Nothing;
    }
    // A call, the commonest frame, read without rmcp's trial of every
    // request type (`call_frame`); every other line as rmcp reads it.
    if let Some(call) = super::call_frame::read(line) {
        return Frame::Message(call);
    }
    let err = match serde_json::from_slice(line) {
        Ok(message) => return Frame::Message(message),
        Err(err) => err,
    };
    // Well-formed JSON that is not a message (a second parse only on this
    // path), or not JSON at all.
    match serde_json::from_slice::<Value>(line) {
        Ok(value) if value.get("method").is_some() && value.get("id").is_none() => {
            tracing::debug!("ignored a notification that is not one the host reads: {err}");
            Frame::Nothing
        }
        Ok(value) => {
            let id = value.get("method").and(value.get("id")).filter(|id| id.is_number() || id.is_string());
            let message = format!("not a JSON-RPC message the host reads: {err}");
            Frame::Unreadable(error_frame(id.cloned(), -32600, &message))
        }
        Err(err) => Frame::Unreadable(error_frame(request_id(line), -32700, &format!("not JSON: {err}"))),
    }
}

/// A JSON-RPC error answer as a line; `id: null` when it is not known.
fn error_frame(id: Option<Value>, code: i64, message: &str) -> Vec<u8> {
    let answer = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    let mut frame = answer.to_string().into_bytes();
    frame.push(b'\n');
    frame
}

/// stdout, shared by every frame being sent. rmcp sends each response from
/// a task of its own, so under load several wait to write at once: each
/// frame is queued as it is sent, and whichever sender then holds the
/// stream writes everything queued, in order, in one `write`; the senders
/// whose frames went out with it find them written. For a client that
/// writes 32 calls at once, that saves most of the burst's writes, each of
/// which wakes the client (BENCHMARKS.md); a lone frame is written as
/// before. A write dropped mid-frame leaves the rest for the next one, so
/// frames never interleave or break, whichever future is dropped.
struct Writer<W> {
    queue: std::sync::Mutex<Queue>,
    output: Mutex<Output<W>>,
}

/// Frames waiting for the stream, and how many were ever queued.
#[derive(Default)]
struct Queue {
    bytes: Vec<u8>,
    frames: u64,
}

/// The stream, with the bytes taken from the queue that are not all out
/// yet (they survive a write dropped mid-way: the next one finishes them).
struct Output<W> {
    out: W,
    /// Bytes taken; those before `written` have gone out.
    pending: Vec<u8>,
    written: usize,
    /// How many queued frames have gone out whole.
    frames_out: u64,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    fn new(out: W) -> Self {
        Writer {
            queue: std::sync::Mutex::new(Queue::default()),
            output: Mutex::new(Output { out, pending: Vec::new(), written: 0, frames_out: 0 }),
        }
    }

    /// Queues `frame` (none: nothing new), without waiting: the number to
    /// give [`Writer::write`], which writes everything queued up to it.
    fn queue(&self, frame: Option<Vec<u8>>) -> u64 {
        let mut queue = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(frame) = frame {
            if queue.bytes.is_empty() {
                queue.bytes = frame;
            } else {
                queue.bytes.extend_from_slice(&frame);
            }
            queue.frames += 1;
        }
        queue.frames
    }

    /// Returns once frame number `upto` and every one before it are out
    /// (flushed): written by this call, with whatever else is queued by
    /// then, or by an earlier one.
    async fn write(&self, upto: u64) -> io::Result<()> {
        let mut output = self.output.lock().await;
        if output.frames_out >= upto {
            return Ok(());
        }
        let (bytes, frames) = {
            let mut queue = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (std::mem::take(&mut queue.bytes), queue.frames)
        };
        output.take(bytes);
        output.drain().await?;
        output.frames_out = frames;
        Ok(())
    }
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Adds `bytes` after what is still unwritten (without a copy when
    /// nothing is).
    fn take(&mut self, bytes: Vec<u8>) {
        if self.written == self.pending.len() {
            (self.pending, self.written) = (bytes, 0);
        } else {
            self.pending.drain(..self.written);
            self.written = 0;
            self.pending.extend_from_slice(&bytes);
        }
    }

    /// Writes every pending byte, then flushes.
    async fn drain(&mut self) -> io::Result<()> {
        while self.written < self.pending.len() {
            let written = self.out.write(&self.pending[self.written..]).await?;
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.written += written;
        }
        // A large frame's buffer is not kept until the next frame.
        (self.pending, self.written) = (Vec::new(), 0);
        self.out.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(frame: Frame) -> Value {
        match frame {
            Frame::Unreadable(bytes) => serde_json::from_slice(&bytes).unwrap(),
            Frame::Message(_) => panic!("read as a message"),
            Frame::Nothing => panic!("not answered"),
        }
    }

    #[test]
    fn unreadable_lines_are_answered_with_the_id_when_it_is_known() {
        let deep =
            format!(r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"a":{}}}}}"#, "[".repeat(200));
        let said = answer(read_frame(deep.as_bytes()));
        assert_eq!((said["id"].clone(), said["error"]["code"].clone()), (json!(9), json!(-32700)));
        let said = answer(read_frame(b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["));
        assert_eq!((said["id"].clone(), said["error"]["code"].clone()), (Value::Null, json!(-32700)));
        let said = answer(read_frame(br#"{"x":1}"#));
        assert_eq!((said["id"].clone(), said["error"]["code"].clone()), (Value::Null, json!(-32600)));
        let said = answer(read_frame(br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#));
        assert_eq!((said["id"].clone(), said["error"]["code"].clone()), (json!("a"), json!(-32600)));
    }

    #[test]
    fn messages_blank_lines_and_broken_notifications_are_not_answered() {
        assert!(matches!(
            read_frame(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n"),
            Frame::Message(_)
        ));
        assert!(matches!(read_frame(b"  \r\n"), Frame::Nothing));
        assert!(matches!(read_frame(br#"{"jsonrpc":"2.0","method":"x/y","params":1}"#), Frame::Nothing));
    }

    /// A stream that records each write it takes: at most `step` bytes
    /// each, and `Pending` once it has taken `budget` writes.
    #[derive(Clone)]
    struct Recorded {
        writes: Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
        budget: Arc<std::sync::atomic::AtomicUsize>,
        step: usize,
    }

    impl Recorded {
        fn new(step: usize, budget: usize) -> Self {
            Recorded { writes: Arc::default(), budget: Arc::new(budget.into()), step }
        }

        fn written(&self) -> Vec<Vec<u8>> {
            self.writes.lock().unwrap().clone()
        }
    }

    impl AsyncWrite for Recorded {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            bytes: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            use std::sync::atomic::Ordering::Relaxed;
            if self.budget.fetch_update(Relaxed, Relaxed, |left| left.checked_sub(1)).is_err() {
                return std::task::Poll::Pending;
            }
            let taken = bytes.len().min(self.step);
            self.writes.lock().unwrap().push(bytes[..taken].to_vec());
            std::task::Poll::Ready(Ok(taken))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Frames queued before a write go out in it, together and in the
    /// order they were queued, and their senders find them written.
    #[tokio::test]
    async fn frames_queued_before_a_write_go_out_in_it_in_order() {
        let out = Recorded::new(usize::MAX, usize::MAX);
        let writer = Writer::new(out.clone());
        let a = writer.queue(Some(b"a\n".to_vec()));
        let b = writer.queue(Some(b"b\n".to_vec()));
        let c = writer.queue(Some(b"c\n".to_vec()));
        writer.write(a).await.unwrap();
        writer.write(c).await.unwrap();
        writer.write(b).await.unwrap();
        assert_eq!(out.written(), [b"a\nb\nc\n".to_vec()]);
        // Nothing new: nothing written.
        writer.write(writer.queue(None)).await.unwrap();
        assert_eq!(out.written().len(), 1);
    }

    /// A write dropped half-way (rmcp drops its send tasks at shutdown)
    /// loses no byte: the next write finishes the frame first.
    #[tokio::test]
    async fn a_write_dropped_half_way_is_finished_by_the_next() {
        let out = Recorded::new(3, 1);
        let writer = Writer::new(out.clone());
        let first = writer.queue(Some(b"first\n".to_vec()));
        // Polled once: "fir" goes out, then the stream is full.
        let once = tokio::time::timeout(std::time::Duration::ZERO, writer.write(first)).await;
        assert!(once.is_err(), "the write is still waiting");
        assert_eq!(out.written(), [b"fir".to_vec()]);
        out.budget.store(usize::MAX, std::sync::atomic::Ordering::Relaxed);
        let second = writer.queue(Some(b"second\n".to_vec()));
        writer.write(second).await.unwrap();
        assert_eq!(out.written().concat(), b"first\nsecond\n");
        // The first frame is out too.
        writer.write(first).await.unwrap();
        assert_eq!(out.written().concat(), b"first\nsecond\n");
    }
}
