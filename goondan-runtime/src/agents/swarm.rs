//! A bundle's swarm on the Orchestrator: [`SwarmSpec::from_bundle`] reads a Swarm resource, and
//! [`StepWorker`] serves one of its Agents in an agent process by running the step loop. This
//! module sits above both the [`orchestrator`](crate::agents::orchestrator) (which knows nothing of
//! bundles or steps) and the [`bundle`](crate::bundle) and [`step`](crate::step) modules.
//!
//! Each agent process loads the bundle itself (its path is in [`ENV_BUNDLE`], which the host
//! sets with [`ProcessConfig::env`](crate::agents::orchestrator::ProcessConfig::env)), builds its
//! [`AgentInstance`] with the tools of a [`ToolLibrary`] and the [`Model`](crate::step::Model) the host's
//! [`ModelFactory`] gives, and answers every event with one Turn. When a tool of the Turn asks
//! for a restart ([`RestartSignal`], the base package's `self-restart__request`), the process
//! is restarted after the answer goes out
//! ([`AgentContext::request_restart`](crate::agents::orchestrator::AgentContext::request_restart)).
//!
//! ```no_run
//! use std::sync::Arc;
//! use goondan_runtime::bundle::{Bundle, ToolLibrary};
//! use goondan_runtime::agents::orchestrator::{Orchestrator, ProcessConfig, SwarmSpec, agent_mode};
//! use goondan_runtime::agents::swarm::{ENV_BUNDLE, ModelFactory, StepWorker};
//! use goondan_runtime::step::{Model, ModelResponse, ScriptedModel};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let models: ModelFactory =
//!     Arc::new(|_agent: &str| Arc::new(ScriptedModel::new([ModelResponse::text("hi")])) as Arc<dyn Model>);
//! let library = ToolLibrary::linked();
//! // In an agent process: load the bundle named by `ENV_BUNDLE`, serve the agent, exit.
//! agent_mode::run_if_requested(|me| StepWorker::from_env(me, &library, &models));
//! let bundle = Bundle::load("goondan.yaml")?;
//! let swarm = SwarmSpec::from_bundle(&bundle, None)?;
//! let process = ProcessConfig::current_exe()?.env(ENV_BUNDLE, bundle.file());
//! let orchestrator = Orchestrator::start(swarm, process).await?;
//! # drop(orchestrator);
//! # Ok(())
//! # }
//! ```

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::agents::orchestrator::agent_mode::{AgentContext, AgentIdentity, AgentWorker};
use crate::agents::orchestrator::{SwarmSpec, disconnected, error};
use crate::bundle::{Bundle, BundleError, Kind, ToolLibrary};
use crate::lock;
use crate::step::{AgentInstance, AgentInstanceBuilder, StepError, TurnEnd, TurnOutcome};
use crate::tools::agent::{
    AgentCatalog, AgentEvent, AgentFuture, AgentInstanceInfo, AgentRuntime, RequestOptions,
    RequestResult, RestartSignal, SendResult, SpawnOptions, SpawnResult,
};
use crate::tools::context::fresh_id;
use crate::tools::error::ToolError;
use tokio_util::sync::CancellationToken;

/// The path of the bundle an agent process loads, set by the host on its agent processes.
pub const ENV_BUNDLE: &str = "GOONDAN_BUNDLE";

/// The error code of an agent whose process could not load the bundle or build its instance.
pub const LOAD_FAILED: &str = "E_AGENT_LOAD";

/// The error code of a Turn that could not run (the model failed, a declared tool is missing).
pub const TURN_FAILED: &str = "E_AGENT_TURN";

pub use crate::step::ModelFactory;

/// Why a bundle does not describe a swarm.
#[derive(Debug, thiserror::Error)]
pub enum SwarmSpecError {
    /// The bundle has errors.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The bundle has no Swarm resource.
    #[error("the bundle has no Swarm: add one with `spec.entryAgent` and `spec.agents`")]
    NoSwarm,
    /// No Swarm has the name asked for.
    #[error("the bundle has no Swarm named `{name}`; its swarms are: {}", known.join(", "))]
    UnknownSwarm {
        /// The name asked for.
        name: String,
        /// The Swarms it has.
        known: Vec<String>,
    },
    /// The Swarm lists no agents and names no entry agent.
    #[error("swarm `{swarm}` has no agents: add `spec.entryAgent` and `spec.agents`")]
    NoAgents {
        /// The Swarm.
        swarm: String,
    },
}

impl SwarmSpec {
    /// The Swarm `swarm` of `bundle` (the first Swarm when `None`): its name, its
    /// `spec.entryAgent` (else its first agent) and its `spec.agents`, in order, the entry agent
    /// included. Swarm resources do not declare who may call whom, so every agent may call every
    /// other.
    ///
    /// ```
    /// use goondan_runtime::bundle::Bundle;
    /// use goondan_runtime::agents::orchestrator::SwarmSpec;
    /// let yaml = r#"
    /// apiVersion: goondan.ai/v1
    /// kind: Agent
    /// metadata: {name: planner}
    /// ---
    /// apiVersion: goondan.ai/v1
    /// kind: Agent
    /// metadata: {name: coder}
    /// ---
    /// apiVersion: goondan.ai/v1
    /// kind: Swarm
    /// metadata: {name: team}
    /// spec: {entryAgent: "Agent/planner", agents: ["Agent/planner", {ref: "Agent/coder"}]}
    /// "#;
    /// let swarm = SwarmSpec::from_bundle(&Bundle::from_yaml(yaml, "goondan.yaml"), None)?;
    /// assert_eq!(swarm.name, "team");
    /// assert_eq!(swarm.entry_agent, "planner");
    /// assert_eq!(swarm.callable_from("planner"), ["coder"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bundle(bundle: &Bundle, swarm: Option<&str>) -> Result<SwarmSpec, SwarmSpecError> {
        if bundle.has_errors() {
            return Err(BundleError::Invalid {
                diagnostics: bundle.diagnostics().to_vec(),
            }
            .into());
        }
        let mut swarms = bundle.of_kind(&Kind::Swarm);
        let found = match swarm {
            Some(name) => swarms.find(|s| s.name == name),
            None => swarms.next(),
        };
        let Some(res) = found else {
            let Some(name) = swarm else {
                return Err(SwarmSpecError::NoSwarm);
            };
            return Err(SwarmSpecError::UnknownSwarm {
                name: name.to_owned(),
                known: bundle
                    .of_kind(&Kind::Swarm)
                    .map(|s| s.name.clone())
                    .collect(),
            });
        };
        // Definition order; an entry agent the list leaves out comes first.
        let entry = res.entry_agent().map(|(r, _)| r.name);
        let mut names: Vec<String> = Vec::new();
        for (r, _) in res.agent_refs() {
            if !names.contains(&r.name) {
                names.push(r.name);
            }
        }
        if let Some(e) = entry.as_ref().filter(|e| !names.contains(e)) {
            names.insert(0, e.clone());
        }
        let Some(entry) = entry.or_else(|| names.first().cloned()) else {
            return Err(SwarmSpecError::NoAgents {
                swarm: res.name.clone(),
            });
        };
        let spec = SwarmSpec::new(res.name.clone(), entry);
        Ok(names.into_iter().fold(spec, SwarmSpec::agent))
    }
}

/// Why a [`StepWorker`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StepWorkerError {
    /// The host did not say where the bundle is.
    #[error(
        "`{ENV_BUNDLE}` is not set: the host passes the bundle's path with `ProcessConfig::env`"
    )]
    NoBundlePath,
    /// The bundle cannot be read, has errors, has no such Agent, or its tools are missing.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The instance cannot be built (an extension failed, the workdir cannot be created).
    #[error(transparent)]
    Step(#[from] StepError),
}

/// An [`AgentWorker`] that runs the step loop: one [`AgentInstance`] of the bundle's Agent, one
/// Turn per event, one Turn at a time (they share the instance's conversation).
///
/// The event's input is the Turn's user message (a JSON string as is, any other value as JSON
/// text). A `delegate` is answered with:
///
/// ```json
/// { "answer": "the final assistant text, or null",
///   "end": "answered | maxSteps",
///   "turnId": "turn_…",
///   "traceId": "the caller's trace id (HO-3), else the Turn's own",
///   "toolResults": [ /* every ToolCallResult of the Turn, in order */ ] }
/// ```
///
/// A Turn that cannot run is an `E_AGENT_TURN` error ([`TURN_FAILED`]); tool failures are not:
/// they are in `toolResults`. Tools run in `{workdir}/workspace` of the instance and reach the
/// other agents through the runtime of the event being handled, so a cycle is refused.
pub struct StepWorker {
    agent: String,
    inner: Result<Loaded, ToolError>,
    cancellation: Option<TurnCancellation>,
}

/// Gives each Turn of a [`StepWorker`] its cancellation token.
type TurnCancellation = Arc<dyn Fn() -> CancellationToken + Send + Sync>;

/// Changes an Agent's instance before it is built (see [`StepWorker::new_with`]).
pub type Customize<'a> = &'a dyn Fn(AgentInstanceBuilder) -> AgentInstanceBuilder;

struct Loaded {
    instance: AgentInstance,
    runtime: Arc<CurrentRuntime>,
    turn: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for StepWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepWorker")
            .field("agent", &self.agent)
            .field("loaded", &self.inner.is_ok())
            .finish_non_exhaustive()
    }
}

impl StepWorker {
    /// The worker of instance `me` of the bundle's Agent `me.agent`: the registry of `bundle`
    /// over `library`, the model `models` gives for the agent, its `spec.tools` and
    /// `policy.maxStepsPerTurn`, and `me.workdir` as its state directory.
    pub fn new(
        bundle: &Bundle,
        me: &AgentIdentity,
        library: &ToolLibrary,
        models: &ModelFactory,
    ) -> Result<Self, StepWorkerError> {
        Self::new_with(bundle, me, library, models, &|builder| builder)
    }

    /// [`new`](Self::new), the instance's builder passed through `customize` before it is
    /// built: a host adds extensions (approvals, a display of the calls), a delta sink, the
    /// conversation read back from disk, another state directory.
    pub fn new_with(
        bundle: &Bundle,
        me: &AgentIdentity,
        library: &ToolLibrary,
        models: &ModelFactory,
        customize: Customize<'_>,
    ) -> Result<Self, StepWorkerError> {
        let registry = Arc::new(bundle.registry(library)?);
        let runtime = Arc::new(CurrentRuntime::default());
        let builder = AgentInstance::from_bundle(bundle, &me.agent, registry, models(&me.agent))?
            .instance_key(&me.instance_key)
            .state_dir(&me.workdir)
            .agent_runtime(Arc::clone(&runtime) as Arc<dyn AgentRuntime>);
        let instance = customize(builder).build()?;
        Ok(Self {
            agent: me.agent.clone(),
            inner: Ok(Loaded {
                instance,
                runtime,
                turn: tokio::sync::Mutex::new(()),
            }),
            cancellation: None,
        })
    }

    /// In an agent process: loads the bundle at [`ENV_BUNDLE`] and builds the worker with
    /// [`new`](Self::new). When that fails, the failure is logged and every event is answered
    /// with a structured `E_AGENT_LOAD` error ([`LOAD_FAILED`]), so callers learn why at once.
    pub fn from_env(me: &AgentIdentity, library: &ToolLibrary, models: &ModelFactory) -> Self {
        Self::from_env_with(me, library, models, &|builder| builder)
    }

    /// [`from_env`](Self::from_env) with [`new_with`](Self::new_with)'s `customize`.
    pub fn from_env_with(
        me: &AgentIdentity,
        library: &ToolLibrary,
        models: &ModelFactory,
        customize: Customize<'_>,
    ) -> Self {
        let built = std::env::var_os(ENV_BUNDLE)
            .ok_or(StepWorkerError::NoBundlePath)
            .and_then(|path| Ok(Bundle::load(path)?))
            .and_then(|bundle| Self::new_with(&bundle, me, library, models, customize));
        built.unwrap_or_else(|e| {
            tracing::error!(target: "goondan::agent", agent = %me.agent, error = %e, "cannot load the agent");
            Self {
                agent: me.agent.clone(),
                inner: Err(error(
                    LOAD_FAILED,
                    "AgentLoadError",
                    format!("agent `{}` cannot load its bundle: {e}", me.agent),
                    "fix the bundle or the host's tools, then restart the swarm",
                )),
                cancellation: None,
            }
        })
    }

    /// Each Turn stops when the token `tokens` gives it (one call per Turn) is cancelled, as
    /// [`AgentInstance::run_turn_cancellable`] does: a terminal's Ctrl-C cancels one answer.
    #[must_use]
    pub fn turn_cancellation(
        mut self,
        tokens: impl Fn() -> CancellationToken + Send + Sync + 'static,
    ) -> Self {
        self.cancellation = Some(Arc::new(tokens));
        self
    }

    /// The instance, when it was built.
    pub fn instance(&self) -> Option<&AgentInstance> {
        self.inner.as_ref().ok().map(|l| &l.instance)
    }

    async fn run(&self, event: AgentEvent, ctx: AgentContext) -> Result<Value, ToolError> {
        let loaded = self.inner.as_ref().map_err(Clone::clone)?;
        let input = match event.input {
            Value::String(s) => s,
            other => other.to_string(),
        };
        let _turn = loaded.turn.lock().await;
        loaded.runtime.set(Some(Arc::clone(ctx.runtime())));
        // A Turn a crash left unfinished in the instance's journal is finished first.
        match loaded.instance.resume().await {
            Ok(Some(resumed)) => {
                tracing::info!(target: "goondan::agent", agent = %self.agent, turn_id = %resumed.turn_id, "finished a turn a crash had left unfinished");
            }
            Ok(None) => {}
            Err(e) => {
                loaded.runtime.set(None);
                return Err(error(
                    TURN_FAILED,
                    "AgentTurnError",
                    format!(
                        "agent `{}` cannot resume its unfinished turn: {e}",
                        self.agent
                    ),
                    "tell the user; the agent's run journal needs a look",
                ));
            }
        }
        // HO-3: the Turn continues the caller's trace; an event without one starts a trace.
        let trace = ctx
            .caller_trace_id()
            .map_or_else(|| fresh_id("trace"), str::to_owned);
        let token = self
            .cancellation
            .as_ref()
            .map_or_else(CancellationToken::new, |tokens| tokens());
        let outcome = loaded.instance.run_turn_with(input, trace, token).await;
        loaded.runtime.set(None);
        let outcome = outcome.map_err(|e| {
            error(
                TURN_FAILED,
                "AgentTurnError",
                format!("agent `{}` could not finish its turn: {e}", self.agent),
                "retry once; if it fails again, hand the task to another agent or do it yourself",
            )
        })?;
        // A tool asked for this agent's process to be restarted (`self-restart__request`):
        // the answer goes out first, then the Orchestrator restarts the process.
        let restart = outcome
            .steps
            .iter()
            .flat_map(|s| &s.results)
            .filter_map(|r| r.output.as_ref().and_then(RestartSignal::from_output))
            .next_back();
        if let Some(signal) = restart {
            ctx.request_restart(signal.reason);
        }
        Ok(answer(&outcome))
    }
}

/// The response to a delegate: see [`StepWorker`].
fn answer(outcome: &TurnOutcome) -> Value {
    let results: Vec<_> = outcome.steps.iter().flat_map(|s| &s.results).collect();
    json!({
        "answer": outcome.answer(),
        "end": match outcome.end {
            TurnEnd::Answered => "answered",
            TurnEnd::MaxSteps => "maxSteps",
        },
        "turnId": outcome.turn_id,
        "traceId": outcome.trace_id,
        "toolResults": results,
    })
}

impl AgentWorker for StepWorker {
    fn handle(&self, event: AgentEvent, ctx: AgentContext) -> AgentFuture<'_, Value> {
        Box::pin(self.run(event, ctx))
    }
}

/// The runtime of the event being handled: the instance keeps this one, and each Turn points
/// it at its event's runtime, which carries the call chain (cycle detection).
#[derive(Default)]
struct CurrentRuntime(Mutex<Option<Arc<dyn AgentRuntime>>>);

impl CurrentRuntime {
    fn set(&self, runtime: Option<Arc<dyn AgentRuntime>>) {
        *lock(&self.0) = runtime;
    }

    fn get(&self) -> Result<Arc<dyn AgentRuntime>, ToolError> {
        lock(&self.0).clone().ok_or_else(disconnected)
    }
}

impl AgentRuntime for CurrentRuntime {
    fn request<'a>(
        &'a self,
        target: &'a str,
        event: AgentEvent,
        options: RequestOptions,
    ) -> AgentFuture<'a, RequestResult> {
        let runtime = self.get();
        Box::pin(async move { runtime?.request(target, event, options).await })
    }

    fn send<'a>(&'a self, target: &'a str, event: AgentEvent) -> AgentFuture<'a, SendResult> {
        let runtime = self.get();
        Box::pin(async move { runtime?.send(target, event).await })
    }

    fn spawn<'a>(&'a self, target: &'a str, options: SpawnOptions) -> AgentFuture<'a, SpawnResult> {
        let runtime = self.get();
        Box::pin(async move { runtime?.spawn(target, options).await })
    }

    fn list(&self, include_all: bool) -> AgentFuture<'_, Vec<AgentInstanceInfo>> {
        let runtime = self.get();
        Box::pin(async move { runtime?.list(include_all).await })
    }

    fn catalog(&self) -> AgentFuture<'_, AgentCatalog> {
        let runtime = self.get();
        Box::pin(async move { runtime?.catalog().await })
    }
}

/// Public types that cross tasks are `Send + Sync`; this fails to compile otherwise.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<StepWorker>();
    assert_send_sync::<StepWorkerError>();
    assert_send_sync::<SwarmSpecError>();
};

#[cfg(test)]
mod tests {
    use super::*;

    const HANDOFF: &str = include_str!("../../tests/fixtures/bundles/handoff.yaml");

    #[test]
    fn ho_6_the_swarm_comes_from_the_bundle() {
        let bundle = Bundle::from_yaml(HANDOFF, "handoff.yaml");
        let swarm = SwarmSpec::from_bundle(&bundle, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(swarm.name, "handoff");
        assert_eq!(swarm.entry_agent, "planner");
        assert_eq!(swarm.agent_names(), ["planner", "coder"]);
        // Nothing declared: every agent may call every other.
        assert_eq!(swarm.callable_from("planner"), ["coder"]);
        assert_eq!(swarm.callable_from("coder"), ["planner"]);
        let named = SwarmSpec::from_bundle(&bundle, Some("handoff"));
        assert_eq!(named.ok(), Some(swarm));
        let ghost = SwarmSpec::from_bundle(&bundle, Some("ghost"));
        assert!(
            matches!(&ghost, Err(SwarmSpecError::UnknownSwarm { known, .. }) if known == &["handoff"]),
            "{ghost:?}"
        );
    }

    #[test]
    fn ho_6_the_entry_agent_is_an_agent_of_the_swarm_even_when_not_listed() {
        let yaml = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\n---\n\
            apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: b}\n---\n\
            apiVersion: goondan.ai/v1\nkind: Swarm\nmetadata: {name: s}\n\
            spec: {entryAgent: Agent/b, agents: [Agent/a]}\n";
        let swarm = SwarmSpec::from_bundle(&Bundle::from_yaml(yaml, "g.yaml"), None);
        let swarm = swarm.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(swarm.entry_agent, "b");
        assert_eq!(swarm.agent_names(), ["b", "a"]);
    }

    #[test]
    fn ho_6_an_invalid_bundle_or_one_without_a_swarm_is_refused() {
        let agent_only = "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\n";
        let r = SwarmSpec::from_bundle(&Bundle::from_yaml(agent_only, "g.yaml"), None);
        assert!(matches!(r, Err(SwarmSpecError::NoSwarm)), "{r:?}");
        let broken = "apiVersion: goondan.ai/v1\nkind: Swarm\nmetadata: {name: s}\nspec: {entryAgent: Agent/ghost}\n";
        let r = SwarmSpec::from_bundle(&Bundle::from_yaml(broken, "g.yaml"), None);
        assert!(matches!(r, Err(SwarmSpecError::Bundle(_))), "{r:?}");
    }
}
