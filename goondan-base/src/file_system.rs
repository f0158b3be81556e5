//! `file-system`: read, write, list and create files of the workdir (BASE-2, CTX-3).
//!
//! - `file-system__read {path, maxBytes? = 100000}` -> `{path, size, truncated, content}`
//! - `file-system__write {path, content, append?}` -> `{path, size, written: true}`
//! - `file-system__list {path? = ".", recursive?, includeDirs? = true, includeFiles? = true}` -> `{path, entries, truncated}`
//! - `file-system__mkdir {path, recursive? = true}` -> `{path, created}`
//!
//! Every path is confined to the workdir, links included: see [`crate::workspace`], which also
//! says how names that are not UTF-8 are spelled (`list` gives them so, `read` and `write` take
//! them back) and how long paths and names may be. A regular file with more than one hard link
//! is never read or appended to (`E_PATH_HARDLINK`): another of its names may be outside the
//! workdir. Replacing it with `write` (a new file renamed over the name) stays allowed, since
//! that never touches the shared file. A file opened to be read or appended to must still be
//! what its name points to, with that one name, after the open (and, for a read, after the
//! read), else the call fails (`E_FS_CHANGED`) and nothing is returned or written: see
//! `check_opened`. Only regular files are read or appended to: a FIFO or a socket is refused
//! (`E_FS_NOT_A_FILE`) without waiting for a peer. A path that ends with `/` names a directory,
//! so it is never read or written as a file (`E_FS_NOT_A_DIRECTORY` when it is a file).

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::{Dir, File, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};
use goondan_runtime::{ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::workspace::{
    RelPath, blocking, escape, hardlinked, is_escape, open_workdir, outside, shorten,
};

/// Error codes of `file-system` (besides [`crate::workspace::codes`]).
pub mod codes {
    /// The file or directory does not exist.
    pub const NOT_FOUND: &str = "E_FS_NOT_FOUND";
    /// A file was expected, something else was found.
    pub const NOT_A_FILE: &str = "E_FS_NOT_A_FILE";
    /// A directory was expected, something else was found.
    pub const NOT_A_DIRECTORY: &str = "E_FS_NOT_A_DIRECTORY";
    /// The name was moved to another file while the call used it; nothing was returned or
    /// written.
    pub const CHANGED: &str = "E_FS_CHANGED";
    /// Any other I/O failure.
    pub const IO: &str = "E_FS_IO";
}

/// What `file-system` may do.
#[derive(Debug, Clone)]
pub struct FsPolicy {
    /// The largest `maxBytes` a read may ask for (default 10 MiB).
    pub max_read_bytes: u64,
    /// The most entries `list` returns (default 1000).
    pub max_list_entries: usize,
    /// How deep a recursive `list` goes (default 16).
    pub max_list_depth: usize,
}

impl Default for FsPolicy {
    fn default() -> Self {
        Self {
            max_read_bytes: 10 * 1024 * 1024,
            max_list_entries: 1000,
            max_list_depth: 16,
        }
    }
}

/// Input of `file-system__read`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadInput {
    /// The file, relative to the workdir.
    pub path: String,
    /// Read at most this many bytes (default 100000).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Output of `file-system__read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadOutput {
    /// The file, relative to the workdir.
    pub path: String,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether `content` is shorter than the file.
    pub truncated: bool,
    /// The text read, cut on a UTF-8 boundary (invalid bytes replaced).
    pub content: String,
}

/// Input of `file-system__write`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteInput {
    /// The file, relative to the workdir. Missing parent directories are created.
    pub path: String,
    /// The text to write.
    pub content: String,
    /// Append instead of replacing (default false).
    #[serde(default)]
    pub append: Option<bool>,
}

/// Output of `file-system__write`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteOutput {
    /// The file, relative to the workdir.
    pub path: String,
    /// The file's size after the write.
    pub size: u64,
    /// Always `true`.
    pub written: bool,
}

/// Input of `file-system__list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListInput {
    /// The directory, relative to the workdir (default `.`).
    #[serde(default)]
    pub path: Option<String>,
    /// List subdirectories too (default false). Links to directories are not followed.
    #[serde(default)]
    pub recursive: Option<bool>,
    /// Include directories in the entries (default true). Directories left out are still
    /// walked when `recursive`.
    #[serde(default)]
    pub include_dirs: Option<bool>,
    /// Include files and everything else that is not a directory (default true).
    #[serde(default)]
    pub include_files: Option<bool>,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Relative to the workdir.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Size in bytes (of the link itself for links).
    pub size: u64,
}

/// Output of `file-system__list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListOutput {
    /// The directory, relative to the workdir.
    pub path: String,
    /// Entries sorted by path.
    pub entries: Vec<Entry>,
    /// Whether a bound cut the listing: the entry bound, or (recursive) the depth bound left a
    /// non-empty directory unlisted.
    pub truncated: bool,
}

/// Input of `file-system__mkdir`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MkdirInput {
    /// The directory, relative to the workdir.
    pub path: String,
    /// Create missing parents too (default true). When false, the parent must exist.
    #[serde(default)]
    pub recursive: Option<bool>,
}

/// Output of `file-system__mkdir`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MkdirOutput {
    /// The directory, relative to the workdir.
    pub path: String,
    /// `false` when it existed already.
    pub created: bool,
}

/// The `file-system` tool. `FileSystem::default().into_tool()` gives the resource.
#[derive(Debug, Clone, Default)]
pub struct FileSystem {
    policy: Arc<FsPolicy>,
}

/// The default `maxBytes` of a read.
pub const DEFAULT_MAX_BYTES: u64 = 100_000;

impl FileSystem {
    /// The resource name.
    pub const NAME: &'static str = "file-system";
    /// How many characters of an error message the model sees.
    pub const ERROR_MESSAGE_LIMIT: usize = 2000;
}

/// Read, write and list files of the workdir.
#[tool(name = "file-system", error_message_limit = 2000)]
impl FileSystem {
    /// A `file-system` with `policy`.
    pub fn new(policy: FsPolicy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }

    /// Read a text file of the workdir (at most `maxBytes`, default 100000).
    #[export(read_only)]
    pub async fn read(&self, ctx: &ToolContext, input: ReadInput) -> Result<ReadOutput, ToolError> {
        let rel = RelPath::parse(&input.path)?;
        let max = input
            .max_bytes
            .unwrap_or(DEFAULT_MAX_BYTES)
            .min(self.policy.max_read_bytes);
        with_dir(ctx, move |dir| read_file(dir, &rel, &input.path, max)).await
    }

    /// Write (or append to) a text file of the workdir; parent directories are created and a
    /// replaced or new file is written atomically.
    #[export(destructive)]
    pub async fn write(
        &self,
        ctx: &ToolContext,
        input: WriteInput,
    ) -> Result<WriteOutput, ToolError> {
        let rel = RelPath::parse(&input.path)?;
        with_dir(ctx, move |dir| write_file(dir, &rel, &input)).await
    }

    /// List a directory of the workdir, optionally recursively.
    #[export(read_only)]
    pub async fn list(&self, ctx: &ToolContext, input: ListInput) -> Result<ListOutput, ToolError> {
        let raw = input.path.unwrap_or_else(|| ".".to_owned());
        let rel = RelPath::parse(&raw)?;
        let policy = Arc::clone(&self.policy);
        let walk = Walk {
            recursive: input.recursive.unwrap_or(false),
            dirs: input.include_dirs.unwrap_or(true),
            files: input.include_files.unwrap_or(true),
        };
        with_dir(ctx, move |dir| list_dir(dir, &rel, &raw, walk, &policy)).await
    }

    /// Create a directory of the workdir and its parents.
    #[export(idempotent)]
    pub async fn mkdir(
        &self,
        ctx: &ToolContext,
        input: MkdirInput,
    ) -> Result<MkdirOutput, ToolError> {
        let rel = RelPath::parse(&input.path)?;
        let parents = input.recursive.unwrap_or(true);
        with_dir(ctx, move |dir| {
            if !parents
                && let Some(parent) = rel.as_path().parent()
                && !parent.as_os_str().is_empty()
            {
                match dir.metadata(parent) {
                    Ok(meta) if meta.is_dir() => {}
                    Ok(_) => return Err(not_a(codes::NOT_A_DIRECTORY, &input.path, "directory")),
                    Err(err) => return Err(io_error(&input.path, &err)),
                }
            }
            let created = ensure_dir(dir, rel.as_path(), &input.path)?;
            Ok(MkdirOutput {
                path: rel.display(),
                created,
            })
        })
        .await
    }
}

async fn with_dir<T: Send + 'static>(
    ctx: &ToolContext,
    f: impl FnOnce(&Dir) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let workdir = ctx.workdir().to_path_buf();
    blocking(move || f(&open_workdir(&workdir)?)).await
}

fn read_file(dir: &Dir, rel: &RelPath, raw: &str, max: u64) -> Result<ReadOutput, ToolError> {
    refuse_dir_spelling(dir, rel, raw)?;
    let file = open_file(dir, rel.as_path(), raw, OpenOptions::new().read(true))?;
    let size = check_opened(dir, rel.as_path(), &file, raw)?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(max.min(size)).unwrap_or(0));
    (&file)
        .take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(raw, &e))?;
    // The name may have been moved to another file while this one was read: what was read is
    // given only if the name still is this file, with no other name.
    check_opened(dir, rel.as_path(), &file, raw)?;
    let truncated = (bytes.len() as u64) < size;
    if truncated {
        // Drop a multi-byte character cut in half at the end.
        if let Err(err) = std::str::from_utf8(&bytes)
            && err.error_len().is_none()
        {
            bytes.truncate(err.valid_up_to());
        }
    }
    let content = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    };
    Ok(ReadOutput {
        path: rel.display(),
        size,
        truncated,
        content,
    })
}

fn write_file(dir: &Dir, rel: &RelPath, input: &WriteInput) -> Result<WriteOutput, ToolError> {
    let raw = input.path.as_str();
    let path = rel.as_path();
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !rel.is_root() => (parent, name),
        _ => return Err(not_a(codes::NOT_A_FILE, raw, "file")),
    };
    refuse_dir_spelling(dir, rel, raw)?;
    if !parent.as_os_str().is_empty() {
        ensure_dir(dir, parent, raw)?;
    }
    let existing = match dir.metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(not_a(codes::NOT_A_FILE, raw, "file")),
        Ok(meta) => Some(meta),
        Err(err) if is_escape(&err) => return Err(outside(raw)),
        Err(_) => None,
    };
    let content = input.content.as_bytes();
    let size = if input.append.unwrap_or(false) {
        append_file(dir, path, raw, content)?
    } else {
        replace_file(dir, (parent, name), raw, content, existing.as_ref())?
    };
    Ok(WriteOutput {
        path: rel.display(),
        size,
        written: true,
    })
}

/// Appends `content` to the regular file `path` (created when missing); the file's size after.
fn append_file(dir: &Dir, path: &Path, raw: &str, content: &[u8]) -> Result<u64, ToolError> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    let file = open_file(dir, path, raw, &options)?;
    check_opened(dir, path, &file, raw)?;
    // From the check on, the file had one name, inside the workdir, so it was the workdir's
    // file. A hard link made elsewhere after the check cannot be prevented, but whoever makes
    // it gives a name to the workdir's file: writing to it is writing to the workdir. A rename
    // over the name after the check leaves this handle on the file that was checked.
    (&file).write_all(content).map_err(|e| io_error(raw, &e))?;
    Ok(file.metadata().map_err(|e| io_error(raw, &e))?.len())
}

/// Writes `content` to a new file in the parent directory, then renames it over the name:
/// readers see the old or the new content, never half of it. The size written is returned.
///
/// The temporary file has a short name of its own, opened through the parent directory, so
/// that whenever the target's path and name fit the kernel's limits, its path and name do too.
fn replace_file(
    dir: &Dir,
    (parent, name): (&Path, &OsStr),
    raw: &str,
    content: &[u8],
    existing: Option<&Metadata>,
) -> Result<u64, ToolError> {
    let opened;
    let parent_dir = if parent.as_os_str().is_empty() {
        dir
    } else {
        opened = dir.open_dir(parent).map_err(|e| io_error(raw, &e))?;
        &opened
    };
    let tmp = temp_name();
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let result = (|| {
        let mut file = parent_dir.open_with(&tmp, &options)?;
        file.write_all(content)?;
        if let Some(meta) = existing {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_data()?;
        parent_dir.rename(&tmp, parent_dir, name)?;
        Ok(file.metadata()?.len())
    })();
    result.map_err(|err: std::io::Error| {
        let _ = parent_dir.remove_file(&tmp);
        io_error(raw, &err)
    })
}

/// Opens `path` with `options`, without waiting for a peer: a FIFO with no reader or a socket
/// is refused as not a file (`ENXIO`), one with a peer is refused by [`check_opened`].
fn open_file(dir: &Dir, path: &Path, raw: &str, options: &OpenOptions) -> Result<File, ToolError> {
    let mut options = options.clone();
    options.custom_flags(nix::libc::O_NONBLOCK);
    dir.open_with(path, &options).map_err(|err| {
        if err.raw_os_error() == Some(nix::libc::ENXIO) {
            not_a(codes::NOT_A_FILE, raw, "file")
        } else {
            io_error(raw, &err)
        }
    })
}

/// Makes sure the opened `file` is a regular file that `path` points to now, and that it has
/// no other name; its metadata (from the handle) is returned.
///
/// A check of the handle alone cannot tell: between the open and the check, the name may be
/// renamed over, and the file opened may then be an outside file that had a hard link here,
/// now down to its one name outside. So the name is looked at after the open, and its inode
/// and link count come from one `fstatat`: at that moment the opened file's only name was the
/// one in the workdir. A file that had a name outside before that moment and lost it since
/// was moved into the workdir, which whoever moved it could have done anyway.
fn check_opened(dir: &Dir, path: &Path, file: &File, raw: &str) -> Result<Metadata, ToolError> {
    let opened = file.metadata().map_err(|e| io_error(raw, &e))?;
    if !opened.is_file() {
        return Err(not_a(codes::NOT_A_FILE, raw, "file"));
    }
    if opened.nlink() > 1 {
        return Err(hardlinked(raw, opened.nlink()));
    }
    let named = name_now(dir, path).map_err(|err| {
        // The file was opened by this name: a name gone since was moved or removed meanwhile.
        if err.kind() == std::io::ErrorKind::NotFound {
            changed(raw)
        } else {
            io_error(raw, &err)
        }
    })?;
    if (named.dev(), named.ino()) != (opened.dev(), opened.ino()) {
        return Err(changed(raw));
    }
    if named.nlink() > 1 {
        return Err(hardlinked(raw, named.nlink()));
    }
    Ok(opened)
}

/// What `path` names now, its last link resolved inside the workdir: an `fstatat` of the last
/// name, not following it, in its parent directory.
fn name_now(dir: &Dir, path: &Path) -> std::io::Result<Metadata> {
    let named = last_name(dir, path)?;
    if !named.file_type().is_symlink() {
        return Ok(named);
    }
    // A link to a file inside (one leading out fails to resolve): look at the file's own name.
    last_name(dir, &dir.canonicalize(path)?)
}

/// The metadata of the last name of `path`, not followed, looked up in its parent directory
/// (the parent opened through the capability).
fn last_name(dir: &Dir, path: &Path) -> std::io::Result<Metadata> {
    let Some(name) = path.file_name() else {
        return Err(std::io::ErrorKind::NotFound.into());
    };
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            dir.open_dir(parent)?.symlink_metadata(name)
        }
        _ => dir.symlink_metadata(name),
    }
}

/// A path written with a trailing `/` names a directory, as in POSIX, so it never names a file
/// to read or write: a file there is `E_FS_NOT_A_DIRECTORY` (`open("f/")` fails with `ENOTDIR`),
/// anything else `E_FS_NOT_A_FILE`.
fn refuse_dir_spelling(dir: &Dir, rel: &RelPath, raw: &str) -> Result<(), ToolError> {
    if !rel.names_dir() {
        return Ok(());
    }
    match dir.metadata(rel.as_path()) {
        Ok(meta) if !meta.is_dir() => Err(not_a(codes::NOT_A_DIRECTORY, raw, "directory")),
        Err(err) if is_escape(&err) => Err(outside(raw)),
        _ => Err(not_a(codes::NOT_A_FILE, raw, "file")),
    }
}

/// Makes sure `path` is a directory inside, creating it and its parents; `true` when created.
fn ensure_dir(dir: &Dir, path: &Path, raw: &str) -> Result<bool, ToolError> {
    match dir.metadata(path) {
        Ok(meta) if meta.is_dir() => return Ok(false),
        Ok(_) => return Err(not_a(codes::NOT_A_DIRECTORY, raw, "directory")),
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(io_error(raw, &err)),
        Err(_) => {}
    }
    dir.create_dir_all(path).map_err(|err| {
        // `create_dir_all` reports a link that leads out as "exists": ask again to tell.
        match dir.metadata(path) {
            Err(again) if is_escape(&again) => outside(raw),
            _ => io_error(raw, &err),
        }
    })?;
    Ok(true)
}

/// A name for a temporary file, unique in this process and at most 41 bytes whatever the
/// target's name (`.goondan-`, the process id, `-`, a counter, `.tmp`).
fn temp_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(".goondan-{}-{n}.tmp", std::process::id())
}

/// What a `list` walks and shows.
#[derive(Clone, Copy)]
struct Walk {
    recursive: bool,
    dirs: bool,
    files: bool,
}

fn list_dir(
    dir: &Dir,
    rel: &RelPath,
    raw: &str,
    walk: Walk,
    policy: &FsPolicy,
) -> Result<ListOutput, ToolError> {
    let recursive = walk.recursive;
    let meta = dir.metadata(rel.as_path()).map_err(|e| io_error(raw, &e))?;
    if !meta.is_dir() {
        return Err(not_a(codes::NOT_A_DIRECTORY, raw, "directory"));
    }
    let start = dir.open_dir(rel.as_path()).map_err(|e| io_error(raw, &e))?;
    let prefix = if rel.is_root() {
        PathBuf::new()
    } else {
        rel.as_path().to_path_buf()
    };
    let depth = if recursive { policy.max_list_depth } else { 0 };
    let mut entries = Vec::new();
    let (mut full, mut too_deep) = (false, false);
    // Depth-first with an explicit stack. Only real directories are entered (never links), and
    // each is opened through its parent's capability, so a swapped-in link cannot lead out.
    let mut stack = vec![(start, prefix, 0usize)];
    while let Some((current, at, level)) = stack.pop() {
        let mut children: Vec<_> = current
            .entries()
            .map_err(|e| io_error(raw, &e))?
            .filter_map(Result::ok)
            .collect();
        children.sort_by_key(cap_std::fs::DirEntry::file_name);
        for child in children {
            if entries.len() >= policy.max_list_entries {
                full = true;
                break;
            }
            let name = child.file_name();
            let path = at.join(&name);
            let Ok(file_type) = child.file_type() else {
                continue;
            };
            let kind = if file_type.is_symlink() {
                "symlink"
            } else if file_type.is_dir() {
                "dir"
            } else if file_type.is_file() {
                "file"
            } else {
                "other"
            };
            let size = child.metadata().map_or(0, |m| m.len());
            if file_type.is_dir()
                && recursive
                && let Ok(sub) = child.open_dir()
            {
                if level < depth {
                    stack.push((sub, path.clone(), level + 1));
                } else if recursive && has_entries(&sub) {
                    // The depth bound, not the caller, leaves this directory's entries out.
                    too_deep = true;
                }
            }
            let shown = if file_type.is_dir() {
                walk.dirs
            } else {
                walk.files
            };
            if !shown {
                continue;
            }
            entries.push(Entry {
                path: escape(path.as_os_str()),
                kind: kind.to_owned(),
                size,
            });
        }
        if full {
            break;
        }
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(ListOutput {
        path: rel.display(),
        entries,
        truncated: full || too_deep,
    })
}

/// Whether the directory has at least one entry.
fn has_entries(dir: &Dir) -> bool {
    dir.entries()
        .is_ok_and(|mut entries| entries.any(|e| e.is_ok()))
}

fn io_error(raw: &str, err: &std::io::Error) -> ToolError {
    if is_escape(err) {
        return outside(raw);
    }
    let shown = shorten(raw);
    match err.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(format!("`{shown}` does not exist"))
            .with_code(codes::NOT_FOUND)
            .with_name("NotFoundError")
            .with_suggestion("list the directory (`file-system__list`) to see what exists"),
        _ => ToolError::new(format!("`{shown}`: {err}"))
            .with_code(codes::IO)
            .with_name("FileSystemError")
            .with_suggestion("check the path and its permissions"),
    }
}

fn changed(raw: &str) -> ToolError {
    ToolError::new(format!(
        "`{}` was replaced by another file while it was used; nothing was read or written",
        shorten(raw)
    ))
    .with_code(codes::CHANGED)
    .with_name("FileChangedError")
    .with_suggestion("try again once nothing else is renaming files at that path")
}

fn not_a(code: &'static str, raw: &str, what: &str) -> ToolError {
    ToolError::new(format!("`{}` is not a {what}", shorten(raw)))
        .with_code(code)
        .with_name(if what == "file" {
            "NotAFileError"
        } else {
            "NotADirectoryError"
        })
        .with_suggestion(format!("give the path of a {what} inside the workdir"))
}
