//! [`ToolSearch`]: a `tool-search__search` tool, and a step middleware that narrows each Step's
//! catalog to what the model last searched for, always keeping the search tool (CAT-3).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use goondan_runtime::extension::{
    Extension, ExtensionApi, ExtensionError, PipelineMiddleware, ToolItem,
};
use goondan_runtime::step::step_fn;
use goondan_runtime::{JsonObject, ToolError, handler_fn};
use serde_json::{Value, json};

/// What one agent instance searched for, and the tools its last catalog had.
#[derive(Debug, Default)]
struct Selection {
    known: Vec<(String, String)>,
    selected: Option<Vec<String>>,
}

type State = Arc<Mutex<HashMap<String, Selection>>>;

fn lock(state: &State) -> MutexGuard<'_, HashMap<String, Selection>> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lets the model find tools instead of seeing all of them. Until the model searches, a Step
/// shows the whole catalog; after `tool-search__search {query}`, the following Steps show only
/// the matches and the search tool. An empty query shows everything again.
///
/// ```
/// use goondan_base::extensions::ToolSearch;
/// let search = ToolSearch::new().max_results(3);
/// # drop(search);
/// ```
#[derive(Debug, Clone)]
pub struct ToolSearch {
    state: State,
    max_results: usize,
}

impl Default for ToolSearch {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolSearch {
    /// The extension's name.
    pub const NAME: &'static str = "tool-search";

    /// The search tool's full name.
    pub const TOOL: &'static str = "tool-search__search";

    /// Its step middleware's priority: inner, so it narrows what other middleware added.
    pub const PRIORITY: i32 = 1000;

    /// A search that keeps up to 5 matches.
    pub fn new() -> Self {
        Self {
            state: State::default(),
            max_results: 5,
        }
    }

    /// Keeps up to `n` matches (at least 1).
    #[must_use]
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n.max(1);
        self
    }
}

/// The words of `text`, lowercase.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The best matches of `query` among `known`: a word in the name counts 2, in the
/// description 1; ties by name.
fn rank(query: &str, known: &[(String, String)], max: usize) -> Vec<(String, String)> {
    let terms = words(query);
    let mut scored: Vec<(usize, &(String, String))> = known
        .iter()
        .filter_map(|item| {
            let name = words(&item.0);
            let desc = words(&item.1);
            let score: usize = terms
                .iter()
                .map(|t| {
                    2 * usize::from(name.iter().any(|w| w.contains(t.as_str())))
                        + usize::from(desc.iter().any(|w| w == t))
                })
                .sum();
            (score > 0).then_some((score, item))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.0.cmp(&b.1.0)));
    scored
        .into_iter()
        .take(max)
        .map(|(_, i)| i.clone())
        .collect()
}

fn search(state: &State, max: usize, instance: &str, args: &JsonObject) -> Value {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .map_or(max, |n| n.clamp(1, max));
    let mut all = lock(state);
    let sel = all.entry(instance.to_owned()).or_default();
    if query.trim().is_empty() {
        sel.selected = None;
        return json!({"query": query, "matches": [], "note": "every tool is shown again from the next step"});
    }
    let found = rank(query, &sel.known, limit);
    let matches: Vec<Value> = found
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d}))
        .collect();
    let note = if found.is_empty() {
        sel.selected = None;
        "nothing matched; every tool stays shown".to_owned()
    } else {
        sel.selected = Some(found.into_iter().map(|(n, _)| n).collect());
        format!(
            "from the next step only these tools and `{}` are shown",
            ToolSearch::TOOL
        )
    };
    json!({"query": query, "matches": matches, "note": note})
}

impl Extension for ToolSearch {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let params = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words describing the tool you need; empty to see every tool again."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many tools to keep at most."}
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let item = ToolItem::new(Self::TOOL, params).description(
            "Search the available tools by name and description; the next steps show only the matches.",
        );
        let state = Arc::clone(&self.state);
        let max = self.max_results;
        api.tools.register(
            item,
            handler_fn(move |ctx, args| {
                let out = search(&state, max, ctx.instance_key(), &args);
                async move { Ok::<_, ToolError>(out) }
            }),
        )?;
        let state = Arc::clone(&self.state);
        let narrow = step_fn(move |mut step, next| {
            {
                let mut all = lock(&state);
                let sel = all.entry(step.instance_key().to_owned()).or_default();
                sel.known = step
                    .tool_catalog
                    .items()
                    .iter()
                    .filter(|i| i.name().as_str() != Self::TOOL)
                    .map(|i| {
                        let d = i.description().unwrap_or_default().to_owned();
                        (i.name().as_str().to_owned(), d)
                    })
                    .collect();
                if let Some(keep) = &sel.selected {
                    // The matches, best first, then the search tool.
                    let rank = |name: &str| keep.iter().position(|k| k == name);
                    step.tool_catalog.retain(|i| {
                        i.name().as_str() == Self::TOOL || rank(i.name().as_str()).is_some()
                    });
                    step.tool_catalog.sort_by(|a, b| {
                        let key = |n: &str| rank(n).unwrap_or(usize::MAX);
                        key(a.name().as_str()).cmp(&key(b.name().as_str()))
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

    #[test]
    fn ranking_prefers_name_hits_and_drops_non_matches() {
        let known = vec![
            ("bash__exec".to_owned(), "Run a shell command".to_owned()),
            ("file-system__read".to_owned(), "Read a file".to_owned()),
            ("file-system__write".to_owned(), "Write a file".to_owned()),
        ];
        let names: Vec<_> = rank("file read", &known, 5)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, vec!["file-system__read", "file-system__write"]);
        assert!(rank("weather", &known, 5).is_empty());
        assert_eq!(rank("file", &known, 1).len(), 1);
    }
}
