//! `mcp-wasm-host inspect`: what a component offers, as a client would see
//! it, and which kind of component it is.

use std::sync::Arc;

use anyhow::Result;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::component::{Code, ToolComponent};
use crate::startup::{build_server, load_components, pull_components};
use crate::{cli, config};

/// `inspect`: loads a component and returns its tools as `tools/list` shows
/// them; for an `oci://` component also where it came from (`source`: its
/// digest and the signer whose key verified it).
pub async fn inspect(path: &std::path::Path, key: Option<&std::path::Path>) -> Result<serde_json::Value> {
    // The serving defaults, so the compiled artifact it caches is the one a
    // later `serve` with default flags loads.
    // Optimized code only (no tiering): that is what the cache keeps.
    let mut argv =
        vec!["mcp-wasm-host".as_ref(), "--no-tiering".as_ref(), "--component".as_ref(), path.as_os_str()];
    if let Some(key) = key {
        argv.extend(["--require-signature".as_ref(), key.as_os_str()]);
    }
    let args = cli::Cli::parse_args(argv)?.serve;
    let mut settings = config::resolve(&args)?;
    let pulled = pull_components(&mut settings).await?;
    let (server, loader) = build_server(&mut settings, CancellationToken::new(), Arc::default(), None)?;
    load_components(&server, &loader, &settings).await?;
    let mut listing = serde_json::json!({ "tools": server.tools() });
    if let Some(component) = server.component(0) {
        describe_kind(&mut listing, &component);
        describe_offers(&mut listing, &component);
    }
    if let Some(source) = pulled.first() {
        listing["source"] = serde_json::to_value(source)?;
    }
    Ok(listing)
}

/// Says which kind the component is and, for a plain one, what it lacks
/// and which functions are not tools.
fn describe_kind(listing: &mut Value, component: &ToolComponent) {
    listing["kind"] = json!(component.code.kind().label());
    if let Code::Plain(plain) = &component.code {
        listing["cancellation"] = json!(
            "forced stop only: a plain component has no `cancelled` to watch and no `cleanup` export, \
             so a cancelled or timed-out call is stopped at once and nothing releases what it held \
             outside the sandbox; write tools that hold external state against the mcp:tool contract \
             (`mcp-wasm-host wit`)"
        );
        let left_out: Vec<Value> = plain
            .left_out()
            .iter()
            .map(|gone| json!({ "function": gone.function, "why": gone.why }))
            .collect();
        listing["left_out"] = Value::Array(left_out);
    }
}

/// Its resources, templates and prompts, when it offers any.
fn describe_offers(listing: &mut Value, component: &ToolComponent) {
    let offers = &component.offers;
    if !offers.resources.is_empty() {
        let resources: Vec<Value> =
            offers.resources.iter().map(|spec| json!({ "uri": spec.uri, "name": spec.name })).collect();
        listing["resources"] = Value::Array(resources);
    }
    if !offers.templates.is_empty() {
        let templates: Vec<Value> = offers
            .templates
            .iter()
            .map(|spec| json!({ "uriTemplate": spec.template.text(), "name": spec.name }))
            .collect();
        listing["resourceTemplates"] = Value::Array(templates);
    }
    if !offers.prompts.is_empty() {
        let prompts: Vec<Value> = offers
            .prompts
            .iter()
            .map(|spec| {
                let arguments: Vec<&str> =
                    spec.arguments.iter().map(|argument| argument.name.as_str()).collect();
                json!({ "name": spec.name, "arguments": arguments })
            })
            .collect();
        listing["prompts"] = Value::Array(prompts);
    }
    if offers.completes {
        listing["completion"] = json!(true);
    }
}
