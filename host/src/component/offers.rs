//! What a component offers besides tools — resources, resource templates,
//! prompts, completion — as the host serves it: every item checked and
//! bounded when the component is loaded.
//!
//! Unlike a tool, a bad item does not refuse the component: resources are
//! data listings (often long and generated), so an item with a URI or a
//! name the host will not pass on (control characters, oversize, a
//! duplicate) is left out with a log line, and a list past its cap is cut.

use crate::contract::prompts_export::PromptInfo;
use crate::contract::resources_export::{ResourceInfo, ResourceTemplate};
use std::sync::Arc;

use crate::log_text::escaped;
use crate::skills::Skill;
use crate::store::Listing;
use crate::tool_name;

use super::spec::{MAX_DESCRIPTION, MAX_TITLE};
use super::uri_template::UriTemplate;

/// The most resources one component lists.
pub const MAX_RESOURCES: usize = 1024;
/// The most resource templates one component lists.
pub const MAX_TEMPLATES: usize = 256;
/// The most prompts one component lists.
pub const MAX_PROMPTS: usize = 256;
/// The most arguments one prompt takes.
const MAX_PROMPT_ARGUMENTS: usize = 64;
/// The longest URI (or URI template) passed on.
pub const MAX_URI: usize = 2048;
/// The longest name or MIME type passed on.
const MAX_NAME: usize = 256;
/// Items left out that the log names one by one.
const MAX_LEFT_OUT_LOGGED: usize = 32;
/// The URI scheme of the host's own resources.
pub const HOST_SCHEME: &str = "mcp-wasm-host:";

/// One resource with a fixed URI.
#[derive(Clone, Debug)]
pub struct ResourceSpec {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
}

/// One resource template, parsed.
#[derive(Clone, Debug)]
pub struct TemplateSpec {
    pub template: UriTemplate,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
}

/// One argument of a prompt.
#[derive(Clone, Debug)]
pub struct ArgumentSpec {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// One prompt.
#[derive(Clone, Debug)]
pub struct PromptSpec {
    /// As clients name it (with the component's `prefix`).
    pub name: String,
    /// As the component names it.
    pub guest_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<ArgumentSpec>,
}

/// Everything a component offers besides tools.
#[derive(Clone, Debug, Default)]
pub struct Offers {
    pub resources: Vec<ResourceSpec>,
    pub templates: Vec<TemplateSpec>,
    pub prompts: Vec<PromptSpec>,
    /// It exports `completion`.
    pub completes: bool,
    /// Its skills, each file one of `resources` (read at load).
    pub skills: Vec<Arc<Skill>>,
}

impl Offers {
    /// The offers of `listing`, every item checked; `shown` names the
    /// component in log lines.
    pub fn from_listing(listing: &mut Listing, shown: &str) -> Offers {
        let mut left_out = Vec::new();
        let resources = take_checked(
            std::mem::take(&mut listing.resources),
            MAX_RESOURCES,
            "resources",
            shown,
            &mut left_out,
            resource,
            |spec: &ResourceSpec| spec.uri.clone(),
        );
        let templates = take_checked(
            std::mem::take(&mut listing.templates),
            MAX_TEMPLATES,
            "resource templates",
            shown,
            &mut left_out,
            template,
            |spec: &TemplateSpec| spec.template.text().to_string(),
        );
        let prompts = take_checked(
            std::mem::take(&mut listing.prompts),
            MAX_PROMPTS,
            "prompts",
            shown,
            &mut left_out,
            prompt,
            |spec: &PromptSpec| spec.name.clone(),
        );
        for (item, why) in left_out.iter().take(MAX_LEFT_OUT_LOGGED) {
            tracing::info!(component = shown, item = %escaped(item), reason = why, "left out");
        }
        if left_out.len() > MAX_LEFT_OUT_LOGGED {
            tracing::info!(
                component = shown,
                more = left_out.len() - MAX_LEFT_OUT_LOGGED,
                "more items left out"
            );
        }
        Offers { resources, templates, prompts, completes: listing.completes, skills: Vec::new() }
    }

    /// Serves `skills`, and describes their files as the extension says: a
    /// `SKILL.md` listed under its frontmatter's name and description, as
    /// `text/markdown`, and every file with its size.
    pub fn add_skills(&mut self, skills: Vec<Arc<Skill>>) {
        for skill in &skills {
            for spec in &mut self.resources {
                let Some(file) = skill.file(&spec.uri) else { continue };
                spec.size = Some(file.size());
                spec.mime_type = file.mime_type.clone();
                if spec.uri == skill.uri {
                    spec.name = skill.name().to_owned();
                    spec.description = Some(skill.description().to_owned());
                }
            }
        }
        self.skills = skills;
    }

    /// Applies the component's `prefix` to its prompts' names.
    pub fn apply_prefix(&mut self, prefix: &str) {
        for prompt in &mut self.prompts {
            prompt.name = format!("{prefix}{}", prompt.guest_name);
        }
    }

    /// Whether `uri` is one of these resources, or matches a template.
    pub fn offers_uri(&self, uri: &str) -> bool {
        self.resources.iter().any(|spec| spec.uri == uri)
            || self.templates.iter().any(|spec| spec.template.matches(uri).is_some())
    }

    /// The name the component knows prompt `name` by.
    pub fn prompt(&self, name: &str) -> Option<&PromptSpec> {
        self.prompts.iter().find(|spec| spec.name == name)
    }
}

/// Checks each of `items` with `check`, up to `max`, leaving out the bad,
/// the duplicates (by `key`) and those past the cap.
fn take_checked<I, S>(
    items: Vec<I>,
    max: usize,
    what: &str,
    shown: &str,
    left_out: &mut Vec<(String, String)>,
    check: fn(I) -> Result<S, (String, String)>,
    key: fn(&S) -> String,
) -> Vec<S> {
    if items.len() > max {
        tracing::info!(
            component = shown,
            listed = items.len(),
            served = max,
            "it lists more {what} than the host serves; the rest are left out"
        );
    }
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    for item in items.into_iter().take(max) {
        match check(item) {
            Ok(spec) if seen.insert(key(&spec)) => kept.push(spec),
            Ok(spec) => left_out.push((key(&spec), "listed twice".into())),
            Err(gone) => left_out.push(gone),
        }
    }
    kept
}

/// Text the host passes on: no control characters, within `max` bytes.
fn clean(what: &str, text: &str, max: usize) -> Result<(), String> {
    if text.len() > max {
        return Err(format!("its {what} is {} bytes, more than {max}", text.len()));
    }
    if text.chars().any(char::is_control) {
        return Err(format!("its {what} holds control characters"));
    }
    Ok(())
}

/// Optional text, within `max` bytes (a description may hold newlines).
fn bounded(what: &str, text: &Option<String>, max: usize) -> Result<(), String> {
    match text {
        Some(text) if text.len() > max => Err(format!("its {what} is {} bytes, more than {max}", text.len())),
        _ => Ok(()),
    }
}

/// Checks a URI: a scheme, within [`MAX_URI`], no control characters or
/// spaces, not the host's own scheme.
pub fn check_uri(uri: &str) -> Result<(), String> {
    clean("URI", uri, MAX_URI)?;
    let scheme_ok = uri.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !scheme_ok {
        return Err("its URI has no scheme".into());
    }
    if uri.contains(' ') {
        return Err("its URI holds spaces".into());
    }
    if uri.starts_with(HOST_SCHEME) {
        return Err(format!("`{HOST_SCHEME}` URIs are the host's own"));
    }
    Ok(())
}

fn resource(info: ResourceInfo) -> Result<ResourceSpec, (String, String)> {
    let checked = check_uri(&info.uri)
        .and_then(|()| clean("name", &info.name, MAX_NAME))
        .and_then(|()| bounded("title", &info.title, MAX_TITLE))
        .and_then(|()| bounded("description", &info.description, MAX_DESCRIPTION))
        .and_then(|()| info.mime_type.as_deref().map_or(Ok(()), |mime| clean("MIME type", mime, MAX_NAME)));
    checked.map_err(|why| (info.uri.clone(), why))?;
    Ok(ResourceSpec {
        uri: info.uri,
        name: info.name,
        title: info.title,
        description: info.description,
        mime_type: info.mime_type,
        size: info.size,
    })
}

fn template(info: ResourceTemplate) -> Result<TemplateSpec, (String, String)> {
    let parsed = check_uri(&info.uri_template)
        .and_then(|()| UriTemplate::parse(&info.uri_template))
        .and_then(|template| {
            clean("name", &info.name, MAX_NAME)?;
            bounded("title", &info.title, MAX_TITLE)?;
            bounded("description", &info.description, MAX_DESCRIPTION)?;
            info.mime_type.as_deref().map_or(Ok(()), |mime| clean("MIME type", mime, MAX_NAME))?;
            Ok(template)
        });
    let template = parsed.map_err(|why| (info.uri_template.clone(), why))?;
    Ok(TemplateSpec {
        template,
        name: info.name,
        title: info.title,
        description: info.description,
        mime_type: info.mime_type,
    })
}

fn prompt(info: PromptInfo) -> Result<PromptSpec, (String, String)> {
    let name = info.name.clone();
    let fail = |why: String| (name.clone(), why);
    if !tool_name::is_valid(&info.name) {
        return Err(fail("prompt names must be 1-128 characters of A-Z a-z 0-9 _ - .".into()));
    }
    bounded("title", &info.title, MAX_TITLE).map_err(fail)?;
    bounded("description", &info.description, MAX_DESCRIPTION).map_err(fail)?;
    if info.arguments.len() > MAX_PROMPT_ARGUMENTS {
        return Err(fail(format!(
            "it takes {} arguments, more than {MAX_PROMPT_ARGUMENTS}",
            info.arguments.len()
        )));
    }
    let mut arguments: Vec<ArgumentSpec> = Vec::with_capacity(info.arguments.len());
    for argument in info.arguments {
        clean("argument name", &argument.name, MAX_NAME).map_err(fail)?;
        bounded("argument title", &argument.title, MAX_TITLE).map_err(fail)?;
        bounded("argument description", &argument.description, MAX_DESCRIPTION).map_err(fail)?;
        if argument.name.is_empty() || arguments.iter().any(|known| known.name == argument.name) {
            return Err(fail("its argument names must be unique and not empty".into()));
        }
        arguments.push(ArgumentSpec {
            name: argument.name,
            title: argument.title,
            description: argument.description,
            required: argument.required,
        });
    }
    Ok(PromptSpec {
        name: info.name.clone(),
        guest_name: info.name,
        title: info.title,
        description: info.description,
        arguments,
    })
}
