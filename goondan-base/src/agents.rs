//! `agents`: the model's door to the other agents of its swarm (BASE-4, AG-1..5, HO-5).
//!
//! - `agents__request {target, input, instanceKey?, eventType?, timeoutMs? = 60000, async?,
//!   metadata?}` hands work to another agent and waits for its answer (AG-1); with
//!   `async: true` it answers at once with a pending handle and the answer arrives later
//!   (HO-2, RES-2).
//! - `agents__send {target, input, instanceKey?, eventType?, metadata?}` is fire-and-forget
//!   (AG-2).
//! - `agents__spawn {target, instanceKey?, cwd?}` prepares an instance of an agent defined in
//!   the swarm; the same key reuses it (AG-3).
//! - `agents__list {includeAll?}` lists the instances the caller spawned, or all (AG-4).
//! - `agents__catalog {}` describes the swarm from the caller's side (AG-5).
//!
//! Everything goes through [`ToolContext::runtime`]; the Orchestrator of
//! `goondan_runtime::agents::orchestrator` provides it. Every failure (unknown target, timeout, crash,
//! cycle, no runtime) is a structured error with a suggestion (HO-4).

use std::sync::Arc;

use goondan_runtime::agents::orchestrator::{DEFAULT_TIMEOUT_MS, codes};
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions, SpawnOptions};
use goondan_runtime::tools::handler::IntoOutcome;
use goondan_runtime::{Outcome, Pending, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The event type of a request when the call sets none.
pub const DEFAULT_REQUEST_EVENT: &str = "agent.request";
/// The event type of a one-way event when the call sets none.
pub const DEFAULT_SEND_EVENT: &str = "agent.event";

/// Input of `agents__request`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestInput {
    /// The agent to hand the work to, as named in `agents__catalog`.
    pub target: String,
    /// What the agent gets: a task in words, or any JSON.
    // Every JSON type named, not an empty schema: servers that constrain a model's output to
    // the schema (llama.cpp's grammars) cannot build a grammar for `{}` and let it write anything.
    #[schemars(extend("type" = ["string", "object", "array", "number", "boolean", "null"], "additionalProperties" = true))]
    pub input: Value,
    /// The target instance (default: the agent's default instance).
    #[serde(default)]
    pub instance_key: Option<String>,
    /// The event type (default `agent.request`).
    #[serde(default)]
    pub event_type: Option<String>,
    /// Milliseconds to wait for the answer (default 60000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Answer at once with a pending handle; the answer arrives later.
    #[serde(default)]
    pub r#async: Option<bool>,
    /// Metadata carried with the event.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// Input of `agents__send`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendInput {
    /// The agent to notify.
    pub target: String,
    /// What the agent gets.
    #[schemars(extend("type" = ["string", "object", "array", "number", "boolean", "null"], "additionalProperties" = true))]
    pub input: Value,
    /// The target instance (default: the agent's default instance).
    #[serde(default)]
    pub instance_key: Option<String>,
    /// The event type (default `agent.event`).
    #[serde(default)]
    pub event_type: Option<String>,
    /// Metadata carried with the event.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// Input of `agents__spawn`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpawnInput {
    /// An agent defined in the swarm.
    pub target: String,
    /// The instance to prepare; an existing one with this key is reused.
    #[serde(default)]
    pub instance_key: Option<String>,
    /// The instance's working directory, relative to the swarm's.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Input of `agents__list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListInput {
    /// List every instance of the swarm, not only those this agent spawned.
    #[serde(default)]
    pub include_all: Option<bool>,
}

/// What `agents__request` returns: the answer, or a handle when `async` is set.
pub enum RequestReply {
    /// `{eventId, target, response?, correlationId}` (AG-1).
    Answered(Value),
    /// The request runs on; the answer arrives through the pending handle (HO-2).
    Submitted(Pending),
}

impl IntoOutcome for RequestReply {
    fn into_outcome(self) -> Result<Outcome, ToolError> {
        match self {
            RequestReply::Answered(v) => Ok(Outcome::Output(v)),
            RequestReply::Submitted(p) => Ok(Outcome::Pending(p)),
        }
    }
}

/// The `agents` tool. Stateless: everything it does goes through the context's runtime.
#[derive(Debug, Clone, Default)]
pub struct Agents;

impl Agents {
    /// The resource name.
    pub const NAME: &'static str = "agents";
    /// How many characters of an error message the model sees.
    pub const ERROR_MESSAGE_LIMIT: usize = 1500;
}

fn runtime(ctx: &ToolContext) -> Result<Arc<dyn AgentRuntime>, ToolError> {
    ctx.runtime().cloned().ok_or_else(|| {
        ToolError::new(format!(
            "agent `{}` runs without an agent runtime, so it cannot reach other agents",
            ctx.agent_name()
        ))
        .with_code(codes::NO_RUNTIME)
        .with_name("AgentRuntimeMissingError")
        .with_suggestion(
            "do the work yourself with your other tools; this host runs a single agent \
             without an Orchestrator",
        )
    })
}

fn check_target(target: &str) -> Result<(), ToolError> {
    if target.trim().is_empty() {
        return Err(ToolError::new("`target` is empty")
            .with_code(codes::UNKNOWN_TARGET)
            .with_name("AgentNotFoundError")
            .with_suggestion("name an agent from `agents__catalog`'s `callableAgents`"));
    }
    Ok(())
}

fn event(
    event_type: Option<String>,
    default_type: &str,
    input: Value,
    instance_key: Option<String>,
    metadata: Option<Map<String, Value>>,
) -> AgentEvent {
    AgentEvent {
        event_type: event_type.unwrap_or_else(|| default_type.to_owned()),
        input,
        instance_key,
        metadata: metadata.unwrap_or_default(),
    }
}

fn to_json(value: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::new(format!("unexpected answer: {e}")))
}

/// Hands work to other agents of the swarm and manages their instances.
#[tool(name = "agents", error_message_limit = 1500)]
impl Agents {
    /// Hand a task to another agent and wait for its answer. Returns `{eventId, target,
    /// response, correlationId}`. Set `async: true` to get a pending handle at once.
    pub async fn request(
        &self,
        ctx: &ToolContext,
        input: RequestInput,
    ) -> Result<RequestReply, ToolError> {
        check_target(&input.target)?;
        let rt = runtime(ctx)?;
        let submit = input.r#async.unwrap_or(false);
        let options = RequestOptions {
            timeout_ms: Some(input.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
            r#async: submit,
            trace_id: Some(ctx.trace_id().to_owned()),
            turn_id: Some(ctx.turn_id().to_owned()),
        };
        let event = event(
            input.event_type,
            DEFAULT_REQUEST_EVENT,
            input.input,
            input.instance_key,
            input.metadata,
        );
        let target = input.target;
        if submit {
            return Ok(RequestReply::Submitted(Pending::new(async move {
                rt.request(&target, event, options).await
            })));
        }
        let answer = rt.request(&target, event, options).await?;
        Ok(RequestReply::Answered(to_json(answer)?))
    }

    /// Send an event to another agent without waiting for an answer. Returns `{eventId,
    /// target, accepted}`.
    pub async fn send(&self, ctx: &ToolContext, input: SendInput) -> Result<Value, ToolError> {
        check_target(&input.target)?;
        let rt = runtime(ctx)?;
        let event = event(
            input.event_type,
            DEFAULT_SEND_EVENT,
            input.input,
            input.instance_key,
            input.metadata,
        );
        to_json(rt.send(&input.target, event).await?)
    }

    /// Prepare an instance of an agent defined in the swarm; an existing instance with the same
    /// `instanceKey` is reused. Returns `{target, instanceKey, spawned, cwd?}`.
    pub async fn spawn(&self, ctx: &ToolContext, input: SpawnInput) -> Result<Value, ToolError> {
        check_target(&input.target)?;
        let rt = runtime(ctx)?;
        let options = SpawnOptions {
            instance_key: input.instance_key,
            cwd: input.cwd,
        };
        to_json(rt.spawn(&input.target, options).await?)
    }

    /// List agent instances: those this agent spawned, or every one with `includeAll`.
    /// Returns `{agents: [{target, instanceKey, ownerAgent, ownerInstanceKey, createdAt,
    /// cwd?}]}`.
    #[export(read_only)]
    pub async fn list(&self, ctx: &ToolContext, input: ListInput) -> Result<Value, ToolError> {
        let rt = runtime(ctx)?;
        let agents = rt.list(input.include_all.unwrap_or(false)).await?;
        Ok(json!({ "agents": to_json(agents)? }))
    }

    /// Describe the swarm: `{swarmName, entryAgent, selfAgent, availableAgents,
    /// callableAgents}`.
    #[export(read_only)]
    pub async fn catalog(&self, ctx: &ToolContext) -> Result<Value, ToolError> {
        let rt = runtime(ctx)?;
        to_json(rt.catalog().await?)
    }
}

/// The exports whose `target` names an agent of the swarm.
const TARGETED: [&str; 3] = ["request", "send", "spawn"];

/// An extension that shows the model which agents it may call: in every Step's catalog, the
/// `target` of `agents__request`, `agents__send` and `agents__spawn` becomes an `enum` of
/// `callable` (the swarm's `callable_from` the agent). A model then cannot make a name up, and
/// servers that constrain the model's output to the schema (llama.cpp's grammars) let it write
/// only those. A call naming another agent is refused as invalid arguments (calls are checked
/// against the schema their Step showed), and the Orchestrator still checks every call; an
/// empty list changes nothing.
///
/// ```
/// use goondan_runtime::Extension;
/// let targets = goondan_base::agents::targets(vec!["coder".to_owned()]);
/// assert_eq!(targets.name(), "agents-targets");
/// ```
pub fn targets(callable: Vec<String>) -> impl goondan_runtime::Extension {
    Targets {
        callable: Arc::new(callable),
    }
}

#[derive(Debug)]
struct Targets {
    callable: Arc<Vec<String>>,
}

impl goondan_runtime::Extension for Targets {
    fn name(&self) -> &str {
        "agents-targets"
    }

    fn register(
        &self,
        api: &mut goondan_runtime::ExtensionApi,
    ) -> Result<(), goondan_runtime::extension::ExtensionError> {
        use goondan_runtime::extension::PipelineMiddleware;
        use goondan_runtime::step::step_fn;
        if self.callable.is_empty() {
            return Ok(());
        }
        let callable = Arc::clone(&self.callable);
        api.pipeline.register(
            PipelineMiddleware::step(step_fn(move |mut step, next| {
                narrow_targets(&mut step.tool_catalog, &callable);
                next.run(step)
            })),
            0,
        );
        Ok(())
    }
}

/// Sets `properties.target.enum` of the targeted `agents` exports of `catalog` to `callable`.
fn narrow_targets(catalog: &mut goondan_runtime::ToolCatalog, callable: &[String]) {
    let targeted: Vec<goondan_runtime::CatalogItem> = catalog
        .items()
        .iter()
        .filter(|i| i.name().resource() == "agents" && TARGETED.contains(&i.name().export()))
        .cloned()
        .collect();
    for mut item in targeted {
        let Some(parameters) = item.parameters() else {
            continue;
        };
        let mut parameters = Value::clone(parameters);
        let Some(target) = parameters.pointer_mut("/properties/target") else {
            continue;
        };
        if let Some(target) = target.as_object_mut() {
            target.insert("enum".into(), json!(callable));
        }
        item.set_parameters(parameters);
        catalog.push(item);
    }
}
