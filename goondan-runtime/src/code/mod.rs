//! Code mode: the model writes one short Python program that calls the Step's tools as
//! functions, instead of one model round trip per call.
//!
//! A Step that offers code mode shows the model the code tool, [`TOOL_NAME`] (`code__run`,
//! parameters `{code: string}`), whose description holds a Python stub for every tool of the
//! Step's catalog. The program runs in [Monty](https://github.com/pydantic/monty), an
//! interpreter of a subset of Python with no file system, network or environment: the tools
//! are the only way out. Each call the program makes is a tool call of the same Step through
//! its executor, under the code call: the Step's catalog is the allow-list
//! (`E_TOOL_NOT_IN_CATALOG`), the arguments are checked against the schema the Step shows
//! (`E_TOOL_INVALID_ARGS`), and middleware, approvals, guardrails and the retry budget apply
//! as they do to the model's own calls; `tool.called` and the call's span nest under the code
//! call's.
//!
//! # Names
//!
//! The catalog item `{resource}__{export}` is the function `{resource}.{export}` of the
//! program, called with keyword arguments: `file-system__read` is
//! `file_system.read(path="notes.txt")`. Each part becomes a Python identifier: `-` is `_`, a
//! leading digit gets a `_` before it, a Python keyword a `_` after it (`import_`), and a
//! resource named like a builtin the program needs (`print`, `len`, `json`, `ToolError`, ...)
//! a `_` after it. Of two items that would get the same function, the first in catalog order
//! has it and the other is named in the description as not callable from code. Attributes
//! of a resource object were chosen over flat `resource__export` names: the model reads
//! related functions together, and `_`/`-` stay distinct from the `__` separator.
//!
//! # Values and errors
//!
//! A call's result comes back as a plain value (a JSON object is a dict, an array a list,
//! text a str, content parts a list of their JSON with binary data described by its type and
//! size). A failed call raises `ToolError`, whose `str()` is `CODE: message (suggestion:
//! ...)` and which the program may catch. `ToolError` is the program's name for Python's
//! `RuntimeError`: Monty's classes cannot have base classes, so there is no exception class
//! of its own.
//!
//! The code tool answers `{value, printed, calls}`: the value of the program's last
//! expression, what it printed, and how many calls it made. A program that fails answers a
//! [`ToolError`](crate::ToolError) that keeps the traceback, what the program printed, and
//! the calls it made: [`codes::SYNTAX`] (with the line), [`codes::ERROR`] (an exception it
//! did not catch; an `import os`, an unknown name, an `open()`), or [`codes::LIMIT`] (time,
//! memory, recursion depth, output, number of tool calls; [`CodeMode`] sets them).
//!
//! # Where it runs
//!
//! By default the interpreter runs on a thread of its own in the agent's process. Memory is
//! then bounded per allocation (a `[0] * 10**10` is refused before it is made) and in total
//! only by the time limit, and a crash of the interpreter is a crash of the agent.
//!
//! With [`CodeMode::worker`], each program runs in a worker process of its own
//! ([`worker`]): the same run, speaking the same messages (a call of a tool, the answer to
//! it, what it printed, its end) as JSON lines over the worker's stdin and stdout. A worker
//! that crashes, is killed, or says what does not read ends the code call with a
//! [`codes::ERROR`] (or [`codes::LIMIT`] where a limit ended it) that keeps what the program
//! printed and the calls it made, and the agent goes on. The launcher decides where the
//! worker runs: the `goondan` program starts it in the kernel sandbox, with no file system
//! writes, no network, and a memory limit the kernel holds it to (`goondan_base`'s
//! `CodeSandbox`); [`worker::Unconfined`] starts it as it is.
//!
//! # Durable runs
//!
//! With a run journal (`AgentInstanceBuilder::journal`), each call a program makes is journaled
//! as the program's (its start with the arguments the program gave, then its result), under the
//! code call's start. A process killed in the middle of a program resumes it at the next start
//! without asking the model again: the program runs again from the start (it has no clock,
//! randomness, files or network, so given the same results it makes the same calls), and each
//! of its calls is answered in order from the journal. A call whose result is journaled does
//! not run again; a call that had started without a result runs again when its export is
//! idempotent or read-only, and otherwise raises `ToolError` (`E_TOOL_INTERRUPTED`) in the
//! program, as it answers the model outside code mode; the calls after run. A program that now
//! asks for another call than the journal has at that place (another tool, other arguments), or
//! ends before the calls the journal has, is not trusted further: the code call answers
//! `E_TOOL_INTERRUPTED`, naming the difference and the calls that may have taken effect.
//!
//! ```
//! use std::sync::Arc;
//! use goondan_runtime::code::CodeMode;
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
//!
//! /// Looks up the temperature of a city.
//! #[tool(name = "weather")]
//! pub fn celsius(city: String) -> i64 { if city == "Oslo" { 3 } else { 21 } }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let program = "[c for c in ['Oslo', 'Rome', 'Lima'] if weather.celsius(city=c) > 10]";
//! let model = Arc::new(ScriptedModel::new([
//!     ModelResponse::calls([ToolCall::new("c1", "code__run", serde_json::json!({"code": program}))]),
//!     ModelResponse::text("Rome and Lima are warm."),
//! ]));
//! let registry = Arc::new(ToolRegistry::builder().tool(celsius::TOOL).build()?);
//! let state = tempfile::tempdir()?;
//! let agent = AgentInstance::builder("helper", registry, model.clone())
//!     .tools(["weather"])
//!     .code_mode(CodeMode::new().tools_callable_directly(false))
//!     .state_dir(state.path())
//!     .build()?;
//! let turn = agent.run_turn("Which of Oslo, Rome and Lima are warm?").await?;
//! let result = &turn.steps[0].results[0];
//! assert_eq!(result.output.as_ref().map(|o| &o["value"]), Some(&serde_json::json!(["Rome", "Lima"])));
//! // The model was shown the code tool alone, with the tools as Python functions.
//! let shown = &model.requests()[0].catalog;
//! assert_eq!(shown.names().collect::<Vec<_>>(), ["code__run"]);
//! assert!(shown.items()[0].description().unwrap_or("").contains("def celsius(*, city: str)"));
//! # Ok(())
//! # }
//! ```

mod interpreter;
mod names;
mod program;
mod search;
mod stubs;
mod tool;
mod values;
pub mod worker;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use self::program::Limits;
pub use self::search::SEARCH_NAME;
pub(crate) use self::tool::{CodeOffer, given_answer};
use self::worker::WorkerLauncher;
use crate::tools::search::Ranker;

/// The name of the code tool.
pub const TOOL_NAME: &str = "code__run";

/// The error codes of a program that failed.
pub mod codes {
    /// The program does not parse, or uses syntax the interpreter does not have.
    pub const SYNTAX: &str = "E_CODE_SYNTAX";
    /// The program raised an exception it did not catch (the error has the traceback).
    pub const ERROR: &str = "E_CODE_ERROR";
    /// The program reached one of its limits (time, memory, recursion depth, output, tool
    /// calls).
    pub const LIMIT: &str = "E_CODE_LIMIT";
}

/// Code mode as an agent instance or an MCP server offers it
/// (`AgentInstanceBuilder::code_mode` in the step loop, `McpServerBuilder::code_mode`):
/// whether the tools stay callable directly beside the code tool, the search of the functions
/// if there is one, the limits of one program, and where programs run.
#[derive(Clone)]
pub struct CodeMode {
    limits: Limits,
    direct: bool,
    answers: bool,
    search: Option<Arc<dyn Ranker>>,
    worker: Option<Arc<dyn WorkerLauncher>>,
}

impl fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeMode")
            .field("limits", &self.limits)
            .field("direct", &self.direct)
            .field("answers", &self.answers)
            .field("search", &self.search.is_some())
            .field("worker", &self.worker.is_some())
            .finish()
    }
}

/// Two modes are equal when their limits and choices are, they search with the same ranker
/// (or neither searches), and they start workers with the same launcher (or both run
/// programs on a thread).
impl PartialEq for CodeMode {
    fn eq(&self, other: &Self) -> bool {
        fn same<T: ?Sized>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
        }
        self.limits == other.limits
            && self.direct == other.direct
            && self.answers == other.answers
            && same(&self.search, &other.search)
            && same(&self.worker, &other.worker)
    }
}

impl Eq for CodeMode {}

impl Default for CodeMode {
    fn default() -> Self {
        Self::new()
    }
}

impl CodeMode {
    /// Code mode with the tools also callable directly, and these limits per program: 5 s of
    /// running time (time spent in its tool calls not counted), 64 MiB per allocation,
    /// recursion 200 deep, 64 KiB of printed output (and of its value as JSON), 50 tool calls,
    /// 1 MiB of JSON per call's result.
    pub fn new() -> Self {
        Self {
            limits: Limits {
                time: Duration::from_secs(5),
                memory: 64 * 1024 * 1024,
                recursion: 200,
                output: 64 * 1024,
                calls: 50,
                result: 1024 * 1024,
            },
            direct: true,
            answers: true,
            search: None,
            worker: None,
        }
    }

    /// Offers [`SEARCH_NAME`] (`code__search {query, limit?}`) beside the code tool: it ranks
    /// the program's functions with `ranker` and answers the stubs of the best ones. With more
    /// than 30 functions, the code tool's description then names their objects and points to
    /// the search instead of listing every stub, so a big catalog costs the model no more
    /// than a small one. The base tools' `Bm25Ranker` is one ranker.
    #[must_use]
    pub fn search(mut self, ranker: impl Ranker) -> Self {
        self.search = Some(Arc::new(ranker));
        self
    }

    /// Runs each program in a worker process of its own that `launcher` starts (see
    /// [`worker`]), instead of on a thread of the agent's process: a crash or a kill of the
    /// interpreter then ends the code call, not the agent. The program that runs the agent
    /// must call [`worker::serve_if_asked`] first in `main`.
    #[must_use]
    pub fn worker(mut self, launcher: impl WorkerLauncher) -> Self {
        self.worker = Some(Arc::new(launcher));
        self
    }

    /// Whether programs run in worker processes ([`CodeMode::worker`]).
    pub fn runs_in_workers(&self) -> bool {
        self.worker.is_some()
    }

    /// Whether the model also sees the Step's tools beside the code tool (default: yes). With
    /// `false` it sees the code tool alone; the tools are still the program's functions, and
    /// the Step's catalog is still their allow-list.
    #[must_use]
    pub fn tools_callable_directly(mut self, direct: bool) -> Self {
        self.direct = direct;
        self
    }

    /// Whether an agent's program may end the Turn with `final_answer(text)` (default: yes):
    /// `text` is then the Turn's answer, given as the model's own would be (its last Step's
    /// assistant message, journaled alike), without another request to the model. A turn of
    /// `n` tool calls then takes one model round trip in code mode where the classic loop
    /// takes `n + 1`. An MCP server's code tool never offers it: its caller's model answers.
    #[must_use]
    pub fn final_answer(mut self, answers: bool) -> Self {
        self.answers = answers;
        self
    }

    /// How long a program's own code may run; time spent waiting for its tool calls does not
    /// count.
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.limits.time = limit;
        self
    }

    /// How many bytes one allocation of a program may ask for (a string, a list, a number).
    /// The whole program's memory is bounded only in a worker process
    /// ([`CodeMode::worker`]) whose launcher sets a limit (the `goondan` program's does).
    #[must_use]
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.limits.memory = bytes;
        self
    }

    /// How deep a program's functions may recurse.
    #[must_use]
    pub fn recursion_limit(mut self, depth: usize) -> Self {
        self.limits.recursion = depth;
        self
    }

    /// How many bytes a program may print, and its value may take as JSON.
    #[must_use]
    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.limits.output = bytes;
        self
    }

    /// How many tool calls one program may make.
    #[must_use]
    pub fn max_calls(mut self, calls: usize) -> Self {
        self.limits.calls = calls;
        self
    }

    /// How many bytes of JSON one call's result may bring into a program; a larger result
    /// raises `ToolError` (`E_CODE_LIMIT`) in the program instead.
    #[must_use]
    pub fn result_limit(mut self, bytes: usize) -> Self {
        self.limits.result = bytes;
        self
    }

    /// Code mode as an Agent's `spec.codeMode` in a bundle says: `true` or `false`, or a map
    /// of `callable` (the tools stay callable directly, default `true`), `finalAnswer`
    /// ([`CodeMode::final_answer`], default `true`), `timeLimitMs`,
    /// `memoryLimitBytes`, `recursionLimit`, `outputLimitBytes`, `maxCalls` and
    /// `resultLimitBytes`, each optional. `None` for `false`; the error says what is wrong.
    ///
    /// ```
    /// use goondan_runtime::code::CodeMode;
    /// let spec = serde_json::json!({"callable": false, "maxCalls": 20});
    /// let mode = CodeMode::from_spec(&spec).unwrap().unwrap();
    /// assert_eq!(mode, CodeMode::new().tools_callable_directly(false).max_calls(20));
    /// assert_eq!(CodeMode::from_spec(&serde_json::json!(false)).unwrap(), None);
    /// assert!(CodeMode::from_spec(&serde_json::json!({"maxCals": 20})).is_err());
    /// ```
    pub fn from_spec(spec: &serde_json::Value) -> Result<Option<Self>, String> {
        const KEYS: &str = "`callable`, `finalAnswer`, `timeLimitMs`, `memoryLimitBytes`, `recursionLimit`, `outputLimitBytes`, `maxCalls`, `resultLimitBytes`";
        let map = match spec {
            serde_json::Value::Bool(false) => return Ok(None),
            serde_json::Value::Bool(true) => return Ok(Some(Self::new())),
            serde_json::Value::Object(map) => map,
            _ => return Err(format!("`codeMode` is `true`, `false` or a map of {KEYS}")),
        };
        let count = |key: &str, v: &serde_json::Value| {
            v.as_u64()
                .filter(|n| *n > 0)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("`codeMode.{key}` is a whole number above 0"))
        };
        let flag = |key: &str, v: &serde_json::Value| {
            v.as_bool()
                .ok_or_else(|| format!("`codeMode.{key}` is `true` or `false`"))
        };
        let mut mode = Self::new();
        for (key, value) in map {
            mode = match key.as_str() {
                "callable" => mode.tools_callable_directly(flag(key, value)?),
                "finalAnswer" => mode.final_answer(flag(key, value)?),
                "timeLimitMs" => match value.as_u64().filter(|ms| *ms > 0) {
                    Some(ms) => mode.time_limit(Duration::from_millis(ms)),
                    None => return Err(format!("`codeMode.{key}` is a whole number above 0")),
                },
                "memoryLimitBytes" => mode.memory_limit(count(key, value)?),
                "recursionLimit" => mode.recursion_limit(count(key, value)?),
                "outputLimitBytes" => mode.output_limit(count(key, value)?),
                "maxCalls" => mode.max_calls(count(key, value)?),
                "resultLimitBytes" => mode.result_limit(count(key, value)?),
                other => return Err(format!("`codeMode` has no `{other}`; its keys: {KEYS}")),
            };
        }
        Ok(Some(mode))
    }
}
