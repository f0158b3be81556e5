//! Instances as tasks of this process: the Orchestrator's routing without processes, for fast
//! tests. Messages pass through the same agent loop as in a process, minus the framing.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::agent_mode::serve;
use super::link::{LaunchFuture, Launcher, Link, LinkControl};
use super::{AgentIdentity, AgentWorker};

type Build = dyn Fn(&AgentIdentity) -> Arc<dyn AgentWorker> + Send + Sync;

pub(crate) struct InProcess {
    build: Box<Build>,
}

impl InProcess {
    pub(crate) fn new(
        build: impl Fn(&AgentIdentity) -> Arc<dyn AgentWorker> + Send + Sync + 'static,
    ) -> Self {
        Self {
            build: Box::new(build),
        }
    }
}

struct TaskControl {
    task: tokio::task::AbortHandle,
    ended: CancellationToken,
}

impl LinkControl for TaskControl {
    fn pid(&self) -> Option<u32> {
        None
    }

    fn kill(&self) {
        self.task.abort();
    }

    fn ended(&self) -> &CancellationToken {
        &self.ended
    }
}

impl Launcher for InProcess {
    fn launch(&self, identity: AgentIdentity) -> LaunchFuture<'_> {
        let worker = (self.build)(&identity);
        Box::pin(async move {
            let (to_agent, agent_rx) = mpsc::unbounded_channel();
            let (agent_tx, from_agent) = mpsc::unbounded_channel();
            let ended = CancellationToken::new();
            // Dropped when the task ends, finished or aborted.
            let guard = ended.clone().drop_guard();
            let task = tokio::spawn(async move {
                let _guard = guard;
                serve(Arc::new(identity), worker, agent_rx, agent_tx).await;
            });
            Ok(Link {
                tx: to_agent,
                rx: from_agent,
                control: Box::new(TaskControl {
                    task: task.abort_handle(),
                    ended,
                }),
            })
        })
    }
}
