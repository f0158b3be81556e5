//! The file backend: one file per server under a directory of the user's, readable by the user
//! alone (mode 0600, the directory 0700), written whole or not at all.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{MAX_KEPT, TokenStoreError};

/// Reads the file at `path`, at most [`MAX_KEPT`] bytes; `None` when there is none.
pub(super) fn read(path: &Path) -> Result<Option<String>, TokenStoreError> {
    let failed = |source| TokenStoreError::File {
        path: path.to_owned(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(e)),
    };
    let mut text = String::new();
    file.take(MAX_KEPT as u64 + 1)
        .read_to_string(&mut text)
        .map_err(failed)?;
    Ok(Some(text))
}

/// Writes `bytes` to `path` beside, then renames over: a reader sees the old file or the new.
pub(super) fn write(path: &Path, bytes: &[u8]) -> Result<(), TokenStoreError> {
    let failed = |at: &Path, source| TokenStoreError::File {
        path: at.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(|e| failed(dir, e))?;
    let tmp: PathBuf = path.with_extension(format!("json.{}.tmp", std::process::id()));
    write_private(&tmp, bytes).map_err(|e| failed(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(path, e)
    })
}

/// Removes the file at `path`; whether there was one.
pub(super) fn remove(path: &Path) -> Result<bool, TokenStoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(TokenStoreError::File {
            path: path.to_owned(),
            source,
        }),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}
