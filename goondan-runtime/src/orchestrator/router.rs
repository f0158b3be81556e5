//! The Orchestrator's state and routing: instances, waiting requests, crashes and respawns
//! (HO-4, HO-6, HO-8), cycles, the control calls (AG-3..5).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::host::OrchestratorConfig;
use super::ipc::{self, Control, DelegatePayload, IpcMessage, MessageType, ORCHESTRATOR};
use super::link::{LaunchSpec, Launcher, LinkControl};
use super::{
    AgentIdentity, DEFAULT_INSTANCE_KEY, SwarmSpec, address, codes, error, protocol, timed_out,
    unknown_target,
};
use crate::agent::{
    AgentCatalog, AgentEvent, AgentInstanceInfo, SendResult, SpawnOptions, SpawnResult,
};
use crate::context::fresh_id;
use crate::error::ToolError;

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
    live: Option<(mpsc::UnboundedSender<IpcMessage>, Box<dyn LinkControl>)>,
    queue: Vec<IpcMessage>,
    restarts: u64,
}

#[derive(Default)]
pub(super) struct State {
    instances: HashMap<String, Instance>,
    waiting: HashMap<String, Waiting>,
}

pub(super) struct Core {
    pub(super) swarm: SwarmSpec,
    pub(super) config: OrchestratorConfig,
    pub(super) launcher: Box<dyn Launcher>,
    state: Mutex<State>,
    stopping: AtomicBool,
    next: AtomicU64,
}

/// Now, as RFC 3339 in UTC with milliseconds (`2026-11-22T21:31:00.123Z`).
fn rfc3339_now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Removes the requests waiting on `addr`.
fn take_waiting_on(st: &mut State, addr: &str) -> Vec<(String, Waiting)> {
    let ids: Vec<String> = st
        .waiting
        .iter()
        .filter(|(_, w)| w.target == addr)
        .map(|(id, _)| id.clone())
        .collect();
    ids.into_iter()
        .filter_map(|id| st.waiting.remove(&id).map(|w| (id, w)))
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
    ) -> Self {
        Self {
            swarm,
            config,
            launcher,
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

    /// How many instances there are.
    pub(super) fn instance_count(&self) -> usize {
        self.lock().instances.len()
    }

    /// Refuses new requests from the host, waits (up to `grace`) for in-flight requests, asks
    /// every agent process to shut down, waits for them to exit (within what is left of
    /// `grace`), and kills what is left.
    pub(super) async fn shutdown(&self, grace: Duration) {
        self.stopping.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        while !self.lock().waiting.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        {
            let st = self.lock();
            for (addr, inst) in &st.instances {
                if let Some((tx, _)) = &inst.live {
                    let bye = IpcMessage::new(
                        MessageType::Shutdown,
                        ORCHESTRATOR,
                        addr,
                        Value::Null,
                        None,
                    );
                    let _ = tx.send(bye);
                }
            }
        }
        loop {
            let alive = self
                .lock()
                .instances
                .values()
                .filter(|i| i.live.is_some())
                .count();
            if alive == 0 || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut st = self.lock();
        for inst in st.instances.values() {
            if let Some((_, control)) = &inst.live {
                control.kill();
            }
        }
        let failed: Vec<_> = st.waiting.drain().collect();
        st.instances.clear();
        drop(st);
        for (id, w) in failed {
            let err = error(
                codes::SHUTTING_DOWN,
                "AgentShuttingDownError",
                format!("the swarm shut down before `{}` answered", w.target),
                "the swarm is stopping; do not retry",
            );
            let target = w.target.clone();
            self.answer(w, &target, &id, ipc::error_payload(&err));
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn fresh(&self, prefix: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}#{}-{n}", std::process::id())
    }

    fn backoff(&self, failures: u32) -> Duration {
        let factor = 1u32 << failures.min(16);
        (self.config.backoff_initial * factor).min(self.config.backoff_max)
    }

    /// Sends `msg` to an instance, or queues it until the instance runs.
    fn deliver(st: &mut State, to: &str, msg: IpcMessage) -> bool {
        let Some(inst) = st.instances.get_mut(to) else {
            return false;
        };
        match &inst.live {
            Some((tx, _)) => {
                if let Err(mpsc::error::SendError(msg)) = tx.send(msg) {
                    inst.queue.push(msg);
                }
            }
            None => inst.queue.push(msg),
        }
        true
    }

    /// Checks that `caller` may reach `target` at all (defined, callable).
    fn check_target(&self, caller_agent: &str, target: &str) -> Result<(), ToolError> {
        if !self.swarm.defines(target) {
            return Err(unknown_target(target, &self.swarm));
        }
        if !self
            .swarm
            .callable_from(caller_agent)
            .iter()
            .any(|a| a == target)
        {
            return Err(error(
                codes::NOT_CALLABLE,
                "AgentNotCallableError",
                format!("agent `{caller_agent}` may not call agent `{target}`"),
                &format!(
                    "call one of: {}",
                    self.swarm.callable_from(caller_agent).join(", ")
                ),
            ));
        }
        Ok(())
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
            },
        );
        tokio::spawn(Arc::clone(self).run_instance(addr.clone()));
        Ok((addr, true))
    }

    /// Starts the instance, pumps its messages into the router, and respawns it with backoff
    /// when it ends (HO-8), failing its pending requests at once (HO-4).
    async fn run_instance(self: Arc<Self>, addr: String) {
        let mut failures = 0u32;
        loop {
            let spec = {
                let st = self.lock();
                let Some(inst) = st.instances.get(&addr) else {
                    return;
                };
                LaunchSpec {
                    identity: AgentIdentity {
                        agent: inst.info.target.clone(),
                        instance_key: inst.info.instance_key.clone(),
                        workdir: inst.cwd.clone(),
                    },
                }
            };
            if self.stopping.load(Ordering::SeqCst) && failures > 0 {
                return;
            }
            let started = Instant::now();
            match self.launcher.launch(spec).await {
                Ok(mut link) => {
                    {
                        let mut st = self.lock();
                        let Some(inst) = st.instances.get_mut(&addr) else {
                            link.control.kill();
                            return;
                        };
                        for msg in inst.queue.drain(..) {
                            let _ = link.tx.send(msg);
                        }
                        inst.live = Some((link.tx.clone(), link.control));
                    }
                    tracing::info!(target: "goondan::orchestrator", agent = %addr, "agent started");
                    while let Some(msg) = link.rx.recv().await {
                        self.route(&addr, msg);
                    }
                    let crashed = self.on_exit(&addr);
                    if crashed == Exit::Removed || self.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    tracing::warn!(target: "goondan::orchestrator", agent = %addr, "agent process ended; respawning");
                    failures = if started.elapsed() >= self.config.stable_after {
                        0
                    } else {
                        failures + 1
                    };
                }
                Err(reason) => {
                    failures += 1;
                    tracing::warn!(target: "goondan::orchestrator", agent = %addr, %reason, "agent failed to start");
                    if failures >= self.config.max_spawn_failures {
                        self.give_up(&addr, &reason);
                        return;
                    }
                }
            }
            tokio::time::sleep(self.backoff(failures.saturating_sub(1))).await;
        }
    }

    fn on_exit(&self, addr: &str) -> Exit {
        let mut st = self.lock();
        let Some(inst) = st.instances.get_mut(addr) else {
            return Exit::Removed;
        };
        inst.live = None;
        inst.restarts += 1;
        let failed = take_waiting_on(&mut st, addr);
        drop(st);
        for (id, w) in failed {
            let err = error(
                codes::CRASHED,
                "AgentCrashedError",
                format!("agent `{addr}` ended before answering; it is being restarted"),
                "retry the request: the agent is respawned, but its in-flight work was lost",
            );
            self.answer(w, addr, &id, ipc::error_payload(&err));
        }
        Exit::Crashed
    }

    fn give_up(&self, addr: &str, reason: &str) {
        let mut st = self.lock();
        st.instances.remove(addr);
        let failed = take_waiting_on(&mut st, addr);
        drop(st);
        for (id, w) in failed {
            let err = error(
                codes::SPAWN,
                "AgentSpawnError",
                format!("agent `{addr}` could not be started: {reason}"),
                "the host program cannot run this agent; do not retry, report it",
            );
            self.answer(w, addr, &id, ipc::error_payload(&err));
        }
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

    /// Everything an instance sends comes through here (HO-7).
    fn route(self: &Arc<Self>, from: &str, msg: IpcMessage) {
        let id = msg.correlation_id.clone();
        match (msg.kind, id) {
            (MessageType::Delegate, Some(id)) => {
                let payload = serde_json::from_value::<DelegatePayload>(msg.payload)
                    .map_err(|e| protocol(format!("a delegate payload is malformed: {e}")));
                let caller = Caller::Agent(from.to_owned());
                match payload {
                    Ok(p) => self.delegate(caller, from, &msg.to, p, id),
                    Err(e) => self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e)),
                }
            }
            (MessageType::DelegateResult, Some(id)) => {
                let mut st = self.lock();
                match st.waiting.get(&id) {
                    Some(w) if w.target == from => {
                        let w = st.waiting.remove(&id);
                        drop(st);
                        if let Some(w) = w {
                            self.answer(w, from, &id, msg.payload);
                        }
                    }
                    _ => {
                        tracing::debug!(target: "goondan::orchestrator", %from, %id, "late or stray answer dropped")
                    }
                }
            }
            (MessageType::Event, Some(id)) => {
                let answer = if msg.to == ORCHESTRATOR {
                    self.control(from, msg.payload)
                } else {
                    let event = msg
                        .payload
                        .get("event")
                        .cloned()
                        .ok_or_else(|| protocol("an event has no `event`"))
                        .and_then(|e| serde_json::from_value::<AgentEvent>(e).map_err(protocol));
                    event.and_then(|e| self.send_event(from, &msg.to, e).map(|r| json!(r)))
                };
                let payload = match answer {
                    Ok(v) => ipc::ok_payload(v),
                    Err(e) => ipc::error_payload(&e),
                };
                let reply =
                    IpcMessage::new(MessageType::Event, ORCHESTRATOR, from, payload, Some(id));
                Self::deliver(&mut self.lock(), from, reply);
            }
            (kind, _) => {
                tracing::warn!(target: "goondan::orchestrator", %from, ?kind, "message without a correlation id dropped");
            }
        }
    }

    /// A control call from `from` (spawn, list, catalog).
    fn control(self: &Arc<Self>, from: &str, payload: Value) -> Result<Value, ToolError> {
        let op = serde_json::from_value::<Control>(payload).map_err(protocol)?;
        match op {
            Control::Spawn { target, options } => {
                self.spawn(from, &target, options).map(|r| json!(r))
            }
            Control::List { include_all } => Ok(json!({ "agents": self.list(from, include_all) })),
            Control::Catalog => Ok(json!(self.catalog(split(from).0))),
            Control::Hello { .. } => Err(protocol("`hello` is only the first message")),
        }
    }

    /// Routes a request from `from` to `target` (HO-1, HO-6); the answer goes to `caller`.
    pub(super) fn delegate(
        self: &Arc<Self>,
        caller: Caller,
        from: &str,
        target: &str,
        payload: DelegatePayload,
        id: String,
    ) {
        let (from_agent, _) = split(from);
        let instance_key = payload
            .event
            .instance_key
            .clone()
            .unwrap_or_else(|| DEFAULT_INSTANCE_KEY.to_owned());
        let to = address(target, &instance_key);
        let checked = (|| {
            if from == ORCHESTRATOR && self.stopping.load(Ordering::SeqCst) {
                return Err(error(
                    codes::SHUTTING_DOWN,
                    "AgentShuttingDownError",
                    "the swarm is shutting down".to_owned(),
                    "do not retry; the swarm is stopping",
                ));
            }
            if to == from || payload.chain.contains(&to) {
                let mut path = payload.chain.clone();
                path.push(from.to_owned());
                path.push(to.clone());
                return Err(error(
                    codes::CYCLE,
                    "AgentCycleError",
                    format!(
                        "the request would wait in a cycle: {}; `{to}` is already waiting on this request",
                        path.join(" -> ")
                    ),
                    "answer with what you have instead of calling back an agent that is waiting on you, or use `agents__send`, which does not wait",
                ));
            }
            self.check_target(from_agent, target)?;
            Ok(())
        })();
        if let Err(e) = checked {
            return self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e));
        }
        let timeout_ms = payload.timeout_ms;
        let mut forwarded = payload;
        forwarded.chain.push(from.to_owned());
        let body = match serde_json::to_value(&forwarded) {
            Ok(v) => v,
            Err(e) => {
                return self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&protocol(e)));
            }
        };
        let mut st = self.lock();
        if st.waiting.contains_key(&id) {
            drop(st);
            let e = protocol(format!("correlation id `{id}` is already in use"));
            return self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e));
        }
        if let Err(e) = self.ensure(&mut st, target, &instance_key, from, None) {
            drop(st);
            return self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e));
        }
        st.waiting.insert(
            id.clone(),
            Waiting {
                caller,
                target: to.clone(),
                timer: None,
            },
        );
        let msg = IpcMessage::new(MessageType::Delegate, from, &to, body, Some(id.clone()));
        Self::deliver(&mut st, &to, msg);
        drop(st);
        let core = Arc::clone(self);
        let key = id.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(timeout_ms)).await;
            let w = core.lock().waiting.remove(&key);
            if let Some(w) = w {
                let err = timed_out(split(&w.target).0, timeout_ms);
                core.reply(w.caller, ORCHESTRATOR, &key, ipc::error_payload(&err));
            }
        });
        match self.lock().waiting.get_mut(&id) {
            Some(w) => w.timer = Some(timer.abort_handle()),
            None => timer.abort(),
        }
    }

    /// Delivers a one-way event (AG-2), spawning the target when missing.
    pub(super) fn send_event(
        self: &Arc<Self>,
        from: &str,
        target: &str,
        event: AgentEvent,
    ) -> Result<SendResult, ToolError> {
        self.check_target(split(from).0, target)?;
        let key = event
            .instance_key
            .clone()
            .unwrap_or_else(|| DEFAULT_INSTANCE_KEY.to_owned());
        let event_id = fresh_id("evt");
        let mut st = self.lock();
        let (to, _) = self.ensure(&mut st, target, &key, from, None)?;
        let msg = IpcMessage::new(
            MessageType::Event,
            from,
            &to,
            json!({ "event": event, "eventId": event_id }),
            None,
        );
        let accepted = Self::deliver(&mut st, &to, msg);
        Ok(SendResult {
            event_id,
            target: target.to_owned(),
            accepted,
        })
    }

    /// Prepares an instance of a defined agent, reusing one with the same key (AG-3). The
    /// swarm definition is never touched.
    pub(super) fn spawn(
        self: &Arc<Self>,
        from: &str,
        target: &str,
        options: SpawnOptions,
    ) -> Result<SpawnResult, ToolError> {
        if !self.swarm.defines(target) {
            return Err(unknown_target(target, &self.swarm));
        }
        let key = options
            .instance_key
            .clone()
            .unwrap_or_else(|| DEFAULT_INSTANCE_KEY.to_owned());
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
    pub(super) fn list(&self, from: &str, include_all: bool) -> Vec<AgentInstanceInfo> {
        let (agent, key) = split(from);
        let key = if key.is_empty() { agent } else { key };
        let st = self.lock();
        let mut out: Vec<AgentInstanceInfo> = st
            .instances
            .values()
            .map(|i| i.info.clone())
            .filter(|i| include_all || (i.owner_agent == agent && i.owner_instance_key == key))
            .collect();
        out.sort_by(|a, b| {
            (&a.created_at, &a.target, &a.instance_key).cmp(&(
                &b.created_at,
                &b.target,
                &b.instance_key,
            ))
        });
        out
    }

    /// The swarm seen from `agent` (AG-5).
    pub(super) fn catalog(&self, agent: &str) -> AgentCatalog {
        AgentCatalog {
            swarm_name: self.swarm.name.clone(),
            entry_agent: self.swarm.entry_agent.clone(),
            self_agent: agent.to_owned(),
            available_agents: self.swarm.agent_names(),
            callable_agents: self.swarm.callable_from(agent),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Exit {
    Crashed,
    Removed,
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
