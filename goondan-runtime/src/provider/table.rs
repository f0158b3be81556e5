//! [`Provider`]: the table from provider names to [`ProviderAdapter`]s.

use std::sync::RwLock;

use super::{ProviderAdapter, anthropic, gemini, openai_chat, openai_responses};
use crate::dialect::{Dialect, UnknownDialect};

/// The built-in providers, one row each. A new provider in this crate is its module (an adapter
/// that owns its dialect) and a row here; a constant on [`Provider`] if it deserves one, and
/// its dialect a row in [`Dialect::ALL`].
const BUILT_IN: [&dyn ProviderAdapter; 4] = [
    &openai_chat::OpenAiChat,
    &openai_responses::OpenAiResponses,
    &anthropic::Anthropic,
    &gemini::Gemini,
];

/// The providers registered at run time ([`Provider::register`]), after the built-in ones.
static REGISTERED: RwLock<Vec<&'static dyn ProviderAdapter>> = RwLock::new(Vec::new());

/// A model provider: a row of the process's table from names to [`ProviderAdapter`]s.
///
/// The built-in providers are the associated constants ([`Provider::OPENAI_CHAT`],
/// [`Provider::OPENAI_RESPONSES`], [`Provider::ANTHROPIC`], [`Provider::GEMINI`]); others are
/// added with [`Provider::register`], and then a bundle's Model resource may name them too.
/// [`Provider::parse`] looks a name (or an alias, `google`) up. A `Provider` is its name: it
/// is `Copy`, compares by name, and may be matched on the constants.
///
/// ```
/// use goondan_runtime::provider::Provider;
/// assert_eq!(Provider::parse("google"), Some(Provider::GEMINI));
/// assert_eq!(Provider::ANTHROPIC.default_key_env(), "ANTHROPIC_API_KEY");
/// assert_eq!(Provider::OPENAI_CHAT.to_string(), "openai");
/// assert_eq!(Provider::parse("openia"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Provider {
    /// The adapter's name: always a row of the table.
    name: &'static str,
}

impl Provider {
    /// OpenAI Chat Completions (`openai`), and every server that speaks it (vLLM, llama.cpp's
    /// server, Ollama, LM Studio).
    pub const OPENAI_CHAT: Provider = Provider { name: "openai" };
    /// OpenAI Responses (`openai-responses`).
    pub const OPENAI_RESPONSES: Provider = Provider {
        name: "openai-responses",
    };
    /// Anthropic Messages (`anthropic`).
    pub const ANTHROPIC: Provider = Provider { name: "anthropic" };
    /// Google Gemini `generateContent` (`gemini`, also `google`).
    pub const GEMINI: Provider = Provider { name: "gemini" };

    /// Adds `adapter` to the table under its name and aliases, and returns it as a
    /// `Provider`; from then on [`Provider::parse`] and bundles find it. Registering the same
    /// adapter again returns it again; a name another adapter has is an error.
    pub fn register(adapter: &'static dyn ProviderAdapter) -> Result<Provider, ProviderNameTaken> {
        let provider = Provider {
            name: adapter.name(),
        };
        let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        for name in std::iter::once(adapter.name()).chain(adapter.aliases().iter().copied()) {
            let holder = BUILT_IN
                .iter()
                .chain(registered.iter())
                .find(|a| answers_to(**a, name));
            match holder {
                Some(a) if std::ptr::addr_eq(*a, adapter) => return Ok(provider),
                Some(a) => {
                    return Err(ProviderNameTaken {
                        name: name.to_owned(),
                        holder: a.name(),
                    });
                }
                None => {}
            }
        }
        registered.push(adapter);
        drop(registered);
        crate::bundle::accept_provider(adapter.name(), adapter.aliases());
        Ok(provider)
    }

    /// The provider named `name` or with the alias `name` (`google` is Gemini); `None` for
    /// names no provider has.
    pub fn parse(name: &str) -> Option<Provider> {
        find(|a| answers_to(a, name)).map(|a| Provider { name: a.name() })
    }

    /// Every provider: the built-in ones, then the registered ones.
    pub fn all() -> Vec<Provider> {
        let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
        BUILT_IN
            .iter()
            .chain(registered.iter())
            .map(|a| Provider { name: a.name() })
            .collect()
    }

    /// The name a Model resource's `spec.provider` uses.
    pub fn as_str(self) -> &'static str {
        self.name
    }

    /// The adapter: the provider's request, URL, headers, answers and tool dialect.
    pub fn adapter(self) -> &'static dyn ProviderAdapter {
        // Every `Provider` is made from a row of the table (its field is private), and rows
        // are never removed: the fallback is never taken.
        find(|a| a.name() == self.name).unwrap_or(BUILT_IN[0])
    }

    /// The tool format it speaks.
    pub fn dialect(self) -> Dialect {
        self.adapter().dialect()
    }

    /// The base URL used when none is configured.
    pub fn default_base_url(self) -> &'static str {
        self.adapter().default_base_url()
    }

    /// The environment variable read for the key when the configuration names none.
    pub fn default_key_env(self) -> &'static str {
        self.adapter().default_key_env()
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl std::str::FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::parse(s).ok_or_else(|| UnknownProvider {
            name: s.to_owned(),
            known: quoted(Provider::all().iter().map(|p| p.as_str())),
        })
    }
}

/// A provider name no provider has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{name}`: expected one of {known}")]
pub struct UnknownProvider {
    /// The name given.
    pub name: String,
    /// The names known, as a list for the message.
    pub known: String,
}

/// [`Provider::register`] with a name (or alias) another adapter already has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot register the provider `{name}`: the provider `{holder}` already answers to it")]
pub struct ProviderNameTaken {
    /// The name asked for.
    pub name: String,
    /// The provider that has it.
    pub holder: &'static str,
}

impl Dialect {
    /// The built-in dialects: each built-in provider's, and MCP's.
    pub const ALL: [Dialect; 5] = [
        Dialect::OPENAI_CHAT,
        Dialect::OPENAI_RESPONSES,
        Dialect::ANTHROPIC,
        Dialect::GEMINI,
        Dialect::MCP,
    ];
}

/// A dialect by name: a built-in one (`mcp` included) or a registered provider's.
impl std::str::FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .or_else(|| Provider::parse(s).map(Provider::dialect))
            .ok_or_else(|| UnknownDialect {
                name: s.to_owned(),
                known: quoted(
                    Dialect::ALL.iter().map(|d| d.as_str()).chain(
                        Provider::all()
                            .into_iter()
                            .map(|p| p.dialect().as_str())
                            .filter(|n| !Dialect::ALL.iter().any(|d| d.as_str() == *n)),
                    ),
                ),
            })
    }
}

/// Whether `adapter` has the name or alias `name`.
fn answers_to(adapter: &dyn ProviderAdapter, name: &str) -> bool {
    adapter.name() == name || adapter.aliases().contains(&name)
}

/// The first adapter of the table that `pick` takes.
fn find(
    pick: impl Fn(&'static dyn ProviderAdapter) -> bool,
) -> Option<&'static dyn ProviderAdapter> {
    if let Some(a) = BUILT_IN.iter().copied().find(|a| pick(*a)) {
        return Some(a);
    }
    let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
    registered.iter().copied().find(|a| pick(*a))
}

/// `` `a`, `b` `` for a message.
fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
