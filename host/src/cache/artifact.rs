//! A compiled artifact as the compile cache keeps it: the code
//! `Component::serialize` wrote, then its XXH3-128 checksum and a tag.
//!
//! Compiled code runs unchecked: a bit flipped on disk (a bad sector, a
//! crash mid-write on a filesystem that reorders, a stray write) could run
//! as anything, and wasmtime's own header check does not look at the code.
//! So the checksum is verified before the artifact is mapped, and one whose
//! bytes do not match is not loaded.
//!
//! The checksum is for damage, not for an attacker: only this user can
//! write the cache directory (`cache::trusted_dir`), and the artifact's name
//! is a SHA-256 of what it was compiled from. So it is XXH3 (tens of GB/s),
//! not SHA-256 (1.3 GB/s here), which cost a 40 MB artifact 30 ms of every
//! start. The file is read in fixed chunks, never whole: wasmtime then maps
//! it (`Component::deserialize_file`) instead of copying it.

use std::io::Read as _;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

/// Ends every artifact, after its checksum: names the format, so an artifact
/// written in another one (SHA-256, by an older host) is told apart.
pub const TAG: &[u8; 8] = b"mwh-xxh3";
/// The checksum (XXH3-128, little-endian) and the tag.
const TRAILER: usize = 16 + TAG.len();
/// How much of the artifact is read at a time to check it.
const CHUNK: usize = 256 << 10;

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
/// wasmtime reads the code's own length from its headers, so the trailer
/// after it is ignored when the file is mapped.
pub fn seal(mut code: Vec<u8>) -> Vec<u8> {
    let sum = xxhash_rust::xxh3::xxh3_128(&code);
    code.extend_from_slice(&sum.to_le_bytes());
    code.extend_from_slice(TAG);
    code
}

/// Checks that the artifact at `path` ends with the checksum of the bytes
/// before it.
pub fn check(path: &Path) -> Result<(), Damaged> {
    let mut file = std::fs::File::open(path)?;
    let len = usize::try_from(file.metadata()?.len()).map_err(|_| Damaged::NoChecksum)?;
    let mut code_left = len.checked_sub(TRAILER).ok_or(Damaged::NoChecksum)?;
    let mut hasher = Xxh3::new();
    let mut chunk = vec![0; CHUNK.min(code_left.max(1))];
    while code_left > 0 {
        let part = &mut chunk[..CHUNK.min(code_left)];
        file.read_exact(part)?;
        hasher.update(part);
        code_left -= part.len();
    }
    let mut trailer = [0; TRAILER];
    file.read_exact(&mut trailer)?;
    let (sum, tag) = trailer.split_at(16);
    if tag != TAG {
        return Err(Damaged::NoChecksum);
    }
    if hasher.digest128().to_le_bytes() != sum {
        return Err(Damaged::Mismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bytes_that_were_written_pass_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.cwasm");
        let code: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let sealed = seal(code.clone());
        std::fs::write(&path, &sealed).unwrap();
        check(&path).unwrap();

        let mut flipped = sealed.clone();
        for byte in &mut flipped[8_000..12_096] {
            *byte ^= 0xff;
        }
        std::fs::write(&path, &flipped).unwrap();
        assert!(matches!(check(&path), Err(Damaged::Mismatch)));

        for cut in [&sealed[..sealed.len() / 2], &sealed[..10], &[][..], &code[..]] {
            std::fs::write(&path, cut).unwrap();
            assert!(matches!(check(&path), Err(Damaged::NoChecksum)), "{} bytes", cut.len());
        }
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(check(&path), Err(Damaged::Read(_))));
    }
}
