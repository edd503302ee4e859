//! Example tools for mcp-wasm-host, one for each way a call can behave when
//! it is cancelled:
//!
//! - `echo`: returns its `text` (the overhead benchmark's tool);
//! - `countdown`: works in steps, checks `cancelled` between them and returns
//!   early (the cooperative case);
//! - `wait_for_cancel`: blocks on the `cancelled` pollable until cancelled
//!   (cooperative, while parked in a host call);
//! - `spin`: ignores cancellation and computes forever;
//! - `stall`: ignores cancellation and sleeps for an hour in a host call;
//! - `compute`: a tight loop, for measuring fuel and epoch overhead;
//! - `allocate`: allocates memory, for the memory limit.
//!
//! `spin` and `stall` stand in for a tool holding external state (a
//! transaction, a socket): when a directory is granted (`--dir`), they create
//! `<call-id>.lock` in it, and `cleanup` removes it.

#[allow(warnings)]
mod bindings;

use std::time::Duration;

use bindings::exports::mcp::tool::tool::Guest;
use bindings::mcp::tool::cancellation::Cancelled;
use bindings::mcp::tool::types::{Annotations, CallError, CallResult, Content, StopReason, ToolInfo};
use serde_json::{Value, json};

struct Demo;

impl Guest for Demo {
    fn list_tools() -> Vec<ToolInfo> {
        vec![
            tool(
                "echo",
                "Returns the text it is given.",
                json!({
                    "type": "object",
                    "properties": { "text": { "type": "string", "description": "Text to return" } },
                    "required": ["text"],
                    "additionalProperties": false
                }),
                Some(json!({
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"]
                })),
                hints(true, false),
            ),
            tool(
                "countdown",
                "Counts down from `steps`, one step every `step_ms` milliseconds; stops early when cancelled.",
                json!({
                    "type": "object",
                    "properties": {
                        "steps": { "type": "integer", "minimum": 0, "maximum": 100000, "default": 50 },
                        "step_ms": { "type": "integer", "minimum": 0, "maximum": 60000, "default": 20 }
                    },
                    "additionalProperties": false
                }),
                None,
                hints(true, false),
            ),
            tool(
                "wait_for_cancel",
                "Waits, parked in wasi:io/poll on its `cancelled` pollable, until the call is cancelled.",
                json!({ "type": "object", "properties": {}, "additionalProperties": false }),
                None,
                hints(true, false),
            ),
            tool(
                "spin",
                "Computes forever and ignores cancellation; holds <call-id>.lock in the granted directory.",
                json!({ "type": "object", "properties": {}, "additionalProperties": false }),
                None,
                hints(false, true),
            ),
            tool(
                "stall",
                "Sleeps for an hour in a host call and ignores cancellation; holds <call-id>.lock in the granted directory.",
                json!({ "type": "object", "properties": {}, "additionalProperties": false }),
                None,
                hints(false, true),
            ),
            tool(
                "compute",
                "Runs a tight integer loop for `iterations` rounds and returns the result (a CPU benchmark).",
                json!({
                    "type": "object",
                    "properties": { "iterations": { "type": "integer", "minimum": 0 } },
                    "required": ["iterations"],
                    "additionalProperties": false
                }),
                None,
                hints(true, false),
            ),
            tool(
                "allocate",
                "Allocates and touches `mib` MiB of memory, then returns how much it held.",
                json!({
                    "type": "object",
                    "properties": { "mib": { "type": "integer", "minimum": 0, "maximum": 4096 } },
                    "required": ["mib"],
                    "additionalProperties": false
                }),
                None,
                hints(true, false),
            ),
        ]
    }

    fn call(
        call_id: String,
        name: String,
        arguments: String,
        cancelled: Cancelled,
    ) -> Result<CallResult, CallError> {
        let args: Value =
            serde_json::from_str(&arguments).map_err(|e| CallError::InvalidArguments(e.to_string()))?;
        match name.as_str() {
            "echo" => {
                let text = args["text"].as_str().unwrap_or_default();
                Ok(CallResult {
                    content: vec![Content::Text(text.to_string())],
                    structured_content: Some(json!({ "text": text }).to_string()),
                    is_error: false,
                })
            }
            "countdown" => countdown(&args, &cancelled),
            "wait_for_cancel" => {
                // Parks in the host until the cancel arrives, then stops by itself.
                cancelled.subscribe().block();
                Err(CallError::Cancelled)
            }
            "spin" => {
                hold_lock(&call_id)?;
                spin()
            }
            "stall" => {
                hold_lock(&call_id)?;
                std::thread::sleep(Duration::from_secs(3600));
                Ok(text("stall woke up after an hour"))
            }
            "compute" => {
                let iterations = args["iterations"].as_u64().unwrap_or(0);
                let mut x: u64 = 1;
                for i in 0..iterations {
                    x = (x.wrapping_mul(6364136223846793005).wrapping_add(i)) ^ (x >> 7);
                }
                Ok(text(&x.to_string()))
            }
            "allocate" => {
                let mib = args["mib"].as_u64().unwrap_or(0) as usize;
                let block = vec![1u8; mib << 20];
                Ok(text(&format!("held {} MiB", std::hint::black_box(block).len() >> 20)))
            }
            other => Err(CallError::UnknownTool(other.to_string())),
        }
    }

    fn cleanup(call_id: String, _reason: StopReason) {
        if let Some(path) = lock_path(&call_id) {
            // Already gone is fine: cleanup must be safe to run for any call.
            let _ = std::fs::remove_file(path);
        }
    }
}

fn countdown(args: &Value, cancelled: &Cancelled) -> Result<CallResult, CallError> {
    let steps = args["steps"].as_u64().unwrap_or(50);
    let step = Duration::from_millis(args["step_ms"].as_u64().unwrap_or(20));
    for left in (1..=steps).rev() {
        if cancelled.is_cancelled() {
            return Err(CallError::Cancelled);
        }
        // Goes to the host's stderr, never to the MCP stream.
        println!("countdown: {left}");
        std::thread::sleep(step);
    }
    Ok(text(&format!("counted down from {steps}")))
}

#[inline(never)]
fn spin() -> ! {
    let mut x: u64 = 1;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// The directory the user granted (the first preopen), if any.
fn granted_dir() -> Option<String> {
    wasi::filesystem::preopens::get_directories().into_iter().next().map(|(_, path)| path)
}

fn lock_path(call_id: &str) -> Option<String> {
    granted_dir().map(|dir| format!("{}/{call_id}.lock", dir.trim_end_matches('/')))
}

fn hold_lock(call_id: &str) -> Result<(), CallError> {
    if let Some(path) = lock_path(call_id) {
        std::fs::write(&path, call_id)
            .map_err(|e| CallError::Failed(format!("cannot create {path}: {e}")))?;
    }
    Ok(())
}

fn text(s: &str) -> CallResult {
    CallResult { content: vec![Content::Text(s.to_string())], structured_content: None, is_error: false }
}

fn hints(read_only: bool, destructive: bool) -> Annotations {
    Annotations {
        read_only: Some(read_only),
        destructive: Some(destructive),
        idempotent: Some(read_only),
        open_world: Some(false),
    }
}

fn tool(
    name: &str,
    description: &str,
    input: Value,
    output: Option<Value>,
    annotations: Annotations,
) -> ToolInfo {
    ToolInfo {
        name: name.to_string(),
        title: None,
        description: Some(description.to_string()),
        input_schema: input.to_string(),
        output_schema: output.map(|schema| schema.to_string()),
        annotations,
    }
}

bindings::export!(Demo with_types_in bindings);
