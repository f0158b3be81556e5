//! [`Skills`]: the skills of an agent's bridged MCP servers (the MCP Skills extension), shown
//! to its model as tools or in its system prompt, the user's choice ([`SkillsShown`]).
//!
//! Nothing is read before the model asks: the skills are listed (names and descriptions, no
//! file), a skill's `SKILL.md` is read when the model loads it (`skills__load`), and each of
//! its files when the model reads it (`skills__read`). Every file is checked against the
//! server's listing before the model sees it (size, sha256 digest and, for `SKILL.md`, its front
//! matter; `E_MCP_SKILL_MISMATCH` when it does not match), and an answer is cut at a size
//! bound.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goondan_runtime::extension::{
    Extension, ExtensionApi, ExtensionError, PipelineMiddleware, ToolItem,
};
pub use goondan_runtime::mcp::client::SkillsShown;
use goondan_runtime::mcp::client::{BridgedSkill, McpExtension, SkillContent};
use goondan_runtime::step::step_fn;
use goondan_runtime::tools::result::JsonObject;
use goondan_runtime::{ToolError, handler_fn};
use serde_json::{Value, json};

/// How long a listing is used before the servers are asked again.
const LISTING_FRESH_FOR: Duration = Duration::from_secs(60);

/// The skills of an agent's bridged MCP servers, for its model: `skills__load {server, uri}`
/// answers a skill's checked `SKILL.md`, `skills__read {server, skill, file}` one of its
/// files, and the skills are listed by `skills__list` or in the system prompt.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use goondan_base::extensions::{Skills, SkillsShown};
/// use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, McpServerConfig};
/// let config = McpExtensionConfig::new("docs")
///     .server(McpServerConfig::http("team", "http://127.0.0.1:8080/mcp"));
/// let mcp = McpExtension::connect(config).await?;
/// let skills = Skills::new(mcp.clone()).shown(SkillsShown::Prompt);
/// // builder.extension(mcp).extension(skills)
/// # drop(skills);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Skills {
    mcp: Vec<McpExtension>,
    shown: SkillsShown,
    max_bytes: usize,
    listed: Arc<Mutex<Option<Listed>>>,
}

/// The last listing, and when it was made.
type Listed = (Instant, Vec<BridgedSkill>);

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills")
            .field("mcp", &self.mcp)
            .field("shown", &self.shown)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl Skills {
    /// The tool resource.
    pub const RESOURCE: &'static str = "skills";

    /// The skills of `mcp`'s servers, listed by a tool, each answer cut at 256 KiB.
    pub fn new(mcp: McpExtension) -> Self {
        Self {
            mcp: vec![mcp],
            shown: SkillsShown::Tool,
            max_bytes: 256 * 1024,
            listed: Arc::new(Mutex::new(None)),
        }
    }

    /// The skills of `mcp`'s servers too (a server of `mcp` named like one of an extension
    /// before it is reached through the first).
    #[must_use]
    pub fn and(mut self, mcp: McpExtension) -> Self {
        self.mcp.push(mcp);
        self
    }

    /// Where the model learns which skills there are (default [`SkillsShown::Tool`]).
    #[must_use]
    pub fn shown(mut self, shown: SkillsShown) -> Self {
        self.shown = shown;
        self
    }

    /// The most bytes of a file one answer holds; the rest is cut, and the answer says so.
    #[must_use]
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes.max(1);
        self
    }

    /// The skills, listed again when the last listing is older than a minute.
    async fn list(&self) -> Vec<BridgedSkill> {
        if let Some((at, skills)) = &*lock(&self.listed)
            && at.elapsed() < LISTING_FRESH_FOR
        {
            return skills.clone();
        }
        let mut skills = Vec::new();
        for mcp in &self.mcp {
            skills.extend(mcp.skills().await);
        }
        *lock(&self.listed) = Some((Instant::now(), skills.clone()));
        skills
    }

    /// The extension that has the server `server`.
    fn serving(&self, server: &str) -> Result<&McpExtension, ToolError> {
        self.mcp
            .iter()
            .find(|m| m.status(server).is_some())
            .ok_or_else(|| {
                ToolError::new(format!("no MCP server is named `{server}`"))
                    .with_code(goondan_runtime::tools::error::codes::INVALID_ARGS)
                    .with_suggestion("use a server a skill was listed with")
            })
    }

    /// `text`, cut at the size bound on a character boundary, with a note when cut.
    fn bounded(&self, text: String) -> Value {
        if text.len() <= self.max_bytes {
            return Value::String(text);
        }
        let mut cut = self.max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let total = text.len();
        json!({
            "text": &text[..cut],
            "cut": format!("the first {cut} of {total} bytes"),
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A string argument, or an invalid-arguments error naming it.
fn text_arg<'a>(args: &'a JsonObject, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            ToolError::new(format!("`{key}` must be a non-empty string"))
                .with_code(goondan_runtime::tools::error::codes::INVALID_ARGS)
        })
}

/// The skills as the model reads them.
fn listing(skills: &[BridgedSkill]) -> Value {
    Value::Array(
        skills
            .iter()
            .map(|s| {
                json!({
                    "server": s.server,
                    "uri": s.uri,
                    "name": s.name,
                    "description": s.description,
                    "files": s.files.iter().map(|f| &f.uri).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// The system prompt's paragraph of skills.
fn prompt(skills: &[BridgedSkill]) -> String {
    let mut text = String::from(
        "Skills you can load with skills__load (server, uri), then read their files with skills__read:",
    );
    for s in skills {
        text.push_str(&format!(
            "\n- {} (server `{}`, uri `{}`): {}",
            s.name, s.server, s.uri, s.description
        ));
    }
    text
}

impl Extension for Skills {
    fn name(&self) -> &str {
        Self::RESOURCE
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let uri_param = json!({"type": "string", "minLength": 1});
        let load = ToolItem::new(
            "skills__load",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "minLength": 1, "description": "The server that lists the skill."},
                    "uri": uri_param.clone(),
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        )
        .description("Load a skill: its SKILL.md, checked against the server's listing.");
        let me = self.clone();
        api.tools.register(
            load,
            handler_fn(move |_ctx, args| {
                let me = me.clone();
                async move {
                    let (server, uri) = (text_arg(&args, "server")?, text_arg(&args, "uri")?);
                    let text = me.serving(server)?.load_skill(server, uri).await?;
                    Ok::<_, ToolError>(me.bounded(text))
                }
            }),
        )?;
        let read = ToolItem::new(
            "skills__read",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "minLength": 1},
                    "skill": {"type": "string", "minLength": 1, "description": "The skill's uri."},
                    "file": {"type": "string", "minLength": 1, "description": "One of the skill's files."},
                },
                "required": ["server", "skill", "file"],
                "additionalProperties": false
            }),
        )
        .description("Read one file of a loaded skill, checked against the server's listing.");
        let me = self.clone();
        api.tools.register(
            read,
            handler_fn(move |_ctx, args| {
                let me = me.clone();
                async move {
                    let server = text_arg(&args, "server")?;
                    let (skill, file) = (text_arg(&args, "skill")?, text_arg(&args, "file")?);
                    Ok::<_, ToolError>(
                        match me
                            .serving(server)?
                            .read_skill_file(server, skill, file)
                            .await?
                        {
                            SkillContent::Text(text) => me.bounded(text),
                            SkillContent::Bytes(bytes) => {
                                json!({"binary": format!("{} bytes, not text", bytes.len())})
                            }
                        },
                    )
                }
            }),
        )?;
        match self.shown {
            SkillsShown::Tool => {
                let list = ToolItem::new(
                    "skills__list",
                    json!({"type": "object", "properties": {}, "additionalProperties": false}),
                )
                .description("List the skills the agent's MCP servers serve: their names, descriptions and files.");
                let me = self.clone();
                api.tools.register(
                    list,
                    handler_fn(move |_ctx, _args| {
                        let me = me.clone();
                        async move { Ok::<_, ToolError>(listing(&me.list().await)) }
                    }),
                )?;
            }
            SkillsShown::Prompt => {
                let me = self.clone();
                let add = step_fn(move |mut step, next| {
                    let me = me.clone();
                    async move {
                        let skills = me.list().await;
                        if !skills.is_empty() {
                            let text = prompt(&skills);
                            step.system = Some(match step.system.take() {
                                Some(system) => format!("{system}\n\n{text}"),
                                None => text,
                            });
                        }
                        next.run(step).await
                    }
                });
                api.pipeline.register(PipelineMiddleware::step(add), 0);
            }
        }
        Ok(())
    }
}
