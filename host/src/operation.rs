//! What one run of guest code is for: a tool call, a resource read, a
//! prompt or a completion — each an export of the contract, each run the
//! same way (`crate::call`): a fresh instance, the component's limits, a
//! `cancelled` to watch, a stop when it does not.
//!
//! Whatever the export, its answer comes back as a [`CallResult`]
//! (`crate::store::exports` converts it), so every answer passes the same
//! output caps and is classified in one place; [`crate::mcp`] turns it into
//! the MCP result of the request.

use crate::contract::completion_export::{CompletionRequest, Reference};

/// One run of guest code, by what it is for. Names are the ones clients
/// use (with the component's prefix); the run maps them to the
/// component's own.
#[derive(Clone, Debug)]
pub enum Operation {
    /// `tool.call`: the tool and its arguments (a JSON object, checked).
    Tool { name: String, arguments: String },
    /// `resources.read` of a URI the component offers.
    Read { uri: String },
    /// `prompts.get-prompt` with its arguments (checked against the prompt's).
    Prompt { name: String, arguments: Vec<(String, String)> },
    /// `completion.complete`.
    Complete(CompletionRequest),
}

impl Operation {
    /// How logs and metrics name it: the tool's name for a call, the
    /// method otherwise (a URI or a typed value would make metric labels
    /// without bound).
    pub fn label(&self) -> &str {
        match self {
            Operation::Tool { name, .. } => name,
            Operation::Read { .. } => "resources/read",
            Operation::Prompt { .. } => "prompts/get",
            Operation::Complete(_) => "completion/complete",
        }
    }

    /// What it names, for a log line: the URI read, the prompt, what is
    /// being completed (outside text: escape before logging).
    pub fn subject(&self) -> Option<&str> {
        match self {
            Operation::Tool { .. } => None,
            Operation::Read { uri } => Some(uri),
            Operation::Prompt { name, .. } => Some(name),
            Operation::Complete(request) => Some(match &request.reference {
                Reference::Prompt(name) => name,
                Reference::ResourceTemplate(template) => template,
            }),
        }
    }

    /// Whether it is a tool call (the only kind with an approval, output
    /// schema and audit record).
    pub fn is_tool(&self) -> bool {
        matches!(self, Operation::Tool { .. })
    }
}
