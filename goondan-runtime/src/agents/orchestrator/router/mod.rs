//! The Orchestrator's core: its state (instances, waiting requests) here, and in submodules
//! what changes it: [`routing`] (requests, events, cycles, timeouts), [`lifecycle`] (start,
//! crash, respawn with backoff, shutdown) and [`control`] (spawn, list, catalog).

mod control;
mod lifecycle;
mod routing;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::OrchestratorConfig;
use super::ipc::{IpcMessage, MessageType, ORCHESTRATOR};
use super::link::{Launcher, LinkControl, Remote};
use super::{SwarmSpec, address, codes, error};
use crate::tools::agent::AgentInstanceInfo;
use crate::tools::error::ToolError;

pub(super) enum Caller {
    Host(oneshot::Sender<Value>),
    Agent(String),
}

pub(super) struct Waiting {
    caller: Caller,
    target: String,
    timer: Option<tokio::task::AbortHandle>,
}

pub(super) struct Instance {
    info: AgentInstanceInfo,
    cwd: PathBuf,
    live: Option<(mpsc::UnboundedSender<IpcMessage>, Arc<dyn LinkControl>)>,
    queue: Vec<IpcMessage>,
    restarts: u64,
    /// Set when the instance asked to be restarted ([`Control::Restart`]): it gets no new work
    /// (that waits in `queue` for the next process) and its exit is a restart, not a crash.
    ///
    /// [`Control::Restart`]: super::ipc::Control::Restart
    draining: Option<String>,
}

#[derive(Default)]
pub(super) struct State {
    instances: HashMap<String, Instance>,
    waiting: HashMap<String, Waiting>,
    /// Every instance started and not yet seen gone, its link open or not: shutdown waits
    /// for them to exit.
    running: Vec<Arc<dyn LinkControl>>,
}

pub(super) struct Core {
    pub(super) swarm: SwarmSpec,
    pub(super) config: OrchestratorConfig,
    pub(super) launcher: Box<dyn Launcher>,
    /// The agents served on other machines, when the swarm spans several.
    pub(super) remote: Option<Arc<dyn Remote>>,
    state: Mutex<State>,
    stopping: AtomicBool,
    next: AtomicU64,
}

/// Now, as RFC 3339 in UTC with milliseconds (`2026-11-22T21:31:00.123Z`).
fn rfc3339_now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Removes the requests waiting on `addr` whose correlation id `which` picks.
fn take_waiting_on(
    st: &mut State,
    addr: &str,
    which: impl Fn(&str) -> bool,
) -> Vec<(String, Waiting)> {
    st.waiting
        .extract_if(|id, w| w.target == addr && which(id))
        .collect()
}

fn split(address: &str) -> (&str, &str) {
    address.split_once('/').unwrap_or((address, ""))
}

impl Core {
    pub(super) fn new(
        swarm: SwarmSpec,
        config: OrchestratorConfig,
        launcher: Box<dyn Launcher>,
        remote: Option<Arc<dyn Remote>>,
    ) -> Self {
        Self {
            swarm,
            config,
            launcher,
            remote,
            state: Mutex::new(State::default()),
            stopping: AtomicBool::new(false),
            next: AtomicU64::new(1),
        }
    }

    /// The process id of a running instance.
    pub(super) fn pid(&self, addr: &str) -> Option<u32> {
        self.lock().instances.get(addr)?.live.as_ref()?.1.pid()
    }

    /// How many times an instance ended and was started again.
    pub(super) fn restarts(&self, addr: &str) -> Option<u64> {
        Some(self.lock().instances.get(addr)?.restarts)
    }

    /// How many requests wait for an answer.
    pub(super) fn in_flight(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Whether a request with correlation id `id` waits for an answer.
    #[cfg(feature = "nats")]
    pub(in crate::agents::orchestrator) fn is_waiting(&self, id: &str) -> bool {
        self.lock().waiting.contains_key(id)
    }

    /// How many instances there are.
    pub(super) fn instance_count(&self) -> usize {
        self.lock().instances.len()
    }

    /// The remote side of `agent`, when it is served on another machine.
    fn remote_for(&self, agent: &str) -> Option<&Arc<dyn Remote>> {
        self.remote.as_ref().filter(|r| !r.serves_locally(agent))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(in crate::agents::orchestrator) fn fresh(&self, prefix: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}#{}-{n}", std::process::id())
    }

    /// Sends `msg` to an instance, or queues it until the instance runs.
    /// While the instance drains before a restart, only answers reach it (to its own requests
    /// and control calls) and `shutdown`; new work waits for the next process.
    fn deliver(st: &mut State, to: &str, msg: IpcMessage) -> bool {
        let Some(inst) = st.instances.get_mut(to) else {
            return false;
        };
        let answer = msg.kind == MessageType::DelegateResult
            || msg.kind == MessageType::Shutdown
            || (msg.kind == MessageType::Event
                && msg.from == ORCHESTRATOR
                && msg.correlation_id.is_some());
        match &inst.live {
            Some(_) if inst.draining.is_some() && !answer => inst.queue.push(msg),
            Some((tx, _)) => {
                if let Err(mpsc::error::SendError(msg)) = tx.send(msg) {
                    inst.queue.push(msg);
                }
            }
            None => inst.queue.push(msg),
        }
        true
    }

    /// Creates the instance when missing and starts it (HO-6); `true` when created.
    fn ensure(
        self: &Arc<Self>,
        st: &mut State,
        target: &str,
        instance_key: &str,
        owner: &str,
        cwd: Option<&str>,
    ) -> Result<(String, bool), ToolError> {
        let addr = address(target, instance_key);
        if st.instances.contains_key(&addr) {
            return Ok((addr, false));
        }
        if instance_key.is_empty() || instance_key.contains('/') {
            return Err(error(
                codes::SPAWN,
                "AgentSpawnError",
                format!("`{instance_key}` is not a valid instance key"),
                "use a non-empty instance key without `/`",
            ));
        }
        let (owner_agent, owner_key) = split(owner);
        let dir = cwd.map_or_else(
            || self.config.workdir.clone(),
            |c| self.config.workdir.join(c),
        );
        st.instances.insert(
            addr.clone(),
            Instance {
                info: AgentInstanceInfo {
                    target: target.to_owned(),
                    instance_key: instance_key.to_owned(),
                    owner_agent: owner_agent.to_owned(),
                    owner_instance_key: if owner_key.is_empty() {
                        owner_agent
                    } else {
                        owner_key
                    }
                    .to_owned(),
                    created_at: rfc3339_now(),
                    cwd: cwd.map(str::to_owned),
                },
                cwd: dir,
                live: None,
                queue: Vec::new(),
                restarts: 0,
                draining: None,
            },
        );
        tokio::spawn(Arc::clone(self).run_instance(addr.clone()));
        Ok((addr, true))
    }

    /// Ends a waiting request with `payload`, stopping its timer.
    fn answer(&self, w: Waiting, from: &str, id: &str, payload: Value) {
        if let Some(timer) = &w.timer {
            timer.abort();
        }
        self.reply(w.caller, from, id, payload);
    }

    /// Hands an answer to whoever waits for it.
    fn reply(&self, caller: Caller, from: &str, id: &str, payload: Value) {
        match caller {
            Caller::Host(tx) => {
                let _ = tx.send(payload);
            }
            Caller::Agent(to) => {
                let msg = IpcMessage::new(
                    MessageType::DelegateResult,
                    from,
                    &to,
                    payload,
                    Some(id.to_owned()),
                );
                Self::deliver(&mut self.lock(), &to, msg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_at_is_rfc3339() {
        let t = rfc3339_now();
        assert_eq!(t.len(), 24, "{t}");
        assert!(humantime::parse_rfc3339(&t).is_ok(), "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert!(t.starts_with("20"), "{t}");
    }
}
