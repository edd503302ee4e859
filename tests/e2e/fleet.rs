//! Running behind a load balancer: `/healthz`, `/readyz` and `/metrics`
//! beside `/mcp`, and a graceful drain on SIGTERM — readiness fails at
//! once, new calls get `503` with `Retry-After`, calls in flight finish
//! (up to `--drain-timeout`, then they are stopped and cleaned up), and the
//! process exits 0. And `deploy/` (the Containerfile, the Kubernetes
//! manifests) checked against the binary's flags.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use mcp_wasm_host::cli::{Cli, ServeArgs};
use serde_json::json;
use tokio::net::TcpStream;

use crate::harness::PATIENCE;
use crate::http_limits::HttpHost;

/// What came back for one GET.
pub(crate) struct Got {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) body: String,
}

/// `GET path` on a new connection, with a Host header no MCP check would
/// accept (as a kubelet probe names the pod's address).
pub(crate) async fn get(host: &HttpHost, path: &str) -> Got {
    let stream = TcpStream::connect(host.addr).await.expect("connecting to the host");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("HTTP handshake");
    tokio::spawn(connection);
    let request =
        hyper::Request::get(path).header("host", "10.1.2.3:8080").body(Empty::<Bytes>::new()).unwrap();
    let response = tokio::time::timeout(PATIENCE, sender.send_request(request))
        .await
        .expect("the host answered in time")
        .expect("an HTTP response");
    let status = response.status().as_u16();
    let content_type =
        response.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let body = response.into_body().collect().await.expect("a readable body").to_bytes();
    Got { status, content_type, body: String::from_utf8_lossy(&body).into_owned() }
}

/// Sends SIGTERM to the host.
pub(crate) fn terminate(host: &HttpHost) {
    use rustix::process::{Pid, Signal, kill_process};
    let pid = Pid::from_raw(i32::try_from(host.pid()).unwrap()).expect("a live child's pid");
    kill_process(pid, Signal::TERM).expect("SIGTERM reaches the host");
}

/// Waits for the host to exit; returns its exit code.
pub(crate) async fn exit_code(host: &mut HttpHost) -> Option<i32> {
    let status = tokio::time::timeout(PATIENCE, host.child.wait())
        .await
        .expect("the host exited in time")
        .expect("waiting for the host");
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(signal) = status.signal() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        panic!("the host was killed by signal {signal}:\n{}", host.stderr.dump());
    }
    status.code()
}

#[tokio::test]
async fn health_readiness_and_metrics_answer_and_metrics_count_calls_by_tool_and_outcome() {
    let host = HttpHost::start(&[]).await;
    let health = get(&host, "/healthz").await;
    assert_eq!(health.status, 200, "{}", health.body);
    let ready = get(&host, "/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.body);

    let session = host.open_session(json!({})).await;
    for id in 1..=2 {
        let echoed = host
            .request(&session, id, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }))
            .await;
        assert_eq!(echoed.answer(id)["result"]["isError"], false, "{echoed:?}");
    }
    let counted = host
        .request(
            &session,
            3,
            "tools/call",
            json!({ "name": "countdown", "arguments": { "steps": 1, "step_ms": 1, "quiet": true } }),
        )
        .await;
    assert_eq!(counted.answer(3)["result"]["isError"], false, "{counted:?}");

    let metrics = get(&host, "/metrics").await;
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    assert!(metrics.content_type.starts_with("application/openmetrics-text"), "{}", metrics.content_type);
    let text = &metrics.body;
    assert!(text.contains(r#"mcp_wasm_host_calls_total{tool="echo",outcome="ok"} 2"#), "{text}");
    assert!(text.contains(r#"mcp_wasm_host_calls_total{tool="countdown",outcome="ok"} 1"#), "{text}");
    assert!(text.contains(r#"mcp_wasm_host_call_duration_seconds_count{tool="echo"} 2"#), "{text}");
    assert!(text.contains("mcp_wasm_host_sessions 1"), "{text}");
    assert!(text.contains("mcp_wasm_host_live_calls 0"), "{text}");
    assert!(text.contains("mcp_wasm_host_draining 0"), "{text}");
    assert!(text.contains("# TYPE mcp_wasm_host_stop_latency_seconds histogram"), "{text}");
    // OpenTelemetry's MCP metrics, beside the host's own: each request by
    // method and tool, and each session once it ends.
    let operations = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",network_transport="tcp",gen_ai_tool_name="echo",mcp_protocol_version="#;
    assert!(text.lines().any(|line| line.starts_with(operations) && line.ends_with(" 2")), "{text}");
    assert!(text.contains("mcp_server_session_duration_seconds_count 0"), "{text}");
    assert!((200..300).contains(&host.close_session(&session).await));
    let text = get(&host, "/metrics").await.body;
    assert!(text.contains("mcp_server_session_duration_seconds_count 1"), "the closed session: {text}");
    // A refused call is counted with its error.
    let session = host.open_session(json!({})).await;
    host.request(&session, 1, "tools/call", json!({ "name": "echo", "arguments": { "text": 5 } })).await;
    let text = get(&host, "/metrics").await.body;
    assert!(
        text.lines().any(|line| line.starts_with("mcp_server_operation_duration_seconds_count{")
            && line.contains(r#"error_type="-32602""#)
            && line.ends_with(" 1")),
        "{text}"
    );
    // Not found stays not found; MCP itself still checks the Host header.
    assert_eq!(get(&host, "/nothing").await.status, 404);
}

#[tokio::test]
async fn on_sigterm_new_calls_get_503_while_the_running_call_finishes_and_the_host_exits_0() {
    let mut host = HttpHost::start(&["--drain-timeout", "30s"]).await;
    let session = host.open_session(json!({})).await;
    // About 1.5 s of work: long enough to drain around, short enough to wait for.
    let slow = json!({ "name": "countdown", "arguments": { "steps": 15, "step_ms": 100, "quiet": true } });
    let (finished, ()) = tokio::join!(host.request(&session, 1, "tools/call", slow), async {
        host.stderr.wait_for_event("the slow call to start", |e| e.message() == "call started").await;
        terminate(&host);
        host.stderr
            .wait_for_event("the host to start draining", |e| e.message() == "draining: refusing new calls")
            .await;
        let ready = get(&host, "/readyz").await;
        assert_eq!(ready.status, 503, "{}", ready.body);
        assert_eq!(get(&host, "/healthz").await.status, 200);

        let refused = host
            .send(Some(&session), &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "echo", "arguments": { "text": "late" } } }))
            .await;
        assert_eq!(refused.status(), 503);
        let retry = refused.headers().get("retry-after").expect("a Retry-After header");
        assert!(retry.to_str().unwrap().parse::<u64>().is_ok(), "{retry:?}");
        let body = refused.into_body().collect().await.unwrap().to_bytes();
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["id"], 2, "{error}");
        assert!(error["error"]["message"].as_str().unwrap().contains("draining"), "{error}");
        // A new session is refused too.
        assert_eq!(host.initialize(json!({})).await.status, 503);
        let metrics = get(&host, "/metrics").await;
        assert!(metrics.body.contains("mcp_wasm_host_draining 1"), "{}", metrics.body);
        assert!(metrics.body.contains("mcp_wasm_host_live_calls 1"), "{}", metrics.body);
    });
    let result = &finished.answer(1)["result"];
    assert_eq!(result["isError"], false, "{finished:?}");
    assert_eq!(result["content"][0]["text"], "counted down from 15", "{finished:?}");
    assert_eq!(exit_code(&mut host).await, Some(0), "{}", host.stderr.dump());
    let ended = host.stderr.wait_for_event("the call's end", |e| e.is_call_ended("countdown")).await;
    assert_eq!(ended.str("outcome"), Some("ok"), "{ended}");
    assert!(ended.str("stop_reason").is_none(), "{ended}");
    host.stderr
        .wait_for_event("the drain to end", |e| e.message() == "drained: every call has finished")
        .await;
}

#[tokio::test]
async fn a_call_longer_than_the_drain_timeout_is_stopped_and_cleaned_up() {
    let mut host = HttpHost::start(&["--drain-timeout", "300ms"]).await;
    let session = host.open_session(json!({})).await;
    let endless = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "wait_for_cancel", "arguments": {} } });
    // Only the response head: the stream ends (or breaks) when the host stops the call.
    let _stream = host.send(Some(&session), &endless).await;
    host.stderr.wait_for_event("the call to start", |e| e.message() == "call started").await;
    let started = std::time::Instant::now();
    terminate(&host);
    assert_eq!(exit_code(&mut host).await, Some(0), "{}", host.stderr.dump());
    assert!(started.elapsed() >= Duration::from_millis(300), "stopped before --drain-timeout");
    let ended = host.stderr.wait_for_event("the call's end", |e| e.is_call_ended("wait_for_cancel")).await;
    assert_eq!(ended.str("outcome"), Some("stopped"), "{ended}");
    assert_eq!(ended.str("stop_reason"), Some("shutdown"), "{ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    host.stderr
        .wait_for_event("the drain timeout", |e| {
            e.message() == "drain timeout (--drain-timeout); stopping the calls left"
        })
        .await;
}

// ---- Deploying: deploy/ against the binary's flags ----

/// A file in `deploy/`.
fn deploy_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The JSON-style list after `key` (on one line, or continued with `\`).
fn list_after(text: &str, key: &str) -> Vec<String> {
    let joined = text.replace("\\\n", " ");
    let line = joined
        .lines()
        .map(str::trim)
        .find_map(|line| line.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` line"));
    serde_json::from_str(line.trim()).unwrap_or_else(|err| panic!("`{key}` is not a JSON-style list: {err}"))
}

/// The number after `key` on its first line.
fn number_after(text: &str, key: &str) -> u64 {
    let line = text.lines().map(str::trim).find_map(|line| line.strip_prefix(key));
    let value = line.unwrap_or_else(|| panic!("no `{key}` line")).trim().trim_matches('"');
    value.parse().unwrap_or_else(|err| panic!("`{key}` {value:?}: {err}"))
}

/// The text after `key` on its first line.
fn text_after(text: &str, key: &str) -> String {
    let line = text.lines().map(str::trim).find_map(|line| line.strip_prefix(key));
    line.unwrap_or_else(|| panic!("no `{key}` line")).trim().trim_matches('"').to_string()
}

/// Each probe of the Deployment: its `(path, port)`.
fn probes(deployment: &str) -> BTreeMap<String, (String, String)> {
    let mut found: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut current: Option<(String, usize)> = None;
    for line in deployment.lines() {
        let (indent, trimmed) = (line.len() - line.trim_start().len(), line.trim());
        if let Some(name) = trimmed.strip_suffix("Probe:") {
            current = Some((name.to_string(), indent));
            continue;
        }
        let Some((name, at)) = &current else { continue };
        if indent <= *at {
            current = None;
        } else if let Some(path) = trimmed.strip_prefix("path:") {
            found.entry(name.clone()).or_default().0 = path.trim().to_string();
        } else if let Some(port) = trimmed.strip_prefix("port:") {
            found.entry(name.clone()).or_default().1 = port.trim().to_string();
        }
    }
    found
}

/// What the arguments `args` make the binary do.
fn serve_args(args: &[String]) -> ServeArgs {
    let argv = std::iter::once("mcp-wasm-host".to_string()).chain(args.iter().cloned());
    Cli::parse_args(argv).unwrap_or_else(|err| panic!("the binary refuses {args:?}: {err}")).serve
}

#[test]
fn the_kubernetes_manifests_probe_the_paths_and_port_the_binary_serves() {
    let deployment = deploy_file("kubernetes/deployment.yaml");
    let args = serve_args(&list_after(&deployment, "args:"));
    let addr = args.server.http.expect("the Deployment serves --http");
    assert!(addr.ip().is_unspecified(), "--http {addr} cannot be reached from outside the pod");
    assert_eq!(number_after(&deployment, "containerPort:"), u64::from(addr.port()));
    assert!(deployment.contains("- name: http\n              containerPort:"), "the port is named `http`");
    let probes = probes(&deployment);
    let want = |path: &str| (path.to_string(), "http".to_string());
    assert_eq!(probes.get("liveness"), Some(&want("/healthz")), "{probes:?}");
    assert_eq!(probes.get("startup"), Some(&want("/healthz")), "{probes:?}");
    assert_eq!(probes.get("readiness"), Some(&want("/readyz")), "{probes:?}");
    assert_eq!(number_after(&deployment, "prometheus.io/port:"), u64::from(addr.port()));
    assert!(deployment.contains("prometheus.io/path: /metrics"));
    // The pod is killed only after its drain could have finished.
    let grace = number_after(&deployment, "terminationGracePeriodSeconds:");
    let pre_stop = number_after(&deployment, "seconds:");
    assert!(grace > pre_stop + args.server.drain_timeout.as_secs() + 1, "grace {grace} s is too short");

    // Every pod reads the same state key, from a Secret only it can read.
    let key = args.server.state_key_file.expect("the Deployment seals paused calls (--state-key-file)");
    let mount = text_after(&deployment, "mountPath:");
    assert!(key.starts_with(&mount), "--state-key-file {} is not under the mount {mount}", key.display());
    assert!(deployment.contains("secretName: mcp-wasm-host-state-key\n            defaultMode: 0400"));

    // Auth is on, its issuer and resource from the environment, filled
    // from the ConfigMap in auth.yaml; TLS ends in front of the pod.
    assert!(args.server.behind_tls_proxy, "the Deployment serves auth beyond loopback without TLS");
    let auth = deploy_file("kubernetes/auth.yaml");
    for (flag, var, key) in [
        (&args.auth.auth_issuer, "MCP_AUTH_ISSUER", "issuer"),
        (&args.auth.auth_resource, "MCP_AUTH_RESOURCE", "resource"),
    ] {
        assert_eq!(flag.as_deref(), Some(format!("$({var})").as_str()));
        let env = format!(
            "- name: {var}\n              valueFrom:\n                configMapKeyRef:\n                  \
             name: mcp-wasm-host-auth\n                  key: {key}"
        );
        assert!(deployment.contains(&env), "{var} is not read from the ConfigMap's `{key}`");
        assert!(text_after(&auth, &format!("{key}:")).starts_with("https://"), "auth.yaml `{key}`");
    }
    assert!(auth.contains("name: mcp-wasm-host-auth"));

    let service = deploy_file("kubernetes/service.yaml");
    assert!(service.contains("targetPort: http"), "{service}");
    let kustomization = deploy_file("kubernetes/kustomization.yaml");
    for manifest in ["auth.yaml", "deployment.yaml", "service.yaml", "pdb.yaml", "hpa.yaml"] {
        assert!(kustomization.contains(&format!("- {manifest}")), "{manifest} is not in kustomization.yaml");
        // What selects pods selects these pods.
        let text = deploy_file(&format!("kubernetes/{manifest}"));
        let selects = text.contains("selector:");
        assert!(!selects || text.contains("app.kubernetes.io/name: mcp-wasm-host"), "{manifest}");
    }

    // The image serves the same port and has the components both name.
    let containerfile = deploy_file("Containerfile");
    let default_args = serve_args(&list_after(&containerfile, "CMD"));
    assert_eq!(default_args.server.http.map(|addr| addr.port()), Some(addr.port()));
    assert_eq!(number_after(&containerfile, "EXPOSE"), u64::from(addr.port()));
    for component in args.components.iter().chain(&default_args.components) {
        let installed = format!("/out{}", component.display());
        assert!(containerfile.contains(&installed), "the image has no {}", component.display());
    }
    assert!(containerfile.contains("USER 65532"), "the image runs as root");
}
