//! The quickstart's tools: the seeds' `text-utils`, a stateful `notes` tool, and an `admin`
//! tool that is registered but not given to the agent.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use goondan_runtime::prelude::*;
use goondan_runtime::tools::tool::ToolDefinitionError;

/// The uppercased text.
#[derive(Debug, Serialize)]
pub struct Upper {
    /// The text in uppercase.
    pub result: String,
}

/// The input of `text-utils__count-words`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountInput {
    /// The text whose words are counted.
    pub text: String,
}

/// Text utilities.
#[tool(name = "text-utils")]
pub mod text_utils {
    use super::*;

    /// Convert text to uppercase.
    pub async fn uppercase(
        ctx: &ToolContext,
        /// The text to convert.
        text: String,
    ) -> Result<Upper, ToolError> {
        tracing::info!(agent = ctx.agent_name(), "uppercasing");
        Ok(Upper {
            result: text.to_uppercase(),
        })
    }

    /// Count the words of a text.
    #[export(name = "count-words")]
    pub fn count_words(input: CountInput) -> usize {
        input.text.split_whitespace().count()
    }
}

/// A saved note.
#[derive(Debug, Clone, Serialize)]
pub struct Note {
    /// Its title.
    pub title: String,
    /// Its text.
    pub body: String,
}

/// A scratchpad the agent keeps between calls.
#[derive(Debug, Default)]
pub struct Notes {
    notes: Mutex<BTreeMap<String, String>>,
}

impl Notes {
    fn all(&self) -> BTreeMap<String, String> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

/// Notes the agent writes and reads back.
#[tool(name = "notes", error_message_limit = 80)]
impl Notes {
    /// An empty scratchpad.
    pub fn new() -> Self {
        Self::default()
    }

    /// Save a note under a title, replacing an older one.
    pub fn save(
        &self,
        /// The note's title.
        title: String,
        /// The note's text.
        body: String,
    ) -> Result<Note, ToolError> {
        let mut notes = self
            .notes
            .lock()
            .map_err(|_| ToolError::new("the notes are unavailable"))?;
        notes.insert(title.clone(), body.clone());
        Ok(Note { title, body })
    }

    /// Find the note with this title.
    pub fn find(
        &self,
        /// The title to look for.
        title: String,
    ) -> Result<Note, ToolError> {
        let notes = self.all();
        match notes.get(&title) {
            Some(body) => Ok(Note {
                title,
                body: body.clone(),
            }),
            None => Err(ToolError::new(format!(
                "no note is titled {title:?}; the saved titles are: {}",
                notes.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
            .with_code("E_NOTE_NOT_FOUND")
            .with_name("NoteNotFoundError")
            .with_suggestion("call `notes__find` with one of the saved titles")),
        }
    }

    /// The first 40 bytes of a note. (It has a bug: a shorter note makes it panic.)
    pub fn preview(
        &self,
        /// The note's title.
        title: String,
    ) -> Result<String, ToolError> {
        let body = self.find(title)?.body;
        Ok(body[..40].to_owned())
    }

    /// Push the notes to a remote backup that is this slow.
    #[export(timeout_ms = 300)]
    pub async fn backup(
        &self,
        /// How long the remote takes, in milliseconds.
        latency_ms: u64,
    ) -> Result<usize, ToolError> {
        tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        Ok(self.all().len())
    }

    /// Summarise every note in the background; the summary arrives later.
    pub fn summarise(&self) -> Pending {
        let notes = self.all();
        Pending::new(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let words: usize = notes.values().map(|b| b.split_whitespace().count()).sum();
            Ok::<_, ToolError>(serde_json::json!({
                "notes": notes.len(),
                "words": words,
                "titles": notes.keys().collect::<Vec<_>>(),
            }))
        })
    }
}

/// Wipe every note. Registered, but not declared in the agent's `spec.tools`.
#[tool(name = "admin")]
pub fn reset() -> &'static str {
    "everything is gone"
}

/// The quickstart's tools, each as built, as a host would register them (a registry reports a
/// failed build with the tool's name).
pub fn quickstart_tools() -> Vec<Result<goondan_runtime::Tool, ToolDefinitionError>> {
    vec![
        text_utils::TOOL.build(),
        Notes::new().into_tool(),
        reset::TOOL.build(),
    ]
}

/// The resources the quickstart's agent declares in `spec.tools` (`admin` is left out).
pub const AGENT_TOOLS: [&str; 2] = ["text-utils", "notes"];
