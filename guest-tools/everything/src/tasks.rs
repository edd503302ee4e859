//! The fixture tools of the suite's tasks extension scenarios (`tasks-*`,
//! SEP-2663): a quick tool that is never a task, slow ones that the host runs as tasks, one
//! that fails as a tool and one that fails as a program, and tools that
//! ask the user from inside a task, or before it starts.

use std::time::{Duration, Instant};

use mcp_tool::{Answer, CallResult, Context, Question, Reply, Result, TaskSupport, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::rounds::{form, said};

/// Sleeps `length` in short steps, returning early (as cancelled) once the
/// call is cancelled.
fn work(cx: &Context, length: Duration) -> Result<()> {
    let end = Instant::now() + length;
    while Instant::now() < end {
        cx.check()?;
        std::thread::sleep(Duration::from_millis(20).min(end.saturating_duration_since(Instant::now())));
    }
    cx.check()
}

pub(crate) struct Greet;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GreetArgs {
    /// Who to greet.
    name: String,
}

impl Tool for Greet {
    const NAME: &'static str = "greet";
    const DESCRIPTION: &'static str = "Greets someone at once";
    const TASKS: TaskSupport = TaskSupport::Forbidden;
    type Args = GreetArgs;
    type Output = String;

    fn call(_cx: &Context, args: GreetArgs) -> Result<String> {
        Ok(format!("Hello, {}!", args.name))
    }
}

pub(crate) struct SlowCompute;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SlowComputeArgs {
    /// How long the computation takes, in seconds.
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

impl Tool for SlowCompute {
    const NAME: &'static str = "slow_compute";
    const DESCRIPTION: &'static str = "Computes for `seconds` seconds, then answers; stops when cancelled";
    type Args = SlowComputeArgs;
    type Output = String;

    fn call(cx: &Context, args: SlowComputeArgs) -> Result<String> {
        work(cx, Duration::from_secs_f64(args.seconds.clamp(0.0, 3600.0)))?;
        Ok(format!("Computed for {}s: {}", args.seconds, args.label.unwrap_or_default()))
    }
}

fixture!(FailingJob, "failing_job", "Works for a second, then fails as a tool", tasks = Required, |cx| {
    work(cx, Duration::from_secs(1))?;
    Ok(CallResult::error("failing_job failed, as it always does"))
});

fixture!(ProtocolErrorJob, "protocol_error_job", "Works for a second, then crashes", |cx| {
    work(cx, Duration::from_secs(1))?;
    panic!("protocol_error_job crashes, as it always does")
});

pub(crate) struct ConfirmDelete;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ConfirmDeleteArgs {
    /// The file to delete.
    #[serde(default)]
    filename: Option<String>,
}

impl Tool for ConfirmDelete {
    const NAME: &'static str = "confirm_delete";
    const DESCRIPTION: &'static str = "Looks the file up, asks the user to confirm, then deletes it";
    type Args = ConfirmDeleteArgs;
    type Output = String;

    fn call(cx: &Context, args: ConfirmDeleteArgs) -> Result<String> {
        let file = args.filename.unwrap_or_else(|| "the file".to_string());
        // Looking the file up takes a moment: long enough to become a task.
        work(cx, Duration::from_millis(500))?;
        let confirm = Question::Form {
            message: format!("Delete {file}?"),
            schema: json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } } }),
        };
        match cx.ask(&[("confirm", confirm)]).pop() {
            Some(Ok(Reply::Elicit(Answer::Accept(form)))) if form["confirm"] != json!(false) => {
                Ok(format!("Deleted {file}"))
            }
            _ => Ok(format!("Kept {file}")),
        }
    }
}

fixture!(MultiInput, "multi_input", "Asks two questions at once, from inside a task", |cx| {
    work(cx, Duration::from_millis(500))?;
    let replies =
        cx.ask(&[("first", form("Your first name?", "name")), ("second", form("Your last name?", "name"))]);
    Ok(CallResult::text(format!("{} {}", said(&replies[0], "name"), said(&replies[1], "name"))))
});

fixture!(
    ToolWithTask,
    "test_tool_with_task",
    "Asks the user's name at once, then works on it as a task",
    tasks = Required,
    |cx| {
        let name = cx.ask(&[("user_name", form("What is your name?", "name"))]).pop();
        let name = name.map_or_else(|| "(no answer)".to_string(), |reply| said(&reply, "name"));
        work(cx, Duration::from_secs(1))?;
        Ok(CallResult::text(format!("Hello, {name}! The task is done.")))
    }
);
