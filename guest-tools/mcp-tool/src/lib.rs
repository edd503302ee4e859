//! Write tools for [mcp-wasm-host] in Rust: a tool is a type with a name, a
//! description, typed arguments and a typed result; the SDK generates their
//! JSON Schemas, the `mcp:tool` bindings and the component's exports.
//!
//! ```no_run
//! use mcp_tool::{Annotations, Context, Result, Structured, Tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Args {
//!     /// Text to return
//!     text: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Echoed {
//!     text: String,
//! }
//!
//! struct Echo;
//!
//! impl Tool for Echo {
//!     const NAME: &'static str = "echo";
//!     const DESCRIPTION: &'static str = "Returns the text it is given.";
//!     const ANNOTATIONS: Annotations = Annotations::NONE.read_only(true).open_world(false);
//!     type Args = Args;
//!     type Output = Structured<Echoed>;
//!
//!     fn call(_cx: &Context, args: Args) -> Result<Self::Output> {
//!         Ok(Structured::new(Echoed { text: args.text.clone() }).text(args.text))
//!     }
//! }
//!
//! mcp_tool::export!(Echo);
//! ```
//!
//! Build it as a `cdylib` with `cargo build --release --target wasm32-wasip2`
//! (or `cargo component build --release`) and check it with
//! `mcp-wasm-host inspect target/wasm32-wasip2/release/NAME.wasm`.
//!
//! # The pieces
//!
//! - [`Tool`]: one tool. Its arguments are any `Deserialize + JsonSchema`
//!   type (the host validates every call against the generated schema before
//!   the tool runs; [`NoArgs`] for none); its result is any [`Output`]: text,
//!   [`Content`] blocks, or [`Structured`] content with a generated output
//!   schema. Hints ([`Annotations`]), [`Tool::NEEDS_APPROVAL`] and the
//!   description are constants next to the code.
//! - [`Context`]: the running call: [`call_id`](Context::call_id),
//!   cancellation ([`check`](Context::check)), [`log`](Context::log),
//!   [`progress`](Context::progress), questions to the user
//!   ([`elicit`](Context::elicit), [`elicit_url`](Context::elicit_url),
//!   [`request_approval`](Context::request_approval)) and to the client's
//!   model ([`sample`](Context::sample)).
//! - [`Error`]: why a call failed, one case per WIT `call-error`; `?` turns
//!   I/O, JSON and [`RequestError`]s into it.
//! - [`export!`]: one line lists the tools a component offers, and
//!   optionally a cleanup hook for calls that did not finish.
//! - [`raw`]: the generated bindings themselves, for what the typed layer
//!   does not cover.
//!
//! The bindings are generated when the crate builds, from the `mcp:tool`
//! contract in this crate's `wit/` folder: tools commit no generated code.
//!
//! [mcp-wasm-host]: https://github.com/mcp-wasm-host/mcp-wasm-host

mod context;
mod dispatch;
mod error;
mod offers;
mod output;
mod schema;

/// What [`export!`] expands to uses; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::dispatch::{
        Entry, PromptEntry, ResourceEntry, TemplateEntry, call, complete, get_prompt, list_prompts,
        list_resources, list_task_support, list_templates, list_tools, read,
    };
    pub use crate::offers::skill_mime_type;
}

pub use context::{Answer, Context, Declined, Question, Reply};
pub use error::{Error, Result};
pub use offers::{Args, Argument, Message, Prompt, Resource, ResourceTemplate};
pub use output::{Output, Structured};
pub use raw::exports::mcp::tool::prompts::Role;
pub use schema::{NoArgs, form_schema, input_schema, output_schema};

pub use raw::exports::mcp::tool::tasks::TaskSupport;
pub use raw::mcp::tool::cancellation::Cancelled;
pub use raw::mcp::tool::client::{LogLevel, RequestError, Root};
pub use raw::mcp::tool::types::{
    Annotations, CallResult, Content, EmbeddedResource, Media, ResourceBody, ResourceLink, StopReason,
};

/// The crates a tool's types are written with, for tools that would rather
/// not depend on them directly. (`#[derive]`s of serde and schemars need
/// the crates themselves as dependencies: add `serde` and `schemars` to the
/// tool's `Cargo.toml`.)
pub use {schemars, serde, serde_json};

/// The `mcp:tool` bindings as wit-bindgen generates them from `wit/`: the
/// escape hatch for what the typed layer does not cover.
///
/// A component may implement the raw `Guest` traits (of `tool`, `resources`,
/// `prompts` and `completion`: the world exports all four; see
/// [`tool::Guest`](raw::exports::mcp::tool::tool::Guest)) itself and
/// export them with [`raw::export!`](crate::raw::export)
/// instead of [`export!`] (never beside it); it then sees calls exactly as
/// the host makes them (arguments as JSON text, results and errors as WIT
/// records). `guest-tools/hostile` in the repository does this.
///
/// ```ignore
/// use mcp_tool::raw::exports::mcp::tool::tool::Guest;
/// use mcp_tool::raw::mcp::tool::cancellation::Cancelled;
/// use mcp_tool::raw::mcp::tool::types::{CallError, CallResult, StopReason, ToolInfo};
///
/// struct Raw;
///
/// impl Guest for Raw {
///     fn list_tools() -> Vec<ToolInfo> {
///         Vec::new()
///     }
///     fn call(_: String, name: String, _: String, _: Cancelled) -> Result<CallResult, CallError> {
///         Err(CallError::UnknownTool(name))
///     }
///     fn cleanup(_: String, _: StopReason) {}
/// }
/// // ...and `resources::Guest`, `prompts::Guest`, `completion::Guest`.
///
/// mcp_tool::raw::export!(Raw);
/// ```
pub mod raw {
    wit_bindgen::generate!({
        path: "wit",
        world: "server-component",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "mcp_tool::raw",
        // wasi:io/poll (the cancellation pollable) is generated here too.
        generate_all,
    });
}

/// One tool: its name and description, its arguments and result types, and
/// what a call does.
///
/// Everything about the tool that a client sees comes from here: the name,
/// the description (written for a model to read), the input schema
/// generated from [`Args`](Tool::Args), the output schema of
/// [`Output`](Tool::Output) (if it has one), the hints and whether a call
/// needs the user's approval first.
///
/// ```no_run
/// use mcp_tool::{Annotations, Context, Error, Result, Tool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct Args {
///     /// Which table to empty
///     table: String,
/// }
///
/// struct DeleteRecords;
///
/// impl Tool for DeleteRecords {
///     const NAME: &'static str = "delete_records";
///     const DESCRIPTION: &'static str = "Deletes every record of `table`.";
///     const ANNOTATIONS: Annotations = Annotations::NONE.read_only(false).destructive(true);
///     // The host asks the user before each call runs.
///     const NEEDS_APPROVAL: Option<bool> = Some(true);
///     type Args = Args;
///     type Output = String;
///
///     fn call(cx: &Context, args: Args) -> Result<String> {
///         cx.check()?; // stop here if the call was cancelled
///         if args.table.is_empty() {
///             return Err(Error::InvalidArguments("no table named".into()));
///         }
///         Ok(format!("deleted every record of {}", args.table))
///     }
/// }
/// # mcp_tool::export!(DeleteRecords);
/// ```
pub trait Tool: 'static {
    /// The name clients call the tool by; unique within the server.
    const NAME: &'static str;
    /// A human-readable display name.
    const TITLE: Option<&'static str> = None;
    /// What the tool does, written for a model to read.
    const DESCRIPTION: &'static str;
    /// Behaviour hints for clients (read-only, destructive, idempotent,
    /// open world). `Annotations::NONE` states nothing (MCP's defaults).
    const ANNOTATIONS: Annotations = Annotations::NONE;
    /// Whether a call needs the user's approval before it runs: `None` lets
    /// the host decide (tools hinted destructive need it).
    const NEEDS_APPROVAL: Option<bool> = None;
    /// Whether a call may run as a task, for a client that speaks MCP's
    /// tasks extension: `Optional` (a call that takes more than a moment,
    /// or asks the user something, becomes one), `Forbidden` (it always
    /// answers in its own response) or `Required` (it only runs as a task;
    /// other clients are refused).
    const TASKS: TaskSupport = TaskSupport::Optional;

    /// The arguments, deserialized from the call's JSON object. Its JSON
    /// Schema is the tool's input schema: the host checks every call
    /// against it, so `call` sees only arguments that fit. Doc comments
    /// become descriptions; `#[serde(default)]` fields are optional;
    /// `#[serde(deny_unknown_fields)]` refuses others; ranges and lengths
    /// come from `#[schemars(range(...), length(...))]`.
    type Args: serde::de::DeserializeOwned + schemars::JsonSchema;
    /// What a call returns: see [`Output`].
    type Output: Output;

    /// Runs one call.
    fn call(cx: &Context, args: Self::Args) -> Result<Self::Output>;

    /// The input schema; generated from [`Args`](Tool::Args) unless a tool
    /// needs to write its own.
    fn input_schema() -> serde_json::Value {
        input_schema::<Self::Args>()
    }

    /// The output schema; [`Output::schema`] unless a tool writes its own.
    fn output_schema() -> Option<serde_json::Value> {
        <Self::Output as Output>::schema()
    }
}

/// Exports what the component offers: its tools (as `mcp:tool/tool`),
/// and optionally, after a `;` each and in this order, its resources,
/// resource templates, prompts and a cleanup hook.
///
/// ```ignore
/// mcp_tool::export!(Echo, Countdown);
/// mcp_tool::export!(Echo; resources = [Readme], templates = [Orders], prompts = [Review]);
/// // With a hook for calls that did not finish (cancelled, out of time,
/// // stopped by a limit): fn(call_id: &str, reason: StopReason).
/// mcp_tool::export!(Echo, Countdown; cleanup = release_locks);
/// // No tools, only a resource.
/// mcp_tool::export!(; resources = [Readme]);
/// ```
///
/// The component exports all five interfaces of the contract (`tool`,
/// `resources`, `prompts`, `completion`, `tasks`); what it does not offer
/// is listed empty, and each tool's [`Tool::TASKS`] is its task support. Completion asks the prompt's or template's `complete`.
///
/// The host runs `cleanup` in a fresh instance, once for each call that did
/// not return normally, so it sees none of the call's memory: name anything
/// a call leaves outside the sandbox after [`Context::call_id`]. Use the
/// macro once per crate.
#[macro_export]
macro_rules! export {
    (
        $($tool:ty),* $(,)?
        $(; resources = [$($resource:ty),* $(,)?])?
        $(; templates = [$($template:ty),* $(,)?])?
        $(; prompts = [$($prompt:ty),* $(,)?])?
        $(; cleanup = $cleanup:expr)?
    ) => {
        #[doc(hidden)]
        struct __McpToolComponent;

        impl __McpToolComponent {
            const TOOLS: &'static [$crate::__private::Entry] = &[$($crate::__private::Entry::of::<$tool>()),*];
            const RESOURCES: &'static [$crate::__private::ResourceEntry] =
                &[$($($crate::__private::ResourceEntry::of::<$resource>()),*)?];
            const TEMPLATES: &'static [$crate::__private::TemplateEntry] =
                &[$($($crate::__private::TemplateEntry::of::<$template>()),*)?];
            const PROMPTS: &'static [$crate::__private::PromptEntry] =
                &[$($($crate::__private::PromptEntry::of::<$prompt>()),*)?];
        }

        impl $crate::raw::exports::mcp::tool::tool::Guest for __McpToolComponent {
            fn list_tools() -> ::std::vec::Vec<$crate::raw::mcp::tool::types::ToolInfo> {
                $crate::__private::list_tools(__McpToolComponent::TOOLS)
            }

            fn call(
                call_id: ::std::string::String,
                name: ::std::string::String,
                arguments: ::std::string::String,
                cancelled: $crate::Cancelled,
            ) -> ::core::result::Result<
                $crate::raw::mcp::tool::types::CallResult,
                $crate::raw::mcp::tool::types::CallError,
            > {
                $crate::__private::call(
                    __McpToolComponent::TOOLS,
                    call_id,
                    name,
                    arguments,
                    cancelled,
                )
            }

            #[allow(unused_variables)]
            fn cleanup(call_id: ::std::string::String, reason: $crate::StopReason) {
                $(
                    let hook: fn(&str, $crate::StopReason) = $cleanup;
                    hook(&call_id, reason);
                )?
            }
        }

        impl $crate::raw::exports::mcp::tool::resources::Guest for __McpToolComponent {
            fn list_resources() -> ::std::vec::Vec<$crate::raw::exports::mcp::tool::resources::ResourceInfo> {
                $crate::__private::list_resources(__McpToolComponent::RESOURCES)
            }

            fn list_templates() -> ::std::vec::Vec<$crate::raw::exports::mcp::tool::resources::ResourceTemplate> {
                $crate::__private::list_templates(__McpToolComponent::TEMPLATES)
            }

            fn read(
                call_id: ::std::string::String,
                uri: ::std::string::String,
                cancelled: $crate::Cancelled,
            ) -> ::core::result::Result<
                ::std::vec::Vec<$crate::raw::exports::mcp::tool::resources::ResourceContents>,
                $crate::raw::exports::mcp::tool::resources::ReadError,
            > {
                $crate::__private::read(
                    __McpToolComponent::RESOURCES,
                    __McpToolComponent::TEMPLATES,
                    call_id,
                    uri,
                    cancelled,
                )
            }
        }

        impl $crate::raw::exports::mcp::tool::prompts::Guest for __McpToolComponent {
            fn list_prompts() -> ::std::vec::Vec<$crate::raw::exports::mcp::tool::prompts::PromptInfo> {
                $crate::__private::list_prompts(__McpToolComponent::PROMPTS)
            }

            fn get_prompt(
                call_id: ::std::string::String,
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                cancelled: $crate::Cancelled,
            ) -> ::core::result::Result<
                $crate::raw::exports::mcp::tool::prompts::PromptResult,
                $crate::raw::exports::mcp::tool::prompts::PromptError,
            > {
                $crate::__private::get_prompt(__McpToolComponent::PROMPTS, call_id, name, arguments, cancelled)
            }
        }

        impl $crate::raw::exports::mcp::tool::tasks::Guest for __McpToolComponent {
            fn list_task_support() -> ::std::vec::Vec<(::std::string::String, $crate::TaskSupport)> {
                $crate::__private::list_task_support(__McpToolComponent::TOOLS)
            }
        }

        impl $crate::raw::exports::mcp::tool::completion::Guest for __McpToolComponent {
            fn complete(
                _call_id: ::std::string::String,
                request: $crate::raw::exports::mcp::tool::completion::CompletionRequest,
                _cancelled: $crate::Cancelled,
            ) -> ::core::result::Result<
                $crate::raw::exports::mcp::tool::completion::Completions,
                ::std::string::String,
            > {
                $crate::__private::complete(__McpToolComponent::PROMPTS, __McpToolComponent::TEMPLATES, request)
            }
        }

        $crate::raw::export!(__McpToolComponent with_types_in $crate::raw);
    };
}
