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
//! - `survey`: asks the user `questions` questions in a row (elicitation);
//! - `plan_trip`: names the client's roots, then asks the user and the
//!   model at once (`Context::ask`);
//! - `sign_in`: sends the user to a URL (URL-mode elicitation);
//! - `compute`: a tight loop, for measuring fuel and epoch overhead;
//! - `allocate`: allocates memory, for the memory limit;
//! - `delete_records`: needs the user's approval before it runs (declared
//!   in its tool info);
//! - `prune`: asks the user's approval mid-call for one operation, while
//!   holding `<call-id>.lock`.
//!
//! `spin` and `stall` stand in for a tool holding external state (a
//! transaction, a socket): when a directory is granted (`--dir`), they create
//! `<call-id>.lock` in it, and the cleanup hook removes it.
//!
//! Each tool is a type implementing [`mcp_tool::Tool`]; `export!` at the end
//! makes them the component's tools.

use std::time::Duration;

use mcp_tool::{
    Annotations, Answer, CallResult, Context, Error, LogLevel, NoArgs, Question, RequestError, Result,
    Structured, TaskSupport, Tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mcp_tool::export!(
    Echo, Countdown, WaitForCancel, Spin, Stall, Survey, PlanTrip, SignIn, Compute, Allocate, DeleteRecords, Prune;
    cleanup = |call_id, _reason| release_lock(call_id)
);

/// Changes nothing outside the sandbox, and a repeat has no extra effect.
const HARMLESS: Annotations =
    Annotations::NONE.read_only(true).destructive(false).idempotent(true).open_world(false);

/// Holds state outside the sandbox.
const HOLDS_STATE: Annotations =
    Annotations::NONE.read_only(false).destructive(true).idempotent(false).open_world(false);

struct Echo;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// Text to return
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Echoed {
    text: String,
}

impl Tool for Echo {
    const NAME: &'static str = "echo";
    const DESCRIPTION: &'static str = "Returns the text it is given.";
    const ANNOTATIONS: Annotations = HARMLESS;
    // Never a task: it answers at once, so a task would only add polling.
    const TASKS: TaskSupport = TaskSupport::Forbidden;
    type Args = EchoArgs;
    type Output = Structured<Echoed>;

    fn call(_cx: &Context, args: EchoArgs) -> Result<Self::Output> {
        Ok(Structured::new(Echoed { text: args.text.clone() }).text(args.text))
    }
}

struct Countdown;

#[derive(Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct CountdownArgs {
    #[schemars(range(max = 100_000))]
    steps: u64,
    #[schemars(range(max = 60_000))]
    step_ms: u64,
    /// Report no progress and log nothing (benchmarks compare both)
    quiet: bool,
}

impl Default for CountdownArgs {
    fn default() -> Self {
        CountdownArgs { steps: 50, step_ms: 20, quiet: false }
    }
}

impl Tool for Countdown {
    const NAME: &'static str = "countdown";
    const DESCRIPTION: &'static str =
        "Counts down from `steps`, one step every `step_ms` milliseconds; stops early when cancelled.";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = CountdownArgs;
    type Output = String;

    fn call(cx: &Context, CountdownArgs { steps, step_ms, quiet }: CountdownArgs) -> Result<String> {
        for left in (1..=steps).rev() {
            cx.check()?;
            // Goes to the host's stderr, never to the MCP stream.
            println!("countdown: {left}");
            std::thread::sleep(Duration::from_millis(step_ms));
            if !quiet {
                let done = (steps - left + 1) as f64;
                cx.progress(done, Some(steps as f64), Some(&format!("{left} to go")));
            }
        }
        if !quiet {
            cx.log(LogLevel::Info, format!("counted down from {steps}"));
        }
        Ok(format!("counted down from {steps}"))
    }
}

struct WaitForCancel;

impl Tool for WaitForCancel {
    const NAME: &'static str = "wait_for_cancel";
    const DESCRIPTION: &'static str =
        "Waits, parked in wasi:io/poll on its `cancelled` pollable, until the call is cancelled.";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = NoArgs;
    type Output = String;

    fn call(cx: &Context, _: NoArgs) -> Result<String> {
        // Parks in the host until the cancel arrives, then stops by itself.
        cx.cancelled().subscribe().block();
        Err(Error::Cancelled)
    }
}

// Destructive (they hold external state), but only demos of cancellation:
// they say so rather than asking every time.

struct Spin;

impl Tool for Spin {
    const NAME: &'static str = "spin";
    const DESCRIPTION: &'static str =
        "Computes forever and ignores cancellation; holds <call-id>.lock in the granted directory.";
    const ANNOTATIONS: Annotations = HOLDS_STATE;
    const NEEDS_APPROVAL: Option<bool> = Some(false);
    type Args = NoArgs;
    type Output = String;

    fn call(cx: &Context, _: NoArgs) -> Result<String> {
        hold_lock(cx.call_id())?;
        spin()
    }
}

struct Stall;

impl Tool for Stall {
    const NAME: &'static str = "stall";
    const DESCRIPTION: &'static str = "Sleeps for an hour in a host call and ignores cancellation; holds <call-id>.lock in the granted directory.";
    const ANNOTATIONS: Annotations = HOLDS_STATE;
    const NEEDS_APPROVAL: Option<bool> = Some(false);
    type Args = NoArgs;
    type Output = &'static str;

    fn call(cx: &Context, _: NoArgs) -> Result<&'static str> {
        hold_lock(cx.call_id())?;
        std::thread::sleep(Duration::from_secs(3600));
        Ok("stall woke up after an hour")
    }
}

struct Survey;

#[derive(Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct SurveyArgs {
    #[schemars(range(min = 1, max = 20))]
    questions: u64,
}

impl Default for SurveyArgs {
    fn default() -> Self {
        SurveyArgs { questions: 3 }
    }
}

struct PlanTrip;

impl Tool for PlanTrip {
    const NAME: &'static str = "plan_trip";
    const DESCRIPTION: &'static str =
        "Asks the user where to go and the model for an idea at once, and names the client's roots.";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = NoArgs;
    type Output = String;

    fn call(cx: &Context, _: NoArgs) -> Result<String> {
        let roots = cx.list_roots()?;
        let idea = serde_json::json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "An idea?" } }],
            "maxTokens": 20
        });
        let questions = [
            (
                "where",
                Question::Form { message: "Where to?".into(), schema: mcp_tool::form_schema::<Reply>() },
            ),
            ("idea", Question::Sample(idea)),
        ];
        let mut replies = cx.ask(&questions).into_iter();
        let (Some(where_to), Some(idea)) = (replies.next(), replies.next()) else {
            return Err(Error::failed("the host answered fewer questions than were asked"));
        };
        let where_to = match where_to? {
            mcp_tool::Reply::Elicit(Answer::Accept(form)) => {
                form["answer"].as_str().unwrap_or_default().to_string()
            }
            _ => return Err(Error::failed("no destination given")),
        };
        let idea = match idea? {
            mcp_tool::Reply::Sample(answer) => {
                answer["content"]["text"].as_str().unwrap_or_default().to_string()
            }
            _ => return Err(Error::failed("no idea given")),
        };
        let names: Vec<&str> = roots.iter().map(|root| root.name.as_deref().unwrap_or(&root.uri)).collect();
        Ok(format!("roots: {}; where: {where_to}; idea: {idea}", names.join(", ")))
    }
}

// The form each question shows (a doc comment would become its description).
#[derive(Deserialize, JsonSchema)]
struct Reply {
    #[schemars(title = "Answer")]
    answer: String,
}

#[derive(Serialize, JsonSchema)]
struct Answers {
    answers: Vec<String>,
}

impl Tool for Survey {
    const NAME: &'static str = "survey";
    const DESCRIPTION: &'static str =
        "Asks the user `questions` short questions in a row and returns the answers.";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = SurveyArgs;
    type Output = CallResult;

    fn call(cx: &Context, SurveyArgs { questions }: SurveyArgs) -> Result<CallResult> {
        let mut answers = Vec::new();
        for n in 1..=questions {
            let question = format!("Question {n} of {questions}: what should happen next?");
            match cx.elicit::<Reply>(&question) {
                Ok(Answer::Accept(reply)) => answers.push(reply.answer),
                Ok(Answer::Decline | Answer::Cancel) => {
                    return Ok(CallResult::text(format!("the user stopped after {} answers", answers.len())));
                }
                Err(RequestError::Unsupported) => {
                    return Err(Error::failed("this client cannot ask the user questions"));
                }
                Err(RequestError::TimedOut) => {
                    return Err(Error::failed(format!("no answer to question {n} in time")));
                }
                Err(other) => return Err(other.into()),
            }
            cx.check()?;
        }
        // No output schema: the early stop above returns plain text.
        let text = answers.join("\n");
        Ok(CallResult {
            structured_content: Some(serde_json::to_string(&Answers { answers })?),
            ..CallResult::text(text)
        })
    }
}

struct SignIn;

#[derive(Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct SignInArgs {
    url: String,
}

impl Default for SignInArgs {
    fn default() -> Self {
        SignInArgs { url: "https://example.com/sign-in".into() }
    }
}

impl Tool for SignIn {
    const NAME: &'static str = "sign_in";
    const DESCRIPTION: &'static str =
        "Sends the user to a sign-in page (URL-mode elicitation) and reports what happened.";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = SignInArgs;
    type Output = String;

    fn call(cx: &Context, args: SignInArgs) -> Result<String> {
        Ok(match cx.elicit_url("Please sign in to continue", &args.url) {
            Ok(Answer::Accept(())) => "signed in".to_string(),
            Ok(Answer::Decline | Answer::Cancel) => "the user did not sign in".to_string(),
            Err(RequestError::Unsupported) => "this client cannot open URLs for the user".to_string(),
            Err(RequestError::Cancelled) => return Err(Error::Cancelled),
            Err(RequestError::TimedOut) => "no answer in time".to_string(),
            Err(RequestError::Failed(why)) => format!("sign-in failed: {why}"),
        })
    }
}

struct Compute;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ComputeArgs {
    iterations: u64,
}

impl Tool for Compute {
    const NAME: &'static str = "compute";
    const DESCRIPTION: &'static str =
        "Runs a tight integer loop for `iterations` rounds and returns the result (a CPU benchmark).";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = ComputeArgs;
    type Output = String;

    fn call(_cx: &Context, args: ComputeArgs) -> Result<String> {
        let mut x: u64 = 1;
        for i in 0..args.iterations {
            x = (x.wrapping_mul(6364136223846793005).wrapping_add(i)) ^ (x >> 7);
        }
        Ok(x.to_string())
    }
}

struct Allocate;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AllocateArgs {
    #[schemars(range(max = 4096))]
    mib: usize,
}

impl Tool for Allocate {
    const NAME: &'static str = "allocate";
    const DESCRIPTION: &'static str =
        "Allocates and touches `mib` MiB of memory, then returns how much it held.";
    const ANNOTATIONS: Annotations = HARMLESS;
    type Args = AllocateArgs;
    type Output = String;

    fn call(_cx: &Context, args: AllocateArgs) -> Result<String> {
        let block = vec![1u8; args.mib << 20];
        Ok(format!("held {} MiB", std::hint::black_box(block).len() >> 20))
    }
}

struct DeleteRecords;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteRecordsArgs {
    /// Which table to empty
    table: String,
}

impl Tool for DeleteRecords {
    const NAME: &'static str = "delete_records";
    const DESCRIPTION: &'static str =
        "Deletes every record of `table` (pretend). The user must approve each call first.";
    const ANNOTATIONS: Annotations = HOLDS_STATE;
    const NEEDS_APPROVAL: Option<bool> = Some(true);
    type Args = DeleteRecordsArgs;
    type Output = String;

    fn call(_cx: &Context, args: DeleteRecordsArgs) -> Result<String> {
        // Only reached once the user approved (the host asked first).
        Ok(format!("deleted every record of {}", args.table))
    }
}

struct Prune;

#[derive(Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct PruneArgs {
    #[schemars(range(min = 1, max = 1000))]
    count: u64,
    /// How long finding them takes, in milliseconds, before the question.
    #[schemars(range(max = 60000))]
    find_ms: u64,
}

impl Default for PruneArgs {
    fn default() -> Self {
        PruneArgs { count: 3, find_ms: 0 }
    }
}

impl Tool for Prune {
    const NAME: &'static str = "prune";
    const DESCRIPTION: &'static str = "Finds `count` old snapshots (taking `find_ms`), then asks the user's approval before deleting them. \
                                       Holds <call-id>.lock in the granted directory meanwhile.";
    // Finding is harmless; only the one step that deletes asks.
    const ANNOTATIONS: Annotations =
        Annotations::NONE.read_only(false).destructive(false).idempotent(false).open_world(false);
    type Args = PruneArgs;
    type Output = String;

    fn call(cx: &Context, PruneArgs { count, find_ms }: PruneArgs) -> Result<String> {
        // Stands in for a lock or transaction held while the user decides.
        hold_lock(cx.call_id())?;
        // Finding takes a while (a call for a client of the tasks extension
        // becomes a task meanwhile). A cancel then stops the call; the
        // cleanup hook releases the lock.
        std::thread::sleep(Duration::from_millis(find_ms));
        cx.check()?;
        let approval = cx.request_approval(&format!("Delete {count} old snapshots for good?"));
        // Stopped while waiting (cancelled, or no answer in time): the host
        // runs the cleanup hook, which releases the lock.
        cx.check()?;
        release_lock(cx.call_id());
        match approval {
            Ok(()) => Ok(format!("pruned {count} snapshots")),
            Err(why) => Err(Error::failed(format!("nothing pruned: {why}"))),
        }
    }
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

fn hold_lock(call_id: &str) -> Result<()> {
    if let Some(path) = lock_path(call_id) {
        std::fs::write(&path, call_id).map_err(|e| Error::failed(format!("cannot create {path}: {e}")))?;
    }
    Ok(())
}

/// Releases the lock `call_id` held; the cleanup hook too, for calls that
/// were stopped.
fn release_lock(call_id: &str) {
    if let Some(path) = lock_path(call_id) {
        // Already gone is fine: cleanup must be safe to run for any call.
        let _ = std::fs::remove_file(path);
    }
}
