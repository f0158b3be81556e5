//! Code mode's worker processes in the kernel sandbox: [`CodeSandbox`], the launcher the
//! `goondan` program gives code mode (`goondan_runtime::code::CodeMode::worker`).

use std::path::PathBuf;
use std::sync::Arc;

use goondan_runtime::code::CodeMode;
use goondan_runtime::code::worker::{LaunchedWorker, WorkerCommand, WorkerGuard, WorkerLauncher};

use crate::bash::CgroupPool;
use crate::bash::containment::Containment;
use crate::sandbox::{
    LimitError, Limits, PrivateDir, Resource, SandboxMode, SandboxPolicy, prepare_sealed,
};

/// The memory a worker may use when none is set: the interpreter, the program's values and
/// the messages of its largest call, with room to spare.
pub const DEFAULT_WORKER_MEMORY: u64 = 256 << 20;

/// `mode` as the `goondan` program runs it: with the host's sandbox on, each program runs in
/// a sandboxed worker process ([`CodeSandbox`]); a person who turned the sandbox off gets the
/// interpreter on a thread of the process.
pub(crate) fn as_this_host_runs_it(mode: CodeMode) -> CodeMode {
    if crate::sandbox::host_policy().is_none_or(SandboxPolicy::is_on) {
        mode.worker(CodeSandbox::new())
    } else {
        mode
    }
}

/// Starts each code worker in a sandbox of its own: it reads the system's libraries and its
/// program, writes nowhere (not even a `TMPDIR`), has no network and sees only its own
/// processes (see [`crate::sandbox`]), and its cgroup holds it to a memory limit, past which
/// the kernel ends it and the program answers `E_CODE_LIMIT` (memory).
///
/// It fails closed: where the sandbox or the memory limit cannot be had, the code call fails
/// with what is missing, and the program does not run.
///
/// ```
/// use goondan_base::code_worker::CodeSandbox;
/// use goondan_runtime::code::CodeMode;
///
/// let mode = CodeMode::new().worker(CodeSandbox::new().memory(128 << 20)?);
/// assert!(mode.runs_in_workers());
/// # Ok::<(), goondan_base::sandbox::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CodeSandbox {
    limits: Limits,
    program: Option<PathBuf>,
    cgroups: Arc<CgroupPool>,
}

impl Default for CodeSandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl CodeSandbox {
    /// Workers of this program, with [`DEFAULT_WORKER_MEMORY`].
    pub fn new() -> Self {
        Self {
            limits: Limits::default()
                .with_memory(DEFAULT_WORKER_MEMORY)
                .unwrap_or_default(),
            program: None,
            cgroups: Arc::default(),
        }
    }

    /// How many bytes a worker may use in all (at least 1 MiB).
    pub fn memory(mut self, bytes: u64) -> Result<Self, LimitError> {
        self.limits = self.limits.with_memory(bytes)?;
        Ok(self)
    }

    /// The program that serves as the worker, instead of this one: one that calls
    /// `goondan_runtime::code::worker::serve_if_asked` first in `main` (the `goondan`
    /// program does).
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }
}

/// A worker's sandbox: its cgroup and its private directory, dropped in that order once it
/// ended.
struct Sandboxed {
    containment: Containment,
    _private: PrivateDir,
}

impl WorkerGuard for Sandboxed {
    fn memory_exceeded(&self) -> bool {
        self.containment.limit_hit() == Some(Resource::Memory)
    }
}

impl WorkerLauncher for CodeSandbox {
    fn launch(&self, worker: WorkerCommand) -> Result<LaunchedWorker, String> {
        let program = self.program.clone().unwrap_or(worker.program);
        let policy = SandboxPolicy::new(SandboxMode::ReadOnly)
            .read(program.to_string_lossy())
            .map_err(|e| format!("the worker's sandbox: {e}"))?;
        let prepared = prepare_sealed(&policy, program.as_os_str(), &worker.args)
            .map_err(|e| format!("the worker's sandbox: {e}"))?;
        let containment = Containment::new(true, self.limits, true, &self.cgroups)
            .map_err(|e| format!("the worker's memory limit: {e}"))?;
        let (program, args) = containment.argv(prepared.program.as_os_str(), &prepared.args);
        let mut env = prepared.env;
        env.extend(containment.marker_env());
        Ok(LaunchedWorker {
            command: WorkerCommand {
                program: program.into(),
                args,
                env,
            },
            guard: Box::new(Sandboxed {
                containment,
                _private: prepared.private,
            }),
        })
    }
}
