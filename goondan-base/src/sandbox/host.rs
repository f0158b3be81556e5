//! The sandbox a host program sets for every base tool of its process: the `goondan` command
//! sets it from `--sandbox` and the bundle's `policy.sandbox` before any tool runs.

use std::sync::OnceLock;

use super::policy::SandboxPolicy;

static HOST: OnceLock<SandboxPolicy> = OnceLock::new();

/// Sets the sandbox of every base tool of this process (their own policies give way to it).
/// Set once: a second call is refused and gives its policy back.
///
/// ```
/// use goondan_base::sandbox::{self, SandboxMode, SandboxPolicy};
///
/// // A program that runs its model's commands read-only, whatever its tools were built with.
/// sandbox::set_host_policy(SandboxPolicy::new(SandboxMode::ReadOnly)).unwrap();
/// assert_eq!(sandbox::host_policy().map(|p| p.mode), Some(SandboxMode::ReadOnly));
/// assert!(sandbox::set_host_policy(SandboxPolicy::off()).is_err());
/// ```
pub fn set_host_policy(policy: SandboxPolicy) -> Result<(), SandboxPolicy> {
    HOST.set(policy)
}

/// The sandbox set by [`set_host_policy`], if any.
pub fn host_policy() -> Option<&'static SandboxPolicy> {
    HOST.get()
}
