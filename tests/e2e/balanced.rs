//! A fleet on loopback: three `--http` replicas sharing a `--state-key-file`
//! behind HAProxy (round-robin, the configuration in `deploy/haproxy/`),
//! and rmcp's client on protocol 2026-07-28 making calls that pause for
//! approvals and questions. With the client alone and round-robin, every
//! follow-up lands on another replica than the one that asked; each
//! replica's `/metrics` shows it. One replica is killed mid-run and the
//! others go on serving; no call completes twice, and every answer lands
//! on its own call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt as _};
use serde_json::json;
use tokio::process::{Child, Command};

use crate::fleet::get;
use crate::harness::{PATIENCE, TestClient, listening, params, text_of};
use crate::http_limits::HttpHost;

/// How many calls the run makes (`FLEET_CALLS` overrides).
fn calls() -> usize {
    std::env::var("FLEET_CALLS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000)
}

/// HAProxy in the foreground, with `deploy/haproxy/haproxy.cfg`.
pub(crate) struct Balancer {
    child: Child,
    pub(crate) addr: std::net::SocketAddr,
}

impl Balancer {
    /// Starts HAProxy in front of `replicas` (three), on a free port.
    pub(crate) async fn start(replicas: &[&HttpHost]) -> Balancer {
        let haproxy = ["/usr/sbin/haproxy", "/usr/local/sbin/haproxy"]
            .into_iter()
            .map(PathBuf::from)
            .find(|path| path.exists())
            .expect(
                "haproxy is not installed: run scripts/setup.sh --with-node (it installs Debian's haproxy)",
            );
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/haproxy/haproxy.cfg");
        let mut command = Command::new(haproxy);
        command.args(["-db", "-f"]).arg(config).env("MCP_FRONTEND", addr.to_string());
        for (n, replica) in replicas.iter().enumerate() {
            command.env(format!("MCP_REPLICA_{}", n + 1), replica.addr.to_string());
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning haproxy");
        listening(addr, "haproxy").await;
        Balancer { child, addr }
    }
}

impl crate::auth::Reachable for Balancer {
    fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// One replica's counters from its `/metrics`: `name{labels}` → value.
async fn counters(replica: &HttpHost) -> BTreeMap<String, f64> {
    let metrics = get(replica, "/metrics").await;
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    metrics
        .body
        .lines()
        .filter(|line| line.starts_with("mcp_wasm_host_") && line.contains("_total"))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Sums one counter over every replica's metrics.
fn total(all: &[BTreeMap<String, f64>], name: &str) -> f64 {
    all.iter().map(|counters| counters.get(name).copied().unwrap_or(0.0)).sum()
}

#[tokio::test]
async fn three_replicas_behind_haproxy_continue_each_others_paused_calls_and_survive_losing_one() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, "fleet-test-state-key-forty-bytes-at-least!\n").unwrap();
    let grants: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut replicas = Vec::new();
    for grant in &grants {
        let args = ["--state-key-file", key.to_str().unwrap(), "--dir", grant.path().to_str().unwrap()];
        replicas.push(HttpHost::start(&args).await);
    }
    let balancer = Balancer::start(&replicas.iter().collect::<Vec<_>>()).await;
    // reqwest (under rmcp's HTTP client) takes the TLS provider the host uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{}/mcp", balancer.addr));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client =
        TestClient::default().serve_with_lifecycle(transport, lifecycle).await.expect("MCP client start");

    let calls = calls();
    let kill_at = calls * 2 / 5;
    let mut made: BTreeMap<&str, usize> = BTreeMap::new();
    let mut killed = None;
    for n in 0..calls {
        if n == kill_at {
            // Its counts so far, then it is gone without a goodbye.
            let last_words = counters(&replicas[2]).await;
            replicas[2].child.start_kill().unwrap();
            replicas[2].child.wait().await.unwrap();
            killed = Some(last_words);
        }
        // Each call's arguments are its own: an answer that landed on
        // another call would show in the text.
        let (tool, arguments, expected) = match n % 4 {
            0 => (
                "delete_records",
                json!({ "table": format!("t{n}") }),
                format!("deleted every record of t{n}"),
            ),
            1 => ("prune", json!({ "count": n }), format!("pruned {n} snapshots")),
            2 => ("survey", json!({ "questions": 2 }), String::new()),
            _ => ("echo", json!({ "text": format!("call {n}") }), format!("call {n}")),
        };
        let result = tokio::time::timeout(PATIENCE, client.call_tool(params(tool, arguments)))
            .await
            .unwrap_or_else(|_| panic!("call {n} ({tool}) took too long"))
            .unwrap_or_else(|err| panic!("call {n} ({tool}) failed: {err}"));
        let text = text_of(&result);
        if tool == "survey" {
            // Two answers, in the order given, each from its own round.
            let answers: Vec<u64> =
                text.lines().filter_map(|line| line.strip_prefix("answer ")?.parse().ok()).collect();
            assert!(answers.len() == 2 && answers[1] == answers[0] + 1, "call {n}: {text}");
        } else {
            assert_eq!(text, expected, "call {n}");
        }
        *made.entry(tool).or_default() += 1;
    }

    let killed = killed.expect("a replica was killed");
    let served = |counters: &BTreeMap<String, f64>| {
        counters.iter().filter(|(name, _)| name.contains("outcome=\"ok\"")).map(|(_, n)| n).sum::<f64>()
    };
    assert!(served(&killed) > 0.0, "the killed replica had served calls before it died");
    let mut all = vec![killed];
    for replica in &replicas[..2] {
        all.push(counters(replica).await);
    }
    // Every call completed exactly once in the fleet, whatever ran before
    // its questions (the re-run rule: a paused call runs again where its
    // answer lands).
    for (tool, count) in &made {
        let ok = total(&all, &format!("mcp_wasm_host_calls_total{{tool=\"{tool}\",outcome=\"ok\"}}"));
        assert_eq!(ok as usize, *count, "completed calls of {tool}");
    }
    let per_call_pauses = |tool| made.get(tool).copied().unwrap_or(0);
    let follow_ups =
        per_call_pauses("delete_records") + per_call_pauses("prune") + 2 * per_call_pauses("survey");
    let state =
        |result: &str| total(&all, &format!("mcp_wasm_host_request_states_total{{result=\"{result}\"}}"));
    let (elsewhere, same) = (state("resumed-other-replica"), state("resumed-same-replica"));
    eprintln!(
        "fleet: {calls} calls, {follow_ups} follow-ups: {elsewhere} continued on another replica, {same} on the \
         one that asked; sealed {}, refused {}",
        state("sealed"),
        state("refused")
    );
    assert_eq!(state("sealed") as usize, follow_ups);
    assert_eq!((elsewhere + same) as usize, follow_ups);
    assert_eq!(state("refused"), 0.0);
    // Round-robin and one client: a follow-up goes to the next replica.
    // Around the kill, HAProxy's redispatch may send one back where it came from.
    assert!(same <= 4.0, "{same} follow-ups landed on the replica that asked");
    for (replica, grant) in replicas[..2].iter().zip(&grants) {
        let status = get(replica, "/readyz").await;
        assert_eq!(status.status, 200);
        // A call handed off at its last question is still cleaning up on
        // the replica that asked when its follow-up has been answered
        // elsewhere: wait for that replica to be idle.
        let idle = async {
            loop {
                let metrics = get(replica, "/metrics").await.body;
                if metrics.contains("mcp_wasm_host_live_calls 0")
                    && metrics.contains("mcp_wasm_host_live_stores 0")
                {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(PATIENCE, idle).await.expect("every replica went idle");
        assert!(std::fs::read_dir(grant.path()).unwrap().next().is_none(), "a lock outlived its call");
    }
}
