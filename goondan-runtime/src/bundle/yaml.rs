//! YAML text to JSON values that remember their lines: the one place that reads YAML.
//!
//! `yaml-rust2`'s event parser gives every node its position; this module builds one
//! [`serde_json::Value`] per document and a map from each node's JSON pointer to its line, so
//! that validation can say "line 12" without knowing any YAML. Nothing here panics or recurses
//! on the input: nesting, aliases and size are bounded.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};

/// How deep mappings and sequences may nest.
const MAX_DEPTH: usize = 64;

/// How many nodes one file may produce, aliases expanded (the "billion laughs" guard).
const MAX_NODES: usize = 1_000_000;

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

enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
        pointer: String,
    },
    Map {
        map: Map<String, Value>,
        key: Option<String>,
        anchor: usize,
        pointer: String,
    },
}

#[derive(Default)]
struct Builder {
    docs: Vec<Document>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Value, usize, usize)>,
    lines: HashMap<String, usize>,
    doc_line: usize,
    nodes: usize,
    error: Option<SyntaxError>,
}

/// JSON pointer escaping of one key.
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
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

impl Builder {
    fn fail(&mut self, line: usize, message: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(SyntaxError {
                line,
                message: message.into(),
            });
        }
    }

    /// The pointer of the node about to be added to the top frame.
    fn child_pointer(&self) -> String {
        match self.stack.last() {
            None => String::new(),
            Some(Frame::Seq { items, pointer, .. }) => format!("{pointer}/{}", items.len()),
            Some(Frame::Map { key, pointer, .. }) => match key {
                Some(k) => format!("{pointer}/{}", escape(k)),
                // A key being read: it has no pointer of its own.
                None => pointer.clone(),
            },
        }
    }

    fn count(&mut self, n: usize, line: usize) -> bool {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            self.fail(line, format!("the file has more than {MAX_NODES} values"));
            return false;
        }
        true
    }

    /// Adds a finished node to the frame below it, or ends the document.
    fn add(&mut self, value: Value, anchor: usize, line: usize) {
        if anchor > 0 {
            let (w, d) = weight(&value);
            self.anchors.insert(anchor, (value.clone(), w, d));
        }
        match self.stack.last_mut() {
            None => {
                let lines = std::mem::take(&mut self.lines);
                self.docs.push(Document {
                    value,
                    line: self.doc_line,
                    lines,
                });
            }
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map { map, key, .. }) => match key.take() {
                None => {
                    let k = key_text(&value);
                    let twice = map.contains_key(&k);
                    *key = Some(k.clone());
                    if twice {
                        self.fail(line, format!("the key `{k}` appears twice in one mapping"));
                    }
                }
                Some(k) => {
                    map.insert(k, value);
                }
            },
        }
    }

    fn open(&mut self, frame: Frame, line: usize) {
        if self.stack.len() >= MAX_DEPTH {
            self.fail(line, format!("values nest deeper than {MAX_DEPTH} levels"));
        }
        self.stack.push(frame);
    }
}

/// How many nodes a value holds and how deep it nests (for the alias guards), without
/// recursion.
fn weight(value: &Value) -> (usize, usize) {
    let mut n = 0usize;
    let mut depth = 0usize;
    let mut todo = vec![(value, 1usize)];
    while let Some((v, d)) = todo.pop() {
        n = n.saturating_add(1);
        depth = depth.max(d);
        match v {
            Value::Array(a) => todo.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => todo.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    (n, depth)
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
            }
            Event::Scalar(text, style, anchor, tag) => {
                if !self.count(1, line) {
                    return;
                }
                let is_value = !matches!(self.stack.last(), Some(Frame::Map { key: None, .. }));
                if is_value {
                    let p = self.child_pointer();
                    self.lines.entry(p).or_insert(line);
                }
                let v = scalar(text, style, tag.as_ref());
                self.add(v, anchor, line);
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some((v, w, d)) => {
                    if self.stack.len() + d > MAX_DEPTH {
                        self.fail(line, format!("values nest deeper than {MAX_DEPTH} levels"));
                    } else if self.count(w, line) {
                        let p = self.child_pointer();
                        self.lines.entry(p).or_insert(line);
                        self.add(v, 0, line);
                    }
                }
                None => self.fail(line, "an alias names an unknown anchor"),
            },
            Event::SequenceStart(anchor, _) => {
                let pointer = self.child_pointer();
                if matches!(self.stack.last(), Some(Frame::Map { key: None, .. })) {
                    self.fail(line, "a sequence cannot be a mapping key");
                    return;
                }
                self.lines.entry(pointer.clone()).or_insert(line);
                self.open(
                    Frame::Seq {
                        items: Vec::new(),
                        anchor,
                        pointer,
                    },
                    line,
                );
            }
            Event::MappingStart(anchor, _) => {
                let pointer = self.child_pointer();
                if matches!(self.stack.last(), Some(Frame::Map { key: None, .. })) {
                    self.fail(line, "a mapping cannot be a mapping key");
                    return;
                }
                self.lines.entry(pointer.clone()).or_insert(line);
                self.open(
                    Frame::Map {
                        map: Map::new(),
                        key: None,
                        anchor,
                        pointer,
                    },
                    line,
                );
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if !self.count(1, line) {
                    return;
                }
                match self.stack.pop() {
                    Some(Frame::Seq { items, anchor, .. }) => {
                        self.add(Value::Array(items), anchor, line);
                    }
                    Some(Frame::Map { map, anchor, .. }) => {
                        self.add(Value::Object(map), anchor, line);
                    }
                    None => self.fail(line, "unbalanced YAML"),
                }
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

/// Every document of `text`, or the first syntax error with its line.
pub(crate) fn parse(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let mut builder = Builder::default();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut parser = Parser::new_from_str(text);
        parser.load(&mut builder, true)
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
}
