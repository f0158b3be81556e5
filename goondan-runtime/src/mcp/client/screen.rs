//! What a server sends, screened before rmcp reads it. rmcp reads each message with
//! serde_json, which refuses one nested deeper than 128 levels, and a message it refuses is
//! dropped whole: one tool with a deep schema would take every tool of its server with it, and
//! a deep answer would leave its call waiting until its timeout. [`screen`] measures a message
//! on its raw text, in one pass and without recursion, and when it nests deeper than
//! [`MAX_DEPTH`] levels it leaves out of a `tools/list` answer the tools that nest too deep
//! (each a [`LeftOutTool`]), or puts a JSON-RPC error in the place of any other answer, so that
//! its request ends at once with why.

/// How deep a message from a server may nest (objects and arrays, the message itself
/// included): below serde_json's limit of 128, with room for the levels rmcp's types add.
pub(crate) const MAX_DEPTH: usize = 100;

/// The levels a tool of a `tools/list` answer sits in: the message, its `result`, `tools`.
const TOOL_LEVELS: usize = 3;

/// The longest tool name a [`LeftOutTool`] keeps, in characters.
const MAX_NAME_CHARS: usize = 128;

/// The most tools one screened listing names as left out; any more are left out unnamed.
const MAX_NAMED: usize = 4096;

/// The tools the screen left out of a server's listings since they were last taken.
pub(crate) type LeftOutSink = std::sync::Arc<std::sync::Mutex<Vec<LeftOutTool>>>;

/// A tool a server lists that the bridge leaves out, and why.
///
/// ```
/// use goondan_runtime::mcp::client::LeftOutTool;
/// let left = LeftOutTool { name: "deep".into(), reason: "its definition nests too deep".into() };
/// assert_eq!(left.to_string(), "`deep`: its definition nests too deep");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOutTool {
    /// The tool's name as the server gives it (cut to 128 characters).
    pub name: String,
    /// Why it is left out.
    pub reason: String,
}

impl LeftOutTool {
    /// `tools` in one line for a person: how many, the first three named with why; `None`
    /// when there are none.
    ///
    /// ```
    /// use goondan_runtime::mcp::client::LeftOutTool;
    /// let tool = |name: &str| LeftOutTool { name: name.into(), reason: "too deep".into() };
    /// assert_eq!(LeftOutTool::summary(&[]), None);
    /// assert_eq!(
    ///     LeftOutTool::summary(&[tool("a"), tool("b"), tool("c"), tool("d")]).unwrap(),
    ///     "4 tools left out: `a`: too deep; `b`: too deep; `c`: too deep; and 1 more"
    /// );
    /// ```
    pub fn summary(tools: &[Self]) -> Option<String> {
        const NAMED: usize = 3;
        let (named, more) = tools.split_at(tools.len().min(NAMED));
        if named.is_empty() {
            return None;
        }
        let named: Vec<String> = named.iter().map(Self::to_string).collect();
        let mut said = format!(
            "{} tool{} left out: {}",
            tools.len(),
            if tools.len() == 1 { "" } else { "s" },
            named.join("; ")
        );
        if !more.is_empty() {
            said.push_str(&format!("; and {} more", more.len()));
        }
        Some(said)
    }
}

impl std::fmt::Display for LeftOutTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.name, self.reason)
    }
}

/// What becomes of one message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Screened {
    /// Passed on as it is.
    Kept,
    /// A `tools/list` answer passed on without the tools that nest too deep.
    Tools {
        line: Vec<u8>,
        left_out: Vec<LeftOutTool>,
    },
    /// An answer too deep to read, passed on as a JSON-RPC error for its request.
    Refused { line: Vec<u8>, depth: usize },
    /// A request or notification too deep to read: not passed on.
    Dropped { depth: usize },
}

/// What a screened message from a server is passed on to rmcp as.
pub(crate) enum Passed {
    /// The message itself.
    AsIs,
    /// This text in its place.
    Instead(Vec<u8>),
    /// Nothing.
    Dropped,
}

impl Screened {
    /// What a message from `server` is passed on as. What the screen left out is logged, and
    /// the tools it left out are kept in `left_out`.
    pub(crate) fn passed(self, server: &str, left_out: &LeftOutSink) -> Passed {
        let instead = match self {
            Screened::Kept => return Passed::AsIs,
            Screened::Tools {
                line,
                left_out: out,
            } => {
                for tool in &out {
                    tracing::warn!(target: "goondan::mcp", server, tool = %tool.name, "the MCP tool `{}` is left out: {}", tool.name, tool.reason);
                }
                crate::lock(left_out).extend(out);
                line
            }
            Screened::Refused { line, depth } => {
                tracing::warn!(target: "goondan::mcp", server, "the server answered with a message nested {depth} levels deep; its request ends with an error");
                line
            }
            Screened::Dropped { depth } => {
                tracing::warn!(target: "goondan::mcp", server, "the server sent a request or notification nested {depth} levels deep; it is dropped");
                return Passed::Dropped;
            }
        };
        Passed::Instead(instead)
    }
}

/// Screens one message (a line, without its newline). Text that is not JSON is kept: rmcp
/// decides what to do with it.
pub(crate) fn screen(line: &[u8]) -> Screened {
    let start = skip_ws(line, 0);
    let Some((_, depth)) = value_end(line, start) else {
        return Screened::Kept;
    };
    if depth <= MAX_DEPTH {
        return Screened::Kept;
    }
    if line.get(start) != Some(&b'{') {
        return Screened::Dropped { depth };
    }
    if let Some(screened) = without_deep_tools(line, start) {
        return screened;
    }
    let id = member(line, start, b"id").filter(|&(s, e)| {
        e - s <= MAX_ID_LEN && matches!(line.get(s), Some(b'"' | b'-' | b'0'..=b'9'))
    });
    let is_answer = member(line, start, b"method").is_none();
    match (id, is_answer) {
        (Some((s, e)), true) => {
            let mut refused = Vec::with_capacity(160);
            refused.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            refused.extend_from_slice(&line[s..e]);
            refused.extend_from_slice(
                format!(
                    r#","error":{{"code":-32603,"message":"the server's answer nests {depth} levels deep; the bridge reads at most {MAX_DEPTH}"}}}}"#
                )
                .as_bytes(),
            );
            Screened::Refused {
                line: refused,
                depth,
            }
        }
        _ => Screened::Dropped { depth },
    }
}

/// The longest request id an error is written for.
const MAX_ID_LEN: usize = 256;

/// The `tools/list` answer `line` (its object at `start`) without the tools that nest too
/// deep, when that is what makes it too deep; `None` when it is not such an answer or is
/// still too deep without them.
fn without_deep_tools(line: &[u8], start: usize) -> Option<Screened> {
    let (result, _) = member(line, start, b"result")?;
    if line.get(result) != Some(&b'{') {
        return None;
    }
    let (tools, tools_end) = member(line, result, b"tools")?;
    if line.get(tools) != Some(&b'[') {
        return None;
    }
    let mut kept = Vec::with_capacity(line.len());
    kept.extend_from_slice(&line[..=tools]);
    let mut left_out = Vec::new();
    let mut first = true;
    for item in Items::new(line, tools) {
        let Item {
            start, end, depth, ..
        } = item?;
        if TOOL_LEVELS + depth > MAX_DEPTH {
            if left_out.len() < MAX_NAMED {
                left_out.push(LeftOutTool {
                    name: tool_name(&line[start..end]),
                    reason: format!(
                        "its definition nests {depth} levels deep; the bridge reads at most {}",
                        MAX_DEPTH - TOOL_LEVELS
                    ),
                });
            }
            continue;
        }
        if !first {
            kept.push(b',');
        }
        first = false;
        kept.extend_from_slice(&line[start..end]);
    }
    kept.extend_from_slice(&line[tools_end - 1..]);
    let (_, depth) = value_end(&kept, start)?;
    (depth <= MAX_DEPTH).then_some(Screened::Tools {
        line: kept,
        left_out,
    })
}

/// The `name` of the tool `tool` (its raw text), cut to [`MAX_NAME_CHARS`].
fn tool_name(tool: &[u8]) -> String {
    let name = (tool.first() == Some(&b'{'))
        .then(|| member(tool, 0, b"name"))
        .flatten()
        .and_then(|(s, e)| serde_json::from_slice::<String>(&tool[s..e]).ok());
    match name {
        Some(name) if name.chars().count() > MAX_NAME_CHARS => {
            let mut cut: String = name.chars().take(MAX_NAME_CHARS).collect();
            cut.push('…');
            cut
        }
        Some(name) => name,
        None => "(a tool without a name)".to_owned(),
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the string whose opening quote is at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[at] == b'"' {
            return Some(at + 1);
        }
        i = at + 2;
    }
}

/// The end (exclusive) of the value that starts at `start`, and how deep it nests (a scalar 0,
/// `{}` 1, `[{}]` 2); `None` when the text ends first.
fn value_end(b: &[u8], start: usize) -> Option<(usize, usize)> {
    match b.get(start)? {
        b'"' => string_end(b, start).map(|end| (end, 0)),
        b'{' | b'[' => {
            let (mut depth, mut deepest, mut i) = (0usize, 0usize, start);
            while let Some(&c) = b.get(i) {
                match c {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => {
                        depth += 1;
                        deepest = deepest.max(depth);
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some((i + 1, deepest));
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = b[start..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                .unwrap_or(b.len() - start);
            Some((start + len, 0))
        }
    }
}

/// The value of the member `key` (compared as written, between its quotes) of the object at
/// `start`.
fn member(b: &[u8], start: usize, key: &[u8]) -> Option<(usize, usize)> {
    Items::new(b, start).find_map(|item| {
        let item = item?;
        (item.key == Some(key)).then_some(Some((item.start, item.end)))
    })?
}

/// One member of an object or element of an array: its key (objects), where its value
/// starts and ends, and how deep the value nests.
struct Item<'a> {
    key: Option<&'a [u8]>,
    start: usize,
    end: usize,
    depth: usize,
}

/// The members of the object, or elements of the array, whose opening bracket is at `open`;
/// `None` as an item when the text is not well formed there (and then no more items).
struct Items<'a> {
    b: &'a [u8],
    i: usize,
    object: bool,
    done: bool,
}

impl<'a> Items<'a> {
    fn new(b: &'a [u8], open: usize) -> Self {
        let object = b.get(open) == Some(&b'{');
        let i = skip_ws(b, open + 1);
        let empty = b.get(i) == Some(if object { &b'}' } else { &b']' });
        Self {
            b,
            i,
            object,
            done: empty,
        }
    }

    fn next_item(&mut self) -> Option<Item<'a>> {
        let b = self.b;
        let key = if self.object {
            if b.get(self.i) != Some(&b'"') {
                return None;
            }
            let end = string_end(b, self.i)?;
            let key = &b[self.i + 1..end - 1];
            self.i = skip_ws(b, end);
            if b.get(self.i) != Some(&b':') {
                return None;
            }
            self.i = skip_ws(b, self.i + 1);
            Some(key)
        } else {
            None
        };
        let start = self.i;
        let (end, depth) = value_end(b, start)?;
        self.i = skip_ws(b, end);
        match b.get(self.i)? {
            b',' => self.i = skip_ws(b, self.i + 1),
            b'}' | b']' => self.done = true,
            _ => return None,
        }
        Some(Item {
            key,
            start,
            end,
            depth,
        })
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = Option<Item<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_item();
        if item.is_none() {
            self.done = true;
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{{}}{}", "[".repeat(levels - 1), "]".repeat(levels - 1))
    }

    #[test]
    fn a_message_within_the_depth_is_kept_and_brackets_inside_strings_do_not_count() {
        let quoted = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"s":"{}\"\\"}}}}"#,
            "[".repeat(500)
        );
        assert_eq!(screen(quoted.as_bytes()), Screened::Kept);
        assert_eq!(screen(b"not json"), Screened::Kept);
        assert_eq!(screen(br#"{"a":[[[["#), Screened::Kept);
        assert_eq!(value_end(nested(7).as_bytes(), 0), Some((14, 7)));
    }

    #[test]
    fn tools_that_nest_too_deep_are_left_out_by_name_and_the_others_kept() {
        let deep = format!(r#"{{"name":"deep","inputSchema":{}}}"#, nested(5000));
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":[{{"name":"a","inputSchema":{{}}}}, {deep} ,{{"name":"b","inputSchema":{{}}}}],"nextCursor":"c"}}}}"#
        );
        let Screened::Tools { line, left_out } = screen(line.as_bytes()) else {
            panic!("not screened as a listing");
        };
        let kept: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            kept["result"]["tools"],
            serde_json::json!([{"name": "a", "inputSchema": {}}, {"name": "b", "inputSchema": {}}])
        );
        assert_eq!(kept["result"]["nextCursor"], "c");
        assert_eq!(left_out.len(), 1);
        assert_eq!(left_out[0].name, "deep");
        assert!(
            left_out[0].reason.contains("5001 levels"),
            "{}",
            left_out[0].reason
        );
    }

    #[test]
    fn any_other_answer_too_deep_becomes_an_error_for_its_id_and_a_request_is_dropped() {
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":"x-1","result":{}}}"#,
            nested(1_000_000)
        );
        let Screened::Refused { line, depth } = screen(answer.as_bytes()) else {
            panic!("not refused");
        };
        assert_eq!(depth, 1_000_001);
        let error: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(error["id"], "x-1");
        assert_eq!(error["error"]["code"], -32603);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("1000001 levels")
        );
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"m","params":{}}}"#,
            nested(200)
        );
        assert_eq!(screen(request.as_bytes()), Screened::Dropped { depth: 201 });
    }
}
