//! The user's terminal, for the questions a call asks: each question is
//! printed on stderr and answered on stdin, one line per answer. Ctrl-D
//! (end of input) declines the question.
//!
//! Lines are read by a thread of their own, so a question withdrawn while
//! the user has not answered (the call was cancelled or timed out) leaves
//! no read behind: the next question gets the next line.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use rmcp::model::{ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, mpsc};

use super::form::{self, Reading};
use super::print::lines_escaped;
use crate::log_text::{MAX_ERROR_TEXT, cut_to};

/// The terminal, when stdin and stderr are one.
pub(super) struct Terminal {
    /// Lines typed, `None` at the end of input, from the first question on
    /// (a `call` run in the background that asks nothing never reads the
    /// terminal, so the shell does not stop it for that). Locked for the
    /// whole of a question, so two questions never take turns at the prompt.
    lines: Mutex<Option<Lines>>,
}

/// What the user types, line by line.
type Lines = mpsc::Receiver<Option<String>>;

impl Terminal {
    /// The terminal, if stdin and stderr are both terminals.
    pub(super) fn open() -> Option<Self> {
        let on_terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        on_terminal.then(|| Terminal { lines: Mutex::new(None) })
    }

    /// Starts reading stdin, a line at a time, on a thread of its own.
    fn read_lines() -> Lines {
        let (sender, lines) = mpsc::channel(16);
        // Blocked in a read most of its life: the process exits without it.
        // If it cannot start, the sender is dropped: every question is declined.
        let _ = std::thread::Builder::new().name("terminal".into()).spawn(move || {
            let mut stdin = std::io::stdin().lock();
            loop {
                let mut line = String::new();
                let line = match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
                };
                let ended = line.is_none();
                if sender.blocking_send(line).is_err() || ended {
                    return;
                }
            }
        });
        lines
    }

    /// Asks the user to approve what `message` says: `y` approves; `n`,
    /// an empty answer or Ctrl-D declines.
    pub(super) async fn approve(&self, message: &str) -> ElicitResult {
        let mut lines = self.lines.lock().await;
        let lines = lines.get_or_insert_with(Self::read_lines);
        say(message);
        loop {
            ask("Approve? [y/N] ");
            let Some(Some(answer)) = lines.recv().await else { return declined() };
            match answer.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return accepted(json!({ "approve": true })),
                "" | "n" | "no" => return declined(),
                _ => crate::log_text::say(format_args!("answer y or n")),
            }
        }
    }

    /// Asks the user to fill a form: one prompt per field, an empty answer
    /// takes the default (or skips an optional field); Ctrl-D, or an empty
    /// answer to a required field with no default, declines the form.
    pub(super) async fn fill(&self, message: &str, schema: &ElicitationSchema) -> ElicitResult {
        let mut lines = self.lines.lock().await;
        let lines = lines.get_or_insert_with(Self::read_lines);
        say(message);
        let mut content = Map::new();
        for field in form::fields(schema) {
            loop {
                ask(&field.prompt());
                let Some(Some(answer)) = lines.recv().await else { return declined() };
                match field.read(&answer) {
                    Ok(Reading::Value(value)) => {
                        content.insert(field.name.clone(), value);
                        break;
                    }
                    Ok(Reading::Skip) => break,
                    Ok(Reading::Decline) => return declined(),
                    Err(why) => crate::log_text::say(format_args!("{why}")),
                }
            }
        }
        accepted(Value::Object(content))
    }

    /// Tells the user the question they were asked is no longer open.
    pub(super) fn withdrawn() {
        crate::log_text::say(format_args!(
            "\n(the question was withdrawn: the call ended without the answer)"
        ));
    }
}

/// Prints a tool's question on stderr: cut, and escaped line by line.
pub(super) fn say(message: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = lines_escaped(&mut stderr, "", &cut_to(message.to_string(), MAX_ERROR_TEXT));
}

/// Prints a prompt, without a line break.
fn ask(prompt: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{prompt}");
    let _ = stderr.flush();
}

/// A form accepted with `content`.
pub(super) fn accepted(content: Value) -> ElicitResult {
    let mut result = ElicitResult::new(ElicitationAction::Accept);
    result.content = Some(content);
    result
}

/// A question declined.
pub(super) fn declined() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}
