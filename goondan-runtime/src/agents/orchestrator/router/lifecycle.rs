//! The life of an instance: started, its messages pumped into the router, respawned with
//! backoff when it ends (HO-8) with its pending requests failed at once (HO-4), given up after
//! repeated failed starts, and shut down with the swarm.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Core, take_waiting_on};
use crate::agents::orchestrator::ipc::{self, IpcMessage, MessageType, ORCHESTRATOR};
use crate::agents::orchestrator::link::LinkControl;
use crate::agents::orchestrator::{AgentIdentity, codes, error};

impl Core {
    /// Refuses new requests from the host, waits (up to `grace`) for in-flight requests, asks
    /// every agent process to shut down and waits for them to exit (within what is left of
    /// `grace`), then kills what is left and waits (up to `grace` again) for it to exit: no
    /// agent process outlives the call.
    pub(in crate::agents::orchestrator) async fn shutdown(&self, grace: Duration) {
        self.stopping.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        while !self.lock().waiting.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let running = {
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
            st.running.clone()
        };
        // A process may close its link before it exits (closing its journal, say): it is let
        // finish, as `on_exit` does not kill while the swarm stops.
        all_ended(&running, deadline).await;
        let (running, failed) = {
            let mut st = self.lock();
            // Those that started meanwhile too.
            let running = std::mem::take(&mut st.running);
            for control in running.iter().filter(|c| !c.ended().is_cancelled()) {
                control.kill();
            }
            let failed: Vec<_> = st.waiting.drain().collect();
            st.instances.clear();
            (running, failed)
        };
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
        // A killed process exits at once; the bound is for one stuck in the kernel.
        if !all_ended(&running, Instant::now() + grace).await {
            tracing::warn!(target: "goondan::orchestrator", "an agent process had not exited when the shutdown ended");
        }
    }

    /// Starts the instance, pumps its messages into the router, and respawns it with backoff
    /// when it ends (HO-8), failing its pending requests at once (HO-4).
    pub(super) async fn run_instance(self: Arc<Self>, addr: String) {
        let mut failures = 0u32;
        loop {
            let identity = {
                let st = self.lock();
                let Some(inst) = st.instances.get(&addr) else {
                    return;
                };
                AgentIdentity {
                    agent: inst.info.target.clone(),
                    instance_key: inst.info.instance_key.clone(),
                    workdir: inst.cwd.clone(),
                }
            };
            if self.stopping.load(Ordering::SeqCst) && failures > 0 {
                return;
            }
            let started = Instant::now();
            match self.launcher.launch(identity).await {
                Ok(mut link) => {
                    let control: Arc<dyn LinkControl> = Arc::from(link.control);
                    {
                        let mut st = self.lock();
                        let Some(inst) = st.instances.get_mut(&addr) else {
                            control.kill();
                            return;
                        };
                        for msg in inst.queue.drain(..) {
                            let _ = link.tx.send(msg);
                        }
                        inst.live = Some((link.tx.clone(), Arc::clone(&control)));
                        st.running.retain(|c| !c.ended().is_cancelled());
                        st.running.push(control);
                    }
                    tracing::info!(target: "goondan::orchestrator", agent = %addr, "agent started");
                    while let Some(msg) = link.rx.recv().await {
                        self.route(&addr, msg);
                    }
                    let exit = self.on_exit(&addr);
                    if exit == Exit::Removed || self.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Exit::Restarted(reason) = exit {
                        // Asked for: start the next process at once, as a fresh start.
                        tracing::info!(
                            name: "agent.restarted",
                            target: "goondan::orchestrator",
                            agent = %addr,
                            %reason,
                            "agent.restarted"
                        );
                        failures = 0;
                        continue;
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
        let control = inst.live.take().map(|(_, control)| control);
        inst.restarts += 1;
        let restarted = inst.draining.take();
        // Requests queued for the next process (new work held back while it drained) wait for
        // it; those the ended process had taken and not answered are lost.
        let queued: HashSet<String> = if restarted.is_some() {
            inst.queue
                .iter()
                .filter_map(|m| m.correlation_id.clone())
                .collect()
        } else {
            HashSet::new()
        };
        let failed = take_waiting_on(&mut st, addr, |id| !queued.contains(id));
        drop(st);
        // Its link is closed: what is left of the process is finished off, unless the swarm
        // is stopping, when shutdown lets it exit within its grace.
        if let Some(control) = control
            && !self.stopping.load(Ordering::SeqCst)
        {
            control.kill();
        }
        for (id, w) in failed {
            let err = error(
                codes::CRASHED,
                "AgentCrashedError",
                format!("agent `{addr}` ended before answering; it is being restarted"),
                "retry the request: the agent is respawned, but its in-flight work was lost",
            );
            self.answer(w, addr, &id, ipc::error_payload(&err));
        }
        restarted.map_or(Exit::Crashed, Exit::Restarted)
    }

    fn give_up(&self, addr: &str, reason: &str) {
        let mut st = self.lock();
        st.instances.remove(addr);
        let failed = take_waiting_on(&mut st, addr, |_| true);
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

    fn backoff(&self, failures: u32) -> Duration {
        let factor = 1u32 << failures.min(16);
        (self.config.backoff_initial * factor).min(self.config.backoff_max)
    }
}

/// Waits until every instance of `running` is gone, or `deadline`; `true` when all are.
async fn all_ended(running: &[Arc<dyn LinkControl>], deadline: Instant) -> bool {
    let deadline = tokio::time::Instant::from_std(deadline);
    for control in running {
        if tokio::time::timeout_at(deadline, control.ended().cancelled())
            .await
            .is_err()
        {
            return false;
        }
    }
    true
}

#[derive(Debug, PartialEq, Eq)]
enum Exit {
    /// It ended without being asked to: respawned with backoff.
    Crashed,
    /// It ended after asking for a restart, with this reason: started again at once.
    Restarted(String),
    /// The instance is gone from the state.
    Removed,
}
