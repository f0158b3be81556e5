//! The skills of bridged servers (the MCP Skills extension, SEP-2640), read as a host must:
//! listed only when asked, a skill's `SKILL.md` read only when the skill is loaded, each file
//! read only when asked for, and every file checked against the entry the server listed (its
//! size, its sha256 digest and, for `SKILL.md`, its front matter) before anyone sees it. A file
//! that does not match is refused with [`E_MCP_SKILL_MISMATCH`], and nothing more of that skill
//! is read for the request.

use base64::Engine as _;
use rmcp::RoleClient;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use rmcp::service::Peer;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::outcome::remote_error;
use crate::tools::error::ToolError;

/// A skill file that does not match its server's listing (size, digest or front matter), or a
/// listing a host cannot check.
pub const E_MCP_SKILL_MISMATCH: &str = "E_MCP_SKILL_MISMATCH";

/// The most skills taken of one server's listing.
pub const MAX_SKILLS: usize = 256;
/// The largest skill file read, in bytes: the extension's limit of one skill's total size.
pub const MAX_SKILL_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One skill a bridged server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgedSkill {
    /// The server's name in the extension's configuration.
    pub server: String,
    /// The URI of its `SKILL.md` (`skill://<path>/SKILL.md`).
    pub uri: String,
    /// Its front matter's `name`.
    pub name: String,
    /// Its front matter's `description`.
    pub description: String,
    /// Its files (the `SKILL.md` included), as listed: URI, size and digest.
    pub files: Vec<SkillFile>,
}

/// One file of a skill, as its server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// `skill://<path>/<file>`.
    pub uri: String,
    /// Its size in bytes.
    pub size: u64,
    /// `sha256:<hex>`.
    pub digest: String,
}

/// A skill file read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillContent {
    /// UTF-8 text.
    Text(String),
    /// Anything else.
    Bytes(Vec<u8>),
}

fn mismatch(server: &str, message: String) -> ToolError {
    ToolError::new(message)
        .with_code(E_MCP_SKILL_MISMATCH)
        .with_suggestion(format!(
            "the skill served by `{server}` changed or is corrupt: do not use it; list the skills again later"
        ))
}

/// The skill entry `value` (a `skills/list` or `skills/get` entry as JSON) of `server`, if it
/// has what a host needs: its URI, a name and a list of files.
fn entry(server: &str, value: &Value) -> Option<(BridgedSkill, Value)> {
    let uri = value.get("uri")?.as_str()?.to_owned();
    let frontmatter = value.get("frontmatter")?.clone();
    let text = |key: &str| {
        frontmatter
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let files = value
        .get("resources")?
        .as_array()?
        .iter()
        .filter_map(|r| {
            Some(SkillFile {
                uri: r.get("uri")?.as_str()?.to_owned(),
                size: r.get("size")?.as_u64()?,
                digest: r.get("digest")?.as_str()?.to_owned(),
            })
        })
        .collect();
    let skill = BridgedSkill {
        server: server.to_owned(),
        name: text("name"),
        description: text("description"),
        uri,
        files,
    };
    Some((skill, frontmatter))
}

/// The skills `peer` lists, at most [`MAX_SKILLS`]; an entry a host cannot check is left out
/// with a warning.
pub(crate) async fn list(
    server: &str,
    peer: &Peer<RoleClient>,
) -> Result<Vec<BridgedSkill>, ToolError> {
    let listed = peer
        .list_all_skills()
        .await
        .map_err(|e| remote_error(server, "skills/list", &e.to_string()))?;
    let mut skills = Vec::new();
    for value in listed.iter().filter_map(|s| serde_json::to_value(s).ok()) {
        match entry(server, &value) {
            Some((skill, _)) => skills.push(skill),
            None => tracing::warn!(
                target: "goondan::mcp",
                server,
                "a skill entry without a URI, front matter or a list of files is left out"
            ),
        }
        if skills.len() == MAX_SKILLS {
            break;
        }
    }
    Ok(skills)
}

/// The entry of the skill `uri` in `peer`'s listing now (`skills/list`), and its front
/// matter: the entry a host holds and checks the skill's files against.
async fn get(
    server: &str,
    peer: &Peer<RoleClient>,
    uri: &str,
) -> Result<(BridgedSkill, Value), ToolError> {
    let listed = peer
        .list_all_skills()
        .await
        .map_err(|e| remote_error(server, "skills/list", &e.to_string()))?;
    let value = listed
        .iter()
        .filter_map(|s| serde_json::to_value(s).ok())
        .find(|v| v.get("uri").and_then(Value::as_str) == Some(uri))
        .ok_or_else(|| {
            ToolError::new(format!("the server `{server}` lists no skill `{uri}`"))
                .with_code(crate::tools::error::codes::INVALID_ARGS)
                .with_suggestion("list the skills again and load one of them")
        })?;
    entry(server, &value).ok_or_else(|| {
        mismatch(
            server,
            format!("the skill `{uri}` is listed without the files a host must check"),
        )
    })
}

/// Loads the skill `uri` of `peer`: its `SKILL.md`, read and checked against its listed
/// entry (size, digest, front matter).
pub(crate) async fn load(
    server: &str,
    peer: &Peer<RoleClient>,
    uri: &str,
) -> Result<String, ToolError> {
    let (skill, frontmatter) = get(server, peer, uri).await?;
    let Some(listed) = skill.files.iter().find(|f| f.uri == skill.uri) else {
        return Err(mismatch(
            server,
            format!("the skill `{uri}` does not list its own SKILL.md"),
        ));
    };
    let bytes = read_checked(server, peer, listed).await?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(mismatch(server, format!("`{uri}` is not UTF-8 text")));
    };
    let found = front_matter(&text).ok_or_else(|| {
        mismatch(
            server,
            format!("`{uri}` does not begin with a YAML front matter"),
        )
    })?;
    if found != frontmatter {
        return Err(mismatch(
            server,
            format!("the front matter of `{uri}` is not the one the server listed"),
        ));
    }
    Ok(text)
}

/// Reads `file` of the skill `skill` of `peer`, checked against the entry. Only a file the
/// skill lists can be read.
pub(crate) async fn read(
    server: &str,
    peer: &Peer<RoleClient>,
    skill: &str,
    file: &str,
) -> Result<SkillContent, ToolError> {
    let (entry, _) = get(server, peer, skill).await?;
    let Some(listed) = entry.files.iter().find(|f| f.uri == file) else {
        return Err(
            ToolError::new(format!("`{file}` is not a file of the skill `{skill}`"))
                .with_code(crate::tools::error::codes::INVALID_ARGS)
                .with_suggestion(format!(
                    "read one of its files: {}",
                    entry
                        .files
                        .iter()
                        .map(|f| f.uri.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
        );
    };
    let bytes = read_checked(server, peer, listed).await?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => SkillContent::Text(text),
        Err(e) => SkillContent::Bytes(e.into_bytes()),
    })
}

/// Reads `file` with `resources/read` and checks its size and digest.
async fn read_checked(
    server: &str,
    peer: &Peer<RoleClient>,
    file: &SkillFile,
) -> Result<Vec<u8>, ToolError> {
    if file.size > MAX_SKILL_FILE_BYTES {
        return Err(mismatch(
            server,
            format!(
                "`{}` is listed at {} bytes, past the {MAX_SKILL_FILE_BYTES} a skill may hold",
                file.uri, file.size
            ),
        ));
    }
    let read = peer
        .read_resource(ReadResourceRequestParams::new(file.uri.clone()))
        .await
        .map_err(|e| remote_error(server, "resources/read", &e.to_string()))?;
    let bytes = match read.contents.first() {
        Some(ResourceContents::TextResourceContents { text, .. }) => text.clone().into_bytes(),
        Some(ResourceContents::BlobResourceContents { blob, .. }) => {
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| mismatch(server, format!("`{}` is not base64: {e}", file.uri)))?
        }
        _ => {
            return Err(mismatch(
                server,
                format!("`{}` was read as nothing", file.uri),
            ));
        }
    };
    if bytes.len() as u64 != file.size {
        return Err(mismatch(
            server,
            format!(
                "`{}` is {} bytes, but the server listed {}",
                file.uri,
                bytes.len(),
                file.size
            ),
        ));
    }
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if file.digest != format!("sha256:{hex}") {
        return Err(mismatch(
            server,
            format!(
                "the digest of `{}` is not the one the server listed",
                file.uri
            ),
        ));
    }
    Ok(bytes)
}

/// The YAML front matter at the start of `text` (between `---` lines), as JSON.
fn front_matter(text: &str) -> Option<Value> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest
        .match_indices("\n---")
        .map(|(i, _)| i)
        .find(|&i| matches!(rest[i + 4..].chars().next(), None | Some('\n' | '\r')))?;
    let docs = crate::bundle::yaml::parse(&rest[..=end]).ok()?;
    match docs.into_iter().next() {
        Some(doc) => Some(doc.value),
        None => Some(Value::Object(serde_json::Map::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_front_matter_is_the_yaml_between_the_first_two_dash_lines() {
        let text = "---\nname: pdf\ndescription: Reads PDFs\nmetadata:\n  tags: [a, b]\n---\n\n# PDF\n---\n";
        assert_eq!(
            front_matter(text),
            Some(
                json!({"name": "pdf", "description": "Reads PDFs", "metadata": {"tags": ["a", "b"]}})
            )
        );
        assert_eq!(front_matter("# no front matter\n"), None);
        assert_eq!(front_matter("---\nname: x\n"), None);
        assert_eq!(front_matter("---\nname: [\n---\n"), None);
    }

    #[test]
    fn an_entry_without_what_a_host_must_check_is_left_out() {
        let good = json!({
            "uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "A"},
            "resources": [{"uri": "skill://a/SKILL.md", "size": 3, "digest": "sha256:00"}]
        });
        let (skill, _) = entry("s", &good).unwrap_or_else(|| panic!("{good}"));
        assert_eq!(skill.name, "a");
        assert_eq!(skill.files.len(), 1);
        for broken in [
            json!({"frontmatter": {}, "resources": []}),
            json!({"uri": "skill://a/SKILL.md", "resources": []}),
            json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "directory"}),
        ] {
            assert!(entry("s", &broken).is_none(), "{broken}");
        }
    }
}
