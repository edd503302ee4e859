//! A compiled artifact as the compile cache keeps it: the code
//! `Component::serialize` wrote, then its SHA-256 and a tag.
//!
//! Compiled code runs unchecked: a bit flipped on disk (a bad sector, a
//! crash mid-write on a filesystem that reorders, a stray write) could run
//! as anything, and wasmtime's own header check does not look at the code.
//! So the checksum is verified before a byte is deserialised, and an
//! artifact whose bytes do not match is not loaded.

use std::path::Path;

use sha2::{Digest as _, Sha256};

/// Ends every artifact, after its checksum: names the format, so an artifact
/// written without a checksum (by an older host) is told apart.
const TAG: &[u8; 8] = b"mwh-sha2";
/// The checksum and the tag.
const TRAILER: usize = 32 + TAG.len();

/// Why a cached artifact is not loaded.
#[derive(Debug, thiserror::Error)]
pub enum Damaged {
    /// It cannot be read.
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    /// No checksum at its end: cut short, or written by an older host.
    #[error("it has no checksum at its end (it was cut short, or written by an older host)")]
    NoChecksum,
    /// Its bytes are not those that were written.
    #[error("its checksum does not match its bytes: it was damaged on disk")]
    Mismatch,
}

/// `code` as it is written to the cache: followed by its checksum and tag.
pub fn seal(mut code: Vec<u8>) -> Vec<u8> {
    let sum = Sha256::digest(&code);
    code.extend_from_slice(&sum);
    code.extend_from_slice(TAG);
    code
}

/// The code of the artifact at `path`, if its checksum matches.
pub fn open(path: &Path) -> Result<Vec<u8>, Damaged> {
    let mut bytes = std::fs::read(path)?;
    let code_len = bytes.len().checked_sub(TRAILER).ok_or(Damaged::NoChecksum)?;
    let (code, trailer) = bytes.split_at(code_len);
    let (sum, tag) = trailer.split_at(32);
    if tag != TAG {
        return Err(Damaged::NoChecksum);
    }
    if Sha256::digest(code).as_slice() != sum {
        return Err(Damaged::Mismatch);
    }
    bytes.truncate(code_len);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bytes_that_were_written_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.cwasm");
        let code: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let sealed = seal(code.clone());
        std::fs::write(&path, &sealed).unwrap();
        assert_eq!(open(&path).unwrap(), code);

        let mut flipped = sealed.clone();
        for byte in &mut flipped[8_000..12_096] {
            *byte ^= 0xff;
        }
        std::fs::write(&path, &flipped).unwrap();
        assert!(matches!(open(&path), Err(Damaged::Mismatch)));

        for cut in [&sealed[..sealed.len() / 2], &sealed[..10], &[][..], &code[..]] {
            std::fs::write(&path, cut).unwrap();
            assert!(matches!(open(&path), Err(Damaged::NoChecksum)), "{} bytes", cut.len());
        }
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(open(&path), Err(Damaged::Read(_))));
    }
}
