//! The state directory of `goondan run`: `.goondan/` next to the bundle unless `--state` says
//! otherwise. It holds the workdir of the agents' tools (`workspace/`) and each instance's run
//! journal (`journal/{agent}.{instanceKey}.sqlite3`), read back when the instance starts
//! again: on the next run, or after a restart or a crash. Earlier versions kept the
//! conversation in `conversations/{agent}.{instanceKey}.jsonl` (one message per line): such a
//! file is read once, moved into the journal and renamed `*.jsonl.imported`; without a journal
//! (it could not be opened) the file is still written after each Turn.

use std::io::Write;
use std::path::{Path, PathBuf};

use goondan_runtime::Message;

/// The state directory's name next to the bundle.
pub(crate) const DEFAULT_DIR: &str = ".goondan";

/// Why a conversation could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    /// The file could not be read or written.
    #[error("cannot use `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a message.
    #[error("`{}` line {line} is not a conversation message: {source}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// The state directory of the bundle at `bundle` (its file): `explicit` when given, else
/// `.goondan/` in the bundle's directory.
pub(crate) fn state_dir(bundle: &Path, explicit: Option<&Path>) -> PathBuf {
    match explicit {
        Some(dir) => dir.to_path_buf(),
        None => bundle
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(DEFAULT_DIR),
    }
}

/// Where an instance's conversation is kept.
pub(crate) fn conversation_file(state: &Path, agent: &str, instance_key: &str) -> PathBuf {
    state
        .join("conversations")
        .join(format!("{agent}.{instance_key}.jsonl"))
}

/// The conversation kept in `file`; empty when there is none yet.
pub(crate) fn load(file: &Path) -> Result<Vec<Message>, StateError> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StateError::Io {
                path: file.to_path_buf(),
                source,
            });
        }
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| StateError::Corrupt {
                path: file.to_path_buf(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Retires the conversation file `file` once the run journal holds its messages: renamed to
/// `{file}.imported`, so that it is read only once and kept for a person to look at.
pub(crate) fn retire(file: &Path) -> Result<(), StateError> {
    let mut to = file.as_os_str().to_owned();
    to.push(".imported");
    match std::fs::rename(file, PathBuf::from(to)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StateError::Io {
            path: file.to_path_buf(),
            source,
        }),
    }
}

/// Writes `messages` to `file` (a temporary file renamed over it, so a crash never leaves
/// half a conversation).
pub(crate) fn save(file: &Path, messages: &[Message]) -> Result<(), StateError> {
    let io = |source| StateError::Io {
        path: file.to_path_buf(),
        source,
    };
    let dir = file.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    for m in messages {
        let text = serde_json::to_string(m).map_err(|e| io(std::io::Error::other(e)))?;
        writeln!(tmp, "{text}").map_err(io)?;
    }
    tmp.persist(file).map_err(|e| io(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_is_saved_as_json_lines_and_read_back() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = conversation_file(dir.path(), "assistant", "default");
        assert!(load(&file).unwrap_or_else(|e| panic!("{e}")).is_empty());
        let mut user = Message::assistant("m1", Some("hello".to_owned()), Vec::new());
        user.role = "user".to_owned();
        let messages = vec![
            user,
            Message::assistant("m2", Some("hi".to_owned()), Vec::new()),
        ];
        save(&file, &messages).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(load(&file).ok(), Some(messages));
        std::fs::write(&file, "{not json\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            load(&file),
            Err(StateError::Corrupt { line: 1, .. })
        ));
    }

    #[test]
    fn the_state_dir_is_next_to_the_bundle_unless_given() {
        let bundle = Path::new("/x/y/goondan.yaml");
        assert_eq!(state_dir(bundle, None), Path::new("/x/y/.goondan"));
        assert_eq!(state_dir(bundle, Some(Path::new("/s"))), Path::new("/s"));
    }
}
