//! Where a swarm's messages go on NATS: every subject starts with `goondan.<swarm>.`, so two
//! swarms on one server never see each other's messages.

use super::options::NatsError;

/// The subjects of one swarm.
///
/// ```
/// use goondan_runtime::agents::orchestrator::nats::Subjects;
///
/// let s = Subjects::new("shop").unwrap();
/// assert_eq!(s.agent("coder").unwrap(), "goondan.shop.agent.coder");
/// assert!(Subjects::new("two.parts").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subjects {
    prefix: String,
}

/// Checks that `name` is one subject token: not empty, no `.`, `*`, `>` or whitespace.
pub(crate) fn token<'a>(what: &'static str, name: &'a str) -> Result<&'a str, NatsError> {
    let bad = name.is_empty()
        || name
            .chars()
            .any(|c| c == '.' || c == '*' || c == '>' || c.is_whitespace());
    if bad {
        Err(NatsError::Name {
            what,
            name: name.to_owned(),
        })
    } else {
        Ok(name)
    }
}

impl Subjects {
    /// The subjects of swarm `swarm`; an error when the name cannot be a subject token.
    pub fn new(swarm: &str) -> Result<Self, NatsError> {
        Ok(Self {
            prefix: format!("goondan.{}", token("swarm", swarm)?),
        })
    }

    /// Where requests and events for `agent` go; also the queue group of its hosts.
    pub fn agent(&self, agent: &str) -> Result<String, NatsError> {
        Ok(format!("{}.agent.{}", self.prefix, token("agent", agent)?))
    }

    /// Where every host of the swarm answers with the agent instances it runs (AG-4).
    pub fn instances(&self) -> String {
        format!("{}.instances", self.prefix)
    }

    /// Where a host answers the pings of the callers waiting on it.
    pub fn host_ping(&self, host_id: &str) -> Result<String, NatsError> {
        Ok(format!(
            "{}.host.{}.ping",
            self.prefix,
            token("host", host_id)?
        ))
    }
}
