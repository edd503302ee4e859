//! The command line of `mcp-wasm-host call`: the serving options, the tool
//! and its arguments, and how the result and the user's answers are given.

use clap::Args;
use serde_json::{Map, Value};

use super::ServeArgs;

/// `mcp-wasm-host call`: one tool call from the shell, without an MCP client.
#[derive(Debug, Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct CallArgs {
    /// The tool to call.
    #[arg(value_name = "TOOL")]
    pub tool: String,

    /// The tool's arguments, as a JSON object, e.g. '{"text":"hi"}'. Default: {}.
    #[arg(value_name = "ARGS", value_parser = parse_object)]
    pub arguments: Option<Map<String, Value>>,

    /// One argument, KEY=VALUE; repeatable, and set over ARGS. If the tool's
    /// input schema types KEY as a string, VALUE is that string as typed;
    /// otherwise VALUE is read as JSON (`--arg n=3`, `--arg on=true`,
    /// `--arg 'tags=["a"]'`), and as a string if it is not JSON.
    #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = parse_pair)]
    pub pairs: Vec<(String, String)>,

    /// Print the result's structured content as JSON (the whole result, if
    /// the tool returned no structured content) instead of its text.
    #[arg(long)]
    pub json: bool,

    /// Off a terminal: approve the tool when it asks for the user's
    /// approval; without it, approval is declined there. A form question
    /// (elicitation) off a terminal is declined, even with --yes, unless
    /// every field of the form has a default: then --yes sends the defaults.
    /// On a terminal (stdin and stderr) every question is asked there.
    #[arg(long)]
    pub yes: bool,

    #[command(flatten)]
    pub serve: ServeArgs,
}

impl CallArgs {
    /// Completes the parse from the subcommand's `matches`: which serving
    /// options were given (they win over `--config`), and none that only
    /// make sense for a server that stays up.
    pub(super) fn finish(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.serve.given = super::given_on_command_line(matches);
        let refused = [("--http", self.serve.server.http.is_some()), ("--watch", self.serve.server.watch)];
        if let Some((flag, _)) = refused.into_iter().find(|(_, given)| *given) {
            use clap::CommandFactory as _;
            // Built, so the usage shown is `call`'s own.
            let mut command = super::Cli::command();
            command.build();
            let call = command.find_subcommand_mut("call").expect("`call` is a subcommand");
            return Err(call.error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("`call` runs one tool call in this process and exits; {flag} is for serving (leave out `call`)"),
            ));
        }
        Ok(())
    }
}

/// The rest of `call --help`: how it ends, and what it is like.
const AFTER_HELP: &str = "\
Example: mcp-wasm-host call --component demo.wasm echo '{\"text\":\"hi\"}'

The call goes through the same server as a client's: the input schema check, \
approval, every limit, questions to the user. Text content is printed on \
stdout, one block per line; other content is summarised on stderr.

Exit status: 0 for a result, 1 for an isError result (its text on stderr) \
or a refused call (an unknown tool, arguments that break its schema, \
approval declined), 2 for a bad command line, 130 for Ctrl-C (or SIGTERM), \
which cancels the call as a client's cancel does: the tool is stopped and \
its cleanup runs before `call` exits; a second Ctrl-C exits at once.

The component is compiled with the optimizing compiler and cached, as \
`inspect` does (no tiering), so the next call starts at once. Logs on stderr \
are warnings only unless RUST_LOG is set; the tool's own log records are \
shown from `warning` up.";

/// ARGS: a JSON object, and nothing else.
fn parse_object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(format!(
            "the tool's arguments must be a JSON object, like '{{\"key\":1}}', not {}",
            kind(&other)
        )),
        Err(err) => Err(format!("not JSON: {err}")),
    }
}

/// `--arg KEY=VALUE`: a non-empty key before the first `=`.
fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        Some(_) => Err("the key before `=` is empty; expected KEY=VALUE".into()),
        None => Err("no `=`; expected KEY=VALUE".into()),
    }
}

/// What kind of JSON value `value` is, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_an_object_or_a_usage_error() {
        assert_eq!(parse_object(r#"{"text":"hi"}"#).unwrap()["text"], "hi");
        assert!(parse_object("[1]").unwrap_err().contains("not an array"));
        assert!(parse_object("{").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn a_pair_needs_a_key_and_an_equals_sign() {
        assert_eq!(parse_pair("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_pair("a=").unwrap(), ("a".into(), String::new()));
        assert!(parse_pair("=x").is_err());
        assert!(parse_pair("novalue").is_err());
    }
}
