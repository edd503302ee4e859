//! The fixture tools of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server scenarios `tools-call-*`,
//! `json-schema-2020-12`, `elicitation-sep1034-defaults`,
//! `elicitation-sep1330-enums`; from the 2026-07-28 line, `server-stateless`'s
//! `test_logging_tool`, and the tools asking for input in [`rounds`]), implemented as an mcp-wasm-host component:
//! content of every kind, logging, progress, sampling and elicitation, all
//! going through the host's `mcp:tool/client` interface.

use std::time::Duration;

use mcp_tool::{Answer, CallResult, Content, Context, LogLevel, Result, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A tool of the suite that takes no arguments: its name, description,
/// task support (`optional` unless said) and what a call returns. (Defined before the modules, so `rounds` uses it.)
macro_rules! fixture {
    ($tool:ident, $name:literal, $description:literal, |$cx:ident| $body:expr) => {
        fixture!($tool, $name, $description, tasks = Optional, |$cx| $body);
    };
    ($tool:ident, $name:literal, $description:literal, tasks = $tasks:ident, |$cx:ident| $body:expr) => {
        pub(crate) struct $tool;

        impl ::mcp_tool::Tool for $tool {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $description;
            const TASKS: ::mcp_tool::TaskSupport = ::mcp_tool::TaskSupport::$tasks;
            type Args = $crate::Empty;
            type Output = ::mcp_tool::CallResult;

            fn call(
                $cx: &::mcp_tool::Context,
                _: $crate::Empty,
            ) -> ::mcp_tool::Result<::mcp_tool::CallResult> {
                $body
            }
        }
    };
}

mod offers;
mod rounds;
mod tasks;

use offers::{
    PromptWithArguments, PromptWithEmbeddedResource, PromptWithImage, ReleaseNotesSkill, ReleaseNotesStyle,
    SimplePrompt, Spinning, StaticBinary, StaticText, Template, UpdateWatched, Watched,
};
use rounds::{
    InputCapabilities, InputElicitation, InputListRoots, InputMultiRound, InputMultiple, InputPrompt,
    InputRequestState, InputSampling, InputTamperedState, MissingCapability, StreamingElicitation,
};
use tasks::{ConfirmDelete, FailingJob, Greet, MultiInput, ProtocolErrorJob, SlowCompute, ToolWithTask};

mcp_tool::export!(
    SimpleText,
    ImageContent,
    AudioContent,
    EmbeddedResource,
    MultipleContentTypes,
    ToolWithLogging,
    LoggingTool,
    ErrorHandling,
    ToolWithProgress,
    Sampling,
    Elicitation,
    ElicitationDefaults,
    ElicitationEnums,
    JsonSchema202012,
    CustomHeader,
    UpdateWatched,
    InputElicitation,
    InputSampling,
    InputListRoots,
    InputRequestState,
    InputTamperedState,
    InputMultiple,
    InputMultiRound,
    InputCapabilities,
    MissingCapability,
    StreamingElicitation,
    Greet,
    SlowCompute,
    FailingJob,
    ProtocolErrorJob,
    ConfirmDelete,
    MultiInput,
    ToolWithTask;
    resources = [StaticText, StaticBinary, Watched, Spinning, ReleaseNotesSkill, ReleaseNotesStyle];
    templates = [Template];
    prompts = [SimplePrompt, PromptWithArguments, PromptWithEmbeddedResource, PromptWithImage, InputPrompt]
);

/// A 1x1 PNG.
pub(crate) const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0xd, 0xa, 0x1a, 0xa, 0x0, 0x0, 0x0, 0xd, 0x49, 0x48, 0x44, 0x52, 0x0, 0x0, 0x0,
    0x1, 0x0, 0x0, 0x0, 0x1, 0x8, 0x6, 0x0, 0x0, 0x0, 0x1f, 0x15, 0xc4, 0x89, 0x0, 0x0, 0x0, 0xd, 0x49, 0x44,
    0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0, 0x1f, 0x0, 0x5, 0x5, 0x2, 0x0, 0x5f, 0xc8, 0xf1,
    0xd2, 0x0, 0x0, 0x0, 0x0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// An empty 8 kHz mono 16-bit WAV file.
const WAV: &[u8] = &[
    0x52, 0x49, 0x46, 0x46, 0x24, 0x0, 0x0, 0x0, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20, 0x10, 0x0,
    0x0, 0x0, 0x1, 0x0, 0x1, 0x0, 0x40, 0x1f, 0x0, 0x0, 0x80, 0x3e, 0x0, 0x0, 0x2, 0x0, 0x10, 0x0, 0x64,
    0x61, 0x74, 0x61, 0x0, 0x0, 0x0, 0x0,
];

/// The arguments of the tools that take none, with the schema the suite
/// declares (other properties allowed, unlike `mcp_tool::NoArgs`).
#[derive(Deserialize)]
pub(crate) struct Empty {}

impl JsonSchema for Empty {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Empty".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object", "properties": {} })
    }
}

fixture!(SimpleText, "test_simple_text", "Returns a simple text response", |_cx| Ok(CallResult::text(
    "This is a simple text response for testing."
)));

fixture!(ImageContent, "test_image_content", "Returns an image", |_cx| Ok(CallResult::content(vec![
    Content::image(PNG, "image/png")
])));

fixture!(AudioContent, "test_audio_content", "Returns an audio clip", |_cx| Ok(CallResult::content(vec![
    Content::audio(WAV, "audio/wav")
])));

fixture!(EmbeddedResource, "test_embedded_resource", "Returns an embedded resource", |_cx| Ok(
    CallResult::content(vec![Content::embedded_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )])
));

fixture!(
    MultipleContentTypes,
    "test_multiple_content_types",
    "Returns text, an image and a resource",
    |_cx| Ok(CallResult::content(vec![
        Content::text("Multiple content types test:"),
        Content::image(PNG, "image/png"),
        Content::embedded_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#
        ),
    ]))
);

fixture!(ToolWithLogging, "test_tool_with_logging", "Logs three messages while it runs", |cx| {
    for (i, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if i > 0 {
            pause(cx)?;
        }
        cx.log_as("everything", LogLevel::Info, message);
    }
    Ok(CallResult::text("Tool with logging executed successfully"))
});

// The 2026-07-28 suite's `server-stateless` calls it without a log level
// in its request's `_meta`, and expects no log record back (SEP-2575).
fixture!(LoggingTool, "test_logging_tool", "Logs one message at info", |cx| {
    cx.log_as("everything", LogLevel::Info, "test_logging_tool ran");
    Ok(CallResult::text("Logged one message"))
});

fixture!(ErrorHandling, "test_error_handling", "Always fails with an error result", |_cx| Ok(
    CallResult::error("This tool intentionally returns an error for testing")
));

fixture!(ToolWithProgress, "test_tool_with_progress", "Reports progress three times", |cx| {
    for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            pause(cx)?;
        }
        cx.progress(progress, Some(100.0), None);
    }
    Ok(CallResult::text("Progress tool completed"))
});

fixture!(
    ElicitationDefaults,
    "test_elicitation_sep1034_defaults",
    "Asks the user a form with default values",
    |cx| {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": {
                    "type": "string", "description": "User status",
                    "enum": ["active", "inactive", "pending"], "default": "active"
                },
                "verified": { "type": "boolean", "description": "Verification status", "default": true }
            }
        });
        elicit(cx, "Please review and update the form fields with defaults", &schema, "Elicitation completed")
    }
);

fixture!(
    ElicitationEnums,
    "test_elicitation_sep1330_enums",
    "Asks the user a form with every kind of enum",
    |cx| {
        let schema = json!({
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string", "description": "Select one option",
                    "enum": ["option1", "option2", "option3"]
                },
                "titledSingle": {
                    "type": "string", "description": "Select one option with titles",
                    "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" },
                        { "const": "value3", "title": "Third Option" }
                    ]
                },
                "legacyEnum": {
                    "type": "string", "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]
                },
                "untitledMulti": {
                    "type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                    "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                },
                "titledMulti": {
                    "type": "array", "description": "Select multiple options with titles",
                    "minItems": 1, "maxItems": 3,
                    "items": { "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }
                    ] }
                }
            }
        });
        elicit(cx, "Please pick from the options", &schema, "Elicitation completed")
    }
);

struct Sampling;

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    prompt: String,
}

impl Tool for Sampling {
    const NAME: &'static str = "test_sampling";
    const DESCRIPTION: &'static str = "Asks the client's model to complete a prompt";
    type Args = SamplingArgs;
    type Output = String;

    fn call(cx: &Context, args: SamplingArgs) -> Result<String> {
        let answer = cx.sample(&json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": args.prompt } }],
            "maxTokens": 100
        }))?;
        let said = answer["content"]["text"].as_str().unwrap_or_default();
        Ok(format!("LLM response: {said}"))
    }
}

struct Elicitation;

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    message: String,
}

impl Tool for Elicitation {
    const NAME: &'static str = "test_elicitation";
    const DESCRIPTION: &'static str = "Asks the user for a username and an email address";
    type Args = ElicitationArgs;
    type Output = CallResult;

    fn call(cx: &Context, args: ElicitationArgs) -> Result<CallResult> {
        let schema = json!({
            "type": "object",
            "properties": {
                "username": { "type": "string", "description": "User's response" },
                "email": { "type": "string", "description": "User's email address" }
            },
            "required": ["username", "email"]
        });
        elicit(cx, &args.message, &schema, "User response")
    }
}

/// Declares its input schema by hand: the suite checks that `$schema`,
/// `$defs` and `$ref` (SEP-1613), and `$anchor`, `allOf`/`anyOf` and
/// `if`/`then`/`else` (SEP-2106) reach the client as written.
struct JsonSchema202012;

impl Tool for JsonSchema202012 {
    const NAME: &'static str = "json_schema_2020_12_tool";
    const DESCRIPTION: &'static str = "Tool with JSON Schema 2020-12 features";
    type Args = Value;
    type Output = String;

    fn input_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                }
            },
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" },
                "email": { "type": "string" }
            },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
            "then": { "required": ["phone"] },
            "else": { "required": ["email"] },
            "additionalProperties": false
        })
    }

    fn call(_cx: &Context, args: Value) -> Result<String> {
        Ok(format!("Received {args}"))
    }
}

/// A parameter the client mirrors into an HTTP header (SEP-2243): over HTTP
/// on 2026-07-28 its `Mcp-Param-Region` header must match the body.
struct CustomHeader;

impl Tool for CustomHeader {
    const NAME: &'static str = "test_custom_header";
    const DESCRIPTION: &'static str = "Echoes a region the client also sends as the Mcp-Param-Region header";
    type Args = Value;
    type Output = String;

    fn input_schema() -> Value {
        json!({
            "type": "object",
            "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
            "required": ["region"]
        })
    }

    fn call(_cx: &Context, args: Value) -> Result<String> {
        Ok(format!("region: {}", args["region"].as_str().unwrap_or_default()))
    }
}

/// Waits 50 ms, or stops early if the call is cancelled.
fn pause(cx: &Context) -> Result<()> {
    std::thread::sleep(Duration::from_millis(50));
    cx.check()
}

fn elicit(cx: &Context, message: &str, schema: &Value, label: &str) -> Result<CallResult> {
    let summary = match cx.elicit_with::<Value>(message, schema)? {
        Answer::Accept(content) => format!("action=accept, content={content}"),
        Answer::Decline => "action=decline".to_string(),
        Answer::Cancel => "action=cancel".to_string(),
    };
    Ok(CallResult::text(format!("{label}: {summary}")))
}
