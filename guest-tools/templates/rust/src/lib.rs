//! An mcp-wasm-host component: the tool `echo` returns the text it is given,
//! the resource `echo://about` says what the component is, and the prompt
//! `shout` asks the model to echo a text in capitals, and the skill
//! `echo-text` tells a model when to use `echo`. Add more as types
//! implementing `Tool`, `Resource`, `ResourceTemplate` or `Prompt` (or
//! `skill_file!`), and list them in `export!`.

use mcp_tool::{
    Annotations, Args, Argument, Context, Message, Prompt, Resource, ResourceBody, Result, Structured, Tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to return
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Echoed {
    text: String,
}

struct Echo;

impl Tool for Echo {
    const NAME: &'static str = "echo";
    const DESCRIPTION: &'static str = "Returns the text it is given.";
    const ANNOTATIONS: Annotations = Annotations::NONE.read_only(true).open_world(false);
    type Args = EchoArgs;
    type Output = Structured<Echoed>;

    fn call(_cx: &Context, args: EchoArgs) -> Result<Self::Output> {
        Ok(Structured::new(Echoed { text: args.text.clone() }).text(args.text))
    }
}

struct About;

impl Resource for About {
    const URI: &'static str = "echo://about";
    const NAME: &'static str = "about";
    const DESCRIPTION: Option<&'static str> = Some("What this component offers");
    const MIME_TYPE: Option<&'static str> = Some("text/plain");

    fn read(_cx: &Context) -> Result<ResourceBody> {
        Ok(ResourceBody::Text("The tool `echo` returns the text it is given.".into()))
    }
}

struct Shout;

impl Prompt for Shout {
    const NAME: &'static str = "shout";
    const DESCRIPTION: &'static str = "Asks the model to echo a text in capital letters";
    const ARGUMENTS: &'static [Argument] = &[Argument::required("text", "The text to shout")];

    fn get(_cx: &Context, args: &Args) -> Result<Vec<Message>> {
        let text = args.get("text").unwrap_or_default();
        Ok(vec![Message::user(format!("Call the `echo` tool with \"{text}\" in capital letters."))])
    }
}

// A skill (SEP-2640): a `SKILL.md` under `skill://NAME/`, whose frontmatter
// names it and says when a model should use it; more files may sit beside it.
// The host hashes them at load and lists them with `skills/list`.
mcp_tool::skill_file!(
    EchoSkill,
    "echo-text/SKILL.md",
    "---\nname: echo-text\ndescription: Repeats a text back exactly, with the echo tool.\n---\n\
     Call `echo` with the text and answer with what it returns, unchanged.\n"
);

mcp_tool::export!(Echo; resources = [About, EchoSkill]; prompts = [Shout]);
