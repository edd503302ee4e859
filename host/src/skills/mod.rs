//! Skills (SEP-2640): a component ships a skill as fixed resources under
//! `skill://<path>/<name>/`, one of them `SKILL.md`, whose YAML
//! frontmatter names the skill and says what it is for.
//!
//! The host reads a skill's files once, when the component is loaded (in
//! the listing's instance, within [`MAX_BYTES`] for all of a component's
//! skills), and from then on serves those bytes: `skills/list` promises a
//! digest and a size for every file, so what `resources/read` returns must
//! be what was hashed, whatever the guest would answer later. A skill with
//! any file that cannot be read, a frontmatter that does not parse, a name
//! that breaks the naming rules or more than [`MAX_FILES`] files is left
//! out with a log line; the component still loads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::budget::{Budget, Charge};
use crate::contract::types::ResourceBody;
use crate::log_text::escaped;
use crate::store::ReadAtLoad;

mod frontmatter;

/// The URI scheme of skill files.
pub const SCHEME: &str = "skill://";
/// The file at a skill's root that describes it.
pub const MANIFEST: &str = "SKILL.md";
/// The MIME type of a `SKILL.md`.
pub const MARKDOWN: &str = "text/markdown";
/// The MIME type of a directory in `resources/directory/read`.
pub const DIRECTORY: &str = "inode/directory";
/// The most files one skill has (the extension's own limit).
pub const MAX_FILES: usize = 512;
/// The most bytes all of one component's skill files hold (the
/// extension's limit for one skill).
pub const MAX_BYTES: usize = 16 << 20;

/// One skill, as read at load.
#[derive(Debug)]
pub struct Skill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its frontmatter, as written; `name` and `description` are non-empty
    /// strings.
    pub frontmatter: Map<String, Value>,
    /// Every file, `SKILL.md` included, by URI.
    pub files: Vec<SkillFile>,
    /// Its directories, its root first, each with its direct children.
    pub directories: Vec<Directory>,
}

/// One file of a skill, with the bytes the host serves.
#[derive(Debug)]
pub struct SkillFile {
    pub uri: String,
    pub mime_type: Option<String>,
    /// `sha256:` and the hex digest of its bytes.
    pub digest: String,
    pub body: ResourceBody,
    /// Of the component's budget for skill files.
    _charge: Charge,
}

/// A directory of a skill and its direct children.
#[derive(Debug)]
pub struct Directory {
    /// With no trailing `/`, e.g. `skill://pdf/references`.
    pub uri: String,
    pub children: Vec<Child>,
}

/// A child of a [`Directory`]: a file, or a directory (its MIME type is
/// [`DIRECTORY`]).
#[derive(Debug)]
pub struct Child {
    pub uri: String,
    pub name: String,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
}

impl Skill {
    /// The name in its frontmatter (also its URI's last directory).
    pub fn name(&self) -> &str {
        self.field("name")
    }

    /// The description in its frontmatter.
    pub fn description(&self) -> &str {
        self.field("description")
    }

    fn field(&self, name: &str) -> &str {
        self.frontmatter.get(name).and_then(Value::as_str).unwrap_or_default()
    }

    /// The file at `uri`, if it is one of this skill's.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files.iter().find(|file| file.uri == uri)
    }
}

impl SkillFile {
    /// Its length in bytes.
    pub fn size(&self) -> u64 {
        self.body.as_bytes().len() as u64
    }
}

/// Whether `uri` may be a skill's file: the host reads those at load.
pub fn is_skill_file(uri: &str) -> bool {
    uri.starts_with(SCHEME)
}

/// The budget one component's skill files are read within.
pub fn budget() -> Arc<Budget> {
    Budget::shared("the files of one component's skills", MAX_BYTES)
}

/// The skills among the files `read` at load whose URIs `served` holds
/// (the component's resources that passed the host's checks, with the MIME
/// types they declare); `shown` names the component in log lines.
pub fn from_read(
    read: Vec<ReadAtLoad>,
    served: &BTreeMap<&str, Option<&str>>,
    shown: &str,
) -> Vec<Arc<Skill>> {
    // Each skill's root (its SKILL.md's URI without the file name, `/` kept).
    let roots: BTreeSet<String> = read
        .iter()
        .filter(|file| served.contains_key(file.uri.as_str()))
        .filter_map(|file| file.uri.strip_suffix(MANIFEST).filter(|root| root.ends_with('/')))
        .map(str::to_owned)
        .collect();
    let mut files: BTreeMap<&str, Vec<(ReadAtLoad, Option<String>)>> = BTreeMap::new();
    for file in read {
        let Some(declared) = served.get(file.uri.as_str()) else { continue };
        // A file belongs to the nearest skill above it.
        let Some(root) =
            roots.iter().filter(|root| file.uri.starts_with(root.as_str())).max_by_key(|root| root.len())
        else {
            continue;
        };
        files.entry(root.as_str()).or_default().push((file, declared.map(str::to_owned)));
    }
    let mut skills = Vec::new();
    for (root, files) in files {
        match skill(root, files) {
            Ok(skill) => skills.push(Arc::new(skill)),
            Err(why) => tracing::warn!(
                component = shown,
                skill = %escaped(format!("{root}{MANIFEST}")),
                reason = %escaped(&why),
                "skill left out"
            ),
        }
    }
    skills
}

/// The skill whose root is `root`, from its `files` (each with the MIME
/// type its resource declares).
fn skill(root: &str, files: Vec<(ReadAtLoad, Option<String>)>) -> Result<Skill, String> {
    if files.len() > MAX_FILES {
        return Err(format!("it has {} files, more than {MAX_FILES}", files.len()));
    }
    let name = check_root(root)?;
    let uri = format!("{root}{MANIFEST}");
    let mut kept = Vec::with_capacity(files.len());
    for (file, declared) in files {
        let relative = &file.uri[root.len()..];
        check_relative(relative).map_err(|why| format!("{}: {why}", file.uri))?;
        let loaded = file.got.map_err(|why| format!("{}: {why}", file.uri))?;
        let bytes = loaded.body.as_bytes();
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
        // The declared type, which the host checked (not the read's own).
        let mime_type = if file.uri == uri { Some(MARKDOWN.to_owned()) } else { declared };
        kept.push(SkillFile { uri: file.uri, mime_type, digest, body: loaded.body, _charge: loaded.charge });
    }
    kept.sort_by(|a, b| a.uri.cmp(&b.uri));
    let manifest = kept.iter().find(|file| file.uri == uri).ok_or("its SKILL.md was not read")?;
    let text = std::str::from_utf8(manifest.body.as_bytes()).map_err(|_| "its SKILL.md is not UTF-8")?;
    let frontmatter = frontmatter::parse(text)?;
    let named = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default();
    if named != name {
        return Err(format!("its frontmatter names it `{named}`, but its URI ends in `{name}`"));
    }
    let directories = directories(root, &kept);
    Ok(Skill { uri, frontmatter, files: kept, directories })
}

/// The skill name a root ends in, checked with the path above it: the
/// Agent Skills naming rules (1 to 64 of `a-z 0-9 -`, no `-` at either end
/// or twice in a row), each segment above it non-empty and plain.
fn check_root(root: &str) -> Result<&str, String> {
    let path = root[SCHEME.len()..].strip_suffix('/').unwrap_or_default();
    let mut segments = path.split('/');
    let name = segments.next_back().unwrap_or_default();
    for segment in path.split('/') {
        check_segment(segment)?;
    }
    let valid = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !valid {
        return Err(format!(
            "its name `{name}` is not 1 to 64 of a-z, 0-9 and single inner hyphens (the Agent Skills rules)"
        ));
    }
    Ok(name)
}

/// A file's path below its skill's root: plain segments only.
fn check_relative(relative: &str) -> Result<(), String> {
    relative.split('/').try_for_each(check_segment)
}

fn check_segment(segment: &str) -> Result<(), String> {
    if segment.is_empty() || segment == "." || segment == ".." || segment.contains(['?', '#', '\\']) {
        return Err(format!("its path has the segment `{segment}`"));
    }
    Ok(())
}

/// Every directory of a skill (its root, without the trailing `/`, and
/// each directory a file is in), with its direct children, files and
/// directories alike.
fn directories(root: &str, files: &[SkillFile]) -> Vec<Directory> {
    let top = root.trim_end_matches('/');
    let mut children: BTreeMap<String, BTreeMap<String, Child>> = BTreeMap::new();
    children.entry(top.to_owned()).or_default();
    for file in files {
        let mut parent = top.to_owned();
        let relative = &file.uri[root.len()..];
        let mut segments = relative.split('/').peekable();
        while let Some(segment) = segments.next() {
            let uri = format!("{parent}/{segment}");
            let child = if segments.peek().is_some() {
                Child {
                    uri: uri.clone(),
                    name: segment.to_owned(),
                    mime_type: Some(DIRECTORY.into()),
                    size: None,
                }
            } else {
                Child {
                    uri: uri.clone(),
                    name: segment.to_owned(),
                    mime_type: file.mime_type.clone(),
                    size: Some(file.size()),
                }
            };
            children.entry(parent).or_default().insert(uri.clone(), child);
            parent = uri;
        }
    }
    let mut directories: Vec<Directory> = children
        .into_iter()
        .map(|(uri, children)| Directory { uri, children: children.into_values().collect() })
        .collect();
    // The root first, the rest by URI.
    directories.sort_by_key(|directory| directory.uri != top);
    directories
}
