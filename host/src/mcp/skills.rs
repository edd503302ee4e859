//! Skills (SEP-2640) as MCP serves them: `skills/list`, `skills/get`,
//! `resources/directory/read`, and `resources/read` of a skill's file, all
//! from the copies `crate::skills` made when the component was loaded, so
//! a file read is the one its digest was taken of. A caller sees a
//! component's skills when its token holds the scopes of every tool of the
//! component, as for its resources.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    GetSkillResult, ListSkillsResult, ReadResourceDirectoryResult, Resource, ResourceContents, Skill,
    SkillFrontmatter, SkillResource, SkillResources,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

use super::lists::visible;
use super::result::resource_contents;
use super::{ToolServer, access};
use crate::component::ToolComponent;
use crate::log_text::escaped_to;
use crate::skills;

/// Every component's skills, merged, as clients see them; built with the
/// catalog (once, not at every request).
#[derive(Default)]
pub(super) struct SkillCatalog {
    /// Each skill's entry in configuration order, with the scopes that
    /// reach it (its component's).
    listed: Vec<(Skill, Arc<[String]>)>,
    /// A `SKILL.md`'s URI to its index in `listed`.
    by_uri: HashMap<String, usize>,
    /// A directory's URI to its direct children and the scopes that reach
    /// them.
    directories: HashMap<String, (Vec<Resource>, Arc<[String]>)>,
}

impl SkillCatalog {
    /// Adds `component`'s skills. Their files are its resources, so a URI
    /// served twice was refused with the resources; a directory that two
    /// skills share is answered by the first.
    pub(super) fn add(&mut self, component: &ToolComponent) {
        let scopes: Arc<[String]> = component.scopes.every_tool.clone().into();
        for skill in &component.offers.skills {
            self.by_uri.insert(skill.uri.clone(), self.listed.len());
            self.listed.push((entry(skill), scopes.clone()));
            for directory in &skill.directories {
                let children = directory.children.iter().map(child).collect();
                self.directories.entry(directory.uri.clone()).or_insert((children, scopes.clone()));
            }
        }
    }

    /// Whether any component ships a skill.
    pub(super) fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// A skill's file at `uri`, if `component` serves one there.
    pub(super) fn file<'a>(component: &'a ToolComponent, uri: &str) -> Option<&'a skills::SkillFile> {
        if !skills::is_skill_file(uri) {
            return None;
        }
        component.offers.skills.iter().find_map(|skill| skill.file(uri))
    }
}

impl ToolServer {
    /// `skills/list`: every skill the caller may see, on one page.
    pub(super) async fn list_offered_skills(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let granted = access::caller(context).map(|principal| principal.scopes.as_slice());
        Ok(ListSkillsResult::with_all_items(visible(&tools.catalog.skills.listed, granted)))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    pub(super) async fn get_offered_skill(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let catalog = &tools.catalog.skills;
        let Some((skill, scopes)) = catalog.by_uri.get(uri).map(|&index| &catalog.listed[index]) else {
            return Err(unknown("skill", uri));
        };
        access::check_scopes(uri, scopes, context)?;
        Ok(GetSkillResult::new(skill.clone()))
    }

    /// `resources/directory/read`: the direct children of a skill's
    /// directory; `-32602` for any other URI, a file's included.
    pub(super) async fn read_skill_directory(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let Some((children, scopes)) = tools.catalog.skills.directories.get(uri) else {
            return Err(unknown("directory", uri));
        };
        access::check_scopes(uri, scopes, context)?;
        Ok(ReadResourceDirectoryResult::with_all_items(children.clone()))
    }
}

/// A skill's file as `resources/read` returns it: the bytes hashed at load.
pub(super) fn contents(file: &skills::SkillFile) -> ResourceContents {
    resource_contents(file.uri.clone(), file.mime_type.clone(), file.body.clone())
}

/// A child of a skill's directory as `resources/directory/read` lists it.
fn child(child: &skills::Child) -> Resource {
    let mut resource = Resource::new(child.uri.clone(), child.name.clone());
    resource.mime_type = child.mime_type.clone();
    resource.size = child.size;
    resource
}

/// A skill as `skills/list` and `skills/get` show it.
fn entry(skill: &skills::Skill) -> Skill {
    let mut frontmatter = SkillFrontmatter::new(skill.name(), skill.description());
    frontmatter.extra = skill.frontmatter.clone();
    frontmatter.extra.remove("name");
    frontmatter.extra.remove("description");
    let files = skill
        .files
        .iter()
        .map(|file| SkillResource::new(file.uri.clone(), file.digest.clone(), file.size()))
        .collect();
    Skill::new(skill.uri.clone(), frontmatter, SkillResources::Files(files))
}

/// `-32602` naming what `uri` is not.
fn unknown(what: &str, uri: &str) -> McpError {
    McpError::invalid_params(format!("no {what} at `{}`", escaped_to(uri, 256)), Some(json!({ "uri": uri })))
}
