//! The resources, resource templates and prompts the conformance suite's
//! server scenarios expect (`resources-*`, `prompts-*`,
//! `completion-complete`), plus what the end-to-end tests need beside
//! them: a resource a tool changes (`subscribe` then `updated`) and one
//! whose read never ends (stopped on cancel).

use mcp_tool::{
    Args, Argument, CallResult, Content, Context, EmbeddedResource, Error, Media, Message, NoArgs, Prompt,
    Resource, ResourceBody, ResourceTemplate, Result, Tool,
};

use crate::PNG;

pub struct StaticText;

impl Resource for StaticText {
    const URI: &'static str = "test://static-text";
    const NAME: &'static str = "static-text";
    const DESCRIPTION: Option<&'static str> = Some("A static text resource");
    const MIME_TYPE: Option<&'static str> = Some("text/plain");

    fn read(_: &Context) -> Result<ResourceBody> {
        Ok(ResourceBody::Text("This is the content of the static text resource.".into()))
    }
}

pub struct StaticBinary;

impl Resource for StaticBinary {
    const URI: &'static str = "test://static-binary";
    const NAME: &'static str = "static-binary";
    const DESCRIPTION: Option<&'static str> = Some("A static binary resource (a 1x1 PNG)");
    const MIME_TYPE: Option<&'static str> = Some("image/png");

    fn read(_: &Context) -> Result<ResourceBody> {
        Ok(ResourceBody::Blob(PNG.to_vec()))
    }
}

pub struct Watched;

impl Resource for Watched {
    const URI: &'static str = "test://watched-resource";
    const NAME: &'static str = "watched-resource";
    const DESCRIPTION: Option<&'static str> =
        Some("A resource to subscribe to; `update_watched_resource` says it changed");
    const MIME_TYPE: Option<&'static str> = Some("text/plain");

    fn read(_: &Context) -> Result<ResourceBody> {
        Ok(ResourceBody::Text("The watched resource.".into()))
    }
}

pub struct Spinning;

impl Resource for Spinning {
    const URI: &'static str = "test://spinning-resource";
    const NAME: &'static str = "spinning-resource";
    const DESCRIPTION: Option<&'static str> =
        Some("A resource whose read never ends (it ignores cancellation)");

    fn read(_: &Context) -> Result<ResourceBody> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

pub struct Template;

impl ResourceTemplate for Template {
    const URI_TEMPLATE: &'static str = "test://template/{id}/data";
    const NAME: &'static str = "template-data";
    const DESCRIPTION: Option<&'static str> = Some("Data for an id");
    const MIME_TYPE: Option<&'static str> = Some("application/json");

    fn read(_: &Context, _: &str, vars: &Args) -> Result<ResourceBody> {
        let id = vars.get("id").unwrap_or_default();
        let data =
            serde_json::json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
        Ok(ResourceBody::Text(data.to_string()))
    }

    fn complete(name: &str, value: &str) -> Vec<String> {
        if name != "id" {
            return Vec::new();
        }
        ["100", "123", "200"].iter().filter(|id| id.starts_with(value)).map(|id| id.to_string()).collect()
    }
}

/// Says `test://watched-resource` changed.
pub struct UpdateWatched;

impl Tool for UpdateWatched {
    const NAME: &'static str = "update_watched_resource";
    const DESCRIPTION: &'static str = "Says test://watched-resource changed (subscribers are told)";
    type Args = NoArgs;
    type Output = CallResult;

    fn call(cx: &Context, _: NoArgs) -> Result<CallResult> {
        cx.resource_updated(Watched::URI);
        Ok(CallResult::text("updated"))
    }
}

pub struct SimplePrompt;

impl Prompt for SimplePrompt {
    const NAME: &'static str = "test_simple_prompt";
    const DESCRIPTION: &'static str = "A simple prompt without arguments";

    fn get(_: &Context, _: &Args) -> Result<Vec<Message>> {
        Ok(vec![Message::user("This is a simple prompt for testing.")])
    }
}

pub struct PromptWithArguments;

impl Prompt for PromptWithArguments {
    const NAME: &'static str = "test_prompt_with_arguments";
    const DESCRIPTION: &'static str = "A prompt with two required arguments";
    const ARGUMENTS: &'static [Argument] = &[
        Argument::required("arg1", "First test argument"),
        Argument::required("arg2", "Second test argument"),
    ];

    fn get(_: &Context, args: &Args) -> Result<Vec<Message>> {
        let (arg1, arg2) = (args.get("arg1").unwrap_or_default(), args.get("arg2").unwrap_or_default());
        Ok(vec![Message::user(format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))])
    }

    fn complete(name: &str, value: &str, _: &Args) -> Vec<String> {
        const WORDS: [&str; 5] = ["paris", "park", "party", "test", "testValue1"];
        if name != "arg1" {
            return Vec::new();
        }
        WORDS.iter().filter(|word| word.starts_with(value)).map(|word| word.to_string()).collect()
    }
}

pub struct PromptWithEmbeddedResource;

impl Prompt for PromptWithEmbeddedResource {
    const NAME: &'static str = "test_prompt_with_embedded_resource";
    const DESCRIPTION: &'static str = "A prompt that embeds a resource";
    const ARGUMENTS: &'static [Argument] =
        &[Argument::required("resourceUri", "URI of the resource to embed")];

    fn get(_: &Context, args: &Args) -> Result<Vec<Message>> {
        let uri = args.get("resourceUri").ok_or_else(|| Error::InvalidArguments("resourceUri".into()))?;
        Ok(vec![
            Message::user_content(Content::Embedded(EmbeddedResource {
                uri: uri.to_string(),
                mime_type: Some("text/plain".into()),
                body: ResourceBody::Text("Embedded resource content for testing.".into()),
            })),
            Message::user("Please process the embedded resource above."),
        ])
    }
}

pub struct PromptWithImage;

impl Prompt for PromptWithImage {
    const NAME: &'static str = "test_prompt_with_image";
    const DESCRIPTION: &'static str = "A prompt with an image";

    fn get(_: &Context, _: &Args) -> Result<Vec<Message>> {
        Ok(vec![
            Message::user_content(Content::Image(Media {
                data: PNG.to_vec(),
                mime_type: "image/png".into(),
            })),
            Message::user("Please analyze the image above."),
        ])
    }
}

// A skill (SEP-2640) with a file below its root, as the skills scenarios
// expect: the host serves it from these bytes, hashed at load.
mcp_tool::skill_file!(
    ReleaseNotesSkill,
    "release-notes/SKILL.md",
    include_str!("../skills/release-notes/SKILL.md")
);
mcp_tool::skill_file!(
    ReleaseNotesStyle,
    "release-notes/references/STYLE.md",
    include_str!("../skills/release-notes/references/STYLE.md")
);
