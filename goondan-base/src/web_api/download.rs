//! What the `downloadFile` exports do with the bytes: base64 and a data URL for the model,
//! and an optional copy saved inside the workdir.
//!
//! The save path is confined like `file-system`'s paths (see [`crate::workspace`]): relative,
//! no `..`, and written through a capability on the workdir, so no link leads outside.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::OpenOptions;
use goondan_runtime::{ToolContext, ToolError};

use super::Reply;
use super::service::Service;
use crate::workspace::{RelPath, blocking, is_escape, open_workdir, outside, shorten};

/// Standard base64 (RFC 4648, with padding).
pub(crate) fn base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `data:{content type};base64,...`, or `None` without a content type or bytes (as upstream).
pub(crate) fn data_url(content_type: Option<&str>, encoded: &str) -> Option<String> {
    let content_type = content_type.filter(|c| !c.is_empty())?;
    if encoded.is_empty() {
        return None;
    }
    Some(format!("data:{content_type};base64,{encoded}"))
}

/// What a `downloadFile` call asks for besides the bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted<'a> {
    /// `includeBase64` (default true).
    pub(crate) include_base64: Option<bool>,
    /// `includeDataUrl` (default true; needs base64).
    pub(crate) include_data_url: Option<bool>,
    /// `savePath`, relative to the workdir; blank means none.
    pub(crate) save_path: Option<&'a str>,
}

/// A download as the model gets it.
#[derive(Debug)]
pub(crate) struct Delivered {
    /// The `Content-Type` of the download.
    pub(crate) content_type: Option<String>,
    /// The bytes downloaded.
    pub(crate) size_bytes: u64,
    /// The absolute path written, when a save path was given.
    pub(crate) saved_path: Option<String>,
    /// The content, base64-encoded, when wanted.
    pub(crate) base64: Option<String>,
    /// The data URL, when wanted and possible.
    pub(crate) data_url: Option<String>,
}

/// Encodes the body of `reply` as `wanted` says and saves it where it says (I/O failures
/// carry `service`'s save code).
pub(crate) async fn deliver(
    ctx: &ToolContext,
    service: &Service,
    reply: Reply,
    wanted: Wanted<'_>,
) -> Result<Delivered, ToolError> {
    let content_type = reply.header("content-type").map(str::to_owned);
    let base64 = wanted
        .include_base64
        .unwrap_or(true)
        .then(|| base64(&reply.body));
    let data_url = match (&base64, wanted.include_data_url.unwrap_or(true)) {
        (Some(encoded), true) => data_url(content_type.as_deref(), encoded),
        _ => None,
    };
    let size_bytes = reply.body.len() as u64;
    let saved_path = match wanted.save_path.map(str::trim).filter(|p| !p.is_empty()) {
        Some(path) => Some(
            save(ctx, path, reply.body, service.codes.save)
                .await?
                .to_string_lossy()
                .into_owned(),
        ),
        None => None,
    };
    Ok(Delivered {
        content_type,
        size_bytes,
        saved_path,
        base64,
        data_url,
    })
}

/// Writes `bytes` to `raw` inside the workdir (parents created, replaced atomically) and
/// returns the absolute path written. `code` is the tool's error code for I/O failures.
pub(crate) async fn save(
    ctx: &ToolContext,
    raw: &str,
    bytes: Vec<u8>,
    code: &'static str,
) -> Result<PathBuf, ToolError> {
    let rel = RelPath::parse(raw)?;
    let workdir = ctx.workdir().to_path_buf();
    let raw_owned = raw.to_owned();
    let written = rel.as_path().to_path_buf();
    blocking(move || {
        let raw = raw_owned.as_str();
        let io = |err: std::io::Error| {
            if is_escape(&err) {
                return outside(raw);
            }
            ToolError::new(format!("cannot save to `{}`: {err}", shorten(raw)))
                .with_code(code)
                .with_name("SaveError")
                .with_suggestion(
                    "give `savePath` as a file path inside the workdir, e.g. `downloads/photo.jpg`",
                )
        };
        let dir = open_workdir(&workdir)?;
        let path = rel.as_path();
        let (Some(parent), Some(name), false) = (path.parent(), path.file_name(), rel.is_root())
        else {
            return Err(io(std::io::Error::other("not a file path")));
        };
        if !parent.as_os_str().is_empty() {
            dir.create_dir_all(parent).map_err(io)?;
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(
            ".goondan-{}-{}.part",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = parent.join(tmp_name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let result = (|| {
            let mut file = dir.open_with(&tmp, &options)?;
            file.write_all(&bytes)?;
            file.sync_data()?;
            dir.rename(&tmp, &dir, path)
        })();
        if let Err(err) = result {
            let _ = dir.remove_file(&tmp);
            return Err(io(err));
        }
        Ok(())
    })
    .await?;
    Ok(ctx.workdir().join(written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn data_url_needs_type_and_bytes() {
        assert_eq!(
            data_url(Some("image/png"), "AA==").as_deref(),
            Some("data:image/png;base64,AA==")
        );
        assert_eq!(data_url(None, "AA=="), None);
        assert_eq!(data_url(Some("image/png"), ""), None);
    }
}
