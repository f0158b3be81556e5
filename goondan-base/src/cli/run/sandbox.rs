//! The sandbox of the base tools of a `goondan` process: its bundle's `policy.sandbox`.

use std::path::Path;

use goondan_runtime::bundle::Bundle;

use crate::sandbox::{PolicyError, SandboxPolicy};

/// A bundle's sandbox for `agent` with the bundle and its state directory denied (the default
/// policy when there is no bundle, or it cannot be read: the command reports that itself).
pub(crate) fn bundle_sandbox(
    bundle: Option<&Path>,
    agent: Option<&str>,
    state: Option<&Path>,
) -> Result<SandboxPolicy, PolicyError> {
    let Some(path) = bundle else {
        return Ok(SandboxPolicy::default());
    };
    let file = super::bundle_file(path);
    let mut policy = match Bundle::read(&file) {
        Ok(bundle) => {
            let agent = agent.map(str::to_owned).or_else(|| bundle.entry_agent());
            match agent.and_then(|a| bundle.policy(&a, "sandbox").cloned()) {
                Some(value) => SandboxPolicy::from_bundle(&value)?,
                None => SandboxPolicy::default(),
            }
        }
        Err(_) => SandboxPolicy::default(),
    };
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    policy = policy.deny(absolute(&file))?;
    let state = super::state_dir_of(path, state);
    policy.deny(absolute(&state))
}
