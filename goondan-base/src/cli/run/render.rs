//! What the terminal shows of a Turn: the answer's text as it streams, and each tool call
//! while it runs (name, short arguments, a spinner and the time so far on a terminal), then
//! on one line its duration and its result or error. A code mode call shows its program, the
//! calls the program makes indented under it, and what it printed. Tool lines go to stderr,
//! so that the answer alone is on stdout. Also the approval prompt and how its answer is read.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use goondan_runtime::tools::result::JsonObject;

use super::link::{Answer, short};

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The prompt of an approval question.
pub(crate) const APPROVAL_PROMPT: &str =
    "approve [y] / deny [n] (reason) / edit [e] (JSON arguments): ";

/// The arguments as `key=value` pairs on one short line.
pub(crate) fn short_args(args: &JsonObject) -> String {
    let pairs: Vec<String> = args
        .iter()
        .map(|(k, v)| format!("{k}={}", short(v, 40)))
        .collect();
    short(&pairs.join(" ").into(), 100)
}

/// A duration as people read it: `850 ms`, `2.4 s`.
pub(crate) fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

struct Running {
    tool: String,
    args: String,
    started: Instant,
    /// How its lines start: a call made in a program's code call is indented under it.
    indent: &'static str,
}

/// The most lines of a program, or of what it printed, shown at the terminal.
const SHOWN_LINES: usize = 30;

/// The terminal: stdout for the answer, stderr for the rest.
pub(crate) struct Screen {
    tty: bool,
    /// Stream the answer's text (interactive) or print it once at the end (`--input`).
    stream: bool,
    running: BTreeMap<String, Running>,
    frame: usize,
    spinner_shown: bool,
    /// Text was streamed since the last newline.
    mid_line: bool,
    /// Text was streamed during this Turn.
    streamed: bool,
}

impl Screen {
    /// A screen; `stream` prints deltas as they come.
    pub(crate) fn new(stream: bool) -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            stream,
            running: BTreeMap::new(),
            frame: 0,
            spinner_shown: false,
            mid_line: false,
            streamed: false,
        }
    }

    /// A Turn starts.
    pub(crate) fn turn_started(&mut self) {
        self.streamed = false;
        self.mid_line = false;
        self.running.clear();
    }

    /// Whether answer text was streamed in this Turn (then it need not be printed again).
    pub(crate) fn streamed(&self) -> bool {
        self.streamed
    }

    /// More text of the answer.
    pub(crate) fn delta(&mut self, text: &str) {
        if !self.stream {
            return;
        }
        self.clear_spinner();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.streamed = true;
        self.mid_line = !text.ends_with('\n');
    }

    fn end_text_line(&mut self) {
        if self.mid_line {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
            self.mid_line = false;
        }
    }

    /// A call started; `inner` when it is made in a code mode program's code call. A code
    /// call shows its program, one line after another.
    pub(crate) fn tool_started(
        &mut self,
        call_id: &str,
        tool: &str,
        args: &JsonObject,
        inner: bool,
    ) {
        self.end_text_line();
        let indent = if inner { "    " } else { "  " };
        let program = (tool == goondan_runtime::code::TOOL_NAME)
            .then(|| args.get("code").and_then(serde_json::Value::as_str))
            .flatten();
        let args = match program {
            Some(_) => String::new(),
            None => short_args(args),
        };
        if !self.tty {
            self.err_line(format!("{indent}→ {tool} {args}").trim_end());
        }
        if let Some(program) = program {
            self.block(program, &format!("{indent}  │ "));
        }
        self.running.insert(
            call_id.to_owned(),
            Running {
                tool: tool.to_owned(),
                args,
                started: Instant::now(),
                indent,
            },
        );
        self.tick();
    }

    /// What a code call's program printed, under it.
    pub(crate) fn printed(&mut self, call_id: &str, text: &str) {
        let indent = self.running.get(call_id).map_or("  ", |r| r.indent);
        self.block(text, &format!("{indent}  ┆ "));
        self.tick();
    }

    /// `text`'s lines on stderr, each after `prefix`, at most [`SHOWN_LINES`] of them.
    fn block(&mut self, text: &str, prefix: &str) {
        let lines: Vec<&str> = text.trim_end().lines().collect();
        for line in lines.iter().take(SHOWN_LINES) {
            self.err_line(&format!("{prefix}{line}"));
        }
        if lines.len() > SHOWN_LINES {
            let more = lines.len() - SHOWN_LINES;
            self.err_line(&format!("{prefix}… {more} more lines"));
        }
    }

    /// A call ended: one line with its duration and result.
    pub(crate) fn tool_finished(
        &mut self,
        call_id: &str,
        tool: &str,
        status: &str,
        summary: &str,
        ms: u64,
    ) {
        let (args, indent) = self
            .running
            .remove(call_id)
            .map_or((String::new(), "  "), |r| (r.args, r.indent));
        let mark = match status {
            "ok" => '✓',
            "pending" => '…',
            _ => '✗',
        };
        let took = duration(Duration::from_millis(ms));
        self.clear_spinner();
        let head = format!("{tool} {args}");
        self.err_line(&format!(
            "{indent}{mark} {} ({took}) → {summary}",
            head.trim_end()
        ));
        self.tick();
    }

    /// Redraws the spinner line of the running calls (on a terminal only).
    pub(crate) fn tick(&mut self) {
        if !self.tty {
            return;
        }
        let Some(r) = self.running.values().next() else {
            self.clear_spinner();
            return;
        };
        self.frame = (self.frame + 1) % SPINNER.len();
        let line = format!(
            "\r\x1b[2K{}{} {} {} {}",
            r.indent,
            SPINNER[self.frame],
            r.tool,
            r.args,
            duration(r.started.elapsed())
        );
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
        self.spinner_shown = true;
    }

    fn clear_spinner(&mut self) {
        if self.spinner_shown {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(b"\r\x1b[2K");
            let _ = err.flush();
            self.spinner_shown = false;
        }
    }

    /// A line on stderr, the spinner cleared first.
    pub(crate) fn err_line(&mut self, text: &str) {
        self.end_text_line();
        self.clear_spinner();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
    }

    /// The end of the Turn's streamed text.
    pub(crate) fn turn_finished(&mut self) {
        self.clear_spinner();
        self.end_text_line();
        self.running.clear();
    }

    /// Asks about a call: the question on stderr, with the id it is kept under when it is
    /// kept (then it may be answered from elsewhere too).
    pub(crate) fn ask(&mut self, tool: &str, args: &JsonObject, why: &str, kept: Option<&str>) {
        self.err_line(&format!("? {tool} {} ({why})", short_args(args)));
        if let Some(id) = kept {
            self.err_line(&format!(
                "  question {id}: answer here, or elsewhere with `goondan approvals answer {id} approve|deny`"
            ));
        }
        self.prompt(APPROVAL_PROMPT);
    }

    /// A prompt without a newline, on stderr.
    pub(crate) fn prompt(&mut self, text: &str) {
        self.clear_spinner();
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
}

/// What a line typed at the approval prompt means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// A decision.
    Decided(Answer),
    /// `e` without arguments: ask for them on the next line.
    NeedArgs,
    /// Not understood: why, and ask again.
    Again(String),
}

/// Reads the answer to the approval prompt: `y`, `n [reason]`, `e [JSON object]`.
pub(crate) fn parse_reply(text: &str) -> Reply {
    let text = text.trim();
    let (word, rest) = text
        .split_once(char::is_whitespace)
        .map_or((text, ""), |(w, r)| (w, r.trim()));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" | "approve" => Reply::Decided(Answer::Approve),
        "n" | "no" | "deny" => Reply::Decided(Answer::Deny(if rest.is_empty() {
            "the user denied this call".to_owned()
        } else {
            rest.to_owned()
        })),
        "e" | "edit" if rest.is_empty() => Reply::NeedArgs,
        "e" | "edit" => parse_args(rest),
        _ => Reply::Again("answer y, n (reason) or e (JSON arguments)".to_owned()),
    }
}

/// Edited arguments: a JSON object.
pub(crate) fn parse_args(text: &str) -> Reply {
    match serde_json::from_str::<serde_json::Value>(text.trim()) {
        Ok(serde_json::Value::Object(args)) => Reply::Decided(Answer::Edit(args)),
        Ok(_) => Reply::Again("the arguments must be a JSON object".to_owned()),
        Err(e) => Reply::Again(format!("the arguments are not JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn approval_replies_are_read_as_decisions() {
        assert_eq!(parse_reply("y"), Reply::Decided(Answer::Approve));
        assert_eq!(parse_reply(" YES "), Reply::Decided(Answer::Approve));
        assert_eq!(
            parse_reply("n not in my home directory"),
            Reply::Decided(Answer::Deny("not in my home directory".into()))
        );
        assert!(matches!(parse_reply("n"), Reply::Decided(Answer::Deny(r)) if !r.is_empty()));
        assert_eq!(parse_reply("e"), Reply::NeedArgs);
        let edited = parse_reply(r#"e {"path": "b.txt"}"#);
        let Reply::Decided(Answer::Edit(args)) = edited else {
            panic!("{edited:?}");
        };
        assert_eq!(args.get("path"), Some(&json!("b.txt")));
        assert!(matches!(parse_reply("e [1]"), Reply::Again(_)));
        assert!(matches!(parse_reply("maybe"), Reply::Again(_)));
        assert!(matches!(parse_reply(""), Reply::Again(_)));
    }

    #[test]
    fn arguments_and_durations_are_short() {
        let args = json!({"path": "a.txt", "content": "x".repeat(200)});
        let line = short_args(args.as_object().unwrap_or(&JsonObject::new()));
        assert!(line.starts_with("path=a.txt content=xxx"), "{line}");
        assert!(line.chars().count() <= 100, "{line}");
        assert_eq!(duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(duration(Duration::from_millis(2400)), "2.4 s");
    }
}
