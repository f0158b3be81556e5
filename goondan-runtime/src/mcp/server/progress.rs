//! [`ToolContext::progress`](crate::ToolContext::progress) as `notifications/progress`: a
//! sink per call that queues the reports with the client's `progressToken`, and a forwarder
//! that sends them in order while the call runs (and, for a task, until its work ends).

use std::sync::Arc;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;

use crate::tools::context::{Progress, ProgressSink};

/// Queues a call's reports as notifications for its progress token.
pub(super) struct ProgressQueue {
    token: ProgressToken,
    tx: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ProgressSink for ProgressQueue {
    fn report(&self, _tool_call_id: &str, progress: Progress) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress.done);
        param.total = progress.total;
        param.message = progress.message;
        // The receiver is gone only once the call is over: a late report has nowhere to go.
        let _ = self.tx.send(param);
    }
}

/// The sink for a call with `token`, and the receiving end to forward.
pub(super) fn queue(
    token: ProgressToken,
) -> (
    Arc<ProgressQueue>,
    mpsc::UnboundedReceiver<ProgressNotificationParam>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(ProgressQueue { token, tx }), rx)
}

/// Sends one report; a client that went away is not the call's failure.
pub(super) async fn send(peer: &Peer<RoleServer>, param: ProgressNotificationParam) {
    if let Err(error) = peer.notify_progress(param).await {
        tracing::debug!(%error, "progress notification not sent");
    }
}

/// Sends every queued report, then every later one, until every sender is gone.
pub(super) fn forward_rest(
    peer: Peer<RoleServer>,
    mut rx: mpsc::UnboundedReceiver<ProgressNotificationParam>,
) {
    tokio::spawn(async move {
        while let Some(param) = rx.recv().await {
            send(&peer, param).await;
        }
    });
}
