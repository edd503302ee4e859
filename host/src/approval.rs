//! Approval: which calls need the user's yes before they run, and the
//! question the user sees.
//!
//! A tool needs approval when its component says so (`needs-approval`, or
//! by default when it is marked destructive), unless the user said
//! otherwise on the command line: `--require-approval` and `--no-approval`
//! take a tool name, `destructive` or `all`, and a rule naming the tool
//! beats a rule about a class of tools. How the question travels (an
//! elicitation, a paused result, a task's `input_required`) is the
//! [`ask`](crate::ask) module's job; this module only decides and words it,
//! and reads the answer.

use std::str::FromStr;
use std::time::Duration;

use anyhow::{Result, bail};
use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{Value, json};

use crate::limits::HumanDuration;

/// Values shown per argument in an approval question, at most.
const SHOWN_VALUE_CHARS: usize = 80;
/// Arguments shown in an approval question, at most.
const SHOWN_ARGUMENTS: usize = 8;
/// The longest operation text a guest may put before the user.
const SHOWN_OPERATION_CHARS: usize = 500;

/// Which tools a `--require-approval` / `--no-approval` rule covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalRule {
    /// Every tool.
    All,
    /// Tools annotated `destructive: true`.
    Destructive,
    /// The tool with this name.
    Tool(String),
}

impl FromStr for ApprovalRule {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        match value.trim() {
            "" => Err("expected a tool name, `destructive` or `all`".into()),
            "all" => Ok(ApprovalRule::All),
            "destructive" => Ok(ApprovalRule::Destructive),
            name => Ok(ApprovalRule::Tool(name.to_string())),
        }
    }
}

impl ApprovalRule {
    /// How specific the rule is: a rule naming the tool beats one about a class.
    fn rank(&self) -> u8 {
        match self {
            ApprovalRule::Tool(_) => 2,
            ApprovalRule::Destructive => 1,
            ApprovalRule::All => 0,
        }
    }

    fn covers(&self, tool: &str, destructive: bool) -> bool {
        match self {
            ApprovalRule::All => true,
            ApprovalRule::Destructive => destructive,
            ApprovalRule::Tool(name) => name == tool,
        }
    }
}

/// The user's approval rules for one component (`--require-approval`,
/// `--no-approval`, or its `[[component]]` entry in `--config`).
#[derive(Clone, Debug, Default)]
pub struct ApprovalRules {
    /// Tools that must be approved before each call.
    pub require: Vec<ApprovalRule>,
    /// Tools approved up front (`--no-approval`): they run without asking,
    /// and their mid-call `request-approval` is answered yes at once.
    pub no_approval: Vec<ApprovalRule>,
}

/// What the user's rules decide for one tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Each call is approved by the user before the tool runs.
    pub needs_approval: bool,
    /// The user approved the tool up front: its mid-call approval requests
    /// are granted without asking.
    pub pre_approved: bool,
}

impl ApprovalRules {
    /// Rejects rules that name no loaded tool, or a tool both required and waived.
    pub fn validate<'a>(&self, tools: impl IntoIterator<Item = &'a str> + Clone) -> Result<()> {
        for (flag, rules) in [("--require-approval", &self.require), ("--no-approval", &self.no_approval)] {
            for rule in rules {
                let ApprovalRule::Tool(name) = rule else { continue };
                if !tools.clone().into_iter().any(|tool| tool == name) {
                    let mut known: Vec<&str> = tools.clone().into_iter().collect();
                    known.sort_unstable();
                    bail!(
                        "{flag} {name}: no loaded component offers a tool `{name}` (tools: {}; \
                         or use `destructive` or `all`)",
                        known.join(", ")
                    );
                }
            }
        }
        for rule in &self.require {
            if self.no_approval.contains(rule) {
                bail!("{rule:?} is given to both --require-approval and --no-approval; keep one");
            }
        }
        Ok(())
    }

    /// The user's own word on `tool`, if any rule covers it: the most
    /// specific rule wins.
    fn user_decision(&self, tool: &str, destructive: bool) -> Option<bool> {
        let strongest = |rules: &[ApprovalRule]| {
            rules.iter().filter(|rule| rule.covers(tool, destructive)).map(ApprovalRule::rank).max()
        };
        match (strongest(&self.require), strongest(&self.no_approval)) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            // `validate` rules out ties (the same rule in both lists).
            (Some(require), Some(no_approval)) => Some(require > no_approval),
        }
    }

    /// Decides for `tool`, annotated `destructive` or not, which declared
    /// `declared` itself (`needs-approval`): the user's rules first, then
    /// the tool's own word, then "destructive tools ask".
    pub fn decide(&self, tool: &str, destructive: bool, declared: Option<bool>) -> Decision {
        let user = self.user_decision(tool, destructive);
        Decision {
            needs_approval: user.unwrap_or_else(|| declared.unwrap_or(destructive)),
            pre_approved: user == Some(false),
        }
    }
}

/// An approval question, ready to put before the user.
#[derive(Clone, Debug)]
pub struct ApprovalQuestion {
    /// The tool asking.
    pub tool: String,
    /// What the user reads.
    pub message: String,
}

impl ApprovalQuestion {
    /// Asks to run `tool` with `arguments`, summarised: a bounded number of
    /// keys, long values cut, never the whole payload.
    pub fn for_call(tool: &str, arguments: &Value) -> Self {
        let mut message = format!("Allow the tool `{tool}` to run?");
        if let Some(summary) = summarise_arguments(arguments) {
            message.push_str("\n\nArguments:\n");
            message.push_str(&summary);
        }
        ApprovalQuestion { tool: tool.to_string(), message }
    }

    /// Asks to let `tool` do `operation` (the guest's own words, cut to length).
    pub fn for_operation(tool: &str, operation: &str) -> Self {
        let operation = cut(operation.trim(), SHOWN_OPERATION_CHARS);
        ApprovalQuestion { tool: tool.to_string(), message: format!("The tool `{tool}` asks: {operation}") }
    }

    /// The form schema: one required yes/no field. A client that fills forms
    /// with their defaults gets `false`: approval is never implied.
    pub fn requested_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": "Yes to let the tool go ahead",
                    "default": false
                }
            },
            "required": ["approve"]
        })
    }
}

/// Why a call did not get the user's approval. Fails closed: anything but
/// an explicit yes is one of these.
#[derive(Debug, thiserror::Error)]
pub enum Decline {
    /// The user said no.
    #[error("the user declined")]
    Declined,
    /// The user dismissed the question.
    #[error("the user dismissed the approval request")]
    Dismissed,
    /// No answer within `--approval-timeout`.
    #[error("no answer within --approval-timeout ({}), so it was declined", HumanDuration(*.0))]
    NoAnswer(Duration),
    /// The call was stopped while the question was open.
    #[error("the call was cancelled while waiting for approval")]
    Cancelled,
    /// The client cannot ask the user (it declared no form elicitation).
    #[error(
        "this client cannot ask the user for approval (it declared no form elicitation support); \
         to let `{tool}` run without asking, start mcp-wasm-host with `--no-approval {tool}`"
    )]
    CannotAsk {
        /// The tool that needs approval.
        tool: String,
    },
    /// There is no client at all.
    #[error("there is no client to ask")]
    NoClient,
    /// The question could not be put in a form.
    #[error("cannot word the approval request: {0}")]
    Wording(String),
    /// The client's answer was not an elicitation result.
    #[error("the client's answer to the approval request is malformed: {0}")]
    Malformed(String),
    /// Asking failed (the text says how).
    #[error("the approval request failed: {0}")]
    Failed(String),
}

impl Decline {
    /// A short name for traces: `declined` (no, or dismissed), `expired`,
    /// `cancelled`, or `cannot-ask`.
    pub fn label(&self) -> &'static str {
        match self {
            Decline::Declined | Decline::Dismissed => "declined",
            Decline::NoAnswer(_) => "expired",
            Decline::Cancelled => "cancelled",
            _ => "cannot-ask",
        }
    }
}

/// What the user's answer to an approval question means: `Ok` only for an
/// accepted form with `approve: true`.
pub fn verdict(answer: &ElicitResult) -> Result<(), Decline> {
    match answer.action {
        ElicitationAction::Accept
            if answer.content.as_ref().and_then(|c| c.get("approve")).and_then(Value::as_bool)
                == Some(true) =>
        {
            Ok(())
        }
        ElicitationAction::Accept | ElicitationAction::Decline => Err(Decline::Declined),
        _ => Err(Decline::Dismissed),
    }
}

/// `key: value` lines for at most [`SHOWN_ARGUMENTS`] arguments.
fn summarise_arguments(arguments: &Value) -> Option<String> {
    let object = arguments.as_object().filter(|object| !object.is_empty())?;
    let mut lines: Vec<String> = object
        .iter()
        .take(SHOWN_ARGUMENTS)
        .map(|(key, value)| {
            let shown = match value {
                Value::String(text) => format!("{:?}", cut(text, SHOWN_VALUE_CHARS)),
                other => cut(&other.to_string(), SHOWN_VALUE_CHARS),
            };
            format!("  {}: {shown}", cut(key, 40))
        })
        .collect();
    if object.len() > SHOWN_ARGUMENTS {
        lines.push(format!("  … and {} more", object.len() - SHOWN_ARGUMENTS));
    }
    Some(lines.join("\n"))
}

/// `text` cut to at most `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_names_and_classes() {
        assert_eq!("all".parse::<ApprovalRule>(), Ok(ApprovalRule::All));
        assert_eq!("destructive".parse::<ApprovalRule>(), Ok(ApprovalRule::Destructive));
        assert_eq!("drop_db".parse::<ApprovalRule>(), Ok(ApprovalRule::Tool("drop_db".into())));
        assert!("".parse::<ApprovalRule>().is_err());
    }

    #[test]
    fn a_summary_is_bounded_whatever_the_payload() {
        let mut arguments = serde_json::Map::new();
        for n in 0..100 {
            arguments.insert(format!("key{n:03}"), json!("x".repeat(10_000)));
        }
        let question = ApprovalQuestion::for_call("t", &Value::Object(arguments));
        assert!(question.message.len() < 2_000, "{} bytes", question.message.len());
        assert!(question.message.contains("… and 92 more"));
        let nested = json!({ "deep": { "a": [1, 2, 3], "b": "y".repeat(500) } });
        let question = ApprovalQuestion::for_call("t", &nested);
        assert!(question.message.contains("deep: {"));
        assert!(question.message.len() < 300);
    }

    #[test]
    fn only_an_explicit_yes_approves() {
        let answer = |answer: Value| serde_json::from_value::<ElicitResult>(answer).unwrap();
        assert!(verdict(&answer(json!({ "action": "accept", "content": { "approve": true } }))).is_ok());
        assert!(verdict(&answer(json!({ "action": "accept", "content": { "approve": false } }))).is_err());
        assert!(verdict(&answer(json!({ "action": "accept" }))).is_err());
        assert!(verdict(&answer(json!({ "action": "decline" }))).is_err());
        assert!(verdict(&answer(json!({ "action": "cancel" }))).is_err());
    }
}
