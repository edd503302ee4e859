//! Files that hold secrets (`--env-file`, `--config-var-file`,
//! `--auth-client-secret-file`, `--state-key-file`, the Docker config's
//! registry credentials): read once, bounded, and only when
//! they are regular files. A FIFO would hang the start and `/dev/zero`
//! would fill the memory; both are refused before a byte is read. No error
//! quotes what such a file holds.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// How large a file of `KEY=VALUE` secrets may be.
pub const MAX_SECRETS_FILE: u64 = 1 << 20;

/// The text of the file at `path`, given by `flag`, if it is a regular
/// file of at most `max` bytes of UTF-8.
pub fn read(path: &Path, flag: &str, max: u64) -> Result<String> {
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        // Opening a FIFO with no writer would block; with this it returns
        // at once (and the type check below refuses it). For a regular
        // file it changes nothing.
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .with_context(|| format!("cannot read {flag} {shown}"))?;
    let meta = file.metadata().with_context(|| format!("cannot read {flag} {shown}"))?;
    if !meta.file_type().is_file() {
        bail!("{flag} {shown} is not a regular file");
    }
    if meta.len() > max {
        bail!("{flag} {shown} is larger than {max} bytes");
    }
    let mut bytes = Vec::new();
    // The size may change after the check: read no more than allowed.
    file.take(max + 1).read_to_end(&mut bytes).with_context(|| format!("cannot read {flag} {shown}"))?;
    if bytes.len() as u64 > max {
        bail!("{flag} {shown} is larger than {max} bytes");
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{flag} {shown} is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bounded_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secrets");
        std::fs::write(&file, "KEY=value\n").unwrap();
        assert_eq!(read(&file, "--env-file", 64).unwrap(), "KEY=value\n");
        let err = read(&file, "--env-file", 4).unwrap_err().to_string();
        assert!(err.contains("larger than 4 bytes"), "{err}");

        let zero = read(Path::new("/dev/zero"), "--config-var-file", MAX_SECRETS_FILE).unwrap_err();
        assert!(zero.to_string().contains("not a regular file"), "{zero}");
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        // Before: the open blocked for ever (no writer).
        let err = read(&fifo, "--config-var-file", MAX_SECRETS_FILE).unwrap_err().to_string();
        assert!(err.contains("--config-var-file") && err.contains("not a regular file"), "{err}");
    }
}
