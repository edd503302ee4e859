//! What the user says of a component's tools, beside its grants and
//! limits: which are served, under which names, with which hints (applied
//! at load by `component::apply_selection`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// What the user says of a component's tools: which are served (by the
/// component's names), under which prefix, with which hints.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only these are served (`None`: all).
    pub tools: Option<Vec<String>>,
    /// The selection is the command line's `--tools`, shared by every
    /// component it applies to: a name need only be offered by one of them
    /// (checked once all are loaded).
    pub shared: bool,
    /// Put before each name (`""`: none).
    pub prefix: String,
    /// Behaviour hints per tool, over the component's own (a plain
    /// component has none to give).
    pub hints: BTreeMap<String, Hints>,
}

/// Behaviour hints for one tool (`[component.annotations.TOOL]`); each one
/// given replaces the component's. `destructive = true` makes calls need
/// approval, as when a tool declares it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}
