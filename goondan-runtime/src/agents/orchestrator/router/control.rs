//! The control calls an agent makes to the Orchestrator: spawn, list, catalog (AG-3..5).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{Core, split};
use crate::agents::orchestrator::ipc::Control;
use crate::agents::orchestrator::{
    codes, error, instance_key, listing_order, protocol, unknown_target,
};
use crate::tools::agent::{AgentCatalog, AgentInstanceInfo, SpawnOptions, SpawnResult};
use crate::tools::error::ToolError;

impl Core {
    /// A control call from `from` (spawn, list, catalog).
    pub(super) fn control(
        self: &Arc<Self>,
        from: &str,
        payload: Value,
    ) -> Result<Value, ToolError> {
        let op = serde_json::from_value::<Control>(payload).map_err(protocol)?;
        match op {
            Control::Spawn { target, options } => {
                self.spawn(from, &target, options).map(|r| json!(r))
            }
            Control::List { include_all } => Ok(json!({ "agents": self.list(from, include_all) })),
            Control::Catalog => Ok(json!(self.catalog(split(from).0))),
            Control::Restart { reason } => Ok(json!({ "restarting": self.drain(from, reason) })),
            Control::Hello { .. } => Err(protocol("`hello` is only the first message")),
        }
    }

    /// Prepares an instance of a defined agent, reusing one with the same key (AG-3). The
    /// swarm definition is never touched.
    pub(in crate::agents::orchestrator) fn spawn(
        self: &Arc<Self>,
        from: &str,
        target: &str,
        options: SpawnOptions,
    ) -> Result<SpawnResult, ToolError> {
        if !self.swarm.defines(target) {
            return Err(unknown_target(target, &self.swarm));
        }
        if self.remote_for(target).is_some() {
            return Err(error(
                codes::SPAWN,
                "AgentSpawnError",
                format!(
                    "agent `{target}` runs on another host of swarm `{}`",
                    self.swarm.name
                ),
                "just send it a request: the host serving it starts its instance on first use",
            ));
        }
        let key = instance_key(options.instance_key.as_deref());
        let mut st = self.lock();
        let (addr, spawned) = self.ensure(&mut st, target, &key, from, options.cwd.as_deref())?;
        let cwd = st.instances.get(&addr).and_then(|i| i.info.cwd.clone());
        Ok(SpawnResult {
            target: target.to_owned(),
            instance_key: key,
            spawned,
            cwd,
        })
    }

    /// The instances `from` spawned, or all of them (AG-4).
    pub(in crate::agents::orchestrator) fn list(
        &self,
        from: &str,
        include_all: bool,
    ) -> Vec<AgentInstanceInfo> {
        let (agent, key) = split(from);
        let key = if key.is_empty() { agent } else { key };
        let st = self.lock();
        let mut out: Vec<AgentInstanceInfo> = st
            .instances
            .values()
            .map(|i| i.info.clone())
            .filter(|i| include_all || (i.owner_agent == agent && i.owner_instance_key == key))
            .collect();
        out.sort_by(|a, b| listing_order(a).cmp(&listing_order(b)));
        out
    }

    /// Marks `from` as draining before a restart it asked for; `false` when it is unknown or
    /// the swarm is stopping (it then simply ends).
    fn drain(&self, from: &str, reason: String) -> bool {
        if self.stopping.load(Ordering::SeqCst) {
            return false;
        }
        let mut st = self.lock();
        let Some(inst) = st.instances.get_mut(from) else {
            return false;
        };
        tracing::info!(
            name: "agent.restart_requested",
            target: "goondan::orchestrator",
            agent = %from,
            %reason,
            "agent.restart_requested"
        );
        inst.draining = Some(reason);
        true
    }

    /// The swarm seen from `agent` (AG-5).
    pub(in crate::agents::orchestrator) fn catalog(&self, agent: &str) -> AgentCatalog {
        AgentCatalog {
            swarm_name: self.swarm.name.clone(),
            entry_agent: self.swarm.entry_agent.clone(),
            self_agent: agent.to_owned(),
            available_agents: self.swarm.agent_names(),
            callable_agents: self.swarm.callable_from(agent),
        }
    }
}
