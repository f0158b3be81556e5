//! [`ToolSearch`]: big catalogs that stay small per Step. When an Agent's catalog has more
//! tools than a threshold, each Step shows the model the `tool-search__search` tool, the tools
//! the Agent pins, and the tools its searches found; the rest stay out of the catalog, which
//! is still the allow-list (CAT-3).
//!
//! Tools are ranked with BM25 (the [`bm25`] crate) over their names (split into words),
//! descriptions, and parameter names and descriptions ([`Bm25Ranker`]); another ranker, an
//! embedding model for example, implements [`Ranker`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bm25::{SearchEngine, SearchEngineBuilder};
use goondan_runtime::extension::{
    Extension, ExtensionApi, ExtensionError, PipelineMiddleware, ToolItem,
};
use goondan_runtime::step::step_fn;
use goondan_runtime::tools::catalog::CatalogItem;
use goondan_runtime::tools::result::JsonObject;
use goondan_runtime::tools::search::words;
pub use goondan_runtime::tools::search::{MAX_QUERY_CHARS, Ranker, ToolDoc, ToolDocs};
use goondan_runtime::{ToolError, handler_fn};
use serde_json::{Value, json};

use self::english::EnglishTokenizer;

mod english;

/// Whether two items have the same [`ToolDoc`], without building it: a schema the Step did
/// not change is the same shared value, so it is compared only when it was replaced.
fn same_doc(a: &CatalogItem, b: &CatalogItem) -> bool {
    a.name() == b.name()
        && a.description().unwrap_or_default() == b.description().unwrap_or_default()
        && match (ToolDoc::parameters_of(a), ToolDoc::parameters_of(b)) {
            (Some(x), Some(y)) => std::ptr::eq(x, y) || x == y,
            (x, y) => x.is_none() && y.is_none(),
        }
}

/// BM25 over [`ToolDoc::text`], English stemming and stop words. The index of a catalog is
/// kept until the catalog changes (another [`ToolDocs::key`]).
#[derive(Default)]
pub struct Bm25Ranker {
    index: Mutex<Option<(u64, Engine)>>,
}

/// BM25 over English words, with `u32` ids (the indexes of the tools).
type Engine = SearchEngine<u32, u32, EnglishTokenizer>;

impl std::fmt::Debug for Bm25Ranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Ranker").finish_non_exhaustive()
    }
}

impl Bm25Ranker {
    /// A ranker with no index yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Ranker for Bm25Ranker {
    fn rank(&self, query: &str, tools: &ToolDocs, limit: usize) -> Vec<usize> {
        let print = tools.key();
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = !matches!(&*index, Some((kept, _)) if *kept == print);
        if fresh {
            let corpus = tools.iter().map(ToolDoc::text);
            let engine =
                SearchEngineBuilder::<u32, u32, EnglishTokenizer>::with_tokenizer_and_corpus(
                    EnglishTokenizer::default(),
                    corpus,
                )
                .build();
            *index = Some((print, engine));
        }
        let Some((_, engine)) = index.as_ref() else {
            return Vec::new();
        };
        let mut found: Vec<(f32, usize)> = engine
            .search(&words(query), None)
            .into_iter()
            .filter_map(|r| usize::try_from(r.document.id).ok().map(|i| (r.score, i)))
            .filter(|(_, i)| *i < tools.len())
            .collect();
        // Best score first; equal scores by name, so that the order does not depend on hashing.
        found.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| tools[a.1].name.cmp(&tools[b.1].name))
        });
        found.into_iter().take(limit).map(|(_, i)| i).collect()
    }
}

/// What one agent instance found, and the tools of its last catalog.
#[derive(Debug, Default)]
struct Selection {
    /// The tools of the last Step's catalog but the search tool (shared, not copied).
    known: Vec<CatalogItem>,
    /// Their docs, built by the first search that needs them; dropped when the tools change.
    docs: Option<ToolDocs>,
    /// The tools found, the latest last.
    found: Vec<String>,
}

impl Selection {
    /// Takes a Step's tools; the docs are kept while they are the same.
    fn see<'a>(&mut self, tools: impl Iterator<Item = &'a CatalogItem> + Clone) {
        let mut fresh = tools.clone();
        let same = self
            .known
            .iter()
            .all(|k| fresh.next().is_some_and(|t| same_doc(k, t)))
            && fresh.next().is_none();
        if !same {
            self.known = tools.cloned().collect();
            self.docs = None;
        }
    }

    /// The docs of the known tools, built at the first call after they changed.
    fn docs(&mut self) -> &ToolDocs {
        self.docs
            .get_or_insert_with(|| self.known.iter().map(ToolDoc::of).collect())
    }
}

type State = Arc<Mutex<HashMap<String, Selection>>>;

fn lock(state: &State) -> MutexGuard<'_, HashMap<String, Selection>> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps each Step's catalog small when an Agent has many tools; ranks them with BM25
/// ([`Bm25Ranker`], or another [`Ranker`]).
///
/// - A catalog of at most [`threshold`](Self::threshold) tools (default 30) is shown whole,
///   without the search tool.
/// - A larger one shows `tool-search__search`, the [pinned](Self::pin) tools, and the tools
///   its searches found (the latest [`max_found`](Self::max_found), default 20). A tool found
///   in one Step can be called from the next.
/// - `tool-search__search {query, limit?}` answers with the matches, each with the first line
///   of its description. An empty, blank or longer than [`MAX_QUERY_CHARS`] query is an
///   invalid argument.
///
/// ```
/// use goondan_base::extensions::ToolSearch;
/// let search = ToolSearch::new().threshold(40).pin("file-system__read").max_results(3);
/// # drop(search);
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    state: State,
    max_results: usize,
    threshold: usize,
    max_found: usize,
    pinned: Vec<String>,
    ranker: Arc<dyn Ranker>,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("max_results", &self.max_results)
            .field("threshold", &self.threshold)
            .field("max_found", &self.max_found)
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}

impl Default for ToolSearch {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolSearch {
    /// The extension's name.
    pub const NAME: &'static str = "tool-search";

    /// The search tool's full name (the upstream base package's).
    pub const TOOL: &'static str = "tool-search__search";

    /// Its step middleware's priority: inner, so it narrows what other middleware added.
    pub const PRIORITY: i32 = 1000;

    /// A search with the defaults: threshold 30, up to 5 matches a search, 20 kept.
    pub fn new() -> Self {
        Self {
            state: State::default(),
            max_results: 5,
            threshold: 30,
            max_found: 20,
            pinned: Vec::new(),
            ranker: Arc::new(Bm25Ranker::new()),
        }
    }

    /// Returns up to `n` matches a search (at least 1).
    #[must_use]
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n.max(1);
        self
    }

    /// Searches only when the catalog has more than `n` tools.
    #[must_use]
    pub fn threshold(mut self, n: usize) -> Self {
        self.threshold = n;
        self
    }

    /// Keeps the latest `n` tools found (at least 1).
    #[must_use]
    pub fn max_found(mut self, n: usize) -> Self {
        self.max_found = n.max(1);
        self
    }

    /// Always shows `name`: a full tool name, or a resource for all its exports.
    #[must_use]
    pub fn pin(mut self, name: impl Into<String>) -> Self {
        self.pinned.push(name.into());
        self
    }

    /// Ranks with `ranker` instead of BM25.
    #[must_use]
    pub fn ranker(mut self, ranker: impl Ranker) -> Self {
        self.ranker = Arc::new(ranker);
        self
    }

    fn is_pinned(&self, name: &str) -> bool {
        let resource = name.split_once("__").map_or(name, |(r, _)| r);
        self.pinned.iter().any(|p| p == name || p == resource)
    }

    fn search(&self, instance: &str, args: &JsonObject) -> Result<Value, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if query.trim().is_empty() {
            return Err(invalid(
                "the query has no words: say what the tool should do",
            ));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(invalid(&format!(
                "the query is longer than {MAX_QUERY_CHARS} characters: say in a few words what the tool should do"
            )));
        }
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .map_or(self.max_results, |n| n.clamp(1, self.max_results));
        let mut all = lock(&self.state);
        let sel = all.entry(instance.to_owned()).or_default();
        let docs = sel.docs();
        let found: Vec<&ToolDoc> = self
            .ranker
            .rank(query, docs, limit)
            .into_iter()
            .filter_map(|i| docs.get(i))
            .collect();
        let matches: Vec<Value> = found
            .iter()
            .map(|t| json!({"name": t.name, "description": first_line(&t.description)}))
            .collect();
        let names: Vec<String> = found.iter().map(|t| t.name.clone()).collect();
        for name in names {
            sel.found.retain(|n| *n != name);
            sel.found.push(name);
        }
        let over = sel.found.len().saturating_sub(self.max_found);
        sel.found.drain(..over);
        let note = if matches.is_empty() {
            "nothing matched; try other words"
        } else {
            "these tools can be called from the next step"
        };
        Ok(json!({"query": query, "matches": matches, "note": note}))
    }
}

fn invalid(message: &str) -> ToolError {
    ToolError::new(message.to_owned())
        .with_code(goondan_runtime::tools::error::codes::INVALID_ARGS)
        .with_suggestion(
            "call tool-search__search with a few words, e.g. {\"query\": \"read a file\"}",
        )
}

/// The first line of `text`, at most 160 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(160) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line.to_owned(),
    }
}

impl Extension for ToolSearch {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let params = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "Words describing what the tool you need does."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many tools to return at most."}
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let item = ToolItem::new(Self::TOOL, params).description(
            "Find tools by what they do; the tools found can be called from the next step.",
        );
        let me = self.clone();
        api.tools.register(
            item,
            handler_fn(move |ctx, args| {
                let out = me.search(ctx.instance_key(), &args);
                async move { out }
            }),
        )?;
        let me = self.clone();
        let narrow = step_fn(move |mut step, next| {
            {
                let mut all = lock(&me.state);
                let sel = all.entry(step.instance_key().to_owned()).or_default();
                let others = step
                    .tool_catalog
                    .items()
                    .iter()
                    .filter(|i| i.name().as_str() != Self::TOOL);
                sel.see(others);
                if sel.known.len() <= me.threshold {
                    // Small enough to show whole: nothing to search.
                    step.tool_catalog.remove(Self::TOOL);
                } else {
                    let found = &sel.found;
                    step.tool_catalog.retain(|i| {
                        let name = i.name().as_str();
                        name == Self::TOOL || me.is_pinned(name) || found.iter().any(|f| f == name)
                    });
                }
            }
            next.run(step)
        });
        api.pipeline
            .register(PipelineMiddleware::step(narrow), Self::PRIORITY);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, description: &str, params: Value) -> ToolDoc {
        ToolDoc {
            name: name.into(),
            description: description.into(),
            parameters: params,
        }
    }

    #[test]
    fn docs_are_built_by_a_search_and_kept_while_the_tools_are_the_same() {
        let item = |name: &str, description: &str| {
            CatalogItem::new(goondan_runtime::ToolName::parse(name).unwrap())
                .with_description(description)
                .with_parameters(json!({"type": "object"}))
        };
        let tools = vec![
            item("notes__add", "Adds a note."),
            item("notes__list", "Lists the notes."),
        ];
        let mut sel = Selection::default();
        sel.see(tools.iter());
        assert!(sel.docs.is_none(), "built before a search");
        let key = sel.docs().key();
        assert_eq!(sel.docs().len(), 2);
        // The next Steps: the same items, then equal ones built again.
        sel.see(tools.clone().iter());
        assert_eq!(sel.docs.as_ref().map(ToolDocs::key), Some(key));
        let rebuilt = [
            item("notes__add", "Adds a note."),
            item("notes__list", "Lists the notes."),
        ];
        sel.see(rebuilt.iter());
        assert_eq!(sel.docs.as_ref().map(ToolDocs::key), Some(key));
        // Another description, then a tool fewer: built again, at the next search.
        let reworded = [
            item("notes__add", "Adds a short note."),
            item("notes__list", "Lists the notes."),
        ];
        sel.see(reworded.iter());
        assert!(sel.docs.is_none());
        assert_ne!(sel.docs().key(), key);
        assert_eq!(sel.docs()[0].description, "Adds a short note.");
        sel.see(reworded[..1].iter());
        assert!(sel.docs.is_none());
        assert_eq!(sel.docs().len(), 1);
    }

    #[test]
    fn bm25_ranks_by_name_description_and_parameters() {
        let tools = ToolDocs::new(vec![
            doc("bash__exec", "Run a shell command", json!({})),
            doc("file-system__read", "Read a file", json!({})),
            doc("file-system__write", "Write text to a file", json!({})),
            doc(
                "weather__now",
                "The current conditions",
                json!({"properties": {"city": {"description": "Where to look up the temperature"}}}),
            ),
        ]);
        let ranker = Bm25Ranker::new();
        let names = |q: &str, n: usize| -> Vec<&str> {
            ranker
                .rank(q, &tools, n)
                .into_iter()
                .map(|i| tools[i].name.as_str())
                .collect()
        };
        assert_eq!(names("write a file", 1), ["file-system__write"]);
        assert_eq!(names("temperature in Paris", 5), ["weather__now"]);
        assert_eq!(names("shell commands", 5)[0], "bash__exec");
        assert!(names("zebra", 5).is_empty());
        assert_eq!(names("file", 5).len(), 2);
    }
}
