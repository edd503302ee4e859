//! Resources, prompts and completion that misbehave: lists past the host's
//! caps, URIs and names holding control characters, reads that never end
//! or return too much, completions by the hundred thousand. Each must be
//! bounded by the host, with the component's good items (and its
//! neighbours) served as usual.

use mcp_tool::raw::exports::mcp::tool::completion::{self, CompletionRequest, Completions};
use mcp_tool::raw::exports::mcp::tool::prompts::{
    self, PromptError, PromptInfo, PromptMessage, PromptResult, Role,
};
use mcp_tool::raw::exports::mcp::tool::resources::{
    self, ReadError, ResourceContents, ResourceInfo, ResourceTemplate,
};
use mcp_tool::raw::mcp::tool::cancellation::Cancelled;
use mcp_tool::raw::mcp::tool::types::{Content, ResourceBody};

use super::{Hostile, spin_forever};

/// How many resources `list-resources` returns: past the host's 1024.
const MANY: u32 = 5000;

fn resource(uri: String, name: &str) -> ResourceInfo {
    ResourceInfo { uri, name: name.into(), title: None, description: None, mime_type: None, size: None }
}

/// With `--features long-templates`: 250 templates whose first variable
/// is followed by a literal of 2 000 bytes that almost matches `abab…`, so
/// a matcher that tries the literal at every place of a long URI does the
/// URI's length times 2 000 steps for each.
fn long_templates() -> Vec<(String, String)> {
    if !cfg!(feature = "long-templates") {
        return Vec::new();
    }
    (0..250).map(|n| (format!("hostile://{{x}}{}c{n}", "ab".repeat(1000)), format!("long-{n}"))).collect()
}

/// Skills (SEP-2640), read by the host at load: `fine` is served (and its
/// `now.txt` differs at every read, so only the copy hashed at load can
/// match its digest); each other one is left out for what is wrong with it.
/// `too-big` last: its files together pass the host's budget for a
/// component's skill files.
const SKILL_FILES: &[&str] = &[
    "skill://fine/SKILL.md",
    "skill://fine/now.txt",
    "skill://misnamed/SKILL.md",
    "skill://alias-bomb/SKILL.md",
    "skill://unreadable/SKILL.md",
    "skill://unreadable/gone.txt",
    "skill://bad--name/SKILL.md",
    "skill://too-big/SKILL.md",
    "skill://too-big/a.txt",
    "skill://too-big/b.txt",
];

fn skill_file(uri: &str) -> Result<String, ReadError> {
    let manifest = |name: &str| {
        format!("---\nname: {name}\ndescription: A skill of the hostile component.\n---\nBody.\n")
    };
    Ok(match uri {
        "skill://fine/SKILL.md" => manifest("fine"),
        "skill://fine/now.txt" => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            format!("{}", now.as_nanos())
        }
        "skill://misnamed/SKILL.md" => manifest("other"),
        "skill://alias-bomb/SKILL.md" => {
            // 500 values under one anchor, expanded 3 000 times.
            let mut text = String::from("---\nname: alias-bomb\ndescription: d\nl: &l [");
            text.push_str(&"1,".repeat(500));
            text.push_str("1]\nm: [");
            text.push_str(&"*l,".repeat(3000));
            text.push_str("*l]\n---\n");
            text
        }
        "skill://unreadable/SKILL.md" => manifest("unreadable"),
        "skill://unreadable/gone.txt" => return Err(ReadError::Failed("gone".into())),
        "skill://bad--name/SKILL.md" => manifest("bad--name"),
        "skill://too-big/SKILL.md" => manifest("too-big"),
        _ => "x".repeat(10 << 20),
    })
}

impl resources::Guest for Hostile {
    fn list_resources() -> Vec<ResourceInfo> {
        let mut list = vec![
            resource("hostile://ok".into(), "ok"),
            resource("hostile://forged\n\u{1b}[31mred".into(), "forged-uri"),
            resource("hostile://forged-name".into(), "name\u{7}\u{1b}]0;title"),
            resource(format!("hostile://{}", "x".repeat(10_000)), "long-uri"),
            resource("hostile://ok".into(), "listed-twice"),
            resource("no scheme".into(), "no-scheme"),
        ];
        // A fixed URI that `everything`'s template `test://template/{id}/data`
        // matches: loaded beside it, one would shadow the other. (First: the
        // many below are cut at the host's cap.)
        if cfg!(feature = "shadow") {
            list.insert(0, resource("test://template/secret/data".into(), "shadow"));
        }
        list.extend(SKILL_FILES.iter().map(|uri| resource(uri.to_string(), "skill-file")));
        list.extend((0..MANY).map(|n| resource(format!("hostile://many/{n}"), "many")));
        list
    }

    fn list_templates() -> Vec<ResourceTemplate> {
        let template = |uri_template: &str, name: &str| ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
        };
        vec![
            template("hostile://spin/{n}", "spin"),
            template("hostile://huge/{mib}", "huge"),
            template("hostile://pieces/{count}", "pieces"),
            template("hostile://bad-uri/{n}", "bad-uri"),
            template("hostile://{a}{b}", "two-in-a-row"),
        ]
        .into_iter()
        .chain(long_templates().into_iter().map(|(text, name)| template(&text, &name)))
        .collect()
    }

    fn read(
        _call_id: String,
        uri: String,
        _cancelled: Cancelled,
    ) -> Result<Vec<ResourceContents>, ReadError> {
        let text = |uri: String, text: String| ResourceContents {
            uri,
            mime_type: None,
            body: ResourceBody::Text(text),
        };
        if uri == "hostile://ok" {
            return Ok(vec![text(uri, "fine".into())]);
        }
        if SKILL_FILES.contains(&uri.as_str()) {
            let body = skill_file(&uri)?;
            return Ok(vec![text(uri, body)]);
        }
        if uri.starts_with("hostile://spin/") {
            spin_forever();
        }
        if let Some(mib) = uri.strip_prefix("hostile://huge/") {
            let mib: usize = mib.parse().unwrap_or(1);
            return Ok(vec![text(uri.clone(), "x".repeat(mib << 20))]);
        }
        if let Some(count) = uri.strip_prefix("hostile://pieces/") {
            let count: usize = count.parse().unwrap_or(1);
            return Ok((0..count).map(|n| text(format!("hostile://piece/{n}"), String::new())).collect());
        }
        if uri.starts_with("hostile://bad-uri/") {
            return Ok(vec![text("hostile://\u{1b}[2J\r\nforged".into(), "x".into())]);
        }
        Err(ReadError::NotFound)
    }
}

fn prompt(name: String) -> PromptInfo {
    PromptInfo { name, title: None, description: Some("hostile".into()), arguments: Vec::new() }
}

impl prompts::Guest for Hostile {
    fn list_prompts() -> Vec<PromptInfo> {
        let mut list = vec![
            prompt("hostile_spin".into()),
            prompt("hostile_huge".into()),
            prompt("bad\nname\u{1b}[0m".into()),
        ];
        list.extend((0..400).map(|n| prompt(format!("hostile_many_{n}"))));
        list
    }

    fn get_prompt(
        _call_id: String,
        name: String,
        _arguments: Vec<(String, String)>,
        _cancelled: Cancelled,
    ) -> Result<PromptResult, PromptError> {
        match name.as_str() {
            "hostile_spin" => spin_forever(),
            "hostile_huge" => Ok(PromptResult {
                description: None,
                messages: (0..100_000)
                    .map(|_| PromptMessage { role: Role::User, content: Content::Text("x".repeat(64)) })
                    .collect(),
            }),
            _ => Ok(PromptResult {
                description: None,
                messages: vec![PromptMessage { role: Role::User, content: Content::Text("hi".into()) }],
            }),
        }
    }
}

impl completion::Guest for Hostile {
    fn complete(
        _call_id: String,
        request: CompletionRequest,
        _cancelled: Cancelled,
    ) -> Result<Completions, String> {
        if request.value == "spin" {
            spin_forever();
        }
        Ok(Completions {
            values: (0..100_000).map(|n| format!("value-{n}")).collect(),
            total: None,
            has_more: false,
        })
    }
}

impl mcp_tool::raw::exports::mcp::tool::tasks::Guest for Hostile {
    // Every tool `optional`: the host's checks of this list are unit tests
    // (`component::set_task_support`), as a bad one keeps a component from
    // loading at all.
    fn list_task_support() -> Vec<(String, mcp_tool::TaskSupport)> {
        Vec::new()
    }
}
