//! The fixture tools of the suite's 2026-07-28 scenarios
//! (`input-required-result-*`, and `server-stateless`'s
//! `test_missing_capability` and `test_streaming_elicitation`): tools that
//! ask the client for input, once, several times at once, or over several
//! rounds. On 2026-07-28 each question reaches the client in an
//! `input_required` result under the key named here; on earlier sessions
//! the same tools send requests.

use mcp_tool::{
    Answer, Args, CallResult, Context, Error, Message, Prompt, Question, Reply, RequestError, Result,
};
use serde_json::{Value, json};

/// A form asking for one string field `field`.
pub(crate) fn form(message: &str, field: &str) -> Question {
    Question::Form {
        message: message.to_string(),
        schema: json!({
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field]
        }),
    }
}

/// A request for the client's model asking `text`.
fn sample(text: &str, max_tokens: u32) -> Question {
    Question::sample(&json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
        "maxTokens": max_tokens
    }))
}

/// Asks `question` alone, under `key`.
fn ask_one(cx: &Context, key: &str, question: Question) -> std::result::Result<Reply, RequestError> {
    cx.ask(&[(key, question)]).pop().unwrap_or(Err(RequestError::Unsupported))
}

/// What a reply says, in a line.
pub(crate) fn said(reply: &std::result::Result<Reply, RequestError>, field: &str) -> String {
    match reply {
        Ok(Reply::Elicit(Answer::Accept(form))) => form[field].as_str().unwrap_or_default().to_string(),
        Ok(Reply::Elicit(Answer::Decline)) => "(declined)".to_string(),
        Ok(Reply::Elicit(Answer::Cancel)) => "(cancelled)".to_string(),
        Ok(Reply::Sample(result)) => result["content"]["text"].as_str().unwrap_or_default().to_string(),
        Ok(Reply::Roots(roots)) => roots.iter().map(|root| root.uri.as_str()).collect::<Vec<_>>().join(", "),
        Err(err) => format!("(no answer: {err})"),
    }
}

fixture!(InputElicitation, "test_input_required_result_elicitation", "Asks the user's name", |cx| {
    let reply = ask_one(cx, "user_name", form("What is your name?", "name"));
    Ok(CallResult::text(format!("Hello, {}!", said(&reply, "name"))))
});

fixture!(InputSampling, "test_input_required_result_sampling", "Asks the client's model a question", |cx| {
    let reply = ask_one(cx, "capital_question", sample("What is the capital of France?", 100));
    Ok(CallResult::text(format!("The model said: {}", said(&reply, ""))))
});

fixture!(InputListRoots, "test_input_required_result_list_roots", "Asks the client for its roots", |cx| {
    let reply = ask_one(cx, "client_roots", Question::Roots);
    Ok(CallResult::text(format!("Roots: {}", said(&reply, ""))))
});

fixture!(InputRequestState, "test_input_required_result_request_state", "Asks for a confirmation", |cx| {
    let confirm = Question::Form {
        message: "Please confirm".to_string(),
        schema: json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] }),
    };
    // The host keeps the call where it paused (or seals its state): being
    // here again means the requestState it handed out came back intact.
    let confirmed = match ask_one(cx, "confirm", confirm) {
        Ok(Reply::Elicit(Answer::Accept(form))) => form["ok"] == Value::Bool(true),
        _ => false,
    };
    Ok(CallResult::text(format!("state-ok: confirmed={confirmed}")))
});

fixture!(
    InputTamperedState,
    "test_input_required_result_tampered_state",
    "Asks for a confirmation; a tampered requestState is refused by the host",
    |cx| {
        let reply = ask_one(cx, "confirm", form("Please confirm", "ok"));
        Ok(CallResult::text(format!("confirmed: {}", said(&reply, "ok"))))
    }
);

fixture!(
    InputMultiple,
    "test_input_required_result_multiple_inputs",
    "Asks for a name, a greeting from the model and the client's roots at once",
    |cx| {
        let replies = cx.ask(&[
            ("user_name", form("What is your name?", "name")),
            ("greeting", sample("Generate a greeting", 50)),
            ("client_roots", Question::Roots),
        ]);
        Ok(CallResult::text(format!(
            "name: {}; greeting: {}; roots: {}",
            said(&replies[0], "name"),
            said(&replies[1], ""),
            said(&replies[2], "")
        )))
    }
);

fixture!(
    InputMultiRound,
    "test_input_required_result_multi_round",
    "Asks two questions, one after the other",
    |cx| {
        let name = ask_one(cx, "step1", form("Step 1: What is your name?", "name"));
        let color = ask_one(cx, "step2", form("Step 2: What is your favorite color?", "color"));
        Ok(CallResult::text(format!("{} likes {}", said(&name, "name"), said(&color, "color"))))
    }
);

fixture!(
    InputCapabilities,
    "test_input_required_result_capabilities",
    "Asks a form and the client's model at once: only what the client declared is sent",
    |cx| {
        let replies = cx.ask(&[
            ("user_name", form("What is your name?", "name")),
            ("capital_question", sample("What is the capital of France?", 100)),
        ]);
        Ok(CallResult::text(format!("name: {}; model: {}", said(&replies[0], "name"), said(&replies[1], ""))))
    }
);

fixture!(
    MissingCapability,
    "test_missing_capability",
    "Needs the client's model (sampling); fails without it",
    |cx| {
        match cx.sample(&json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "Say hello" } }],
            "maxTokens": 20
        })) {
            Ok(answer) => Ok(CallResult::text(answer["content"]["text"].as_str().unwrap_or_default())),
            // The host tells a 2026-07-28 client which capability was missing.
            Err(RequestError::Unsupported) => Err(Error::Failed("this tool needs sampling".into())),
            Err(err) => Err(err.into()),
        }
    }
);

fixture!(StreamingElicitation, "test_streaming_elicitation", "Asks the user a question mid-call", |cx| {
    let reply = ask_one(cx, "answer", form("What should the tool do?", "answer"));
    Ok(CallResult::text(format!("The user said: {}", said(&reply, "answer"))))
});

/// A prompt that asks the user before it answers (`input-required-result-
/// non-tool-request`): on 2026-07-28 `prompts/get` pauses like a tool call.
pub(crate) struct InputPrompt;

impl Prompt for InputPrompt {
    const NAME: &'static str = "test_input_required_result_prompt";
    const DESCRIPTION: &'static str = "A prompt that asks the user for its context first";

    fn get(cx: &Context, _: &Args) -> Result<Vec<Message>> {
        let reply = ask_one(cx, "user_context", form("What context should the prompt use?", "context"));
        Ok(vec![Message::user(format!("Use this context: {}", said(&reply, "context")))])
    }
}
