//! The resources, resource templates, prompts and skills of every loaded
//! component, merged: the lists clients see and the route from a URI or a
//! prompt name to the component that serves it. Built with the tools
//! (`super::tools::Tools`), immutable, rebuilt on a reload.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Result, bail};
use rmcp::model::{Prompt, PromptArgument, Resource, ResourceTemplate};

use super::lists::visible;
use super::skills::SkillCatalog;
use crate::component::{PromptSpec, ToolComponent};

/// Every component's resources, templates and prompts.
#[derive(Default)]
pub(super) struct Catalog {
    /// Fixed URIs, to the component that lists them (no other component's
    /// template matches one: [`Catalog::refuse_shadowed_templates`]).
    resources: HashMap<String, Arc<ToolComponent>>,
    /// Templates in configuration order: the first that matches serves.
    templates: Vec<(usize, Arc<ToolComponent>)>,
    prompts: HashMap<String, (Arc<ToolComponent>, usize)>,
    listed_resources: Vec<(Resource, Arc<[String]>)>,
    listed_templates: Vec<(ResourceTemplate, Arc<[String]>)>,
    listed_prompts: Vec<(Prompt, Arc<[String]>)>,
    /// Some component exports `completion`.
    pub(super) completes: bool,
    /// Every component's skills.
    pub(super) skills: SkillCatalog,
}

impl Catalog {
    /// Merges the offers of `components`. A URI, a template or a prompt
    /// name offered by two components is an error naming both.
    pub(super) fn new(components: &[Arc<ToolComponent>]) -> Result<Self> {
        let mut catalog = Catalog::default();
        let mut template_texts: HashMap<&str, &Arc<ToolComponent>> = HashMap::new();
        for component in components {
            let offers = &component.offers;
            // The component's scopes cover all it offers (with --auth-issuer).
            let scopes: Arc<[String]> = component.scopes.every_tool.clone().into();
            for spec in &offers.resources {
                if let Some(other) = catalog.resources.insert(spec.uri.clone(), component.clone()) {
                    bail!(clash("resource", &spec.uri, &other, component));
                }
                let mut resource = Resource::new(spec.uri.clone(), spec.name.clone());
                resource.title = spec.title.clone();
                resource.description = spec.description.clone();
                resource.mime_type = spec.mime_type.clone();
                resource.size = spec.size;
                catalog.listed_resources.push((resource, scopes.clone()));
            }
            for (index, spec) in offers.templates.iter().enumerate() {
                if let Some(other) = template_texts.insert(spec.template.text(), component) {
                    bail!(clash("resource template", spec.template.text(), other, component));
                }
                catalog.templates.push((index, component.clone()));
                let mut template = ResourceTemplate::new(spec.template.text(), spec.name.clone());
                template.title = spec.title.clone();
                template.description = spec.description.clone();
                template.mime_type = spec.mime_type.clone();
                catalog.listed_templates.push((template, scopes.clone()));
            }
            for (index, spec) in offers.prompts.iter().enumerate() {
                if let Some((other, _)) =
                    catalog.prompts.insert(spec.name.clone(), (component.clone(), index))
                {
                    bail!(clash("prompt", &spec.name, &other, component));
                }
                let scopes: Arc<[String]> = component.scopes.for_tool(&spec.name).into();
                catalog.listed_prompts.push((mcp_prompt(spec), scopes));
            }
            catalog.completes |= offers.completes;
            catalog.skills.add(component);
        }
        catalog.refuse_shadowed_templates()?;
        Ok(catalog)
    }

    /// A fixed URI of one component that another's template matches would
    /// be served by the first and never reach the second (B's
    /// `notes://secret` would shadow A's `notes://{id}` for that id): refused
    /// at load, like a name offered twice. Within one component it is the
    /// component's own choice, and its fixed URI wins. Two templates that
    /// overlap are served by the first in configuration order.
    fn refuse_shadowed_templates(&self) -> Result<()> {
        for (uri, owner) in &self.resources {
            for (index, component) in &self.templates {
                let spec = &component.offers.templates[*index];
                if !Arc::ptr_eq(owner, component) && spec.template.matches(uri).is_some() {
                    bail!(
                        "resource `{}` of {} is also matched by the resource template `{}` of {}; \
                         a URI must be served by one component",
                        crate::log_text::escaped(uri),
                        owner.path.display(),
                        crate::log_text::escaped(spec.template.text()),
                        component.path.display()
                    );
                }
            }
        }
        Ok(())
    }

    /// The component that serves `uri`: the one that lists it, or the
    /// first whose template matches.
    pub(super) fn route_uri(&self, uri: &str) -> Option<&Arc<ToolComponent>> {
        self.resources.get(uri).or_else(|| {
            self.templates
                .iter()
                .find(|(index, component)| component.offers.templates[*index].template.matches(uri).is_some())
                .map(|(_, component)| component)
        })
    }

    /// The component that serves the template written `template`.
    pub(super) fn route_template(&self, template: &str) -> Option<&Arc<ToolComponent>> {
        self.templates
            .iter()
            .find(|(index, component)| component.offers.templates[*index].template.text() == template)
            .map(|(_, component)| component)
    }

    /// The prompt named `name` and its component.
    pub(super) fn prompt(&self, name: &str) -> Option<(&Arc<ToolComponent>, &PromptSpec)> {
        let (component, index) = self.prompts.get(name)?;
        Some((component, &component.offers.prompts[*index]))
    }

    /// Whether any component offers prompts.
    pub(super) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// The resources a caller granted `granted` may read (all without a token).
    pub(super) fn resources_for(&self, granted: Option<&[String]>) -> Vec<Resource> {
        visible(&self.listed_resources, granted)
    }

    /// The templates, likewise.
    pub(super) fn templates_for(&self, granted: Option<&[String]>) -> Vec<ResourceTemplate> {
        visible(&self.listed_templates, granted)
    }

    /// The prompts, likewise.
    pub(super) fn prompts_for(&self, granted: Option<&[String]>) -> Vec<Prompt> {
        visible(&self.listed_prompts, granted)
    }
}

fn clash(what: &str, name: &str, first: &ToolComponent, second: &ToolComponent) -> String {
    format!(
        "{what} `{}` is offered by both {} and {}; it must be unique across components",
        crate::log_text::escaped(name),
        first.path.display(),
        second.path.display()
    )
}

/// A prompt as `prompts/list` shows it.
fn mcp_prompt(spec: &PromptSpec) -> Prompt {
    let arguments = spec
        .arguments
        .iter()
        .map(|argument| {
            let mut mcp = PromptArgument::new(argument.name.clone()).with_required(argument.required);
            mcp.title = argument.title.clone();
            mcp.description = argument.description.clone();
            mcp
        })
        .collect::<Vec<_>>();
    let mut prompt = Prompt::new(spec.name.clone(), spec.description.clone(), Some(arguments));
    prompt.title = spec.title.clone();
    prompt
}
