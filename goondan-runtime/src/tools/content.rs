//! Rich tool results: [`Content`] parts (text, images, audio, embedded resources, resource
//! links) that a tool returns beside, or instead of, its JSON output.
//!
//! A tool returns a [`Content`], or a [`ToolReturn`]: parts alone
//! ([`ToolReturn::parts`], or `vec.into()`), or JSON output plus parts. (A bare
//! `Vec<Content>` cannot be told apart from a list of JSON values without specialisation,
//! which stable Rust lacks: any `Vec` of serialisable items is JSON output.)
//!
//! The [`ToolCallResult`](crate::ToolCallResult) keeps the parts in `content`, and each front
//! end renders them where it takes them: MCP as content blocks; Anthropic as
//! `tool_result` image blocks; OpenAI Responses as `input_image` parts of the
//! `function_call_output`; Chat Completions, whose tool messages take only text, as a user
//! message right after the tool messages; Gemini as inline data parts of the
//! `functionResponse`. What a provider cannot take (audio in most) becomes a short text note.
//!
//! In-process (and in a serialised result), a part is MCP's shape with binary data in base64:
//!
//! ```json
//! {"type": "image", "mimeType": "image/png", "data": "iVBORw0..."}
//! {"type": "text", "text": "..."}
//! {"type": "resource", "resource": {"uri": "...", "mimeType": "...", "text": "..."}}
//! {"type": "resource_link", "uri": "...", "name": "..."}
//! ```
//!
//! The error message limit never cuts parts; a result whose parts exceed the executor's
//! content limit ([`DEFAULT_MAX_CONTENT_BYTES`], or what the host set with
//! `ExecutorBuilder::max_content_bytes`) is refused as `E_TOOL_CONTENT_TOO_LARGE`.
//!
//! ```
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::tools::content::{Content, ToolReturn};
//!
//! /// Draws a one-pixel picture.
//! #[tool(name = "paint")]
//! pub fn pixel() -> ToolReturn {
//!     let png = vec![0x89, b'P', b'N', b'G'];
//!     ToolReturn::parts(vec![Content::text("a pixel"), Content::image_png(png)])
//! }
//! # let _ = pixel::TOOL;
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// How many bytes of parts one result may carry by default: 16 MiB.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// One part of a rich result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text(String),
    /// An image.
    Image(Binary),
    /// Audio.
    Audio(Binary),
    /// A resource, embedded whole.
    Resource(Resource),
    /// A pointer to a resource the client may read.
    Link(ResourceLink),
}

/// Binary data with its media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// The media type, e.g. `image/png`.
    pub mime_type: String,
    /// The bytes.
    pub data: Vec<u8>,
}

impl Binary {
    /// The bytes in base64 (standard alphabet, padded), as JSON carries them.
    pub fn base64(&self) -> String {
        STANDARD.encode(&self.data)
    }
}

/// An embedded resource: its URI, media type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Where it lives.
    pub uri: String,
    /// Its media type, when known.
    pub mime_type: Option<String>,
    /// Text or bytes.
    pub body: ResourceBody,
}

/// The body of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// A link to a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    /// Where it lives.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Its media type, when known.
    pub mime_type: Option<String>,
}

impl Content {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// A PNG image.
    pub fn image_png(data: impl Into<Vec<u8>>) -> Self {
        Self::image("image/png", data)
    }

    /// A JPEG image.
    pub fn image_jpeg(data: impl Into<Vec<u8>>) -> Self {
        Self::image("image/jpeg", data)
    }

    /// An image of any media type.
    pub fn image(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Content::Image(Binary {
            mime_type: mime_type.into(),
            data: data.into(),
        })
    }

    /// WAV audio.
    pub fn audio_wav(data: impl Into<Vec<u8>>) -> Self {
        Self::audio("audio/wav", data)
    }

    /// Audio of any media type.
    pub fn audio(mime_type: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Content::Audio(Binary {
            mime_type: mime_type.into(),
            data: data.into(),
        })
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content::Resource(Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
        })
    }

    /// An embedded binary resource.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        Content::Resource(Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(data.into()),
        })
    }

    /// A link to a resource.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::Link(ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        })
    }

    /// How many bytes the part carries (text in UTF-8, data before base64).
    pub fn byte_len(&self) -> usize {
        match self {
            Content::Text(t) => t.len(),
            Content::Image(b) | Content::Audio(b) => b.data.len(),
            Content::Resource(r) => match &r.body {
                ResourceBody::Text(t) => t.len(),
                ResourceBody::Blob(b) => b.len(),
            },
            Content::Link(l) => l.uri.len() + l.name.len(),
        }
    }

    /// The part as MCP's content block JSON (binary data in base64).
    pub fn to_json(&self) -> Value {
        match self {
            Content::Text(t) => json!({"type": "text", "text": t}),
            Content::Image(b) => {
                json!({"type": "image", "mimeType": b.mime_type, "data": b.base64()})
            }
            Content::Audio(b) => {
                json!({"type": "audio", "mimeType": b.mime_type, "data": b.base64()})
            }
            Content::Resource(r) => {
                let mut inner = json!({"uri": r.uri});
                if let Some(m) = &r.mime_type {
                    inner["mimeType"] = json!(m);
                }
                match &r.body {
                    ResourceBody::Text(t) => inner["text"] = json!(t),
                    ResourceBody::Blob(b) => inner["blob"] = json!(STANDARD.encode(b)),
                }
                json!({"type": "resource", "resource": inner})
            }
            Content::Link(l) => {
                let mut o = json!({"type": "resource_link", "uri": l.uri, "name": l.name});
                if let Some(d) = &l.description {
                    o["description"] = json!(d);
                }
                if let Some(m) = &l.mime_type {
                    o["mimeType"] = json!(m);
                }
                o
            }
        }
    }

    /// Reads a content block written as MCP writes it (from a bridged server, a journal, a
    /// serialised result). Anything else is an error that says what is wrong.
    pub fn from_json(value: &Value) -> Result<Self, ContentError> {
        let optional = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let field = |v: &Value, k: &str| {
            optional(v, k).ok_or_else(|| ContentError::Missing {
                field: k.to_owned(),
            })
        };
        let decode = |b: &str| {
            STANDARD
                .decode(b)
                .map_err(|e| ContentError::Base64(e.to_string()))
        };
        let binary = || {
            Ok(Binary {
                mime_type: field(value, "mimeType")?,
                data: decode(&field(value, "data")?)?,
            })
        };
        match value.get("type").and_then(Value::as_str) {
            Some("text") => Ok(Content::Text(field(value, "text")?)),
            Some("image") => binary().map(Content::Image),
            Some("audio") => binary().map(Content::Audio),
            Some("resource") => {
                let r = value.get("resource").ok_or(ContentError::Missing {
                    field: "resource".into(),
                })?;
                let body = match (r.get("text").and_then(Value::as_str), r.get("blob")) {
                    (Some(t), _) => ResourceBody::Text(t.to_owned()),
                    (None, Some(Value::String(b))) => ResourceBody::Blob(decode(b)?),
                    _ => {
                        return Err(ContentError::Missing {
                            field: "resource.text or resource.blob".into(),
                        });
                    }
                };
                Ok(Content::Resource(Resource {
                    uri: field(r, "uri")?,
                    mime_type: optional(r, "mimeType"),
                    body,
                }))
            }
            Some("resource_link") => Ok(Content::Link(ResourceLink {
                uri: field(value, "uri")?,
                name: field(value, "name")?,
                description: optional(value, "description"),
                mime_type: optional(value, "mimeType"),
            })),
            other => Err(ContentError::Kind(format!("{other:?}"))),
        }
    }

    /// A short text that stands for the part where a provider cannot take it.
    pub fn note(&self, why: &str) -> String {
        let (kind, mime) = match self {
            Content::Text(_) => ("text", None),
            Content::Image(b) => ("image", Some(b.mime_type.as_str())),
            Content::Audio(b) => ("audio", Some(b.mime_type.as_str())),
            Content::Resource(r) => ("resource", r.mime_type.as_deref()),
            Content::Link(l) => ("resource link", l.mime_type.as_deref()),
        };
        let size = self.byte_len();
        let size = if size >= 1024 {
            format!("{} KiB", size.div_ceil(1024))
        } else {
            format!("{size} bytes")
        };
        format!(
            "[{kind}{}, {size}, not shown: {why}]",
            mime.map(|m| format!(" {m}")).unwrap_or_default()
        )
    }
}

/// Why a content block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// A field is missing or not a string.
    #[error("a content block needs `{field}`")]
    Missing {
        /// Which.
        field: String,
    },
    /// Binary data that is not base64.
    #[error("content data is not base64: {0}")]
    Base64(String),
    /// A `type` this version does not know.
    #[error("unknown content type {0}")]
    Kind(String),
}

/// A tool's answer with content parts: JSON output (optional) and parts.
///
/// ```
/// use goondan_runtime::tools::content::{Content, ToolReturn};
/// let r = ToolReturn::new(serde_json::json!({"pages": 2})).with(Content::image_png(vec![1, 2]));
/// assert_eq!(r.content.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReturn {
    /// The JSON output (`null` when the parts say everything).
    pub output: Value,
    /// The parts.
    pub content: Vec<Content>,
}

impl ToolReturn {
    /// An answer whose JSON output is `output`, without parts yet. A value that cannot be
    /// JSON is `null`.
    pub fn new(output: impl serde::Serialize) -> Self {
        Self {
            output: serde_json::to_value(output).unwrap_or(Value::Null),
            content: Vec::new(),
        }
    }

    /// An answer made of `parts` alone (its JSON output is `null`).
    pub fn parts(parts: Vec<Content>) -> Self {
        Self {
            output: Value::Null,
            content: parts,
        }
    }

    /// Adds a part.
    #[must_use]
    pub fn with(mut self, part: Content) -> Self {
        self.content.push(part);
        self
    }
}

impl From<Vec<Content>> for ToolReturn {
    fn from(parts: Vec<Content>) -> Self {
        Self::parts(parts)
    }
}

/// `content` of a [`ToolCallResult`](crate::ToolCallResult) as JSON: parts in MCP's shape.
pub(crate) mod parts {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    use super::Content;

    pub(crate) fn serialize<S: Serializer>(parts: &[Content], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(parts.iter().map(Content::to_json))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Content>, D::Error> {
        Vec::<Value>::deserialize(d)?
            .iter()
            .map(|v| Content::from_json(v).map_err(D::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_reads_back_from_its_json() {
        let parts = [
            Content::text("hi"),
            Content::image_png(vec![1, 2, 3]),
            Content::audio_wav(vec![4, 5]),
            Content::resource_text("file:///a.txt", "text/plain", "A"),
            Content::resource_blob("file:///b.bin", "application/octet-stream", vec![9]),
            Content::link("file:///c", "c"),
        ];
        for part in parts {
            assert_eq!(Content::from_json(&part.to_json()), Ok(part.clone()));
        }
    }

    #[test]
    fn bad_blocks_are_errors_that_say_why() {
        let bad = [
            json!({"type": "image", "mimeType": "image/png", "data": "!!!"}),
            json!({"type": "image", "data": "AA=="}),
            json!({"type": "video"}),
            json!({"type": "resource", "resource": {"uri": "x"}}),
            json!(42),
        ];
        for b in bad {
            assert!(Content::from_json(&b).is_err(), "{b}");
        }
    }

    #[test]
    fn a_note_names_the_kind_type_and_size() {
        let note = Content::audio_wav(vec![0; 3000]).note("no audio here");
        assert_eq!(note, "[audio audio/wav, 3 KiB, not shown: no audio here]");
    }
}
