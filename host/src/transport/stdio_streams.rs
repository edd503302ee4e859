//! stdin and stdout as streams on the async runtime's reactor, without the
//! blocking thread pool, when the client handed the host a pipe or a socket
//! (every MCP client that spawns its server does: rmcp's and most others
//! use pipes, Node's `child_process` uses Unix socket pairs).
//!
//! tokio's `Stdin` and `Stdout` run every read, write and flush on the
//! blocking pool: each frame out costs two thread hand-offs and wake-ups
//! (the write, then the flush) and each frame in one more. On a small
//! machine those hand-offs were a large part of a short call's time. Here a
//! frame goes out in one `write`/`send` made by the task that sends it, and
//! input is read when epoll says it is there; a client that stops reading
//! makes the sending task wait on epoll, never a thread.
//!
//! - A pipe is reopened through `/proc/self/fd` with `O_NONBLOCK`: its own
//!   open file description, so the process's standard streams keep their
//!   blocking flags (as rmcp's `stdio_pipes` does).
//! - A socket gets a duplicate descriptor, and every `send`/`recv` asks not
//!   to wait (`MSG_DONTWAIT`): the flags shared with the client's end are
//!   never changed.
//! - Anything else (a file, a terminal, another OS) uses tokio's handles.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The host's input: a protocol frame per line.
pub(crate) type Input = Box<dyn AsyncRead + Send + Unpin>;
/// The host's output: protocol frames only.
pub(crate) type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// stdin and stdout, on the reactor where they are a pipe or a socket.
/// Must be called inside the tokio runtime.
pub(crate) fn streams() -> (Input, Output) {
    (input(), output())
}

fn input() -> Input {
    #[cfg(target_os = "linux")]
    if let Some(input) = linux::input() {
        return input;
    }
    Box::new(tokio::io::stdin())
}

fn output() -> Output {
    #[cfg(target_os = "linux")]
    if let Some(output) = linux::output() {
        return output;
    }
    Box::new(tokio::io::stdout())
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

    use rustix::fs::{FileType, Mode, OFlags};
    use tokio::io::Interest;

    use super::{Input, Output, Socket};

    /// What a standard stream is.
    fn file_type(fd: BorrowedFd<'_>) -> Option<FileType> {
        rustix::fs::fstat(fd).ok().map(|stat| FileType::from_raw_mode(stat.st_mode))
    }

    /// `fd` (0 or 1) reopened with `O_NONBLOCK`, if it is a pipe.
    fn reopen_pipe(fd: i32, flags: OFlags) -> Option<OwnedFd> {
        let path = format!("/proc/self/fd/{fd}");
        let reopened =
            rustix::fs::open(path, flags | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty()).ok()?;
        (file_type(reopened.as_fd()) == Some(FileType::Fifo)).then_some(reopened)
    }

    pub(super) fn input() -> Option<Input> {
        let stdin = std::io::stdin();
        match file_type(stdin.as_fd())? {
            FileType::Fifo => {
                let fd = reopen_pipe(0, OFlags::RDONLY)?;
                Some(Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()?))
            }
            FileType::Socket => {
                let fd = rustix::io::fcntl_dupfd_cloexec(stdin.as_fd(), 3).ok()?;
                Some(Box::new(Socket::register(fd, Interest::READABLE)?))
            }
            _ => None,
        }
    }

    pub(super) fn output() -> Option<Output> {
        let stdout = std::io::stdout();
        match file_type(stdout.as_fd())? {
            FileType::Fifo => {
                let fd = reopen_pipe(1, OFlags::WRONLY)?;
                Some(Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok()?))
            }
            FileType::Socket => {
                let fd = rustix::io::fcntl_dupfd_cloexec(stdout.as_fd(), 3).ok()?;
                Some(Box::new(Socket::register(fd, Interest::WRITABLE)?))
            }
            _ => None,
        }
    }
}

/// A duplicate of a standard stream that is a socket, read and written
/// without waiting (the descriptor's own flags stay as the client set them).
#[cfg(target_os = "linux")]
struct Socket(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>);

#[cfg(target_os = "linux")]
impl Socket {
    /// Registers `fd` (a duplicate this module made) with the reactor.
    fn register(fd: std::os::fd::OwnedFd, interest: tokio::io::Interest) -> Option<Socket> {
        // SAFETY: the `AsyncFd` owns `fd`, so the descriptor stays open and
        // names the same open file description until the `AsyncFd` drops.
        let registered = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, interest) };
        registered.ok().map(Socket)
    }
}

#[cfg(target_os = "linux")]
impl AsyncRead for Socket {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        use rustix::net::{RecvFlags, recv};
        loop {
            let mut ready = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| Ok(recv(fd, &mut *unfilled, RecvFlags::DONTWAIT)?.0)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                // Not readable after all: wait for the next edge.
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl AsyncWrite for Socket {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        use rustix::net::{SendFlags, send};
        loop {
            let mut ready = ready!(self.0.poll_write_ready(cx))?;
            match ready.try_io(|fd| Ok(send(fd, bytes, SendFlags::DONTWAIT | SendFlags::NOSIGNAL)?)) {
                Ok(result) => return Poll::Ready(result),
                // The client is not reading: wait until there is room.
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: every byte went to the socket.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
