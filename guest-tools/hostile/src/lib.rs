//! Tools that misbehave on purpose, one per way a component can try to hurt
//! its host: the hostile-guest tests load this component and check that the
//! host survives each, answers with a clear error, leaves other calls alone
//! and serves the next call.
//!
//! It implements the SDK's raw bindings (`mcp_tool::raw`) rather than typed
//! tools: each attack needs the contract exactly as the host sees it
//! (structured content that is not JSON, arguments it never parses).

use mcp_tool::raw::exports::mcp::tool::tool::Guest;
use mcp_tool::raw::mcp::tool::cancellation::Cancelled;
use mcp_tool::raw::mcp::tool::client::{self, LogLevel};
use mcp_tool::raw::mcp::tool::types::{Annotations, CallError, CallResult, Content, StopReason, ToolInfo};
use serde_json::{Value, json};

mod bounds;
mod offers;

struct Hostile;

impl Guest for Hostile {
    fn list_tools() -> Vec<ToolInfo> {
        // Built only into `hostile-list-spins.wasm`: a tool list that never
        // comes, which must not hang the host's start.
        if cfg!(feature = "list-spins") {
            spin_forever();
        }
        let mut tools = vec![
            tool("memory_bomb", "Allocates memory until it cannot"),
            tool("recurse", "Recurses without end (stack overflow)"),
            tool("panic", "Panics"),
            tool("huge_output", "Returns `mib` MiB of text"),
            tool("log_flood", "Logs 100 000 messages"),
            tool("progress_flood", "Reports progress 100 000 times"),
            tool("elicit_spam", "Asks the user 1 000 questions in a row"),
            tool("read_file", "Reads the file at `path` and returns its size"),
            tool("list_env", "Returns every environment variable it can see"),
            tool("bad_json", "Returns structured content that is not JSON"),
            tool("trap_in_cleanup", "Spins; its cleanup panics"),
            tool("loop_in_cleanup", "Spins; its cleanup never returns"),
            tool("fetch", "GETs `url` through wasi:http; returns the status and body"),
            tool("connect_tcp", "Opens a raw TCP connection to `addr` through wasi:sockets"),
            tool("open_many", "Opens the file at `path` `count` times and keeps every handle"),
            tool("plant_symlink", "Makes a symlink `name` -> `target` in the granted directory `dir`"),
            schema_tool(
                "schema_at_limit",
                "Declares an output schema at the host's limits and returns 8 000 items breaking it",
                json!({ "type": "object" }),
                Some(json!({ "type": "object", "properties": { "items": wide_items(64) } })),
            ),
            schema_tool(
                "input_at_limit",
                "Takes `items`, checked against a 64-branch anyOf",
                json!({ "type": "object", "properties": { "items": wide_items(64) } }),
                None,
            ),
            tool(
                "log_bomb",
                "Logs 50 records of `mib` MiB each (with progress messages as large); `fill`: `controls` for U+0001",
            ),
            tool("error_bomb", "Fails with call-error::failed carrying `mib` MiB of text"),
            tool("stdout_bomb", "Prints `mib` MiB, and lines that pose as the host's own log lines"),
            tool(
                "question_bomb",
                "Asks the user (`kind`: message, schema, url, sample) with a multi-MiB question",
            ),
            tool(
                "ask_badly",
                "Asks several questions at once (client.ask) the wrong way (`kind`: keys, many, bulk)",
            ),
            tool(
                "announce_long_uri",
                "Says the resource at a URI of `kib` KiB changed (client.resource-updated)",
            ),
            tool("open_fifo", "Opens the file at `path` (for writing with `write: true`)"),
            tool("snoop", "Looks for what an earlier call left in memory, then leaves its own marks"),
            tool(
                "grow_touch",
                "Grows its memory by `mib` MiB, writes to every page of it, and returns (or, with `hold`, spins)",
            ),
            tool(
                "header_hoard",
                "Makes `fields` wasi:http fields and appends `per` headers of `size` bytes to each, from one buffer",
            ),
        ];
        // Built only into `hostile-forged-name.wasm`: a tool name that would
        // forge a log line, clear the terminal and set its title, 10 KiB
        // long; the host must refuse it with one escaped, bounded line.
        if cfg!(feature = "forged-name") {
            tools.push(tool(&forged_name(), "A name no log line may echo raw"));
        }
        tools.extend(bounds::tools());
        // The schema of the finding that took hosts down: built only into
        // `hostile-schema-bomb.wasm`, which the host must refuse to load.
        if cfg!(feature = "schema-bomb") {
            tools.push(schema_tool(
                "schema_bomb",
                "Declares an output schema whose items are an anyOf of 2 000 branches",
                json!({ "type": "object" }),
                Some(json!({ "type": "object", "properties": { "items": wide_items(2000) } })),
            ));
        }
        tools
    }

    fn call(
        call_id: String,
        name: String,
        arguments: String,
        _cancelled: Cancelled,
    ) -> Result<CallResult, CallError> {
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        match name.as_str() {
            "memory_bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![7u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "recurse" => Ok(text(&recurse(args["depth"].as_u64().unwrap_or(u64::MAX)).to_string())),
            "panic" => panic!("hostile tool panics on purpose"),
            "huge_output" => {
                let mib = args["mib"].as_u64().unwrap_or(64) as usize;
                Ok(text(&"x".repeat(mib << 20)))
            }
            "log_flood" => {
                for i in 0..100_000 {
                    client::log(LogLevel::Info, Some("flood"), &json!(format!("flood {i}")).to_string());
                }
                Ok(text("flooded the log"))
            }
            "progress_flood" => {
                for i in 0..100_000 {
                    client::progress(i as f64, Some(100_000.0), None);
                }
                Ok(text("flooded progress"))
            }
            "elicit_spam" => {
                let schema = json!({ "type": "object", "properties": { "answer": { "type": "string" } } });
                for n in 0..1_000 {
                    if let Err(refused) = client::elicit(&format!("spam {n}"), &schema.to_string()) {
                        return Ok(text(&format!("stopped after {n} questions: {refused:?}")));
                    }
                }
                Ok(text("asked all 1 000 questions"))
            }
            "read_file" => {
                let path = args["path"].as_str().unwrap_or("/etc/passwd");
                match std::fs::read(path) {
                    Ok(bytes) => Ok(text(&format!("read {} bytes", bytes.len()))),
                    Err(err) => Ok(text(&format!("refused: {err}"))),
                }
            }
            "list_env" => {
                let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                Ok(text(&vars.join("\n")))
            }
            "bad_json" => Ok(CallResult {
                content: vec![Content::Text("see structured content".into())],
                structured_content: Some("{this is not json".into()),
                is_error: false,
            }),
            "fetch" => fetch(args["url"].as_str().unwrap_or_default()).map_err(CallError::Failed),
            "connect_tcp" => {
                let addr = args["addr"].as_str().unwrap_or_default();
                match std::net::TcpStream::connect(addr) {
                    Ok(_) => Ok(text(&format!("connected to {addr}"))),
                    Err(err) => Ok(text(&format!("refused: {err}"))),
                }
            }
            "plant_symlink" => {
                let (dir, name, target) = (
                    args["dir"].as_str().unwrap_or("/rw"),
                    args["name"].as_str().unwrap_or("link"),
                    args["target"].as_str().unwrap_or("../secret"),
                );
                let preopens = wasi::filesystem::preopens::get_directories();
                let Some((grant, _)) = preopens.iter().find(|(_, path)| path == dir) else {
                    return Ok(text(&format!("no grant at {dir}")));
                };
                match grant.symlink_at(target, name) {
                    Ok(()) => Ok(text(&format!("planted {dir}/{name} -> {target}"))),
                    Err(code) => Ok(text(&format!("refused: {code:?}"))),
                }
            }
            "open_many" => {
                let path = args["path"].as_str().unwrap_or("/data/f");
                let count = args["count"].as_u64().unwrap_or(100_000);
                let mut held = Vec::new();
                for _ in 0..count {
                    match std::fs::File::open(path) {
                        Ok(file) => held.push(file),
                        Err(err) => return Ok(text(&format!("refused after {}: {err}", held.len()))),
                    }
                }
                Ok(text(&format!("opened {}", held.len())))
            }
            "schema_at_limit" | "schema_bomb" => Ok(CallResult {
                content: vec![Content::Text("8 000 zeros".into())],
                structured_content: Some(json!({ "items": vec![0; 8000] }).to_string()),
                is_error: false,
            }),
            "input_at_limit" => Ok(text("arguments passed")),
            "log_bomb" => {
                let mib = args["mib"].as_u64().unwrap_or(32) as usize;
                // One JSON string, built once and sent 50 times: the guest's
                // own memory stays at `mib` MiB, whatever the host does.
                let mut data = String::with_capacity((mib << 20) + 2);
                data.push('"');
                // `"fill": "controls"`: U+0001, which an escaping log writes
                // as five characters.
                let fill = if args["fill"] == "controls" { '\u{1}' } else { 'x' };
                data.extend(std::iter::repeat_n(fill, mib << 20));
                data.push('"');
                for i in 0..50 {
                    client::log(LogLevel::Info, Some("bomb"), &data);
                    client::progress(f64::from(i), Some(50.0), Some(&data[1..data.len() - 1]));
                }
                Ok(text(&format!("logged 50 records of {mib} MiB")))
            }
            "error_bomb" => {
                let mib = args["mib"].as_u64().unwrap_or(100) as usize;
                Err(CallError::Failed("e".repeat(mib << 20)))
            }
            "stdout_bomb" => {
                let mib = args["mib"].as_u64().unwrap_or(8) as usize;
                // Lines a reader of the host's log could take for the host's
                // own: a fake `call ended`, a cursor move that rewrites the
                // line above, a carriage return over the line's start.
                println!("hostile line 1\nFORGED  INFO mcp_wasm_host::call: call ended tool=\"forged\"");
                eprintln!("hostile line 2\x1b[1A\x1b[2KFORGED cursor\rFORGED return\u{9b}2J");
                let line = format!("{}\n", "o".repeat(1023));
                let mut out = std::io::stdout().lock();
                for _ in 0..(mib << 10) {
                    std::io::Write::write_all(&mut out, line.as_bytes()).expect("stdout takes every byte");
                }
                drop(out);
                Ok(text(&format!("printed {mib} MiB")))
            }
            "question_bomb" => question_bomb(args["kind"].as_str().unwrap_or("message")),
            "ask_badly" => ask_badly(args["kind"].as_str().unwrap_or("keys")),
            "snoop" => Ok(text(&snoop().to_string())),
            "announce_long_uri" => {
                // `abab…`: a near miss at every place for a template whose
                // literal is `abab…c` (`--features long-templates`).
                let kib = args["kib"].as_u64().unwrap_or(8 << 10) as usize;
                client::resource_updated(&format!("hostile://{}", "ab".repeat(kib * 512)));
                Ok(text("announced"))
            }
            "open_fifo" => {
                let path = args["path"].as_str().unwrap_or_default();
                let opened = if args["write"].as_bool() == Some(true) {
                    std::fs::OpenOptions::new().write(true).open(path)
                } else {
                    std::fs::File::open(path)
                };
                match opened {
                    Ok(_) => Ok(text(&format!("opened {path}"))),
                    Err(err) => Ok(text(&format!("refused: {err}"))),
                }
            }
            "grow_touch" => {
                let mib = args["mib"].as_u64().unwrap_or(200) as usize;
                let mut block = vec![0u8; mib << 20];
                // Fresh pages from `memory.grow` are zero without a write:
                // write one byte per host page so each is really there.
                for page in block.chunks_mut(4096) {
                    page[0] = 1;
                }
                std::hint::black_box(&block);
                if args["hold"].as_bool() == Some(true) {
                    // Holds it until the host stops the call.
                    eprintln!("holding {mib} MiB");
                    spin_forever();
                }
                Ok(text(&format!("touched {mib} MiB")))
            }
            "header_hoard" => header_hoard(
                args["fields"].as_u64().unwrap_or(4000),
                args["per"].as_u64().unwrap_or(117),
                args["size"].as_u64().unwrap_or(1000) as usize,
            ),
            "trap_in_cleanup" | "loop_in_cleanup" => {
                let _ = call_id;
                spin_forever()
            }
            other => bounds::call(other, &args).unwrap_or_else(|| Err(CallError::UnknownTool(other.into()))),
        }
    }

    fn cleanup(call_id: String, _reason: StopReason) {
        // The host tells cleanups apart only by call id; the tool name is not
        // passed, so both bad cleanups misbehave for every call. The tests
        // only ever cancel the two cleanup tools of this component.
        let _ = call_id;
        if std::env::var("HOSTILE_CLEANUP").as_deref() == Ok("loop") {
            spin_forever();
        }
        panic!("hostile cleanup panics on purpose");
    }
}

/// A plain `GET url` through `wasi:http/outgoing-handler`: `status N: BODY`,
/// or the error the host gave (its `error-code`, as the guest sees it).
fn fetch(url: &str) -> Result<CallResult, String> {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, OutgoingRequest, Scheme};
    use wasi::io::streams::StreamError;

    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(format!("{url}: only http:// and https:// URLs")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    let set = request.set_scheme(Some(&scheme)).is_ok()
        && request.set_authority(Some(authority)).is_ok()
        && request.set_path_with_query(Some(path)).is_ok();
    if !set {
        return Err(format!("{url}: the host rejected the URL"));
    }
    let failed = |what: String| format!("fetch {url} failed: {what}");
    let pending = outgoing_handler::handle(request, None).map_err(|code| failed(format!("{code:?}")))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(failed(format!("{code:?}"))),
        Some(Err(())) | None => return Err(failed("the response was not available".into())),
    };
    let status = response.status();
    let body = response.consume().map_err(|()| failed("no body".into()))?;
    let mut bytes = Vec::new();
    {
        // The stream is a child of the body: it must go first.
        let stream = body.stream().map_err(|()| failed("no body stream".into()))?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(err)) => {
                    return Err(failed(err.to_debug_string()));
                }
            }
        }
    }
    Ok(text(&format!("status {status}: {}", String::from_utf8_lossy(&bytes))))
}

/// Header values in host memory from one small guest buffer: `count`
/// fields, each holding `per` headers of `size` bytes, all kept.
fn header_hoard(count: u64, per: u64, size: usize) -> Result<CallResult, CallError> {
    use wasi::http::types::Fields;
    let value = vec![b'v'; size];
    let mut held = Vec::new();
    for i in 0..count {
        let fields = Fields::new();
        for j in 0..per {
            if let Err(err) = fields.append(&format!("x-hoard-{j}"), &value) {
                return Ok(text(&format!("refused at fields {i}, header {j}: {err:?}")));
            }
        }
        held.push(fields);
    }
    Ok(text(&format!("holding {count} fields of {per} headers")))
}

/// Several questions at once, put the wrong way: `keys` (one good key, then
/// one of 1 000 bytes, the good one again, one with a line break), `many`
/// (1 000 questions), `bulk` (16 questions of 64 KiB each). Returns each
/// answer, one per line.
fn ask_badly(kind: &str) -> Result<CallResult, CallError> {
    let schema = json!({ "type": "object", "properties": { "answer": { "type": "string" } } }).to_string();
    let form = |message: &str| client::Question::Elicit((message.to_string(), schema.clone()));
    let questions: Vec<(String, client::Question)> = match kind {
        "keys" => vec![
            ("good".to_string(), form("a fair question")),
            ("k".repeat(1_000), form("a long key")),
            ("good".to_string(), form("the same key again")),
            ("line\nbreak".to_string(), form("a key with a line break")),
        ],
        "many" => (0..1_000).map(|n| (format!("q{n}"), form("one of many"))).collect(),
        "bulk" => (0..16).map(|n| (format!("q{n}"), form(&"b".repeat(64 << 10)))).collect(),
        other => return Err(CallError::InvalidArguments(format!("no kind `{other}`"))),
    };
    let answers = client::ask(&questions);
    let lines: Vec<String> = answers
        .iter()
        .map(|answer| match answer {
            Ok(_) => "answered".to_string(),
            Err(err) => format!("refused: {}", format!("{err:?}").chars().take(200).collect::<String>()),
        })
        .collect();
    Ok(text(&format!("{} answers\n{}", answers.len(), lines.join("\n"))))
}

/// One question of 4 MiB, its bulk in the part `kind` names; returns how
/// the host answered.
fn question_bomb(kind: &str) -> Result<CallResult, CallError> {
    let bulk = "q".repeat(4 << 20);
    let small_schema = json!({ "type": "object", "properties": { "answer": { "type": "string" } } });
    let answered = match kind {
        "message" => client::elicit(&bulk, &small_schema.to_string()).map(|answer| format!("{answer:?}")),
        "schema" => {
            let schema = json!({
                "type": "object",
                "properties": { "answer": { "type": "string", "description": bulk } }
            });
            client::elicit("a small question", &schema.to_string()).map(|answer| format!("{answer:?}"))
        }
        "url" => client::elicit_url("sign in", &format!("https://example.com/{bulk}"))
            .map(|answer| format!("{answer:?}")),
        "sample" => {
            let request = json!({
                "messages": [{ "role": "user", "content": { "type": "text", "text": bulk } }],
                "maxTokens": 10
            });
            client::sample(&request.to_string())
        }
        other => return Err(CallError::InvalidArguments(format!("no question kind `{other}`"))),
    };
    Ok(text(&match answered {
        Ok(answer) => format!("answered: {} bytes", answer.len()),
        Err(err) => format!("refused: {err:?}"),
    }))
}

/// What `snoop` writes, and looks for: "mcp-wasm".
const MARK: u64 = 0x6d63_702d_7761_736d;
/// A static in the component's data image (not zero), for `snoop`.
static mut IMAGE: [u64; 4096] = [0x5eed; 4096];

/// Counts the words of the data image and the marks in a heap block that an
/// earlier call changed, then changes them itself: a word in every other
/// 4 KiB page of an 8 MiB block (1 024 separate dirty runs, more than the
/// host resets in one pass) and the whole image static. A fresh instance
/// must find nothing, whatever ran in its slot before.
fn snoop() -> Value {
    const BLOCK: usize = 8 << 20;
    const PAGE: usize = 4096;
    let layout = std::alloc::Layout::from_size_align(BLOCK, PAGE).expect("a valid layout");
    // SAFETY: the block is allocated here and freed below; its words are
    // read as integers, which any bit pattern is (wasm memory is never
    // uninitialised: it is whatever the host left, which is the point).
    unsafe {
        let image = std::ptr::addr_of_mut!(IMAGE).cast::<u64>();
        let mut image_changed = 0;
        for i in 0..4096 {
            if image.add(i).read_volatile() != 0x5eed {
                image_changed += 1;
            }
            image.add(i).write_volatile(MARK);
        }
        let block = std::alloc::alloc(layout);
        if block.is_null() {
            return json!({ "error": "no memory for the block" });
        }
        let mut marks = 0;
        for page in (0..BLOCK).step_by(PAGE) {
            let word = block.add(page).cast::<u64>();
            if word.read_volatile() == MARK {
                marks += 1;
            }
            if page % (2 * PAGE) == 0 {
                word.write_volatile(MARK);
            }
        }
        std::alloc::dealloc(block, layout);
        json!({ "image_words_changed": image_changed, "heap_marks": marks })
    }
}

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if depth == 0 {
        return 0;
    }
    let padding = std::hint::black_box([depth; 16]);
    recurse(depth - 1).wrapping_add(padding[3])
}

fn text(s: &str) -> CallResult {
    CallResult { content: vec![Content::Text(s.into())], structured_content: None, is_error: false }
}

/// An array schema whose items must match one of `n` constants, none of them 0.
fn wide_items(n: u32) -> Value {
    let branches: Vec<Value> = (1..=n).map(|k| json!({ "const": k })).collect();
    json!({ "type": "array", "items": { "anyOf": branches } })
}

fn schema_tool(name: &str, description: &str, input: Value, output: Option<Value>) -> ToolInfo {
    ToolInfo {
        input_schema: input.to_string(),
        output_schema: output.map(|schema| schema.to_string()),
        ..tool(name, description)
    }
}

/// A newline and a line posing as the host's, OSC (window title) and CSI
/// (clear screen) escapes, BEL, then 10 KiB of padding.
fn forged_name() -> String {
    format!("forged\nERROR forged host line\x1b]0;owned\x07\x1b[2J{}", "x".repeat(10 << 10))
}

fn tool(name: &str, description: &str) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        input_schema: json!({ "type": "object" }).to_string(),
        output_schema: None,
        annotations: Annotations { read_only: None, destructive: None, idempotent: None, open_world: None },
        needs_approval: None,
    }
}

mcp_tool::raw::export!(Hostile);

/// Computes without end, calling nothing the host could stop it in.
fn spin_forever() -> ! {
    let mut x: u64 = 1;
    loop {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
}
