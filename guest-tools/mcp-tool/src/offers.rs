//! Resources and prompts: what a component offers besides tools, each a
//! type implementing [`Resource`], [`ResourceTemplate`] or [`Prompt`], and
//! exported with [`export!`](crate::export).

use std::collections::BTreeMap;

use crate::raw::exports::mcp::tool::prompts::Role;
use crate::{Content, Context, ResourceBody, Result};

/// A resource with a fixed URI.
///
/// ```no_run
/// use mcp_tool::{Context, Resource, ResourceBody, Result};
///
/// struct Readme;
///
/// impl Resource for Readme {
///     const URI: &'static str = "docs://readme";
///     const NAME: &'static str = "readme";
///     const MIME_TYPE: Option<&'static str> = Some("text/markdown");
///
///     fn read(_: &Context) -> Result<ResourceBody> {
///         Ok(ResourceBody::Text("# Hello".into()))
///     }
/// }
/// # mcp_tool::export!(; resources = [Readme]);
/// ```
pub trait Resource: 'static {
    /// Its URI, unique within the server.
    const URI: &'static str;
    /// A short name, e.g. a file name.
    const NAME: &'static str;
    /// A human-readable display name.
    const TITLE: Option<&'static str> = None;
    /// What it holds, written for a model to read.
    const DESCRIPTION: Option<&'static str> = None;
    /// Its MIME type.
    const MIME_TYPE: Option<&'static str> = None;

    /// Reads it: text, or bytes.
    fn read(cx: &Context) -> Result<ResourceBody>;
}

/// A file of a skill (SEP-2640) the component ships: a [`Resource`] at
/// `skill://PATH` whose text is given (usually with `include_str!`).
///
/// A skill is a directory of files under `skill://`: its `SKILL.md`, whose
/// YAML frontmatter holds the skill's `name` (the directory's own name:
/// 1 to 64 of `a-z 0-9 -`) and a `description` saying when to use it, and
/// any files beside it or below it. Export each file as a resource; the
/// host reads them once when it loads the component, hashes them, and
/// serves them under the skills extension (`skills/list`, `skills/get`,
/// `resources/directory/read`) as well as `resources/read`. The MIME type
/// follows the file's extension (`.md`, `.txt`, `.json`, `.py`, ...).
///
/// ```no_run
/// mcp_tool::skill_file!(
///     GreetingSkill,
///     "greeting/SKILL.md",
///     "---\nname: greeting\ndescription: Greets someone warmly by name.\n---\nSay hello, then their name.\n"
/// );
/// # mcp_tool::export!(; resources = [GreetingSkill]);
/// ```
#[macro_export]
macro_rules! skill_file {
    ($name:ident, $path:literal, $text:expr $(,)?) => {
        /// A file of a skill, served at `skill://` and its path.
        pub struct $name;

        impl $crate::Resource for $name {
            const URI: &'static str = concat!("skill://", $path);
            const NAME: &'static str = $path;
            const MIME_TYPE: Option<&'static str> = $crate::__private::skill_mime_type($path);

            fn read(_: &$crate::Context) -> $crate::Result<$crate::ResourceBody> {
                Ok($crate::ResourceBody::Text(::std::string::String::from($text)))
            }
        }
    };
}

/// The MIME type of a skill file, by its extension.
#[doc(hidden)]
pub const fn skill_mime_type(path: &str) -> Option<&'static str> {
    const TYPES: &[(&str, &str)] = &[
        (".md", "text/markdown"),
        (".txt", "text/plain"),
        (".json", "application/json"),
        (".yaml", "application/yaml"),
        (".yml", "application/yaml"),
        (".toml", "application/toml"),
        (".py", "text/x-python"),
        (".js", "text/javascript"),
        (".sh", "application/x-sh"),
        (".html", "text/html"),
        (".csv", "text/csv"),
    ];
    let path = path.as_bytes();
    let mut at = 0;
    while at < TYPES.len() {
        let (extension, mime_type) = TYPES[at];
        let extension = extension.as_bytes();
        if path.len() >= extension.len() {
            let start = path.len() - extension.len();
            let mut same = true;
            let mut i = 0;
            while i < extension.len() {
                if path[start + i].to_ascii_lowercase() != extension[i] {
                    same = false;
                }
                i += 1;
            }
            if same {
                return Some(mime_type);
            }
        }
        at += 1;
    }
    None
}

/// A family of resources whose URIs follow a template (`db://orders/{id}`:
/// each `{name}` matches one URI segment or part of one).
pub trait ResourceTemplate: 'static {
    /// The URI template (RFC 6570, simple `{name}` expressions).
    const URI_TEMPLATE: &'static str;
    /// A short name.
    const NAME: &'static str;
    /// A human-readable display name.
    const TITLE: Option<&'static str> = None;
    /// What its resources hold.
    const DESCRIPTION: Option<&'static str> = None;
    /// The MIME type of its resources.
    const MIME_TYPE: Option<&'static str> = None;

    /// Reads the resource at `uri`, whose variables are `vars`. Return
    /// [`Error::NotFound`](crate::Error::NotFound) when there is none.
    fn read(cx: &Context, uri: &str, vars: &Args) -> Result<ResourceBody>;

    /// Suggests values for variable `name`, given what the user typed so
    /// far (`value`). None by default.
    fn complete(name: &str, value: &str) -> Vec<String> {
        let _ = (name, value);
        Vec::new()
    }
}

/// One argument a prompt takes.
#[derive(Clone, Copy, Debug)]
pub struct Argument {
    pub name: &'static str,
    pub description: Option<&'static str>,
    /// The host refuses a request that lacks it.
    pub required: bool,
}

impl Argument {
    /// A required argument.
    pub const fn required(name: &'static str, description: &'static str) -> Self {
        Argument { name, description: Some(description), required: true }
    }

    /// An optional argument.
    pub const fn optional(name: &'static str, description: &'static str) -> Self {
        Argument { name, description: Some(description), required: false }
    }
}

/// A prompt's arguments, or a template's variables, by name.
#[derive(Clone, Debug, Default)]
pub struct Args(BTreeMap<String, String>);

impl Args {
    pub(crate) fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Args(pairs.into_iter().collect())
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Every (name, value), by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

/// One message of a prompt.
#[derive(Clone, Debug)]
pub struct Message {
    pub role: Role,
    pub content: Content,
}

impl Message {
    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: Content::Text(text.into()) }
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message { role: Role::Assistant, content: Content::Text(text.into()) }
    }

    /// A message from the user with any content: an image, audio, an
    /// embedded resource.
    pub fn user_content(content: Content) -> Self {
        Message { role: Role::User, content }
    }
}

/// A prompt: a message template the user picks by name.
///
/// ```no_run
/// use mcp_tool::{Argument, Args, Context, Message, Prompt, Result};
///
/// struct Review;
///
/// impl Prompt for Review {
///     const NAME: &'static str = "review";
///     const DESCRIPTION: &'static str = "Asks for a review of a file";
///     const ARGUMENTS: &'static [Argument] = &[Argument::required("path", "The file to review")];
///
///     fn get(_: &Context, args: &Args) -> Result<Vec<Message>> {
///         Ok(vec![Message::user(format!("Please review {}.", args.get("path").unwrap_or("")))])
///     }
/// }
/// # mcp_tool::export!(; prompts = [Review]);
/// ```
pub trait Prompt: 'static {
    /// Its name, unique within the server.
    const NAME: &'static str;
    /// A human-readable display name.
    const TITLE: Option<&'static str> = None;
    /// What it is for.
    const DESCRIPTION: &'static str;
    /// The arguments it takes.
    const ARGUMENTS: &'static [Argument] = &[];

    /// Fills it in. The host has checked that required arguments are given
    /// and that no others are.
    fn get(cx: &Context, args: &Args) -> Result<Vec<Message>>;

    /// Suggests values for argument `name` given what the user typed so far
    /// (`value`) and the arguments already filled in (`context`). None by default.
    fn complete(name: &str, value: &str, context: &Args) -> Vec<String> {
        let _ = (name, value, context);
        Vec::new()
    }
}

/// What a resource read returns, for the export: the body with the URI
/// and MIME type.
pub(crate) fn contents(
    uri: String,
    mime_type: Option<&str>,
    body: ResourceBody,
) -> crate::raw::exports::mcp::tool::resources::ResourceContents {
    crate::raw::exports::mcp::tool::resources::ResourceContents {
        uri,
        mime_type: mime_type.map(str::to_string),
        body,
    }
}
