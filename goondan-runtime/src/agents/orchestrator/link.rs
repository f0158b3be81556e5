//! What the Orchestrator needs from a transport: start an instance, talk to it, kill it.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use super::AgentIdentity;
use super::ipc::IpcMessage;

/// A started instance: messages both ways and a handle on its process or task. `rx` ends when
/// the instance is gone.
pub(crate) struct Link {
    pub(crate) tx: mpsc::UnboundedSender<IpcMessage>,
    pub(crate) rx: mpsc::UnboundedReceiver<IpcMessage>,
    pub(crate) control: Box<dyn LinkControl>,
}

/// A handle on a running instance. Dropping the last handle on a process kills it.
pub(crate) trait LinkControl: Send + Sync {
    /// The process id, for a process.
    fn pid(&self) -> Option<u32>;
    /// Ends the instance at once; [`ended`](Self::ended) tells when it is gone.
    fn kill(&self);
    /// Cancelled once the instance is gone: its process exited and was reaped, or its task
    /// ended. Its link may close earlier, while the process still finishes its work.
    fn ended(&self) -> &CancellationToken;
}

pub(crate) type LaunchFuture<'a> = Pin<Box<dyn Future<Output = Result<Link, String>> + Send + 'a>>;

/// Starts instances: as processes, or as tasks.
pub(crate) trait Launcher: Send + Sync + 'static {
    fn launch(&self, identity: AgentIdentity) -> LaunchFuture<'_>;
    fn socket_path(&self) -> Option<&Path> {
        None
    }
}

/// The answer payload of a request handed to another machine ([`Remote::delegate`]).
pub(crate) type RemoteFuture = Pin<Box<dyn Future<Output = Value> + Send>>;

/// Agents served elsewhere: an Orchestrator with a `Remote` runs only the agents
/// [`serves_locally`](Remote::serves_locally) names and hands every other request and event
/// to it (the NATS transport).
pub(crate) trait Remote: Send + Sync + 'static {
    /// Whether `agent` runs under this Orchestrator.
    fn serves_locally(&self, agent: &str) -> bool;
    /// Hands a `delegate` (its payload's chain ending with its sender) to the host serving
    /// its target; resolves to the `delegate_result` payload, an error payload when the request
    /// could not be answered.
    fn delegate(&self, msg: IpcMessage) -> RemoteFuture;
    /// Hands a one-way `event` to a host serving its target; `false` when none took it.
    fn send(&self, msg: IpcMessage) -> bool;
}
