//! The sandbox a host program sets for every base tool of its process: the `goondan` command
//! sets it from `--sandbox` and the bundle's `policy.sandbox` before any tool runs.

use std::sync::OnceLock;

use super::policy::SandboxPolicy;

static HOST: OnceLock<SandboxPolicy> = OnceLock::new();

/// The host's sandbox was set already; it stays as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the host's sandbox policy is set once per process, and it was set already")]
pub struct AlreadySet;

/// Sets the sandbox of every base tool of this process (their own policies give way to it).
/// Set once: a second call is refused.
///
/// ```
/// use goondan_base::sandbox::{self, SandboxMode, SandboxPolicy};
///
/// // A program that runs its model's commands read-only, whatever its tools were built with.
/// sandbox::set_host_policy(SandboxPolicy::new(SandboxMode::ReadOnly)).unwrap();
/// assert_eq!(sandbox::host_policy().map(|p| p.mode), Some(SandboxMode::ReadOnly));
/// assert!(sandbox::set_host_policy(SandboxPolicy::off()).is_err());
/// ```
pub fn set_host_policy(policy: SandboxPolicy) -> Result<(), AlreadySet> {
    HOST.set(policy).map_err(|_| AlreadySet)
}

/// The sandbox set by [`set_host_policy`], if any.
pub fn host_policy() -> Option<&'static SandboxPolicy> {
    HOST.get()
}
