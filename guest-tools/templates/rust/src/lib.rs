//! An mcp-wasm-host tool: `echo` returns the text it is given. Add tools as
//! more types implementing `Tool`, and list them in `export!`.

use mcp_tool::{Annotations, Context, Result, Structured, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Args {
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
    type Args = Args;
    type Output = Structured<Echoed>;

    fn call(_cx: &Context, args: Args) -> Result<Self::Output> {
        Ok(Structured::new(Echoed { text: args.text.clone() }).text(args.text))
    }
}

mcp_tool::export!(Echo);
