//! YAML text to JSON values that remember their lines: the one place that reads YAML.
//!
//! `yaml-rust2`'s event parser gives every node its position; this module builds one
//! [`serde_json::Value`] per document and a map from each node's JSON pointer to its line, so
//! that validation can say "line 12" without knowing any YAML. Nothing here panics or recurses
//! on the input, and memory is bounded on any input:
//!
//! - the text is at most [`MAX_FILE_BYTES`] long;
//! - nesting is at most 64 levels and a file holds at most a million values;
//! - every alias costs the size of what it expands to (strings by their length, every node a
//!   few bytes), and all aliases and anchors of a file together may cost at most
//!   [`MAX_ALIAS_EXPANSION`]: the "billion laughs" guard, for nested mappings, sequences and
//!   long strings alike;
//! - lines are remembered only for JSON pointers up to 1 KiB long, and for at most 8 MiB of
//!   pointers per file (other fields take the line of their nearest remembered ancestor).
//!
//! A leading byte order mark is skipped, and YAML merge keys (a plain `<<: *base`, or
//! `<<: [*a, *b]`) merge the named mappings into the mapping that holds them; keys written in
//! that mapping win, then earlier merged mappings over later ones. A quoted `"<<"` is an
//! ordinary key.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};

use crate::tools::schema::escape_pointer;

/// The largest bundle file read, in bytes (8 MiB). A larger file is refused with an error
/// naming this limit.
pub const MAX_FILE_BYTES: usize = 8 * 1024 * 1024;

/// How much all aliases and anchors of one file may expand to, in bytes as
/// [`MAX_FILE_BYTES`] counts them (8 MiB): a string costs its length and every node
/// 16 bytes more.
pub const MAX_ALIAS_EXPANSION: usize = 8 * 1024 * 1024;

/// What one node costs in the alias budget, besides the text it holds.
const NODE_COST: usize = 16;

/// How deep mappings and sequences may nest.
const MAX_DEPTH: usize = 64;

/// How many nodes one file may produce, aliases expanded.
const MAX_NODES: usize = 1_000_000;

/// The longest JSON pointer whose line is remembered.
const MAX_POINTER: usize = 1024;

/// How many bytes of JSON pointers one file may remember lines for; past it, fields take the
/// line of their nearest remembered ancestor.
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// The key that merges mappings into the mapping that holds it.
const MERGE_KEY: &str = "<<";

/// One YAML document: its value, where it starts and the line of every node.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub(crate) value: Value,
    pub(crate) line: usize,
    lines: HashMap<String, usize>,
}

impl Document {
    /// The line of the node at `pointer` (a JSON pointer), or of its nearest ancestor.
    pub(crate) fn line_of(&self, pointer: &str) -> usize {
        let mut p = pointer;
        loop {
            if let Some(&l) = self.lines.get(p) {
                return l;
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return self.line,
            }
        }
    }
}

/// Why a file is not YAML the loader can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

/// A finished node and what it weighs.
struct Node {
    value: Value,
    /// [`NODE_COST`] per node plus the length of every string and key.
    size: usize,
    /// How many nodes it holds.
    nodes: usize,
    /// How deep it nests (a scalar is 1).
    depth: usize,
    /// Whether it is a plain `<<`, read where a key is expected: a merge key.
    merge: bool,
}

/// A key being read, or read.
enum Key {
    /// The next node is a key.
    Pending,
    /// The next node is the value of this key.
    Named(String),
    /// The next node is the value of a merge key.
    Merge,
}

/// A sequence or mapping being read, with what it weighs so far.
struct Frame {
    body: Body,
    anchor: usize,
    pointer: Option<String>,
    size: usize,
    nodes: usize,
    depth: usize,
}

enum Body {
    Seq(Vec<Value>),
    Map {
        map: Map<String, Value>,
        key: Key,
        merges: Vec<Map<String, Value>>,
    },
}

#[derive(Default)]
struct Builder {
    docs: Vec<Document>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    lines: HashMap<String, usize>,
    /// The bytes of the pointers in `lines`, over every document.
    remembered: usize,
    doc_line: usize,
    nodes: usize,
    expanded: usize,
    error: Option<SyntaxError>,
}

fn scalar(text: String, style: TScalarStyle, tag: Option<&yaml_rust2::parser::Tag>) -> Value {
    if style != TScalarStyle::Plain || tag.is_some_and(|t| t.suffix == "str") {
        return Value::String(text);
    }
    match text.as_str() {
        "~" | "null" | "Null" | "NULL" | "" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(i) = text.parse::<i64>() {
        return Value::Number(i.into());
    }
    let looks_numeric = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if looks_numeric
        && text.bytes().any(|b| b.is_ascii_digit())
        && let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    Value::String(text)
}

fn key_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The pointer of a child of `parent` named `step`, unless it would be too long to remember.
fn child_of(parent: Option<&String>, step: &str) -> Option<String> {
    let parent = parent?;
    (parent.len() + step.len() < MAX_POINTER).then(|| format!("{parent}/{step}"))
}

impl Builder {
    fn fail(&mut self, line: usize, message: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(SyntaxError {
                line,
                message: message.into(),
            });
        }
    }

    /// The pointer of the node about to be added to the top frame, when it is remembered.
    fn child_pointer(&self) -> Option<String> {
        let Some(Frame { body, pointer, .. }) = self.stack.last() else {
            return Some(String::new());
        };
        match body {
            Body::Seq(items) => child_of(pointer.as_ref(), &items.len().to_string()),
            Body::Map { key, .. } => match key {
                Key::Named(k) => child_of(pointer.as_ref(), &escape_pointer(k)),
                Key::Merge => child_of(pointer.as_ref(), MERGE_KEY),
                // A key being read: it has no pointer of its own.
                Key::Pending => pointer.clone(),
            },
        }
    }

    /// Remembers the line of the node about to be added.
    fn remember_line(&mut self, line: usize) -> Option<String> {
        let p = self.child_pointer();
        if let Some(p) = &p
            && self.remembered.saturating_add(p.len()) <= MAX_LINE_BYTES
            && !self.lines.contains_key(p)
        {
            self.remembered += p.len();
            self.lines.insert(p.clone(), line);
        }
        p
    }

    fn count(&mut self, n: usize, line: usize) -> bool {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            self.fail(line, format!("the file has more than {MAX_NODES} values"));
            return false;
        }
        true
    }

    /// Charges `size` to the alias expansion budget.
    fn expand(&mut self, size: usize, line: usize) -> bool {
        self.expanded = self.expanded.saturating_add(size);
        if self.expanded > MAX_ALIAS_EXPANSION {
            self.fail(
                line,
                format!(
                    "anchors and aliases expand to more than {MAX_ALIAS_EXPANSION} bytes (the alias expansion limit): write the values out, or alias less"
                ),
            );
            return false;
        }
        true
    }

    fn is_key_next(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                body: Body::Map {
                    key: Key::Pending,
                    ..
                },
                ..
            })
        )
    }

    /// Adds a finished node to the frame below it, or ends the document.
    fn add(&mut self, node: Node, anchor: usize, line: usize) {
        if anchor > 0 {
            // The anchor keeps a copy: it costs what the node weighs.
            if !self.expand(node.size, line) {
                return;
            }
            let copy = Node {
                value: node.value.clone(),
                ..node
            };
            self.anchors.insert(anchor, copy);
        }
        let Some(frame) = self.stack.last_mut() else {
            let lines = std::mem::take(&mut self.lines);
            self.docs.push(Document {
                value: node.value,
                line: self.doc_line,
                lines,
            });
            return;
        };
        frame.size = frame.size.saturating_add(node.size);
        frame.nodes = frame.nodes.saturating_add(node.nodes);
        frame.depth = frame.depth.max(node.depth + 1);
        let problem = match &mut frame.body {
            Body::Seq(items) => {
                items.push(node.value);
                None
            }
            Body::Map { map, key, merges } => match std::mem::replace(key, Key::Pending) {
                Key::Pending => {
                    let merge = node.merge;
                    let k = key_text(&node.value);
                    frame.size = frame.size.saturating_add(k.len());
                    let twice = map.contains_key(&k);
                    let problem =
                        twice.then(|| format!("the key `{k}` appears twice in one mapping"));
                    *key = if merge { Key::Merge } else { Key::Named(k) };
                    problem
                }
                Key::Named(k) => {
                    map.insert(k, node.value);
                    None
                }
                Key::Merge => match node.value {
                    Value::Object(m) => {
                        merges.push(m);
                        None
                    }
                    Value::Array(items) if items.iter().all(Value::is_object) => {
                        merges.extend(items.into_iter().filter_map(|v| match v {
                            Value::Object(m) => Some(m),
                            _ => None,
                        }));
                        None
                    }
                    _ => Some(
                        "a merge key `<<` takes a mapping or a list of mappings (`<<: *base`)"
                            .to_owned(),
                    ),
                },
            },
        };
        if let Some(message) = problem {
            self.fail(line, message);
        }
    }

    /// Starts a sequence or mapping, whose line is remembered.
    fn open(&mut self, body: Body, anchor: usize, line: usize) {
        if self.stack.len() >= MAX_DEPTH {
            self.fail(line, format!("values nest deeper than {MAX_DEPTH} levels"));
        }
        let pointer = self.remember_line(line);
        self.stack.push(Frame {
            body,
            anchor,
            pointer,
            size: 0,
            nodes: 0,
            depth: 0,
        });
    }

    fn close(&mut self, line: usize) {
        let Some(frame) = self.stack.pop() else {
            return self.fail(line, "unbalanced YAML");
        };
        let value = match frame.body {
            Body::Seq(items) => Value::Array(items),
            Body::Map {
                mut map, merges, ..
            } => {
                // Keys written in the mapping win, then earlier merged mappings.
                for merged in merges {
                    for (k, v) in merged {
                        map.entry(k).or_insert(v);
                    }
                }
                Value::Object(map)
            }
        };
        let node = Node {
            value,
            size: frame.size.saturating_add(NODE_COST),
            nodes: frame.nodes.saturating_add(1),
            depth: frame.depth.max(1),
            merge: false,
        };
        self.add(node, frame.anchor, line);
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let line = mark.line();
        match ev {
            Event::DocumentStart => {
                self.doc_line = line;
                self.lines.clear();
                self.anchors.clear();
            }
            Event::Scalar(text, style, anchor, tag) => {
                if !self.count(1, line) {
                    return;
                }
                if !self.is_key_next() {
                    self.remember_line(line);
                }
                let size = NODE_COST.saturating_add(text.len());
                let merge = self.is_key_next() && style == TScalarStyle::Plain && text == MERGE_KEY;
                let value = if self.is_key_next() && style == TScalarStyle::Plain {
                    // Keys stay text (`<<` included), whatever they look like.
                    Value::String(text)
                } else {
                    scalar(text, style, tag.as_ref())
                };
                let node = Node {
                    value,
                    size,
                    nodes: 1,
                    depth: 1,
                    merge,
                };
                self.add(node, anchor, line);
            }
            Event::Alias(id) => {
                let Some(target) = self.anchors.get(&id) else {
                    self.fail(line, "an alias names an unknown anchor");
                    return;
                };
                let (size, nodes, depth) = (target.size, target.nodes, target.depth);
                if self.stack.len() + depth > MAX_DEPTH {
                    self.fail(line, format!("values nest deeper than {MAX_DEPTH} levels"));
                    return;
                }
                if !self.expand(size, line) || !self.count(nodes, line) {
                    return;
                }
                let value = match self.anchors.get(&id) {
                    Some(target) => target.value.clone(),
                    None => return,
                };
                if !self.is_key_next() {
                    self.remember_line(line);
                }
                let node = Node {
                    value,
                    size,
                    nodes,
                    depth,
                    merge: false,
                };
                self.add(node, 0, line);
            }
            Event::SequenceStart(anchor, _) => {
                if self.is_key_next() {
                    self.fail(line, "a sequence cannot be a mapping key");
                    return;
                }
                self.open(Body::Seq(Vec::new()), anchor, line);
            }
            Event::MappingStart(anchor, _) => {
                if self.is_key_next() {
                    self.fail(line, "a mapping cannot be a mapping key");
                    return;
                }
                let body = Body::Map {
                    map: Map::new(),
                    key: Key::Pending,
                    merges: Vec::new(),
                };
                self.open(body, anchor, line);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if self.count(1, line) {
                    self.close(line);
                }
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

/// Every document of `text`, or the first error with its line. A leading byte order mark is
/// skipped; a text longer than [`MAX_FILE_BYTES`] is refused unread.
pub(crate) fn parse(text: &str) -> Result<Vec<Document>, SyntaxError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(SyntaxError {
            line: 1,
            message: too_large(text.len() as u64),
        });
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut builder = Builder::default();
    // The events are pulled one at a time (the parser's own `load` recurses on nesting), and
    // reading stops at the first error.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut parser = Parser::new_from_str(text);
        loop {
            let (ev, mark) = parser.next_token()?;
            let end = ev == Event::StreamEnd;
            builder.on_event(ev, mark);
            if end || builder.error.is_some() {
                return Ok(());
            }
        }
    }));
    match outcome {
        Err(_) => Err(SyntaxError {
            line: 1,
            message: "the YAML parser failed on this file".to_owned(),
        }),
        Ok(Err(e)) => Err(scan_error(&e)),
        Ok(Ok(())) => match builder.error {
            Some(e) => Err(e),
            None => Ok(builder.docs),
        },
    }
}

/// The message for a file of `size` bytes, over [`MAX_FILE_BYTES`].
pub(crate) fn too_large(size: u64) -> String {
    format!(
        "the file is {size} bytes, over the bundle file size limit of {MAX_FILE_BYTES} bytes (8 MiB): split it"
    )
}

fn scan_error(e: &ScanError) -> SyntaxError {
    SyntaxError {
        line: e.marker().line(),
        message: e.info().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn documents_keep_values_and_lines() {
        let text = "a: 1\nb:\n  - x\n  - 2.5\n---\nkind: Tool\nflag: true\nq: \"5\"\n";
        let docs = parse(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].value, serde_json::json!({"a": 1, "b": ["x", 2.5]}));
        assert_eq!(docs[0].line_of("/b/1"), 4);
        assert_eq!(docs[1].value["q"], "5");
        assert_eq!(docs[1].value["flag"], true);
        assert_eq!(docs[1].line_of("/flag"), 7);
        assert_eq!(docs[1].line_of("/missing/deeper"), 6);
    }

    #[test]
    fn duplicate_keys_deep_nesting_and_alias_bombs_are_errors() {
        assert_eq!(parse("a: 1\na: 2\n").unwrap_err().line, 2);
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse(&deep).is_err());
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(parse(&bomb).unwrap_err().message.contains("more than"));
    }

    /// `levels` nested mappings with 110-byte keys around `leaf`, and the leaf's pointer.
    fn nested(levels: usize, leaf: &str) -> (String, String) {
        let mut text = String::new();
        let mut pointer = String::new();
        for l in 0..levels {
            let key = format!("{l:03}{}", "k".repeat(107));
            text.push_str(&format!("{}{key}:\n", "  ".repeat(l)));
            pointer.push_str(&format!("/{key}"));
        }
        text.push_str(&format!("{}{leaf}\n", "  ".repeat(levels)));
        (text, pointer)
    }

    #[test]
    fn lines_are_remembered_for_bounded_pointer_bytes() {
        // 200 000 values under a path of about 1 000 bytes would remember 200 MB of pointers.
        let items = vec!["x"; 200_000].join(",");
        let (text, pointer) = nested(9, &format!("[{items}]"));
        let docs = parse(&text).unwrap();
        let bytes: usize = docs[0].lines.keys().map(String::len).sum();
        assert!(bytes <= MAX_LINE_BYTES, "{bytes}");
        assert_eq!(docs[0].line_of(&format!("{pointer}/0")), 10);
        // Fields past the budget take an ancestor's line.
        assert_eq!(docs[0].line_of(&format!("{pointer}/199999")), 10);
        // Pointers over 1 KiB are not remembered at all.
        let (text, pointer) = nested(12, "a: 1");
        let docs = parse(&text).unwrap();
        assert!(docs[0].lines.keys().all(|p| p.len() < MAX_POINTER));
        assert!(docs[0].line_of(&format!("{pointer}/a")) < 12);
    }
}
