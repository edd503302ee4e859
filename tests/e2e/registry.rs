//! `--component oci://…`: components pulled from a real registry on
//! loopback, pinned by digest, refused when anything does not check out,
//! and cosign signatures verified before a component is loaded.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Host, Start, guest, host_binary, text_of};
use crate::registry_harness::{TestRegistry, cosign_key, sha256};

/// Serve `reference` with the OCI store and compile cache in `cache`.
fn serving(reference: &str, cache: &Path, extra: &[&str]) -> Start {
    let mut args =
        vec!["--component".into(), reference.into(), "--cache-dir".into(), cache.display().to_string()];
    args.extend(extra.iter().map(|arg| arg.to_string()));
    Start { args, ..Start::new("demo", &[]) }
}

/// Runs the host with `args` and no client, expecting it to refuse to
/// start; returns its stderr.
async fn refused(args: &[&str]) -> String {
    // stdin is held open: the protocol is served while components are
    // pulled, and a client that is gone would end the host first.
    let mut child = tokio::process::Command::new(host_binary())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the host stops by itself")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "the host started: {stderr}");
    stderr
}

/// `mcp-wasm-host inspect REFERENCE [--require-signature KEY]` with its
/// cache in `cache`: the listing, or the error it printed.
async fn inspect(reference: &str, key: Option<&Path>, cache: &Path) -> Result<Value, String> {
    let mut command = tokio::process::Command::new(host_binary());
    command.args(["inspect", reference]).env("XDG_CACHE_HOME", cache).stdin(std::process::Stdio::null());
    if let Some(key) = key {
        command.arg("--require-signature").arg(key);
    }
    let output = command.output().await.unwrap();
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// The demo with a custom section appended: a valid component with another digest.
fn altered_demo() -> Vec<u8> {
    let mut bytes = std::fs::read(guest("demo")).unwrap();
    bytes.extend_from_slice(b"\x00\x05\x04note");
    bytes
}

#[tokio::test]
async fn a_component_is_pulled_by_tag_and_by_digest_and_a_pinned_digest_starts_offline() {
    let mut registry = TestRegistry::start().await;
    let digest = registry.push("tools/demo", "1.0", &std::fs::read(guest("demo")).unwrap()).await;
    let cache = tempfile::tempdir().unwrap();
    let by_tag = registry.reference("tools/demo:1.0");
    let by_digest = registry.reference(&format!("tools/demo@{digest}"));

    // A tag is resolved at start, and its digest logged.
    let host = Host::start(serving(&by_tag, cache.path(), &[])).await;
    let resolved = host.stderr.wait_for_event("tag resolved", |e| e.message() == "tag resolved").await;
    assert_eq!(resolved.str("digest"), Some(digest.as_str()));
    let echo = host.call("echo", json!({ "text": "from a registry" })).await.unwrap();
    assert_eq!(text_of(&echo), "from a registry");
    drop(host);

    // With the registry gone, the pinned digest starts from the store...
    registry.stop().await;
    let host = Host::start(serving(&by_digest, cache.path(), &[])).await;
    let found = host.stderr.wait_for_event("served from the store", |e| e.str("digest").is_some()).await;
    assert!(found.message().contains("the registry is not asked"), "{}", found.message());
    assert_eq!(text_of(&host.call("echo", json!({ "text": "offline" })).await.unwrap()), "offline");
    drop(host);

    // ...and the tag cannot be resolved: refused, naming the reference and why.
    let cache_arg = cache.path().display().to_string();
    let err = refused(&["--component", &by_tag, "--cache-dir", &cache_arg]).await;
    assert!(err.contains(&by_tag) && err.contains("cannot reach registry"), "{err}");
}

#[tokio::test]
async fn a_wrong_digest_a_tampered_blob_or_a_bad_reference_is_refused_at_start() {
    let registry = TestRegistry::start().await;
    let wasm = std::fs::read(guest("demo")).unwrap();
    let digest = registry.push("tools/demo", "1.0", &wasm).await;
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().display().to_string();

    // A digest the registry does not have.
    let wrong = registry.reference(&format!("tools/demo@{}", sha256(b"something else")));
    let err = refused(&["--component", &wrong, "--cache-dir", &cache_arg]).await;
    assert!(
        err.contains(&wrong) && err.contains("does not have it") && err.contains("manifest unknown"),
        "{err}"
    );

    // The component's bytes changed in the registry's storage: its digest no longer matches.
    let blob = registry.blob_file(&sha256(&wasm));
    let mut damaged = std::fs::read(&blob).unwrap();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    std::fs::write(&blob, damaged).unwrap();
    let pinned = registry.reference(&format!("tools/demo@{digest}"));
    let err = refused(&["--component", &pinned, "--cache-dir", &cache_arg]).await;
    assert!(err.contains(&pinned) && err.contains("tampered with"), "{err}");
    assert!(std::fs::read_dir(cache.path().join("oci/blobs")).unwrap().next().is_none(), "nothing kept");

    // A manifest larger than any component's needs is refused before it is read whole.
    registry.push_annotated("tools/demo", "fat", &wasm, Some(100 << 10)).await;
    let fat = registry.reference("tools/demo:fat");
    let err = refused(&["--component", &fat, "--cache-dir", &cache_arg]).await;
    assert!(err.contains(&fat) && err.contains("larger than 65536 bytes"), "{err}");

    // A reference that names no registry (it would mean Docker Hub).
    let err = refused(&["--component", "oci://tools/demo:1.0", "--cache-dir", &cache_arg]).await;
    assert!(err.contains("names no registry"), "{err}");
}

/// `--max-component-size` was added as one definition in `config/server.rs`:
/// the flag, and the `[server]` key with no other code, both hold.
#[tokio::test]
async fn a_component_over_max_component_size_is_refused_before_it_is_read() {
    let registry = TestRegistry::start().await;
    let wasm = std::fs::read(guest("demo")).unwrap();
    registry.push("tools/demo", "1.0", &wasm).await;
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().display().to_string();
    let reference = registry.reference("tools/demo:1.0");
    let under = (wasm.len() - 1).to_string();

    let err =
        refused(&["--component", &reference, "--cache-dir", &cache_arg, "--max-component-size", &under])
            .await;
    assert!(err.contains(&reference) && err.contains("more than --max-component-size"), "{err}");
    let kept = std::fs::read_dir(cache.path().join("oci/blobs")).map_or(0, |blobs| blobs.count());
    assert_eq!(kept, 0, "nothing of it is kept");

    // The same bound from the config file's [server].
    let config = cache.path().join("tools.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nmax_component_size = {under}\ncache_dir = \"{cache_arg}\"\n\n\
             [[component]]\noci = \"{reference}\"\n"
        ),
    )
    .unwrap();
    let err = refused(&["--config", &config.display().to_string()]).await;
    assert!(err.contains("more than --max-component-size"), "{err}");

    // At its size it is served.
    let exact = wasm.len().to_string();
    let host = Host::start(serving(&reference, cache.path(), &["--max-component-size", &exact])).await;
    assert_eq!(text_of(&host.call("echo", json!({ "text": "fits" })).await.unwrap()), "fits");
}

#[tokio::test]
async fn a_signed_component_is_loaded_and_unsigned_foreign_or_altered_ones_are_refused() {
    let mut registry = TestRegistry::start().await;
    let keys = tempfile::tempdir().unwrap();
    let (ours, ours_pub) = cosign_key(keys.path(), "ours", 7);
    let (theirs, _) = cosign_key(keys.path(), "theirs", 9);
    let demo = std::fs::read(guest("demo")).unwrap();
    let cache = tempfile::tempdir().unwrap();

    // Signed with our key: loaded, and inspect names the digest and the signer.
    let signed = registry.push("tools/signed", "1", &demo).await;
    registry.sign("tools/signed", &signed, &ours).await;
    let listing =
        inspect(&registry.reference("tools/signed:1"), Some(&ours_pub), cache.path()).await.unwrap();
    assert_eq!(listing["source"]["digest"], signed);
    let signer = listing["source"]["signer"].as_str().unwrap();
    assert!(signer.contains("ours.pub") && signer.contains("SHA256:"), "{signer}");
    assert!(listing["tools"].as_array().unwrap().iter().any(|tool| tool["name"] == "echo"));

    // Unsigned.
    registry.push("tools/unsigned", "1", &demo).await;
    let err =
        inspect(&registry.reference("tools/unsigned:1"), Some(&ours_pub), cache.path()).await.unwrap_err();
    assert!(err.contains("tools/unsigned:1") && err.contains("not signed"), "{err}");

    // Signed by another key.
    let foreign = registry.push("tools/foreign", "1", &demo).await;
    registry.sign("tools/foreign", &foreign, &theirs).await;
    let err =
        inspect(&registry.reference("tools/foreign:1"), Some(&ours_pub), cache.path()).await.unwrap_err();
    assert!(err.contains("does not verify with") && err.contains("ours.pub"), "{err}");

    // Altered after signing: the tag now points at other bytes, and the old
    // signature was copied to the new digest's `.sig` tag.
    let before = registry.push("tools/altered", "1", &demo).await;
    registry.sign("tools/altered", &before, &ours).await;
    let after = registry.push("tools/altered", "1", &altered_demo()).await;
    let payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"x"}},"image":{{"docker-manifest-digest":"{before}"}},"type":"cosign container image signature"}},"optional":null}}"#
    );
    let signature = {
        use base64::Engine as _;
        use p256::ecdsa::signature::Signer as _;
        let signature: p256::ecdsa::Signature = ours.sign(payload.as_bytes());
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    };
    registry.put_signature("tools/altered", &after, payload.into_bytes(), signature).await;
    let err =
        inspect(&registry.reference("tools/altered:1"), Some(&ours_pub), cache.path()).await.unwrap_err();
    assert!(err.contains("changed after signing") && err.contains(&before), "{err}");

    // The serving path refuses the same way, before loading anything.
    let cache_arg = cache.path().display().to_string();
    let key_arg = ours_pub.display().to_string();
    let unsigned = registry.reference("tools/unsigned:1");
    let err =
        refused(&["--component", &unsigned, "--require-signature", &key_arg, "--cache-dir", &cache_arg])
            .await;
    assert!(err.contains("not signed"), "{err}");

    // The verified signature is kept: the pinned digest starts offline, checked again.
    registry.stop().await;
    let pinned = registry.reference(&format!("tools/signed@{signed}"));
    let offline = inspect(&pinned, Some(&ours_pub), cache.path()).await.unwrap();
    assert_eq!(offline["source"]["offline"], true);
    assert!(offline["source"]["signer"].as_str().unwrap().contains("ours.pub"));
}

#[tokio::test]
async fn a_config_file_names_an_oci_component_and_its_key_relative_to_the_file() {
    let registry = TestRegistry::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    let (ours, _) = cosign_key(&dir.path().join("keys"), "cosign", 7);
    let digest = registry.push("tools/configured", "2", &std::fs::read(guest("demo")).unwrap()).await;
    registry.sign("tools/configured", &digest, &ours).await;
    let config = dir.path().join("tools.toml");
    std::fs::write(
        &config,
        format!(
            "[[component]]\noci = \"{}\"\nrequire_signature = \"keys/cosign.pub\"\ntimeout = \"5s\"\n",
            registry.reference("tools/configured:2")
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache").display().to_string();
    let args = ["--config", &config.display().to_string(), "--cache-dir", &cache].map(String::from).to_vec();
    let host = Host::start(Start { args, ..Start::new("demo", &[]) }).await;
    let pulled = host.stderr.wait_for_event("the pull", |e| e.message() == "component pulled").await;
    assert!(pulled.str("signer").unwrap().contains("keys/cosign.pub"), "{pulled}");
    assert_eq!(text_of(&host.call("echo", json!({ "text": "configured" })).await.unwrap()), "configured");

    // `path` and `oci` together is a mistake named at its line.
    std::fs::write(&config, "[[component]]\npath = \"a.wasm\"\noci = \"oci://127.0.0.1:1/x:1\"\n").unwrap();
    let err = refused(&["--config", &config.display().to_string()]).await;
    assert!(err.contains("line 1") && err.contains("both `path` and `oci`"), "{err}");

    // A local file carries no cosign signature: requiring one fails closed.
    let key = dir.path().join("keys/cosign.pub").display().to_string();
    let err =
        refused(&["--component", &guest("demo").display().to_string(), "--require-signature", &key]).await;
    assert!(err.contains("can only be required of an oci:// component"), "{err}");
}
