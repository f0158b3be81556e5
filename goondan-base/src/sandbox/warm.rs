//! Warm sandboxes: one per workdir for the commands of one tool, made at its first call and
//! joined by every call after it, so that a call pays for no namespace and no mount of its
//! own (see `docs/benchmarks.md`, "The sandbox of `bash`").
//!
//! What the calls of one tool share: the root (the same trees opened, the secrets hidden the
//! same way), `/dev/shm`, the network namespace with its proxy, and the PID namespace, where
//! they see each other's processes (never the host's). What each call has of its own: its
//! `TMPDIR` (the only one it may write), its Landlock and seccomp restriction, and its cgroup,
//! which holds its limits and ends its processes when it is over. A sandbox whose helper died
//! is made anew at the next call; it ends when the tool is dropped, or with its agent process.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::SandboxError;
use super::launch::{Prepared, Target, WarmSandbox};
use super::policy::SandboxPolicy;

/// The warm sandboxes of one tool, by workdir.
#[derive(Debug, Default)]
pub(crate) struct WarmSandboxes {
    by_workdir: tokio::sync::Mutex<HashMap<PathBuf, Arc<WarmSandbox>>>,
}

impl WarmSandboxes {
    /// Prepares `target` to run in the warm sandbox of its workdir under `policy`, made first
    /// when there is none (or the last one died).
    pub(crate) async fn join(
        &self,
        policy: &SandboxPolicy,
        target: Target<'_>,
    ) -> Result<Prepared, SandboxError> {
        let warm = self.get(policy, target.workdir, target.env.clone()).await?;
        warm.join(target)
    }

    async fn get(
        &self,
        policy: &SandboxPolicy,
        workdir: &Path,
        env: Vec<(OsString, OsString)>,
    ) -> Result<Arc<WarmSandbox>, SandboxError> {
        let mut by_workdir = self.by_workdir.lock().await;
        if let Some(warm) = by_workdir.get(workdir)
            && warm.is_up()
        {
            return Ok(Arc::clone(warm));
        }
        let warm = Arc::new(WarmSandbox::start(policy, workdir, env).await?);
        by_workdir.insert(workdir.to_path_buf(), Arc::clone(&warm));
        Ok(warm)
    }
}
