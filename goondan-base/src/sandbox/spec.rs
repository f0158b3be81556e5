//! What the host tells the helper program ([`LaunchSpec`], JSON in one environment variable)
//! and what the helper reports back ([`Report`], one JSON line in a file only they can reach).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The environment variable that carries the [`LaunchSpec`] to the helper.
pub(crate) const SPEC_VAR: &str = "GOONDAN_SANDBOX_SPEC";

/// Everything the helper needs to confine and run one command. Paths and strings are bytes,
/// so that names that are not UTF-8 survive.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct LaunchSpec {
    pub(crate) program: Vec<u8>,
    pub(crate) args: Vec<Vec<u8>>,
    pub(crate) cwd: Vec<u8>,
    pub(crate) env: Vec<(Vec<u8>, Vec<u8>)>,
    /// Trees the command may read and run programs from.
    pub(crate) read: Vec<Vec<u8>>,
    /// Trees the command may read and write.
    pub(crate) write: Vec<Vec<u8>>,
    /// Device files the command may read and write (`/dev/null`, ...).
    pub(crate) devices: Vec<Vec<u8>>,
    /// Paths inside those trees hidden by a mount (secrets, the state directory).
    pub(crate) mask: Vec<Vec<u8>>,
    /// An empty directory of the host's where the new root is made.
    pub(crate) root: Vec<u8>,
    /// Where the helper writes its [`Report`].
    pub(crate) report: Vec<u8>,
    /// The host proxy's Unix socket, when the policy has a network allow-list: the helper
    /// hands it a listening socket inside the sandbox's network namespace (see
    /// `super::netns`).
    #[serde(default)]
    pub(crate) proxy: Option<Vec<u8>>,
    /// The sandbox has a network allow-list: the helper brings its loopback up (each call's
    /// proxy listens there).
    #[serde(default)]
    pub(crate) loopback: bool,
    /// The command reads the host's stdin (an MCP server speaking over it): the helper passes
    /// its own stdin on, and the sandbox ends when the helper is killed. Otherwise the command's
    /// stdin is `/dev/null`.
    #[serde(default)]
    pub(crate) stdin: bool,
    /// A warm sandbox: the helper makes the namespaces and the root, reports
    /// [`Report::Warm`], and then only reaps, until its host dies or kills it. Calls join it.
    #[serde(default)]
    pub(crate) warm: bool,
}

/// What the command starts as: wait for the gate's line, give the command `/dev/null` as its
/// stdin, then run it. For `sh -c COMMAND` (every `bash__exec`) COMMAND runs in place, as `sh
/// -c` would run it (one program start fewer): `$0` is the shell's path, and no positional
/// parameter is left. Anything else is exec'd.
pub(crate) const GATE_SCRIPT_IN_PLACE: &str =
    r#"read -r _ || exit 126; exec </dev/null; eval "shift 1; ${1}""#;
/// [`GATE_SCRIPT_IN_PLACE`] for any other program: `"$@"` is exec'd.
pub(crate) const GATE_SCRIPT: &str = r#"read -r _ || exit 126; exec </dev/null; exec "$@""#;

/// How many descriptors one call's message may carry: its socket, stdout, stderr, the gate,
/// and a `cgroup.procs` for each hierarchy (at most four on a hybrid host).
pub(crate) const MAX_FDS: usize = 12;

/// One call's command, as the host sends it to a warm sandbox (see the `spawner` module).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CallRequest {
    pub(crate) program: Vec<u8>,
    pub(crate) args: Vec<Vec<u8>>,
    pub(crate) cwd: Vec<u8>,
    pub(crate) env: Vec<(Vec<u8>, Vec<u8>)>,
    /// The trees the call may write (its own `TMPDIR` among them, no other call's).
    pub(crate) write: Vec<Vec<u8>>,
    /// The device files it may write.
    pub(crate) devices: Vec<Vec<u8>>,
    /// The sandbox has a network allow-list: the call gets a proxy of its own, listening on
    /// the sandbox's loopback (the listener goes to the host with [`Report::Started`]).
    #[serde(default)]
    pub(crate) proxy: bool,
}

impl LaunchSpec {
    pub(crate) fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    pub(crate) fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// A path or string as the spec's bytes.
pub(crate) fn bytes(s: impl AsRef<OsStr>) -> Vec<u8> {
    s.as_ref().as_bytes().to_vec()
}

/// The spec's bytes as a path.
pub(crate) fn path(b: &[u8]) -> PathBuf {
    PathBuf::from(OsString::from_vec(b.to_vec()))
}

/// The spec's bytes as an OS string.
pub(crate) fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

/// How a sandboxed run ended, as the helper saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Report {
    /// The command exited with this code.
    Exit(i32),
    /// A signal ended the command.
    Signal(i32),
    /// The sandbox could not be set up: what was missing. The command never ran.
    Unavailable(String),
    /// A warm sandbox's inner stage has its root and waits (the outer stage then reports
    /// [`Report::Warm`]).
    Ready,
    /// A warm sandbox is up.
    Warm,
    /// A call's command started in a warm sandbox, in the call's cgroups, and waits at its
    /// gate (see the `spawner` module).
    Started,
}

impl Report {
    /// Writes the report (one JSON line) to `file`.
    pub(crate) fn write_to(&self, file: &Path) -> std::io::Result<()> {
        let json = serde_json::to_string(self).map_err(std::io::Error::other)?;
        std::fs::write(file, json)
    }

    /// The report in `file`, if the helper wrote one that reads (at most 64 KiB are read).
    pub(crate) fn read_from(file: &Path) -> Option<Self> {
        use std::io::Read;
        let mut text = String::new();
        std::fs::File::open(file)
            .ok()?
            .take(64 * 1024)
            .read_to_string(&mut text)
            .ok()?;
        serde_json::from_str(&text).ok()
    }
}
