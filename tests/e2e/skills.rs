//! Skills (SEP-2640) through rmcp's client: a component's `skill://` files
//! listed with digests that match what `resources/read` returns, one skill
//! fetched, its directories walked; and the hostile component's bad skills
//! left out at load, each for its reason, while its good one is served from
//! the copy hashed at load even though the guest would answer differently
//! now. The conformance suite's `sep-2640-skills-*` scenarios run in
//! tests/conformance.

use rmcp::ServiceError;
use rmcp::model::{
    GetSkillRequestParams, ReadResourceDirectoryRequestParams, ResourceContents, SkillResources,
};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::harness::{Host, Start};
use crate::offers::read;

const SKILL: &str = "skill://release-notes/SKILL.md";
const STYLE: &str = "skill://release-notes/references/STYLE.md";

/// The bytes `resources/read` returns for `uri`.
async fn read_bytes(host: &Host, uri: &str) -> Vec<u8> {
    let read = host.client.peer().read_resource(read(uri)).await.unwrap();
    match &read.contents[..] {
        [ResourceContents::TextResourceContents { text, .. }] => text.clone().into_bytes(),
        other => panic!("not one text: {other:?}"),
    }
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The JSON-RPC error code of a failed request.
fn code(err: ServiceError) -> i32 {
    match err {
        ServiceError::McpError(err) => err.code.0,
        other => panic!("not an MCP error: {other:?}"),
    }
}

#[tokio::test]
async fn a_components_skill_is_listed_with_digests_of_what_reads_return() {
    let host = Host::start(Start::new("everything", &[])).await;
    let peer = host.client.peer();
    let capabilities = serde_json::to_value(&peer.peer_info().unwrap().capabilities).unwrap();
    assert_eq!(
        capabilities["extensions"]["io.modelcontextprotocol/skills"],
        json!({ "directoryRead": true }),
        "{capabilities}"
    );

    let skills = peer.list_all_skills().await.unwrap();
    assert_eq!(skills.len(), 1, "{skills:?}");
    let skill = &skills[0];
    assert_eq!(skill.uri, SKILL);
    let frontmatter = serde_json::to_value(&skill.frontmatter).unwrap();
    assert_eq!(frontmatter["name"], "release-notes");
    assert_eq!(frontmatter["license"], "Apache-2.0", "every field as written: {frontmatter}");
    assert_eq!(frontmatter["metadata"], json!({ "audience": "maintainers" }));
    let SkillResources::Files(files) = &skill.resources else { panic!("not a manifest: {skill:?}") };
    let uris: Vec<&str> = files.iter().map(|file| file.uri.as_str()).collect();
    assert_eq!(uris, [SKILL, STYLE]);
    for file in files {
        let bytes = read_bytes(&host, &file.uri).await;
        assert_eq!((digest(&bytes), bytes.len() as u64), (file.digest.clone(), file.size), "{}", file.uri);
    }

    // `resources/list` describes the SKILL.md by its frontmatter.
    let resources = peer.list_all_resources().await.unwrap();
    let manifest = resources.iter().find(|resource| resource.uri == SKILL).unwrap();
    assert_eq!(manifest.name, "release-notes");
    assert_eq!(manifest.description.as_deref(), frontmatter["description"].as_str());
    assert_eq!(manifest.mime_type.as_deref(), Some("text/markdown"));

    let got = peer.get_skill(GetSkillRequestParams::new(SKILL)).await.unwrap();
    assert_eq!(&got.skill, skill);
    let unknown = peer.get_skill(GetSkillRequestParams::new("skill://nothing/SKILL.md")).await.unwrap_err();
    assert_eq!(code(unknown), -32602);

    let root = peer
        .read_resource_directory(ReadResourceDirectoryRequestParams::new("skill://release-notes"))
        .await
        .unwrap();
    let children: Vec<(&str, Option<&str>)> =
        root.resources.iter().map(|child| (child.uri.as_str(), child.mime_type.as_deref())).collect();
    assert_eq!(
        children,
        [(SKILL, Some("text/markdown")), ("skill://release-notes/references", Some("inode/directory"))]
    );
    let below = peer
        .read_resource_directory(ReadResourceDirectoryRequestParams::new("skill://release-notes/references"))
        .await
        .unwrap();
    assert_eq!(below.resources.len(), 1);
    assert_eq!((below.resources[0].uri.as_str(), below.resources[0].size), (STYLE, Some(files[1].size)));
    let not_a_directory =
        peer.read_resource_directory(ReadResourceDirectoryRequestParams::new(SKILL)).await.unwrap_err();
    assert_eq!(code(not_a_directory), -32602);
}

/// The hostile component's skills: a name that is not its directory's, an
/// alias bomb in the frontmatter, a file whose read fails, a name against
/// the naming rules and files past the budget are each left out with a log
/// line naming why; the component loads, and its one good skill is served
/// from the copy hashed at load (its `now.txt` would differ at every read).
#[tokio::test]
async fn bad_skills_are_left_out_and_a_good_one_is_served_as_hashed() {
    let host = Host::start(Start::new("hostile", &[])).await;
    let peer = host.client.peer();
    let skills = peer.list_all_skills().await.unwrap();
    let uris: Vec<&str> = skills.iter().map(|skill| skill.uri.as_str()).collect();
    assert_eq!(uris, ["skill://fine/SKILL.md"]);
    let SkillResources::Files(files) = &skills[0].resources else { panic!("{skills:?}") };
    let now = files.iter().find(|file| file.uri == "skill://fine/now.txt").unwrap();
    for _ in 0..2 {
        let bytes = read_bytes(&host, &now.uri).await;
        assert_eq!(digest(&bytes), now.digest, "read after read, the bytes hashed at load");
    }

    for (skill, reason) in [
        ("skill://misnamed/SKILL.md", "names it `other`"),
        ("skill://alias-bomb/SKILL.md", "expands past"),
        ("skill://unreadable/SKILL.md", "its read failed: gone"),
        ("skill://bad--name/SKILL.md", "Agent Skills rules"),
        ("skill://too-big/SKILL.md", "the files of one component's skills"),
    ] {
        let left_out = host
            .stderr
            .wait_for_event(skill, |event| {
                event.message() == "skill left out" && event.str("skill") == Some(skill)
            })
            .await;
        let why = left_out.str("reason").unwrap_or_default();
        assert!(why.contains(reason), "{skill}: {why}");
    }
    // Their files are still plain resources of the component.
    let misnamed = read_bytes(&host, "skill://misnamed/SKILL.md").await;
    assert!(misnamed.starts_with(b"---\nname: other\n"), "{}", String::from_utf8_lossy(&misnamed));
}
