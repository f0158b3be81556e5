//! The workspace: the directory a call may touch (CTX-2, CTX-3), opened as a capability so
//! that no path, `..` or symbolic link leads outside it.
//!
//! Paths from the model are checked twice. First by their text (empty, NUL bytes, absolute,
//! `..` above the root, too long), which gives precise errors. Then every file operation goes
//! through a [`cap_std::fs::Dir`] opened on the workdir: the kernel (`openat2` with
//! `RESOLVE_BENEATH` on Linux, or cap-std's careful manual resolution elsewhere) refuses any
//! path or link that resolves outside, at the moment of use, so a link swapped between a check
//! and a use cannot escape either.
//!
//! # Spelling names as text
//!
//! Paths go to and from the model as JSON strings, but a Unix name is any bytes. A name that is
//! not UTF-8 is spelled with escapes, so that it can be given back exactly: each byte that is
//! not part of valid UTF-8 is written `\xHH` (two lower-case hex digits, always `80` to `ff`).
//! A backslash of the name is doubled where it would otherwise start an escape: before another
//! backslash, before an escaped byte, or before `x` and two hex digits from `80` to `ff`; any
//! other backslash is written as it is (`a\b` stays `a\b`). Every name has one spelling and
//! no two names share one. Reading a path, `\\` gives `\` and `\xHH` (`HH` from `80` to
//! `ff`) gives that byte; any other backslash is kept.
//!
//! # Lengths
//!
//! A path is at most 4,095 bytes and each of its names at most 255 (Linux's `PATH_MAX` less its NUL, and `NAME_MAX`): the kernel refuses
//! longer ones with a bare "File name too long".

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use goondan_runtime::ToolError;

/// The longest path accepted, in bytes (Linux's `PATH_MAX`, 4096, counts the final NUL).
pub(crate) const MAX_PATH_BYTES: usize = 4095;

/// The longest name (one component of a path) accepted, in bytes (Linux's `NAME_MAX`).
pub(crate) const MAX_NAME_BYTES: usize = 255;

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
    /// Whether the text ended with `/` (or `/.`): then it names a directory, as in POSIX.
    names_dir: bool,
}

impl RelPath {
    /// Checks `raw` by its text: not empty, no NUL byte, not absolute, no `..` that climbs
    /// above the workdir, not longer than [`MAX_PATH_BYTES`], no name longer than
    /// [`MAX_NAME_BYTES`]. Escapes are decoded (see the module docs); `.` components are
    /// dropped.
    pub(crate) fn parse(raw: &str) -> Result<Self, ToolError> {
        if raw.is_empty() {
            return Err(invalid(raw, "the path is empty"));
        }
        if raw.contains('\0') {
            return Err(invalid(raw, "the path contains a NUL byte"));
        }
        let decoded = unescape(raw);
        if decoded.len() > MAX_PATH_BYTES {
            return Err(invalid(
                raw,
                &format!(
                    "the path is {} bytes long; at most {MAX_PATH_BYTES} are accepted",
                    decoded.len()
                ),
            ));
        }
        let mut parts: Vec<&OsStr> = Vec::new();
        let mut saw_parent = false;
        for component in Path::new(&decoded).components() {
            match component {
                Component::Prefix(_) | Component::RootDir => return Err(outside(raw)),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(outside(raw));
                    }
                    saw_parent = true;
                }
                Component::Normal(part) if part.len() > MAX_NAME_BYTES => {
                    return Err(invalid(
                        raw,
                        &format!(
                            "a name in it is {} bytes long; at most {MAX_NAME_BYTES} are accepted",
                            part.len()
                        ),
                    ));
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
        let bytes = decoded.as_bytes();
        let names_dir = bytes.ends_with(b"/") || bytes.ends_with(b"/.");
        let path: PathBuf = parts.iter().collect();
        Ok(Self {
            path: if path.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                path
            },
            names_dir,
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

    /// Whether the path was written with a trailing `/`, so names a directory only.
    pub(crate) fn names_dir(&self) -> bool {
        self.names_dir && !self.is_root()
    }

    /// The path as the model should see it and may give back (`/` separators, escaped as the
    /// module docs say).
    pub(crate) fn display(&self) -> String {
        escape(self.path.as_os_str())
    }
}

/// Spells `name` as text (see the module docs): bytes that are not UTF-8 as `\xHH`, a
/// backslash doubled where it would otherwise start an escape.
pub(crate) fn escape(name: &OsStr) -> String {
    let mut units = Vec::with_capacity(name.len());
    for chunk in name.as_bytes().utf8_chunks() {
        units.extend(chunk.valid().chars().map(Unit::Char));
        units.extend(chunk.invalid().iter().copied().map(Unit::Byte));
    }
    let mut text = String::with_capacity(name.len());
    for (i, unit) in units.iter().enumerate() {
        match unit {
            Unit::Char('\\') if starts_escape(units.get(i + 1..).unwrap_or_default()) => {
                text.push_str("\\\\");
            }
            Unit::Char(c) => text.push(*c),
            Unit::Byte(byte) => text.push_str(&format!("\\x{byte:02x}")),
        }
    }
    text
}

/// A piece of a name: a character of its UTF-8, or a byte that is not UTF-8.
enum Unit {
    Char(char),
    Byte(u8),
}

/// Whether a backslash followed by `rest` would be read as the start of an escape.
fn starts_escape(rest: &[Unit]) -> bool {
    match rest {
        [Unit::Char('\\') | Unit::Byte(_), ..] => true,
        [Unit::Char('x'), Unit::Char(a), Unit::Char(b), ..] => {
            let hex = [*a, *b].map(|c| u8::try_from(c).unwrap_or(0));
            high_byte(&hex).is_some()
        }
        _ => false,
    }
}

/// The name spelled by `raw`: `\\` and `\xHH` (`HH` from `80` to `ff`) decoded, any other
/// backslash kept.
fn unescape(raw: &str) -> OsString {
    let bytes = raw.as_bytes();
    let mut name = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let (decoded, used) = match (byte, bytes.get(i + 1)) {
            (b'\\', Some(b'\\')) => (b'\\', 2),
            (b'\\', Some(b'x')) => match bytes.get(i + 2..i + 4).and_then(high_byte) {
                Some(high) => (high, 4),
                None => (byte, 1),
            },
            _ => (byte, 1),
        };
        name.push(decoded);
        i += used;
    }
    OsString::from_vec(name)
}

/// The byte spelled by two hex digits, when it is one that only an escape can give (80 to ff).
fn high_byte(hex: &[u8]) -> Option<u8> {
    let text = std::str::from_utf8(hex).ok()?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(text, 16).ok().filter(|b| *b >= 0x80)
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

/// The workdir as a canonical path, taken against this process's current directory now.
///
/// A child process starts in the workdir, so a path relative to this process (a workdir given
/// as `work`, a script at `work/run.sh`) would name something else from there; and a `..` or a
/// link on the way would pass through directories a sandboxed child does not have.
pub(crate) fn absolute_workdir(workdir: &Path) -> Result<PathBuf, ToolError> {
    workdir.canonicalize().map_err(|err| {
        ToolError::new(format!(
            "the workdir `{}` cannot be resolved: {err}",
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
/// after the open, on the handle and on the name (see `file_system`), so a link made or a name
/// swapped between a check and a use is caught too.
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

    #[test]
    fn every_name_round_trips_through_its_spelling() {
        let names: [&[u8]; 11] = [
            b"plain",
            b"bad\xffname",
            b"back\\slash",
            b"\\xff",
            b"\\xFF",
            b"\\x41",
            b"\\\xff",
            b"a\\",
            b"a\\\\\\b",
            b"caf\xc3\xa9\xc3",
            b"\x80\\\\x80",
        ];
        for name in names {
            let text = escape(OsStr::from_bytes(name));
            let parsed = RelPath::parse(&text).map(|p| p.as_path().as_os_str().to_owned());
            assert_eq!(
                parsed.ok().as_deref(),
                Some(OsStr::from_bytes(name)),
                "{text}"
            );
        }
        assert_eq!(escape(OsStr::from_bytes(b"a\xffb\\")), "a\\xffb\\");
        assert_eq!(escape(OsStr::new("..\\..\\x.txt")), "..\\..\\x.txt");
        assert_eq!(escape(OsStr::new("\\\\")), "\\\\\\");
        // A backslash that starts no escape stays as it is.
        for raw in ["a\\b", "a\\x41", "a\\x4", "a\\xzz", "a\\"] {
            let parsed = RelPath::parse(raw).map(|p| p.as_path().as_os_str().to_owned());
            assert_eq!(parsed.ok().as_deref(), Some(OsStr::new(raw)), "{raw}");
        }
    }

    #[test]
    fn a_trailing_slash_names_a_directory() {
        for (raw, names_dir) in [("a/", true), ("a/.", true), ("a/b//", true), ("a", false)] {
            let rel = RelPath::parse(raw).ok();
            assert_eq!(
                rel.as_ref().map(RelPath::names_dir),
                Some(names_dir),
                "{raw}"
            );
        }
        assert!(RelPath::parse("./").is_ok_and(|p| p.is_root() && !p.names_dir()));
    }

    #[test]
    fn lengths_are_bounded_by_the_kernel_s_limits() {
        assert!(RelPath::parse(&"n".repeat(MAX_NAME_BYTES)).is_ok());
        assert!(RelPath::parse(&"n".repeat(MAX_NAME_BYTES + 1)).is_err());
        let dirs = format!("{}/", "d".repeat(200)).repeat(20);
        let longest = format!("{dirs}{}", "f".repeat(MAX_PATH_BYTES - dirs.len()));
        assert!(RelPath::parse(&longest).is_ok());
        let err = RelPath::parse(&format!("{longest}f")).err();
        assert!(err.is_some_and(|e| e.message().contains("4095")));
    }
}
