//! The audit log's one writer: a thread of its own that takes finished
//! lines from a bounded channel and appends each with a single `write(2)`,
//! so the async workers never wait on the disk, and lines never interleave.
//!
//! Durability: every line goes to the OS as it comes (no buffer in the
//! process); `fdatasync` follows at most once a second when something was
//! written, and at stop. Rotation: once a second the writer compares the
//! device and inode the path names with those of the file it holds; when a
//! rename (logrotate's default) moved the file away, it syncs the old one
//! and opens the path again, creating it. `copytruncate` needs nothing:
//! the file is opened `O_APPEND`, so writes go to the new end.
//!
//! A write that fails (a full disk) is counted and retried every second
//! until it succeeds: records are never dropped, and calls wait behind
//! the channel once it is full.

use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::metrics::AuditCounters;

/// How often the writer syncs what it wrote and looks for a rotation.
const TICK: Duration = Duration::from_secs(1);

/// What the writer is handed.
pub(super) enum Message {
    /// A whole line, newline included.
    Line(Vec<u8>),
    /// The last line: write it, sync, and say so.
    Stop(Vec<u8>, oneshot::Sender<()>),
}

/// The file being appended to, and which file it is.
pub(super) struct Opened {
    file: File,
    /// Device and inode, to notice when the path names another file.
    id: (u64, u64),
}

/// Opens `path` for appending, creating it (mode 0600) if absent. Refuses
/// anything but a regular file (a FIFO could block every call).
pub(super) fn open(path: &Path) -> Result<Opened> {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        // A FIFO with no reader would block the open; with this it fails,
        // and for a regular file it changes nothing.
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .with_context(|| format!("cannot open --audit-log {}", path.display()))?;
    let meta = file.metadata().with_context(|| format!("cannot stat --audit-log {}", path.display()))?;
    if !meta.file_type().is_file() {
        bail!("--audit-log {} is not a regular file", path.display());
    }
    // The file's name must survive a crash as its records do.
    if let Some(dir) = path.parent().map(|dir| if dir.as_os_str().is_empty() { Path::new(".") } else { dir })
    {
        let _ = File::open(dir).and_then(|dir| dir.sync_all());
    }
    Ok(Opened { file, id: (meta.dev(), meta.ino()) })
}

/// Appends the first line to `opened` now (so a log that cannot be written
/// is an error at start), then starts the writer thread.
pub(super) fn start(
    path: PathBuf,
    mut opened: Opened,
    first: &[u8],
    lines: mpsc::Receiver<Message>,
    counters: AuditCounters,
) -> Result<()> {
    opened
        .file
        .write_all(first)
        .and_then(|()| opened.file.sync_data())
        .with_context(|| format!("cannot write to --audit-log {}", path.display()))?;
    counters.records.inc();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("cannot start the audit log's writer")?;
    let writer = Writer { path, opened, dirty: false, failing: false, counters };
    std::thread::Builder::new()
        .name("audit-log".into())
        .spawn(move || runtime.block_on(writer.run(lines)))
        .context("cannot start the audit log's writer thread")?;
    Ok(())
}

struct Writer {
    path: PathBuf,
    opened: Opened,
    /// Written since the last sync.
    dirty: bool,
    /// The last write failed (its warning is logged once per streak).
    failing: bool,
    counters: AuditCounters,
}

impl Writer {
    async fn run(mut self, mut lines: mpsc::Receiver<Message>) {
        let mut next_tick = Instant::now() + TICK;
        loop {
            tokio::select! {
                message = lines.recv() => match message {
                    Some(Message::Line(line)) => self.append(&line),
                    Some(Message::Stop(line, done)) => {
                        self.append(&line);
                        self.sync();
                        let _ = done.send(());
                        return;
                    }
                    None => {
                        self.sync();
                        return;
                    }
                },
                () = tokio::time::sleep_until(next_tick) => {}
            }
            // Also between lines, so a busy log still syncs and rotates.
            if Instant::now() >= next_tick {
                self.sync();
                self.follow_rotation();
                next_tick = Instant::now() + TICK;
            }
        }
    }

    /// Appends `line`, retrying every second until it is written.
    fn append(&mut self, line: &[u8]) {
        let mut rest = line;
        while !rest.is_empty() {
            // One write(2) for the whole line, unless the disk cuts it short.
            match self.opened.file.write(rest) {
                Ok(0) => self.failed(io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => self.failed(err),
            }
        }
        if self.failing {
            self.failing = false;
            tracing::warn!(path = %self.path.display(), "the audit log is written again");
        }
        self.dirty = true;
        self.counters.records.inc();
    }

    fn failed(&mut self, err: io::Error) {
        self.counters.write_errors.inc();
        if !self.failing {
            self.failing = true;
            tracing::error!(
                path = %self.path.display(),
                "cannot write to the audit log ({err}); retrying every second, calls wait behind it"
            );
        }
        std::thread::sleep(TICK);
    }

    /// `fdatasync`, if anything was written since the last one.
    fn sync(&mut self) {
        if self.dirty {
            match self.opened.file.sync_data() {
                Ok(()) => self.dirty = false,
                Err(err) => {
                    self.counters.write_errors.inc();
                    tracing::warn!(path = %self.path.display(), "cannot sync the audit log: {err}");
                }
            }
        }
    }

    /// Opens the path again if it no longer names the file held (renamed
    /// or removed by a log rotation).
    fn follow_rotation(&mut self) {
        let now = match std::fs::metadata(&self.path) {
            Ok(meta) => Some((meta.dev(), meta.ino())),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            // Cannot tell: keep writing where we are.
            Err(_) => return,
        };
        if now == Some(self.opened.id) {
            return;
        }
        match open(&self.path) {
            Ok(opened) => {
                self.sync();
                self.opened = opened;
                tracing::info!(path = %self.path.display(), "the audit log was rotated; writing to a new file");
            }
            Err(err) => tracing::warn!(
                path = %self.path.display(),
                "the audit log was moved and cannot be opened again ({err:#}); still writing to the moved file"
            ),
        }
    }
}
