//! Skills on the server (issue 53, item 3): `McpServerBuilder::skills` serves a folder of
//! skills to rmcp's own client over an in-process duplex; what breaks the extension's rules
//! (a link that climbs out of the folder, a skill past the file limit, a name that is not its
//! folder's) is left out, and the rest is served. The conformance suite's Skills scenarios run
//! in `mcp_conformance.rs`.
#![cfg(feature = "skills")]

use std::sync::Arc;

use goondan_runtime::ToolRegistry;
use goondan_runtime::mcp::server::McpServer;
use rmcp::model::{GetSkillRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use sha2::{Digest, Sha256};

async fn connect(server: McpServer) -> RunningService<RoleClient, ()> {
    let (client_io, server_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nSteps.\n")
}

fn digest(text: &str) -> String {
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[tokio::test]
async fn mcp_server_serves_a_skills_folder_and_leaves_out_what_breaks_the_extension_s_rules() {
    let root = tempfile::tempdir().unwrap();
    let skills = root.path().join("skills");
    let notes = skill_md("release-notes", "Writes a release's notes.");
    write(&skills.join("release-notes/SKILL.md"), &notes);
    write(
        &skills.join("release-notes/templates/entry.md"),
        "- {title}\n",
    );
    // A skill holding a link out of the folder, to a secret beside it: left out whole.
    write(&root.path().join("secret.txt"), "the secret");
    write(
        &skills.join("linked/SKILL.md"),
        &skill_md("linked", "Holds a link."),
    );
    std::os::unix::fs::symlink(
        root.path().join("secret.txt"),
        skills.join("linked/secret.md"),
    )
    .unwrap();
    // Past the extension's limit of 512 files: the whole skill is left out.
    write(
        &skills.join("huge/SKILL.md"),
        &skill_md("huge", "Too many files."),
    );
    for i in 0..520 {
        write(&skills.join(format!("huge/parts/{i}.md")), "x");
    }
    // A name that is not its folder's.
    write(
        &skills.join("misnamed/SKILL.md"),
        &skill_md("other-name", "Wrong name."),
    );

    let server = McpServer::builder(Arc::new(ToolRegistry::new()))
        .skills(&skills)
        .build()
        .unwrap();
    let client = connect(server).await;
    let listed = client.list_all_skills().await.unwrap();
    let listed: Vec<Value> = listed
        .iter()
        .map(|s| serde_json::to_value(s).unwrap())
        .collect();
    let uris: Vec<&str> = listed.iter().filter_map(|s| s["uri"].as_str()).collect();
    assert_eq!(uris, ["skill://release-notes/SKILL.md"], "{listed:?}");

    // Each file with its size and digest.
    let entry = &listed[0];
    assert_eq!(entry["frontmatter"]["name"], "release-notes");
    let files: Vec<(&str, &str, u64)> = entry["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["uri"].as_str().unwrap(),
                r["digest"].as_str().unwrap(),
                r["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        files.contains(&(
            "skill://release-notes/SKILL.md",
            digest(&notes).as_str(),
            notes.len() as u64
        )),
        "{files:?}"
    );
    assert!(
        files.iter().any(
            |(uri, _, size)| *uri == "skill://release-notes/templates/entry.md" && *size == 10
        ),
        "{files:?}"
    );

    // A file is read with `resources/read`; a skill left out, its link and a climb out are
    // not found.
    let read = client
        .read_resource(ReadResourceRequestParams::new(
            "skill://release-notes/SKILL.md",
        ))
        .await
        .unwrap();
    let text = match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text, notes);
    for uri in [
        "skill://linked/SKILL.md",
        "skill://linked/secret.md",
        "skill://release-notes/../../secret.txt",
        "skill://huge/SKILL.md",
    ] {
        let refused = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await;
        assert!(refused.is_err(), "{uri}: {refused:?}");
    }
    // `skills/get` answers one entry, and an unknown skill is invalid params.
    let got = client
        .get_skill(GetSkillRequestParams::new("skill://release-notes/SKILL.md"))
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(&got.skill).unwrap(), listed[0]);
    let unknown = client
        .get_skill(GetSkillRequestParams::new("skill://nothing/SKILL.md"))
        .await;
    assert!(format!("{unknown:?}").contains("-32602"), "{unknown:?}");
    client.cancel().await.unwrap();
}

/// A folder that cannot be read is an error of the server's build, not a server without skills.
#[test]
fn mcp_server_with_a_skills_folder_that_is_missing_does_not_build() {
    let missing = tempfile::tempdir().unwrap().path().join("nothing-here");
    let built = McpServer::builder(Arc::new(ToolRegistry::new()))
        .skills(&missing)
        .build();
    let error = built.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        error.starts_with("the skills cannot be served") && error.contains("nothing-here"),
        "{error}"
    );
}

/// The bridge reads a server's skills as a host must: listed without a file read, a skill's
/// `SKILL.md` and each file read when asked and checked against the listing, and only files
/// the skill lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bridge_lists_loads_and_reads_a_server_s_skills_checked_against_its_listing() {
    use goondan_runtime::mcp::client::{
        McpExtension, McpExtensionConfig, McpServerConfig, SkillContent,
    };
    let root = tempfile::tempdir().unwrap();
    let notes = skill_md("release-notes", "Writes a release's notes.");
    write(&root.path().join("release-notes/SKILL.md"), &notes);
    write(
        &root.path().join("release-notes/templates/entry.md"),
        "- {title}\n",
    );
    let server = McpServer::builder(Arc::new(ToolRegistry::new()))
        .skills(root.path())
        .build()
        .unwrap();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let config = McpExtensionConfig::new("docs").server(McpServerConfig::http("team", http.url()));
    let mcp = McpExtension::connect(config).await.unwrap();

    let skills = mcp.skills().await;
    assert_eq!(skills.len(), 1, "{skills:?}");
    let skill = &skills[0];
    assert_eq!(
        (
            skill.server.as_str(),
            skill.name.as_str(),
            skill.uri.as_str()
        ),
        ("team", "release-notes", "skill://release-notes/SKILL.md")
    );
    assert_eq!(skill.description, "Writes a release's notes.");
    assert_eq!(skill.files.len(), 2, "{skill:?}");

    let loaded = mcp.load_skill("team", &skill.uri).await.unwrap();
    assert_eq!(loaded, notes);
    let file = mcp
        .read_skill_file(
            "team",
            &skill.uri,
            "skill://release-notes/templates/entry.md",
        )
        .await
        .unwrap();
    assert_eq!(file, SkillContent::Text("- {title}\n".into()));
    let outside = mcp
        .read_skill_file("team", &skill.uri, "skill://release-notes/../secret")
        .await
        .unwrap_err();
    assert_eq!(outside.code(), "E_TOOL_INVALID_ARGS", "{outside:?}");
    let unknown = mcp
        .load_skill("team", "skill://nothing/SKILL.md")
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), "E_TOOL_INVALID_ARGS", "{unknown:?}");
    let no_server = mcp.load_skill("nobody", &skill.uri).await.unwrap_err();
    assert!(
        no_server.message().contains("no server `nobody`"),
        "{no_server:?}"
    );
    mcp.shutdown();
    http.shutdown().await.unwrap();
}
