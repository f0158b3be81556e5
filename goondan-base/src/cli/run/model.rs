//! The model each agent of `goondan run` thinks with: its `kind: Model` resource, with the
//! variables OpenAI's own SDKs read filling what the bundle leaves open.
//!
//! - [`ENV_MODEL`] (`GOONDAN_MODEL`), when set, names the model instead of `spec.model`;
//! - `OPENAI_BASE_URL`, when the Model is an OpenAI one (`openai`, `openai-responses`) without
//!   `spec.endpoint`, is its base URL (a local server: Ollama, llama.cpp, vLLM, LM Studio);
//! - the key is read from the variable the Model names, else the provider's usual one
//!   (`OPENAI_API_KEY`, ...). It is never printed.

use std::sync::Arc;

use goondan_runtime::bundle::{Bundle, ModelSpec};
use goondan_runtime::provider::{self, ModelSetupError};
use goondan_runtime::step::{Model, ModelError, ModelFactory, ModelFuture, ModelRequest};

/// Names the model instead of the Model resource's `spec.model`.
pub(crate) const ENV_MODEL: &str = "GOONDAN_MODEL";
/// The base URL of an OpenAI-compatible server, as OpenAI's SDKs read it.
pub(crate) const ENV_OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";

/// `spec` with the environment's overrides (see the [module](self)); `var` reads a variable.
pub(crate) fn with_env(mut spec: ModelSpec, var: impl Fn(&str) -> Option<String>) -> ModelSpec {
    if let Some(model) = var(ENV_MODEL).filter(|m| !m.trim().is_empty()) {
        spec.model = model;
    }
    let openai = matches!(spec.provider.as_str(), "openai" | "openai-responses");
    if openai && spec.endpoint.is_none() {
        spec.endpoint = var(ENV_OPENAI_BASE_URL).filter(|u| !u.trim().is_empty());
    }
    spec
}

fn for_agent(bundle: &Bundle, agent: &str) -> Result<Arc<dyn Model>, ModelSetupError> {
    let spec = with_env(bundle.agent_model(agent)?, |name| std::env::var(name).ok());
    Ok(Arc::new(provider::from_spec(&spec)?))
}

/// The models of `bundle`'s agents. An agent whose model cannot be built answers every Step
/// with the reason, so the terminal shows it.
pub(crate) fn factory(bundle: Bundle) -> ModelFactory {
    let bundle = Arc::new(bundle);
    Arc::new(move |agent: &str| match for_agent(&bundle, agent) {
        Ok(model) => model,
        Err(e) => Arc::new(Unconfigured(e.to_string())),
    })
}

/// A model that could not be built.
#[derive(Debug)]
struct Unconfigured(String);

impl Model for Unconfigured {
    fn respond<'a>(&'a self, _request: &'a ModelRequest) -> ModelFuture<'a> {
        let message = self.0.clone();
        Box::pin(async move { Err(ModelError::Config { message }) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(provider: &str, endpoint: Option<&str>) -> ModelSpec {
        let yaml = format!(
            "apiVersion: goondan.ai/v1\nkind: Model\nmetadata: {{name: m}}\nspec: {{provider: {provider}, model: from-bundle{}}}\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {{name: a}}\nspec: {{modelRef: Model/m}}\n",
            endpoint
                .map(|e| format!(", endpoint: \"{e}\""))
                .unwrap_or_default()
        );
        Bundle::from_yaml(&yaml, "goondan.yaml")
            .agent_model("a")
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn goondan_model_and_openai_base_url_fill_the_model_resource() {
        let env = |name: &str| match name {
            ENV_MODEL => Some("from-env".to_owned()),
            ENV_OPENAI_BASE_URL => Some("http://127.0.0.1:11434/v1".to_owned()),
            _ => None,
        };
        let s = with_env(spec("openai", None), env);
        assert_eq!(s.model, "from-env");
        assert_eq!(s.endpoint.as_deref(), Some("http://127.0.0.1:11434/v1"));
        // The bundle's own endpoint wins; other providers ignore OpenAI's variable.
        let s = with_env(spec("openai", Some("http://10.0.0.1/v1")), env);
        assert_eq!(s.endpoint.as_deref(), Some("http://10.0.0.1/v1"));
        assert_eq!(with_env(spec("anthropic", None), env).endpoint, None);
        // Nothing set: the bundle as written.
        let s = with_env(spec("openai", None), |_| None);
        assert_eq!((s.model.as_str(), s.endpoint), ("from-bundle", None));
    }
}
