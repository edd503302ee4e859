//! Tools that test what bounds the host as a whole (issue 22): results
//! whose bulk hides in fields a size check might skip, answers that break
//! the schema that was asked, and a call that takes every descriptor.

use mcp_tool::raw::mcp::tool::client::{self, LogLevel};
use mcp_tool::raw::mcp::tool::types::{
    CallError, CallResult, Content, EmbeddedResource, Media, ResourceBody, ResourceLink, ToolInfo,
};
use serde_json::{Value, json};

use crate::{text, tool};

/// The tools of this file.
pub fn tools() -> Vec<ToolInfo> {
    vec![
        tool(
            "media_bomb",
            "Returns `kib` KiB in one `field`: image_mime (4 images), image_data, audio_mime, \
             resource_uri, resource_mime, link_title, link_description (2 blocks each), \
             text_controls (control characters, 6 bytes each as JSON)",
        ),
        tool("many_blocks", "Returns `count` empty text blocks"),
        tool("elicit_ok", "Asks the user for {ok: boolean} (required) and returns what it got"),
        tool("sample_echo", "Asks the model with a `kib` KiB prompt and returns how long the answer was"),
        tool(
            "hoard_files",
            "Opens the file at `path` until refused, logs `holding N files`, keeps them `hold_ms` ms",
        ),
    ]
}

/// Runs `name` if it is one of this file's tools.
pub fn call(name: &str, args: &Value) -> Option<Result<CallResult, CallError>> {
    let kib = args["kib"].as_u64().unwrap_or(16 << 10) as usize;
    Some(match name {
        "media_bomb" => media_bomb(args["field"].as_str().unwrap_or_default(), kib << 10),
        "many_blocks" => {
            let count = args["count"].as_u64().unwrap_or(500_000) as usize;
            Ok(CallResult {
                content: vec![Content::Text(String::new()); count],
                structured_content: None,
                is_error: false,
            })
        }
        "elicit_ok" => {
            let schema = json!({
                "type": "object",
                "properties": { "ok": { "type": "boolean" } },
                "required": ["ok"]
            });
            Ok(text(&format!("{:?}", client::elicit("ok?", &schema.to_string()))))
        }
        "sample_echo" => {
            let request = json!({
                "messages": [{ "role": "user", "content": { "type": "text", "text": "p".repeat(kib << 10) } }],
                "maxTokens": 10
            });
            Ok(text(&match client::sample(&request.to_string()) {
                Ok(answer) => format!("answered: {} bytes", answer.len()),
                Err(err) => format!("refused: {err:?}"),
            }))
        }
        "hoard_files" => {
            let path = args["path"].as_str().unwrap_or("/data/f");
            let mut held = Vec::new();
            let refused = loop {
                match std::fs::File::open(path) {
                    Ok(file) => held.push(file),
                    Err(err) => break err,
                }
            };
            client::log(
                LogLevel::Info,
                Some("hoard"),
                &json!(format!("holding {} files", held.len())).to_string(),
            );
            std::thread::sleep(std::time::Duration::from_millis(args["hold_ms"].as_u64().unwrap_or(2000)));
            Ok(text(&format!("held {} files ({refused})", held.len())))
        }
        _ => return None,
    })
}

/// Blocks carrying `size` bytes in `field`, every other field empty.
fn media_bomb(field: &str, size: usize) -> Result<CallResult, CallError> {
    let bulk = "m".repeat(size);
    let media = |data: Vec<u8>, mime_type: String| Media { data, mime_type };
    let embedded = |uri: String, mime_type: Option<String>| {
        Content::Embedded(EmbeddedResource { uri, mime_type, body: ResourceBody::Text(String::new()) })
    };
    let link = |title: Option<String>, description: Option<String>| {
        Content::ResourceLink(ResourceLink {
            uri: "file:///x".into(),
            name: "x".into(),
            title,
            description,
            mime_type: None,
            size: None,
        })
    };
    let content = match field {
        "image_mime" => vec![Content::Image(media(Vec::new(), bulk)); 4],
        "image_data" => vec![Content::Image(media(vec![0xff; size], "image/png".into()))],
        "audio_mime" => vec![Content::Audio(media(Vec::new(), bulk)); 2],
        "resource_uri" => vec![embedded(bulk, None); 2],
        "resource_mime" => vec![embedded("file:///x".into(), Some(bulk)); 2],
        "link_title" => vec![link(Some(bulk), None); 2],
        "link_description" => vec![link(None, Some(bulk)); 2],
        "text_controls" => vec![Content::Text("\u{1}".repeat(size))],
        other => return Err(CallError::InvalidArguments(format!("no field `{other}`"))),
    };
    Ok(CallResult { content, structured_content: None, is_error: false })
}
