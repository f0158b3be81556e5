//! The workspace: the directory a call may touch (CTX-2, CTX-3), opened as a capability so
//! that no path, `..` or symbolic link leads outside it.
//!
//! Paths from the model are checked twice. First by their text (empty, NUL bytes, absolute,
//! `..` above the root, too long), which gives precise errors. Then every file operation goes
//! through a [`cap_std::fs::Dir`] opened on the workdir: the kernel (`openat2` with
//! `RESOLVE_BENEATH` on Linux, or cap-std's careful manual resolution elsewhere) refuses any
//! path or link that resolves outside, at the moment of use, so a link swapped between a check
//! and a use cannot escape either.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use goondan_runtime::ToolError;

/// The longest path accepted, in bytes.
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// Error codes shared by the tools that take paths.
pub mod codes {
    /// A path (or a link on the way) leads outside the workdir.
    pub const PATH_OUTSIDE_WORKDIR: &str = "E_PATH_OUTSIDE_WORKDIR";
    /// A path that cannot name anything: empty, with a NUL byte, too long.
    pub const PATH_INVALID: &str = "E_PATH_INVALID";
    /// The workdir itself cannot be opened.
    pub const WORKDIR_UNAVAILABLE: &str = "E_WORKDIR_UNAVAILABLE";
    /// A regular file with more than one hard link: its other names may be outside the
    /// workdir, so it is never read or changed in place.
    pub const PATH_HARDLINK: &str = "E_PATH_HARDLINK";
}

/// A path from the model, checked by its text and made relative to the workdir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelPath {
    /// The normalised relative path (`.` for the workdir itself).
    path: PathBuf,
}

impl RelPath {
    /// Checks `raw` by its text: not empty, no NUL byte, not absolute, no `..` that climbs
    /// above the workdir, not longer than [`MAX_PATH_BYTES`]. `.` components are dropped.
    pub(crate) fn parse(raw: &str) -> Result<Self, ToolError> {
        if raw.is_empty() {
            return Err(invalid(raw, "the path is empty"));
        }
        if raw.contains('\0') {
            return Err(invalid(raw, "the path contains a NUL byte"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid(
                raw,
                &format!(
                    "the path is {} bytes long; at most {MAX_PATH_BYTES} are accepted",
                    raw.len()
                ),
            ));
        }
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        let mut saw_parent = false;
        for component in Path::new(raw).components() {
            match component {
                Component::Prefix(_) | Component::RootDir => return Err(outside(raw)),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(outside(raw));
                    }
                    saw_parent = true;
                }
                Component::Normal(part) => parts.push(part),
            }
        }
        if saw_parent {
            // `a/..` stays inside by its text, but `a` may be a link, and what `..` means after
            // a link is exactly what confinement is about: refuse it plainly.
            return Err(invalid(
                raw,
                "`..` components are not accepted; write the path without them",
            ));
        }
        let path: PathBuf = parts.iter().collect();
        Ok(Self {
            path: if path.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                path
            },
        })
    }

    /// The path relative to the workdir.
    pub(crate) fn as_path(&self) -> &Path {
        &self.path
    }

    /// Whether this is the workdir itself.
    pub(crate) fn is_root(&self) -> bool {
        self.path == Path::new(".")
    }

    /// The path as the model should see it (`/` separators, lossy UTF-8).
    pub(crate) fn display(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// Opens the workdir as a capability.
pub(crate) fn open_workdir(workdir: &Path) -> Result<Dir, ToolError> {
    Dir::open_ambient_dir(workdir, ambient_authority()).map_err(|err| {
        ToolError::new(format!(
            "the workdir `{}` cannot be opened: {err}",
            workdir.display()
        ))
        .with_code(codes::WORKDIR_UNAVAILABLE)
        .with_name("WorkdirUnavailableError")
        .with_suggestion("the host must give the call an existing, readable workdir")
    })
}

/// Whether `err` is cap-std refusing a path that leads outside the directory.
pub(crate) fn is_escape(err: &io::Error) -> bool {
    // cap-primitives reports every escape (an absolute link target, `..` above the root, a
    // kernel `EXDEV` from `RESOLVE_BENEATH`) with this one error.
    err.kind() == io::ErrorKind::PermissionDenied
        && err.to_string() == "a path led outside of the filesystem"
}

/// The error for a path that leads outside the workdir.
pub(crate) fn outside(raw: &str) -> ToolError {
    ToolError::new(format!("the path `{}` leads outside the workdir", shorten(raw)))
        .with_code(codes::PATH_OUTSIDE_WORKDIR)
        .with_name("PathOutsideWorkdirError")
        .with_suggestion(
            "use a path relative to the workdir, without `..`, absolute paths or links that point outside it",
        )
}

/// The error for a regular file with `links` hard links (more than one).
///
/// A hard link carries no direction: the same file may also have a name outside the workdir,
/// and reading or changing it through the name inside would reach that outside file. Checked
/// on the opened handle (`fstat`), so a link made between a check and a use is caught too.
pub(crate) fn hardlinked(raw: &str, links: u64) -> ToolError {
    ToolError::new(format!(
        "`{}` is a file with {links} hard links; its other names may be outside the workdir, so it is not read or changed in place",
        shorten(raw)
    ))
    .with_code(codes::PATH_HARDLINK)
    .with_name("HardLinkError")
    .with_suggestion(
        "replace it with a new file (`file-system__write` without `append` writes a fresh file and renames it over the link), or work on a copy",
    )
}

fn invalid(raw: &str, why: &str) -> ToolError {
    ToolError::new(format!("the path `{}` is not valid: {why}", shorten(raw)))
        .with_code(codes::PATH_INVALID)
        .with_name("InvalidPathError")
        .with_suggestion("give a non-empty path relative to the workdir, like `notes/todo.md`")
}

/// A path cut for messages (a 4 KiB path would fill the error on its own).
pub(crate) fn shorten(raw: &str) -> String {
    const KEEP: usize = 120;
    if raw.chars().count() <= KEEP {
        return raw.replace('\0', "\\0");
    }
    let head: String = raw.chars().take(KEEP).collect();
    format!("{}...", head.replace('\0', "\\0"))
}

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|err| {
        Err(ToolError::new(format!("a blocking task failed: {err}"))
            .with_code("E_TOOL_INTERNAL")
            .with_name("InternalError"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_normalised() {
        assert_eq!(
            RelPath::parse("a/./b").map(|p| p.display()).ok(),
            Some("a/b".into())
        );
        assert_eq!(
            RelPath::parse("./").map(|p| p.display()).ok(),
            Some(".".into())
        );
        assert!(RelPath::parse(".").is_ok_and(|p| p.is_root()));
    }

    #[test]
    fn textual_escapes_are_refused_with_their_codes() {
        for raw in ["..", "../x", "/etc/passwd", "a/../../x"] {
            let code = RelPath::parse(raw).err().map(|e| e.code().to_owned());
            assert_eq!(code.as_deref(), Some(codes::PATH_OUTSIDE_WORKDIR), "{raw}");
        }
        for raw in ["", "a\0b", "a/../b"] {
            let code = RelPath::parse(raw).err().map(|e| e.code().to_owned());
            assert_eq!(code.as_deref(), Some(codes::PATH_INVALID), "{raw:?}");
        }
        let long = "a/".repeat(3000);
        assert!(RelPath::parse(&long).is_err());
    }
}
