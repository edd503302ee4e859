//! The running call, as a tool sees it: its id, its cancellation, and what
//! it may ask of the client and the user (the WIT `client` interface).

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::raw::mcp::tool::client::{self, ElicitResponse, Root};
use crate::{Cancelled, Error, LogLevel, RequestError, StopReason};

/// One call of a tool: passed to [`Tool::call`](crate::Tool::call).
///
/// Everything here acts on behalf of this call. Once the call is cancelled,
/// logs and progress are dropped and a pending question returns
/// [`RequestError::Cancelled`] (which `?` turns into [`Error::Cancelled`]).
pub struct Context {
    call_id: String,
    tool: &'static str,
    cancelled: Cancelled,
}

/// The user's answer to a question ([`Context::elicit`],
/// [`Context::elicit_url`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    /// The user submitted the form (for a URL, went ahead).
    Accept(T),
    /// The user explicitly said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// A question to put to the client with others at once ([`Context::ask`]).
#[derive(Debug, Clone)]
pub enum Question {
    /// A form, as [`Context::elicit_with`]: the message and its schema.
    Form {
        /// What the user is asked.
        message: String,
        /// A JSON Schema object with flat primitive properties.
        schema: Value,
    },
    /// A URL, as [`Context::elicit_url`].
    Url {
        /// What the user is told.
        message: String,
        /// Where the user is sent.
        url: String,
    },
    /// A request for the client's model, as [`Context::sample`].
    Sample(Value),
    /// The client's roots, as [`Context::list_roots`].
    Roots,
}

impl Question {
    /// A form whose schema comes from `T` (as [`Context::elicit`]).
    pub fn form<T: JsonSchema>(message: &str) -> Self {
        Question::Form { message: message.to_string(), schema: crate::form_schema::<T>() }
    }

    /// A sampling request from its params (`messages`, `maxTokens`, ...).
    pub fn sample(request: &impl Serialize) -> Self {
        Question::Sample(serde_json::to_value(request).unwrap_or(Value::Null))
    }
}

/// The answer to one question of [`Context::ask`], of the question's kind.
#[derive(Debug, Clone)]
pub enum Reply {
    /// To a form or a URL: the user's answer (a URL's accepted content is
    /// an empty object).
    Elicit(Answer<Value>),
    /// To a sampling request: the client's result.
    Sample(Value),
    /// To [`Question::Roots`].
    Roots(Vec<Root>),
}

/// Why an operation was not approved ([`Context::request_approval`]): the
/// user declined or dismissed it, no answer came in time, the call was
/// cancelled, or the client cannot ask. `?` turns it into
/// [`Error::Failed`] with this reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declined(pub String);

impl std::fmt::Display for Declined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Declined {}

impl Context {
    pub(crate) fn new(call_id: String, tool: &'static str, cancelled: Cancelled) -> Self {
        Context { call_id, tool, cancelled }
    }

    /// The call's id, unique for this host process. Name anything the call
    /// creates outside the sandbox after it, so the cleanup hook (see
    /// [`export!`](crate::export)) can find it.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Tells the clients that subscribed to the resource at `uri` (one of
    /// this component's) that it changed, so they read it again.
    pub fn resource_updated(&self, uri: &str) {
        crate::raw::mcp::tool::client::resource_updated(uri);
    }

    /// The name of the tool being called (for a read, a prompt or a
    /// completion: the resource's, template's or prompt's name).
    pub fn tool(&self) -> &'static str {
        self.tool
    }

    /// `Err(Error::Cancelled)` once the call should stop: check it between
    /// units of work with `cx.check()?`. A tool that stops within the host's
    /// grace period (`--cancel-grace`) ends cleanly; one that does not is
    /// stopped by force.
    pub fn check(&self) -> Result<(), Error> {
        if self.cancelled.is_cancelled() { Err(Error::Cancelled) } else { Ok(()) }
    }

    /// True once the call should stop. Never goes back to false.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    /// Why the call should stop, or `None` while it should carry on.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.cancelled.reason()
    }

    /// The call's raw cancellation resource: `cancelled().subscribe()` is a
    /// `wasi:io/poll` pollable to wait on beside the tool's own.
    pub fn cancelled(&self) -> &Cancelled {
        &self.cancelled
    }

    /// Logs `data` (any JSON value; a string is fine) under the tool's
    /// name. The host writes it to its log and sends it to the client as
    /// `notifications/message` when the client's log level lets it through.
    pub fn log(&self, level: LogLevel, data: impl Serialize) {
        self.log_as(self.tool, level, data);
    }

    /// [`log`](Self::log) with another logger name.
    pub fn log_as(&self, logger: &str, level: LogLevel, data: impl Serialize) {
        let data = serde_json::to_string(&data).unwrap_or_else(|err| {
            Value::String(format!("(a log record that is not JSON: {err})")).to_string()
        });
        client::log(level, Some(logger), &data);
    }

    /// Reports how far the call has got (`notifications/progress`, sent only
    /// if the client asked for progress). `progress` must grow from one
    /// report to the next; `total` is the value it will reach, if known.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        client::progress(progress, total, message);
    }

    /// Asks the user to fill in a form made from `T`'s fields
    /// (`elicitation/create`, form mode) and returns the answer as a `T`.
    ///
    /// `T` must be a flat struct of strings, numbers, integers, booleans and
    /// unit-only enums, as MCP allows in a form: doc comments become the
    /// fields' descriptions, `#[serde(default)]` fields are optional and
    /// show their default. Never ask for secrets this way: use
    /// [`elicit_url`](Self::elicit_url).
    ///
    /// ```no_run
    /// # use mcp_tool::{Answer, Context, Result};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// Your name, for the record
    ///     name: String,
    ///     #[serde(default)]
    ///     subscribe: bool,
    /// }
    ///
    /// fn ask(cx: &Context) -> Result<String> {
    ///     Ok(match cx.elicit::<Confirm>("Who is asking?")? {
    ///         Answer::Accept(form) => format!("hello, {}", form.name),
    ///         Answer::Decline | Answer::Cancel => "no name given".to_string(),
    ///     })
    /// }
    /// ```
    pub fn elicit<T: DeserializeOwned + JsonSchema>(&self, message: &str) -> Result<Answer<T>, RequestError> {
        self.elicit_with(message, &crate::form_schema::<T>())
    }

    /// [`elicit`](Self::elicit) with a schema written by hand (a JSON Schema
    /// object with flat primitive properties); the answer is deserialized
    /// into `T` (`serde_json::Value` takes anything).
    pub fn elicit_with<T: DeserializeOwned>(
        &self,
        message: &str,
        schema: &Value,
    ) -> Result<Answer<T>, RequestError> {
        match client::elicit(message, &schema.to_string())? {
            ElicitResponse::Accept(content) => serde_json::from_str(&content)
                .map(Answer::Accept)
                .map_err(|err| RequestError::Failed(format!("the answer does not fit the form: {err}"))),
            ElicitResponse::Decline => Ok(Answer::Decline),
            ElicitResponse::Cancel => Ok(Answer::Cancel),
        }
    }

    /// Sends the user to `url` (`elicitation/create`, URL mode), e.g. to sign
    /// in; returns once the user went ahead ([`Answer::Accept`]), declined or
    /// dismissed it.
    pub fn elicit_url(&self, message: &str, url: &str) -> Result<Answer<()>, RequestError> {
        Ok(match client::elicit_url(message, url)? {
            ElicitResponse::Accept(_) => Answer::Accept(()),
            ElicitResponse::Decline => Answer::Decline,
            ElicitResponse::Cancel => Answer::Cancel,
        })
    }

    /// Asks the client's model for a completion (`sampling/createMessage`):
    /// `request` is the request's params (`messages`, `maxTokens`, ...), the
    /// answer the client's result (`role`, `content`, `model`, `stopReason`).
    ///
    /// ```no_run
    /// # use mcp_tool::{Context, Result};
    /// fn summarise(cx: &Context, text: &str) -> Result<String> {
    ///     let answer = cx.sample(&serde_json::json!({
    ///         "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
    ///         "maxTokens": 200
    ///     }))?;
    ///     Ok(answer["content"]["text"].as_str().unwrap_or_default().to_string())
    /// }
    /// ```
    pub fn sample(&self, request: &impl Serialize) -> Result<Value, RequestError> {
        let request = serde_json::to_string(request)
            .map_err(|err| RequestError::Failed(format!("the request is not JSON: {err}")))?;
        let answer = client::sample(&request)?;
        serde_json::from_str(&answer)
            .map_err(|err| RequestError::Failed(format!("the client's answer is not JSON: {err}")))
    }

    /// Asks the client for its roots (`roots/list`): the directories and
    /// files the user lets servers work in. [`RequestError::Unsupported`]
    /// when the client has none to give.
    pub fn list_roots(&self) -> Result<Vec<Root>, RequestError> {
        client::list_roots()
    }

    /// Puts several questions to the client at once, each under a key the
    /// tool names (1 to 64 of `A-Z a-z 0-9 _ - .`, unique), and waits for
    /// all of them: one reply per question, in order. On protocol
    /// 2026-07-28 they reach the client in one `input_required` result, under
    /// these keys.
    ///
    /// ```no_run
    /// # use mcp_tool::{Context, Question, Reply};
    /// # use serde_json::json;
    /// fn greet(cx: &Context) -> String {
    ///     let replies = cx.ask(&[
    ///         ("user_name", Question::Form { message: "Your name?".into(), schema: json!({
    ///             "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }) }),
    ///         ("client_roots", Question::Roots),
    ///     ]);
    ///     match &replies[0] {
    ///         Ok(Reply::Elicit(mcp_tool::Answer::Accept(form))) => format!("hello, {}", form["name"]),
    ///         _ => "hello".to_string(),
    ///     }
    /// }
    /// ```
    pub fn ask(&self, questions: &[(&str, Question)]) -> Vec<Result<Reply, RequestError>> {
        let raw: Vec<(String, client::Question)> = questions
            .iter()
            .map(|(key, question)| {
                let raw = match question {
                    Question::Form { message, schema } => {
                        client::Question::Elicit((message.clone(), schema.to_string()))
                    }
                    Question::Url { message, url } => {
                        client::Question::ElicitUrl((message.clone(), url.clone()))
                    }
                    Question::Sample(request) => client::Question::Sample(request.to_string()),
                    Question::Roots => client::Question::ListRoots,
                };
                (key.to_string(), raw)
            })
            .collect();
        client::ask(&raw)
            .into_iter()
            .map(|answer| {
                Ok(match answer? {
                    client::Answer::Elicit(ElicitResponse::Accept(content)) => {
                        Reply::Elicit(Answer::Accept(serde_json::from_str(&content).unwrap_or(Value::Null)))
                    }
                    client::Answer::Elicit(ElicitResponse::Decline) => Reply::Elicit(Answer::Decline),
                    client::Answer::Elicit(ElicitResponse::Cancel) => Reply::Elicit(Answer::Cancel),
                    client::Answer::Sample(result) => {
                        Reply::Sample(serde_json::from_str(&result).map_err(|err| {
                            RequestError::Failed(format!("the client's answer is not JSON: {err}"))
                        })?)
                    }
                    client::Answer::Roots(roots) => Reply::Roots(roots),
                })
            })
            .collect()
    }

    /// Asks the user to approve one operation the call is about to do that
    /// should not happen unasked; `operation` says what, in a sentence the
    /// user will read. `Ok` only for the user's explicit yes (or when the
    /// user started the host with `--no-approval` for this tool): on
    /// [`Declined`] the tool must not go ahead.
    pub fn request_approval(&self, operation: &str) -> Result<(), Declined> {
        client::request_approval(operation).map_err(Declined)
    }
}
