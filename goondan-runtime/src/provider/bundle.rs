//! Models from a bundle: a `kind: Model` resource ([`ModelSpec`]) as a [`ProviderModel`], the
//! model of an Agent, and a [`ModelFactory`] for a swarm.

use std::sync::Arc;

use super::{Provider, ProviderConfig, ProviderModel};
use crate::bundle::{Bundle, BundleError, ModelSpec};
use crate::step::ModelFactory;
use crate::step::{Model, ModelError, ModelFuture, ModelRequest};

/// Why an Agent's model cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ModelSetupError {
    /// The bundle does not say which model (see [`Bundle::agent_model`]).
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The model cannot be made (an unset key variable, say).
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// The model a Model resource describes. Fails when its key variable is not set.
pub fn from_spec(spec: &ModelSpec) -> Result<ProviderModel, ModelError> {
    let provider = spec
        .provider
        .parse::<Provider>()
        .map_err(|e| ModelError::Config {
            message: format!("Model `{}`: {e}", spec.name),
        })?;
    let mut config = ProviderConfig::new(provider, &spec.model);
    config.base_url = spec.endpoint.clone();
    config.api_key_env = spec.api_key_env.clone();
    config.temperature = spec.temperature;
    config.max_tokens = spec.max_tokens;
    if let Some(t) = spec.timeout {
        config.timeout = t;
    }
    if let Some(n) = spec.max_retries {
        config.retry.max_retries = n;
    }
    if let Some(s) = spec.stream {
        config.stream = s;
    }
    config.tool_choice = spec.tool_choice.clone();
    config.first_step_tool_choice = spec.first_step_tool_choice.clone();
    ProviderModel::new(config)
}

/// The model of the bundle's Agent `agent` (its `modelRef`, see [`Bundle::agent_model`]).
///
/// ```
/// use goondan_runtime::bundle::Bundle;
/// let yaml = r#"
/// apiVersion: goondan.ai/v1
/// kind: Model
/// metadata: {name: local}
/// spec: {provider: openai, model: qwen3, endpoint: "http://127.0.0.1:11434/v1"}
/// ---
/// apiVersion: goondan.ai/v1
/// kind: Agent
/// metadata: {name: helper}
/// spec: {modelRef: "Model/local"}
/// "#;
/// let bundle = Bundle::from_yaml(yaml, "goondan.yaml");
/// let model = goondan_runtime::provider::for_agent(&bundle, "helper")?;
/// # drop(model);
/// # Ok::<(), goondan_runtime::provider::ModelSetupError>(())
/// ```
pub fn for_agent(bundle: &Bundle, agent: &str) -> Result<Arc<dyn Model>, ModelSetupError> {
    let spec = bundle.agent_model(agent)?;
    Ok(Arc::new(from_spec(&spec)?))
}

/// A [`ModelFactory`] that gives every agent of `bundle` its model. An agent whose model
/// cannot be built gets one that answers every Step with the reason
/// ([`ModelError::Config`]), so the caller of its Turn learns it.
pub fn model_factory(bundle: Bundle) -> ModelFactory {
    let bundle = Arc::new(bundle);
    Arc::new(move |agent: &str| match for_agent(&bundle, agent) {
        Ok(model) => model,
        Err(e) => {
            tracing::error!(target: "goondan::provider", agent, error = %e, "cannot build the agent's model");
            Arc::new(Unconfigured {
                message: e.to_string(),
            })
        }
    })
}

/// A model that could not be built: every Step gets the reason.
#[derive(Debug)]
struct Unconfigured {
    message: String,
}

impl Model for Unconfigured {
    fn respond<'a>(&'a self, _request: &'a ModelRequest) -> ModelFuture<'a> {
        let error = ModelError::Config {
            message: self.message.clone(),
        };
        Box::pin(async move { Err(error) })
    }
}
