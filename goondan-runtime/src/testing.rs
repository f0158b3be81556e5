//! A test kit for tool authors: a registry of chosen tools, a temporary workdir, and
//! `call("resource__export", json!({...}))` returning the [`ToolCallResult`].
//!
//! ```
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::testing::{TestKit, ResultAssertions};
//!
//! /// Adds two numbers.
//! #[tool(name = "calc")]
//! pub fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let kit = TestKit::with_tools([add::TOOL])?;
//! kit.call("calc__add", serde_json::json!({"a": 1, "b": 2})).await.assert_output(serde_json::json!(3));
//! kit.call("calc__add", serde_json::json!({"a": "1"})).await.assert_error("E_TOOL_INVALID_ARGS");
//! # Ok(())
//! # }
//! ```

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::calls::executor::{CallPolicy, ToolExecutor};
use crate::calls::middleware::Middleware;
use crate::tools::catalog::ToolCatalog;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::registry::{RegistryError, ToolRegistry};
use crate::tools::result::{ToolCall, ToolCallResult};
use crate::tools::tool::{IntoTool, Tool, ToolDefinitionError};

/// Why a [`TestKit`] could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TestKitError {
    /// The tools could not be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The catalog names resources that are not registered.
    #[error(transparent)]
    Catalog(#[from] crate::tools::catalog::CatalogError),
    /// The temporary workdir could not be created.
    #[error("cannot create the temporary workdir: {0}")]
    Workdir(#[source] std::io::Error),
}

/// A registry, an executor, a catalog of every registered tool and a temporary workdir.
pub struct TestKit {
    registry: Arc<ToolRegistry>,
    executor: ToolExecutor,
    catalog: ToolCatalog,
    ctx: ToolContext,
    workdir: tempfile::TempDir,
    next_id: AtomicU64,
}

impl std::fmt::Debug for TestKit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestKit")
            .field("registry", &self.registry)
            .field("workdir", &self.workdir.path())
            .finish_non_exhaustive()
    }
}

impl TestKit {
    /// A kit with `tools`, every one in the catalog.
    pub fn with_tools<T: IntoTool>(
        tools: impl IntoIterator<Item = T>,
    ) -> Result<Self, TestKitError> {
        Self::builder().tools(tools).build()
    }

    /// Starts a kit.
    pub fn builder() -> TestKitBuilder {
        TestKitBuilder::default()
    }

    /// Calls `name` with `args` through the executor, with a fresh call id.
    pub async fn call(&self, name: &str, args: Value) -> ToolCallResult {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.execute(ToolCall::new(format!("call_{n}"), name, args))
            .await
    }

    /// Runs a whole [`ToolCall`].
    pub async fn execute(&self, call: ToolCall) -> ToolCallResult {
        self.executor.execute(call, &self.ctx, &self.catalog).await
    }

    /// The temporary workdir (removed when the kit is dropped).
    pub fn workdir(&self) -> &Path {
        self.workdir.path()
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The executor.
    pub fn executor(&self) -> &ToolExecutor {
        &self.executor
    }

    /// The catalog calls are checked against.
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// Replaces the catalog (to test refusals, say).
    pub fn set_catalog(&mut self, catalog: ToolCatalog) {
        self.catalog = catalog;
    }

    /// The Step's context (its workdir is [`workdir`](Self::workdir)).
    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }
}

/// Builds a [`TestKit`].
#[must_use]
#[derive(Default)]
pub struct TestKitBuilder {
    /// Each tool as built; a failed build is reported by `build`.
    tools: Vec<Result<Tool, ToolDefinitionError>>,
    middlewares: Vec<(i32, Arc<dyn Middleware>)>,
    policy: CallPolicy,
    timeout: Option<Duration>,
    catalog: Option<Vec<String>>,
    agent_name: Option<String>,
}

impl TestKitBuilder {
    /// Adds a tool.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Adds tools.
    pub fn tools<T: IntoTool>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools
            .extend(tools.into_iter().map(IntoTool::into_tool));
        self
    }

    /// Adds a `toolCall` middleware.
    pub fn middleware(mut self, priority: i32, mw: impl Middleware) -> Self {
        self.middlewares.push((priority, Arc::new(mw)));
        self
    }

    /// Sets the call policy.
    pub fn policy(mut self, policy: CallPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the executor's default timeout.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Puts only these resources in the catalog (default: every registered tool).
    pub fn catalog<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.catalog = Some(resources.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the agent name of the context.
    pub fn agent_name(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into());
        self
    }

    /// Builds the kit.
    pub fn build(self) -> Result<TestKit, TestKitError> {
        let registry = Arc::new(ToolRegistry::builder().tools(self.tools).build()?);
        let mut exec = ToolExecutor::builder(Arc::clone(&registry)).policy(self.policy);
        for (p, mw) in self.middlewares {
            exec = exec.middleware_arc(p, mw);
        }
        if let Some(t) = self.timeout {
            exec = exec.default_timeout(t);
        }
        let catalog = match &self.catalog {
            Some(names) => ToolCatalog::build(&registry, names.iter().map(String::as_str))?,
            None => ToolCatalog::all(&registry),
        };
        let workdir = tempfile::Builder::new()
            .prefix("goondan-test-")
            .tempdir()
            .map_err(TestKitError::Workdir)?;
        let mut ctx = ToolContext::builder(workdir.path());
        if let Some(a) = self.agent_name {
            ctx = ctx.agent_name(a);
        }
        Ok(TestKit {
            registry,
            executor: exec.build(),
            catalog,
            ctx: ctx.build(),
            workdir,
            next_id: AtomicU64::new(1),
        })
    }
}

/// Assertions on a [`ToolCallResult`] that print the whole result when they fail.
pub trait ResultAssertions {
    /// Asserts `status: "ok"` and returns the output.
    fn assert_ok(&self) -> &Value;
    /// Asserts `status: "ok"` with exactly `expected` as output.
    fn assert_output(&self, expected: Value);
    /// Asserts `status: "error"` with `code`, and returns the error.
    fn assert_error(&self, code: &str) -> &ToolError;
    /// Asserts `status: "pending"` and returns the handle.
    fn assert_pending(&self) -> &str;
}

fn pretty(r: &ToolCallResult) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|_| format!("{r:?}"))
}

impl ResultAssertions for ToolCallResult {
    #[track_caller]
    fn assert_ok(&self) -> &Value {
        match (&self.status, &self.output) {
            (crate::ToolStatus::Ok, Some(v)) => v,
            _ => panic!("expected an ok result, got:\n{}", pretty(self)),
        }
    }

    #[track_caller]
    fn assert_output(&self, expected: Value) {
        let out = self.assert_ok();
        assert_eq!(out, &expected, "unexpected output in:\n{}", pretty(self));
    }

    #[track_caller]
    fn assert_error(&self, code: &str) -> &ToolError {
        match &self.error {
            Some(e) if self.is_error() && e.code() == code => e,
            _ => panic!("expected an error with code {code}, got:\n{}", pretty(self)),
        }
    }

    #[track_caller]
    fn assert_pending(&self) -> &str {
        match &self.handle {
            Some(h) if self.is_pending() => h,
            _ => panic!("expected a pending result, got:\n{}", pretty(self)),
        }
    }
}
