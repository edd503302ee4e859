//! Plain components — components not written for the `mcp:tool` contract —
//! served with their exported functions as tools: `plain-types` is built
//! from wit-bindgen alone (guest-tools/plain/types). Round trips of every
//! type through the TypeScript SDK are in tests/ts/plain.test.mjs.

use rmcp::ServiceError;
use rmcp::model::ErrorCode;
use serde_json::{Value, json};

use crate::harness::{Host, Start, TestServer, guest, host_binary, no_args, run_with_stdin_open, text_of};

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

async fn round_trip(host: &Host, tool: &str, arguments: Value) -> Value {
    let result = host.call(tool, arguments.clone()).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{tool}({arguments}): {result:?}");
    structured(&result)["result"].clone()
}

#[tokio::test]
async fn every_exported_function_is_a_tool_and_handles_are_left_out() {
    let host = Host::start(Start::new("plain-types", &[])).await;
    let tools = host.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bytes",
            "config",
            "counters.describe",
            "crash",
            "divide",
            "echo",
            "fetch",
            "floats",
            "integers",
            "lists",
            "nothing",
            "options",
            "read-file",
            "shapes",
            "spin",
            "text"
        ]
    );
    let integers = tools.iter().find(|tool| tool.name == "integers").unwrap();
    let properties = &integers.input_schema["properties"];
    assert_eq!(properties["a"]["maximum"], json!(255));
    assert_eq!(properties["h"]["minimum"], json!(i64::MIN));
    assert_eq!(properties["g"]["maximum"], json!(u64::MAX));
    let output = integers.output_schema.as_ref().expect("a function with a result has an output schema");
    assert_eq!(output["required"], json!(["result"]));
    // Descriptions from the WIT docs (its package-docs section).
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(echo.description.as_deref(), Some("Returns its text unchanged."));
    let shapes = tools.iter().find(|tool| tool.name == "shapes").unwrap();
    let point = &shapes.input_schema["properties"]["p"];
    assert_eq!(point["properties"]["x"]["description"], json!("Horizontal position."), "{point}");
    let describe = tools.iter().find(|tool| tool.name == "counters.describe").unwrap();
    assert_eq!(describe.description.as_deref(), Some("Says what this interface is for."));
    assert_eq!(
        shapes.input_schema["properties"]["s"]["oneOf"].as_array().unwrap().len(),
        3,
        "one branch per case"
    );
}

#[tokio::test]
async fn values_of_every_type_come_back_exactly() {
    let host = Host::start(Start::new("plain-types", &[])).await;
    let edges = json!({ "a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295u32, "f": -2147483648i32,
                        "g": "18446744073709551615", "h": "-9223372036854775808" });
    assert_eq!(
        round_trip(&host, "integers", edges).await,
        json!([
            255,
            -128,
            65535,
            -32768,
            4294967295u32,
            -2147483648i32,
            "18446744073709551615",
            "-9223372036854775808"
        ])
    );
    // A 64-bit integer sent as a JSON number comes back as a string, digit for digit.
    let numbers =
        json!({ "a": 0, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 9007199254740993u64, "h": -1 });
    assert_eq!(round_trip(&host, "integers", numbers).await[6], json!("9007199254740993"));
    assert_eq!(round_trip(&host, "floats", json!({ "a": 0.1, "b": "NaN" })).await, json!([0.1, "NaN"]));
    assert_eq!(
        round_trip(&host, "floats", json!({ "a": "-Infinity", "b": 1e300 })).await,
        json!(["-Infinity", 1e300])
    );
    assert_eq!(
        round_trip(&host, "text", json!({ "c": "🦀", "s": "héllo\u{0}\n" })).await,
        json!(["🦀", "héllo\u{0}\n"])
    );
    assert_eq!(round_trip(&host, "bytes", json!({ "data": "" })).await, json!(""));
    assert_eq!(round_trip(&host, "bytes", json!({ "data": "AP+A" })).await, json!("AP+A"));
    assert_eq!(
        round_trip(&host, "lists", json!({ "words": [], "matrix": [[], [1, -2]] })).await,
        json!([[], [[], [1, -2]]])
    );
    for (a, b) in
        [(json!(null), json!(null)), (json!("x"), json!({ "some": null })), (json!(""), json!({ "some": 7 }))]
    {
        let back = round_trip(&host, "options", json!({ "a": a, "b": b })).await;
        assert_eq!(back, json!([a, b]), "options stay apart: none, some(none), some(some(7))");
    }
    // Left out, an option parameter is none.
    assert_eq!(round_trip(&host, "options", json!({})).await, json!([null, null]));
    for shape in [
        json!({ "tag": "circle", "value": 1.5 }),
        json!({ "tag": "rect", "value": { "x": -1, "y": 2 } }),
        json!({ "tag": "empty" }),
    ] {
        let arguments = json!({ "p": { "x": 3, "y": -4 }, "s": shape, "c": "blue", "f": ["exec", "read"] });
        let back = round_trip(&host, "shapes", arguments).await;
        assert_eq!(back, json!([{ "x": 3, "y": -4 }, shape, "blue", ["read", "exec"]]));
    }
    assert_eq!(text_of(&host.call("echo", json!({ "text": "plain" })).await.unwrap()), "plain");
    let nothing = host.call("nothing", no_args()).await.unwrap();
    assert!(nothing.content.is_empty() && nothing.structured_content.is_none(), "{nothing:?}");
}

#[tokio::test]
async fn a_result_err_is_an_error_result_and_bad_arguments_are_named() {
    let host = Host::start(Start::new("plain-types", &[])).await;
    assert_eq!(round_trip(&host, "divide", json!({ "a": "-9", "b": 2 })).await, json!("-4"));
    let failed = host.call("divide", json!({ "a": 1, "b": 0 })).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(text_of(&failed), "division by zero");

    for (arguments, named) in [
        (json!({ "a": 1 }), "b"),
        (json!({ "a": "1.5", "b": 1 }), "/a"),
        (json!({ "a": "99999999999999999999", "b": 1 }), "/a"),
        (json!({ "a": 1, "b": 1, "c": 1 }), "c"),
        // Numbers JSON reads only as floats: one past s64's range, and a
        // u64-sized one with a fraction part. Before, both were rounded to
        // the nearest double (-2^63, …567168) and reached the guest.
        (serde_json::from_str(r#"{ "a": -9223372036854775809, "b": 1 }"#).unwrap(), "/a"),
        (serde_json::from_str(r#"{ "a": 1, "b": 12345678901234567890.0 }"#).unwrap(), "/b"),
    ] {
        let err = host.call("divide", arguments.clone()).await.unwrap_err();
        let ServiceError::McpError(err) = err else {
            panic!("{arguments}: expected a JSON-RPC error, got {err:?}")
        };
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{arguments}");
        assert!(err.message.contains(named), "{arguments}: {}", err.message);
    }
    let err = host.call("text", json!({ "c": "ab", "s": "" })).await.unwrap_err();
    assert!(format!("{err:?}").contains("/c"), "{err:?}");
    assert_eq!(round_trip(&host, "echo", json!({ "text": "still serving" })).await, json!("still serving"));
}

#[tokio::test]
async fn a_spinning_export_is_stopped_at_once_on_cancel_and_at_its_deadline() {
    // No fuel metering: the deadline, not the fuel, ends the second call.
    let host = Host::start(Start::new("plain-types", &["--timeout", "2s", "--fuel", "0"])).await;
    let handle = host.start_call("spin", no_args()).await;
    host.stderr.wait_for_event("the call started", |event| event.message() == "call started").await;
    handle.cancel(Some("test cancels".into())).await.unwrap();
    let ended = host.call_ended("spin").await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.bool("forced"), Some(true), "{ended}");
    assert_eq!(ended.str("cleanup"), None, "a plain component has no cleanup: {ended}");
    assert!(ended.u64("stop_ms").is_none_or(|ms| ms < 1000), "stopped at once: {ended}");

    let timed_out = host.call("spin", no_args()).await.unwrap();
    assert_eq!(timed_out.is_error, Some(true), "{timed_out:?}");
    assert!(text_of(&timed_out).contains("--timeout"), "{timed_out:?}");
    assert_eq!(round_trip(&host, "echo", json!({ "text": "next" })).await, json!("next"));
}

#[tokio::test]
async fn a_result_past_max_output_is_an_error_and_the_next_call_is_served() {
    let host = Host::start(Start::new("plain-types", &["--max-output", "4096"])).await;
    let big = "A".repeat(16 << 10);
    let refused = host.call("bytes", json!({ "data": big })).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(text_of(&refused).contains("--max-output"), "{refused:?}");
    assert_eq!(round_trip(&host, "echo", json!({ "text": "after" })).await, json!("after"));
}

#[tokio::test]
async fn a_trapping_export_is_an_error_and_the_next_call_is_served() {
    let host = Host::start(Start::new("plain-types", &[])).await;
    let crashed = host.call("crash", no_args()).await.unwrap();
    assert_eq!(crashed.is_error, Some(true), "{crashed:?}");
    assert_eq!(round_trip(&host, "echo", json!({ "text": "after" })).await, json!("after"));
}

#[tokio::test]
async fn granted_files_and_hosts_are_reached_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "granted").unwrap();
    let server = TestServer::answering("hello plain").await;
    let grant = format!("{}::/data:ro", dir.path().display());
    let allow = format!("127.0.0.1:{}", server.port);
    let host = Host::start(Start::new("plain-types", &["--dir", &grant, "--allow-host", &allow])).await;
    assert_eq!(round_trip(&host, "read-file", json!({ "path": "/data/note.txt" })).await, json!("granted"));
    let outside = host.call("read-file", json!({ "path": "/etc/passwd" })).await.unwrap();
    assert_eq!(outside.is_error, Some(true), "{outside:?}");
    let url = format!("http://127.0.0.1:{}/hi", server.port);
    assert_eq!(round_trip(&host, "fetch", json!({ "url": url })).await, json!("hello plain"));
    let denied = host.call("fetch", json!({ "url": "http://example.com/" })).await.unwrap();
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
}

#[tokio::test]
async fn wasi_config_values_reach_the_guest_and_a_secret_stays_out_of_ps() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("config.env");
    std::fs::write(&secrets, "# API keys\napi_key=\"s3cr3t-value\"\n").unwrap();
    let secrets = secrets.display().to_string();
    let host = Host::start(Start::new(
        "plain-types",
        &["--config-var", "region=eu-west", "--config-var-file", &secrets],
    ))
    .await;
    assert_eq!(round_trip(&host, "config", json!({ "key": "region" })).await, json!("eu-west"));
    assert_eq!(round_trip(&host, "config", json!({ "key": "api_key" })).await, json!("s3cr3t-value"));
    assert_eq!(round_trip(&host, "config", json!({ "key": "unset" })).await, json!(null));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", host.child.id().unwrap())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains("s3cr3t"), "the secret is in the process list");
}

#[tokio::test]
async fn wasi_config_is_served_at_the_version_wasmtime_wasi_config_implements_too() {
    // plain-types imports wasi:config/store@0.2.0-draft; plain-js (built
    // with componentize-js) @0.2.0-rc.1, from a [component.config] table.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.toml");
    let js = guest("plain-js").display().to_string();
    std::fs::write(
        &config,
        format!("[[component]]\npath = {js:?}\n[component.config]\nregion = \"eu-rc1\"\n"),
    )
    .unwrap();
    let mut start = Start::new("plain-js", &[]);
    start.args = vec!["--config".into(), config.display().to_string()];
    let host = Host::start(start).await;
    assert_eq!(round_trip(&host, "calc.setting", json!({ "key": "region" })).await, json!("eu-rc1"));
    assert_eq!(round_trip(&host, "calc.setting", json!({ "key": "unset" })).await, json!(null));
}

#[tokio::test]
async fn both_kinds_serve_side_by_side_with_prefixes_and_selections() {
    // demo and plain-types both offer `echo`: together they clash...
    let plain = guest("plain-types").display().to_string();
    let demo = guest("demo").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let clash = dir.path().join("clash.toml");
    std::fs::write(&clash, format!("[[component]]\npath = {demo:?}\n[[component]]\npath = {plain:?}\n"))
        .unwrap();
    // stdin stays open (a closed one ends the host before it loads).
    let refused = run_with_stdin_open(
        std::process::Command::new(host_binary()).args(["--config", clash.to_str().unwrap()]),
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("tool `echo` is offered by both"), "{stderr}");

    // ...and with a prefix and a selection on each, they do not.
    let config = dir.path().join("both.toml");
    let text = format!(
        "[[component]]\npath = {demo:?}\ntools = [\"echo\", \"countdown\"]\nprefix = \"demo.\"\n\
         [[component]]\npath = {plain:?}\ntools = [\"echo\", \"spin\"]\nprefix = \"wit_\"\n\
         [component.annotations.spin]\nread_only = true\nopen_world = false\n"
    );
    std::fs::write(&config, text).unwrap();
    let mut start = Start::new("demo", &[]);
    start.args = vec!["--config".into(), config.display().to_string()];
    let host = Host::start(start).await;
    let tools = host.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort();
    assert!(
        names.contains(&"demo.echo") && names.contains(&"wit_echo") && names.contains(&"wit_spin"),
        "{names:?}"
    );
    assert!(!names.contains(&"wit_divide") && !names.contains(&"demo.spin"), "{names:?}");
    // A plain component declares no hints: the config gives them.
    let spin = tools.iter().find(|tool| tool.name == "wit_spin").unwrap();
    let hints = spin.annotations.as_ref().expect("hints from [component.annotations.spin]");
    assert_eq!((hints.read_only_hint, hints.open_world_hint), (Some(true), Some(false)));
    assert_eq!(text_of(&host.call("demo.echo", json!({ "text": "a" })).await.unwrap()), "a");
    assert_eq!(text_of(&host.call("wit_echo", json!({ "text": "b" })).await.unwrap()), "b");
    assert!(host.call("divide", json!({ "a": 1, "b": 1 })).await.is_err(), "not selected, not callable");
}

#[test]
fn inspect_says_which_kind_and_what_a_plain_component_lacks() {
    let inspect = |name: &str| -> Value {
        let out = std::process::Command::new(host_binary())
            .args(["inspect", guest(name).to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plain = inspect("plain-types");
    assert_eq!(plain["kind"], json!("plain"));
    assert!(plain["cancellation"].as_str().unwrap().contains("no `cleanup`"), "{plain:#}");
    let left_out = plain["left_out"].as_array().unwrap();
    assert!(
        left_out.iter().any(|gone| gone["function"].as_str().unwrap().ends_with("counters@0.1.0#make")
            && gone["why"].as_str().unwrap().contains("resource handle")),
        "{plain:#}"
    );
    assert_eq!(inspect("demo")["kind"], json!("mcp:tool"));
}

#[tokio::test]
async fn tools_on_the_command_line_select_across_every_component() {
    let js = guest("plain-js").display().to_string();
    let host = Host::start(Start::new("demo", &["--component", &js, "--tools", "echo,calc.run"])).await;
    let mut names: Vec<String> =
        host.client.list_all_tools().await.unwrap().into_iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["calc.run", "echo"]);

    let demo = guest("demo").display().to_string();
    let refused = run_with_stdin_open(std::process::Command::new(host_binary()).args([
        "--component",
        &demo,
        "--tools",
        "echo,nope",
    ]));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("--tools names `nope`, which no component offers"),
        "{stderr}"
    );
}

/// A plain component built to overwhelm the tool list, written in WAT: one
/// core function lifted under `count` export names of `name_len` letters.
fn wat_component(count: usize, name_len: usize) -> Vec<u8> {
    let exports: String = (0..count)
        .map(|i| {
            let name = format!("f{i}-{}", "x".repeat(name_len));
            format!(r#"(func (export "{name}") (canon lift (core func $i "f")))"#)
        })
        .collect();
    let text = format!(
        r#"(component (core module $m (func (export "f"))) (core instance $i (instantiate $m)) {exports})"#
    );
    wat::parse_str(text).unwrap()
}

fn refusal(component: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.wasm");
    std::fs::write(&path, component).unwrap();
    let out =
        std::process::Command::new(host_binary()).args(["inspect", path.to_str().unwrap()]).output().unwrap();
    assert!(!out.status.success(), "a hostile plain component was served");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_plain_component_with_too_many_or_unnameable_functions_is_refused_saying_why() {
    let stderr = refusal(&wat_component(1100, 1));
    assert!(stderr.contains("offers 1100 tools, more than the 1024"), "{stderr}");
    // Names past MCP's 128 characters are left out; with nothing left, the
    // refusal names them.
    let stderr = refusal(&wat_component(2000, 200));
    assert!(stderr.contains("it offers no tools") && stderr.contains("tool-name rules"), "{stderr}");
    // The log names 32 of them, then counts the rest.
    assert_eq!(stderr.matches("not served as a tool").count(), 32, "{stderr}");
    assert!(stderr.contains("more=1968"), "{stderr}");
    // One name of 2 KiB: its line quotes it cut to 1 KiB, in the function
    // and in the reason (before, the reason quoted it whole).
    let stderr = refusal(&wat_component(1, 2 << 10));
    let line = stderr.lines().find(|line| line.contains("not served as a tool")).expect(&stderr);
    assert!(!line.contains(&"x".repeat(1100)), "a name past 1 KiB, uncut: {} bytes", line.len());
    assert!(line.contains("…[cut "), "{line}");
}

/// A plain component of 1 024 functions whose one parameter is an enum of
/// 4 000 long cases, shared: under 1 MB of component, and before, GBs of
/// schemas written at load (each function repeats the enum) until the host
/// died. Now each schema is charged before it is written (a function past
/// 256 KiB is left out), all of them together are bounded, and the host's
/// peak memory stays small.
#[test]
fn a_shared_huge_enum_costs_each_function_its_schema_budget_not_gigabytes() {
    let cases: Vec<String> = (0..4000).map(|i| format!("c{i}-{}", "x".repeat(40))).collect();
    let functions: String = (0..1024).map(|i| format!("t{i}: func(x: big);\n")).collect();
    let wit = format!(
        "package bomb:shared-enum;\ninterface api {{\nenum big {{ {} }}\n{functions}}}\nworld bomb {{ export api; }}",
        cases.join(", ")
    );
    let component = component_of(&wit, None);
    assert!(component.len() < 1 << 20, "{} bytes", component.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enum-bomb.wasm");
    std::fs::write(&path, &component).unwrap();
    let mut child = std::process::Command::new(host_binary())
        .args(["inspect", path.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak_kib = 0;
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        peak_kib = peak_kib.max(crate::harness::proc_kib(pid, "status", "VmHWM:"));
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "still loading");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "served: {stderr}");
    // Each schema (about 200 KB) fits its own budget; together they do not.
    assert!(stderr.contains("its tools' schemas together are larger than 16 MiB"), "{stderr}");
    assert!(peak_kib < 512 << 10, "the host peaked at {} MiB", peak_kib >> 10);
}

/// A plain component of `wit`'s world (one package), its code the core
/// module `module` (WAT) or, without one, a stub of every export.
fn component_of(wit: &str, module: Option<&str>) -> Vec<u8> {
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve.push_str("bomb.wit", wit).unwrap();
    let world = resolve.select_world(&[package], None).unwrap();
    let mut module = match module {
        Some(text) => wat::parse_str(text).unwrap(),
        None => wit_component::dummy_module(&resolve, world, wit_parser::ManglingAndAbi::Standard32),
    };
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default().module(&module).unwrap().validate(true).encode().unwrap()
}

/// A plain function returning a `list<flags>` of 32 flags, 100 000 elements
/// with every flag set: about 400 KB of guest memory, and 3.2 million names
/// cloned into `String`s as wasmtime lifts it, each charged two bytes of
/// hostcall fuel. Before, under `--max-memory 32MiB`, one call grew the
/// host by 606 MB (16 at once reached 3 GB); now the lift is stopped within
/// the call's memory and the call fails naming it.
#[tokio::test]
async fn a_list_of_flags_is_lifted_within_the_calls_memory() {
    // Two-letter names, distinct: fa…fz, then ga…gf.
    let names: Vec<String> =
        (0..32u8).map(|i| format!("{}{}", if i < 26 { 'f' } else { 'g' }, (b'a' + i % 26) as char)).collect();
    let wit = format!(
        "package bomb:flagged;\ninterface api {{\nflags bits {{ {} }}\nflags-bomb: func() -> list<bits>;\n}}\nworld bomb {{ export api; }}",
        names.join(", ")
    );
    // Every flag set in each of 100 000 elements, at 1024: a list at 16.
    let module = r#"(module
        (memory (export "memory") 8)
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 0))
        (func (export "bomb:flagged/api#flags-bomb") (result i32)
            (memory.fill (i32.const 1024) (i32.const 255) (i32.const 400000))
            (i32.store (i32.const 16) (i32.const 1024))
            (i32.store (i32.const 20) (i32.const 100000))
            (i32.const 16)))"#;
    lifted_within_32_mib("flags-bomb", "api.flags-bomb", &wit, module).await;
}

/// A guest-made result, `wit` and its core `module`, called four times
/// under `--max-memory 32MiB` on one host: each call must end as an
/// `isError` naming `--max-memory`, and the host's peak grow by less than
/// 160 MiB over the four (what the call's memory and the lift factor
/// allow), however many host values the result would lift to.
async fn lifted_within_32_mib(name: &str, tool: &str, wit: &str, module: &str) {
    let component = component_of(wit, Some(module));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.wasm"));
    std::fs::write(&path, component).unwrap();
    let args = ["--component", path.to_str().unwrap(), "--max-memory", "32MiB"];
    let host = Host::start(Start { args: args.map(String::from).to_vec(), ..Start::new("demo", &[]) }).await;
    let pid = host.child.id().unwrap();
    let before = crate::harness::proc_kib(pid, "status", "VmHWM:");
    for _ in 0..4 {
        let refused = host.call(tool, no_args()).await.unwrap();
        assert_eq!(refused.is_error, Some(true), "{refused:?}");
        assert!(text_of(&refused).contains("--max-memory"), "{refused:?}");
    }
    let grown = crate::harness::proc_kib(pid, "status", "VmHWM:").saturating_sub(before);
    assert!(grown < 160 << 10, "the host's peak grew by {} MiB", grown >> 10);
}

/// `list<list<string>>`, 2 000 lists that all point at one list of 2 000
/// strings that all point at one 16-byte string: 32 KiB of guest memory,
/// four million host `String`s (about 280 MB) if lifted whole.
#[tokio::test]
async fn a_list_of_lists_of_strings_is_lifted_within_the_calls_memory() {
    let wit = "package bomb:nested;\ninterface api {\nstrings-bomb: func() -> list<list<string>>;\n}\nworld bomb { export api; }";
    let module = r#"(module
        (memory (export "memory") 8)
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 0))
        (func (export "bomb:nested/api#strings-bomb") (result i32) (local $i i32)
            ;; the string, at 200000
            (memory.fill (i32.const 200000) (i32.const 97) (i32.const 16))
            ;; 2000 outer entries at 1024 and 2000 inner ones at 65536
            (loop $fill
                (i32.store (i32.add (i32.const 1024) (i32.mul (local.get $i) (i32.const 8))) (i32.const 65536))
                (i32.store (i32.add (i32.const 1028) (i32.mul (local.get $i) (i32.const 8))) (i32.const 2000))
                (i32.store (i32.add (i32.const 65536) (i32.mul (local.get $i) (i32.const 8))) (i32.const 200000))
                (i32.store (i32.add (i32.const 65540) (i32.mul (local.get $i) (i32.const 8))) (i32.const 16))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br_if $fill (i32.lt_u (local.get $i) (i32.const 2000))))
            (i32.store (i32.const 16) (i32.const 1024))
            (i32.store (i32.const 20) (i32.const 2000))
            (i32.const 16)))"#;
    lifted_within_32_mib("strings-bomb", "api.strings-bomb", wit, module).await;
}

/// `list<option<…<u8>>>`, six options deep (about as deep as a tool's
/// schema may nest), 500 000 elements of all `some`: 3.5 MB of guest
/// memory, 3.5 million boxed host values if lifted whole.
#[tokio::test]
async fn a_list_of_deep_options_is_lifted_within_the_calls_memory() {
    let deep = (0..6).fold("u8".to_string(), |inner, _| format!("option<{inner}>"));
    let wit = format!(
        "package bomb:deep;\ninterface api {{\noptions-bomb: func() -> list<{deep}>;\n}}\nworld bomb {{ export api; }}"
    );
    // Each element is 7 bytes (6 discriminants and the u8), all 1.
    let module = r#"(module
        (memory (export "memory") 64)
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 0))
        (func (export "bomb:deep/api#options-bomb") (result i32)
            (memory.fill (i32.const 1024) (i32.const 1) (i32.const 3500000))
            (i32.store (i32.const 16) (i32.const 1024))
            (i32.store (i32.const 20) (i32.const 500000))
            (i32.const 16)))"#;
    lifted_within_32_mib("options-bomb", "api.options-bomb", &wit, module).await;
}

#[tokio::test]
async fn what_a_result_costs_the_host_to_lift_is_bounded_by_the_calls_memory() {
    // 1 MiB of bytes: about 1.4 MB of base64 either way, within
    // --max-output, but a million `Val`s for wasmtime to lift on the way.
    let data = "BwcH".repeat((1 << 20) / 3);
    let roomy = Host::start(Start::new("plain-types", &[])).await;
    assert_eq!(round_trip(&roomy, "bytes", json!({ "data": data })).await, json!(data));
    let tight = Host::start(Start::new("plain-types", &["--max-memory", "8MiB"])).await;
    let refused = tight.call("bytes", json!({ "data": data })).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "lifted past the call's memory budget");
    assert!(text_of(&refused).contains("--max-memory"), "{refused:?}");
    assert_eq!(round_trip(&tight, "echo", json!({ "text": "after" })).await, json!("after"));
}
