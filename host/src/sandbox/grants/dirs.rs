//! `--dir`: granted directories, opened once at start, and the check that
//! no grant reaches into another writable one or into what the host trusts.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::DirGrant;

/// A granted directory, opened once when the host starts. Every call's
/// preopen is made from this handle, never from the path again, so nothing
/// a guest (or anyone) does to the path later redirects the grant.
#[derive(Debug)]
pub(super) struct CapturedDir {
    pub(super) grant: DirGrant,
    handle: std::fs::File,
}

impl CapturedDir {
    pub(super) fn open(grant: &DirGrant) -> Result<CapturedDir> {
        let handle = std::fs::File::open(&grant.host).map_err(|err| {
            anyhow::anyhow!("--dir {}: not a directory the host can open ({err})", grant.host.display())
        })?;
        if !handle.metadata()?.is_dir() {
            bail!("--dir {}: not a directory", grant.host.display());
        }
        let captured = CapturedDir { grant: grant.clone(), handle };
        // Every call opens the grant through this path: if it cannot (no
        // /proc in a minimal container), say so now, not on every call.
        std::fs::read_dir(captured.reopen_path()).with_context(|| {
            format!(
                "--dir {}: cannot reopen it through {} (is /proc mounted?)",
                grant.host.display(),
                captured.reopen_path().display()
            )
        })?;
        Ok(captured)
    }

    /// A path that opens the captured directory itself: on Linux the
    /// handle's `/proc/self/fd` entry, which names the open directory, not
    /// whatever the original path names now.
    #[cfg(target_os = "linux")]
    pub(super) fn reopen_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd as _;
        PathBuf::from(format!("/proc/self/fd/{}", self.handle.as_raw_fd()))
    }

    /// Elsewhere, the path: the handle then only pins the directory, and a
    /// path replaced after start is followed (SECURITY.md says so).
    #[cfg(not(target_os = "linux"))]
    pub(super) fn reopen_path(&self) -> PathBuf {
        self.grant.host.clone()
    }
}

/// Refuses, at start, directory grants that would let a tool reach beyond
/// them or change what the host runs: a grant inside (or equal to, with
/// other permissions) a writable grant, across every component served, and
/// a writable grant holding a file the host trusts (`protected`: the
/// components, the `--config` file, the compile cache).
pub fn check_layout<'a>(grants: impl IntoIterator<Item = &'a DirGrant>, protected: &[PathBuf]) -> Result<()> {
    let dirs: Vec<(&DirGrant, PathBuf)> = grants
        .into_iter()
        .map(|grant| {
            let real = grant
                .host
                .canonicalize()
                .with_context(|| format!("--dir {}: cannot resolve it", grant.host.display()))?;
            Ok((grant, real))
        })
        .collect::<Result<_>>()?;
    for (outer, outer_real) in dirs.iter().filter(|(grant, _)| !grant.read_only) {
        for (inner, inner_real) in &dirs {
            let nested = inner_real != outer_real && inner_real.starts_with(outer_real);
            let same_but_other = inner_real == outer_real && inner.read_only;
            if nested || same_but_other {
                bail!(
                    "--dir {} is inside the writable grant --dir {}: a tool could rewrite it through the \
                     outer grant. Grant only the outer directory, or make the outer one read-only (:ro)",
                    inner.host.display(),
                    outer.host.display()
                );
            }
        }
        for file in protected {
            if real_path(file).starts_with(outer_real) {
                bail!(
                    "--dir {} is writable and holds {}, which the host trusts: a tool could change what \
                     the host runs. Grant a directory that does not contain it, or make the grant read-only \
                     (:ro); for the compile cache, --cache-dir DIR elsewhere or --no-cache also do",
                    outer.host.display(),
                    file.display()
                );
            }
        }
    }
    Ok(())
}

/// `path` with symlinks resolved, or, for a path that does not exist yet
/// (a cache directory not made yet), its nearest existing ancestor resolved
/// and the rest appended.
fn real_path(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(host: &Path, read_only: bool) -> DirGrant {
        DirGrant { host: host.to_path_buf(), guest: "/g".into(), read_only }
    }

    #[test]
    fn grants_nested_in_a_writable_grant_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let (rw, sub) = (root.path().join("rw"), root.path().join("rw/sub"));
        std::fs::create_dir_all(&sub).unwrap();
        let nested = [grant(&rw, false), grant(&sub, true)];
        let err = check_layout(&nested, &[]).unwrap_err().to_string();
        assert!(err.contains("inside the writable grant"), "{err}");
        // Inside a read-only grant is fine, and so is the same grant twice
        // (two components of one --config sharing [defaults]).
        assert!(check_layout(&[grant(&rw, true), grant(&sub, false)], &[]).is_ok());
        assert!(check_layout(&[grant(&rw, false), grant(&rw, false)], &[]).is_ok());
        assert!(check_layout(&[grant(&rw, false), grant(&rw, true)], &[]).is_err());
    }

    #[test]
    fn a_writable_grant_may_not_hold_what_the_host_trusts() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("not-yet/cache");
        let err =
            check_layout(&[grant(root.path(), false)], std::slice::from_ref(&cache)).unwrap_err().to_string();
        assert!(err.contains("which the host trusts"), "{err}");
        assert!(check_layout(&[grant(root.path(), true)], &[cache]).is_ok());
    }
}
