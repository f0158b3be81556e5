//! What is wrong with a bundle: [`Diagnostic`]s with file, line and resource, and the
//! [`BundleError`] that carries all of them.

use std::fmt;
use std::path::PathBuf;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The bundle cannot be used.
    Error,
    /// Kept and reported (an unknown kind or field, say).
    Warning,
}

/// One problem, where it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The bundle file.
    pub file: PathBuf,
    /// The line, counted from 1.
    pub line: usize,
    /// The resource, as `Kind/name`, when the problem is inside one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{}:{}: {level}: ", self.file.display(), self.line)?;
        if let Some(r) = &self.resource {
            write!(f, "{r}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A place in a bundle: file, line, resource. Makes diagnostics.
#[derive(Debug, Clone)]
pub(crate) struct Locus {
    pub(crate) file: PathBuf,
    pub(crate) line: usize,
    pub(crate) resource: Option<String>,
}

impl Locus {
    pub(crate) fn at(&self, line: usize) -> Locus {
        Locus {
            line,
            ..self.clone()
        }
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> Diagnostic {
        self.diagnostic(Severity::Error, message.into())
    }

    pub(crate) fn warning(&self, message: impl Into<String>) -> Diagnostic {
        self.diagnostic(Severity::Warning, message.into())
    }

    fn diagnostic(&self, severity: Severity, message: String) -> Diagnostic {
        Diagnostic {
            severity,
            file: self.file.clone(),
            line: self.line,
            resource: self.resource.clone(),
            message,
        }
    }
}

/// Why a bundle cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The file cannot be read.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is over [`MAX_FILE_BYTES`](super::MAX_FILE_BYTES).
    #[error("cannot read `{}`: {message}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size and the limit.
        message: String,
    },
    /// The bundle has errors; every problem found, warnings included.
    #[error("{}", render(diagnostics))]
    Invalid {
        /// Every problem, by line.
        diagnostics: Vec<Diagnostic>,
    },
    /// No Agent has this name.
    #[error("the bundle has no Agent named `{name}`; its agents are: {}", known.join(", "))]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The Agents it has.
        known: Vec<String>,
    },
    /// No Extension with an MCP declaration (`spec.mcp`) has this name.
    #[error("the bundle has no MCP Extension named `{name}`; its MCP extensions are: {}", known.join(", "))]
    UnknownMcpExtension {
        /// The name asked for.
        name: String,
        /// The MCP Extensions it has.
        known: Vec<String>,
    },
}

impl BundleError {
    /// The problems, when the bundle is invalid.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            BundleError::Invalid { diagnostics } => diagnostics,
            _ => &[],
        }
    }
}

fn render(diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let mut out = format!("the bundle has {errors} error(s)");
    for d in diagnostics {
        out.push('\n');
        out.push_str(&d.to_string());
    }
    out
}

/// Names as `` `a`, `b` `` for a message; `none` when there are none.
pub(crate) fn name_list<T: fmt::Display>(names: impl IntoIterator<Item = T>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        return "none".to_owned();
    }
    names.join(", ")
}
