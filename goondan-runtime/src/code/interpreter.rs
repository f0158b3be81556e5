//! A running program, seen from the host, on either route: in the agent's process, on the
//! thread that drives it (`super::program`), or in a worker process (`super::worker`).
//!
//! Whatever the route, the host gathers what the program prints, and holds it to its output
//! limit and its calls to their limit: a worker is not trusted to.

use std::sync::Arc;

use super::program::{
    self, Failure, FailureKind, Limit, Limits, Message, Outcome, Program, Reply, Running,
};
use super::worker::{Connection, WorkerLauncher};

/// What the program asks of the host.
#[derive(Debug)]
pub(crate) enum Request {
    /// The program printed `text` (within its output limit); its next request follows.
    Printed(String),
    /// Call the catalog item `tool` with `args`, then [`Interpreter::reply`].
    Call {
        /// The catalog name (`resource__export`).
        tool: String,
        /// The keyword arguments.
        args: serde_json::Map<String, serde_json::Value>,
    },
    /// The run ended.
    Finished(Outcome),
}

/// Where the program runs.
enum Route {
    Thread(Box<Running>),
    Worker(Box<Connection>),
}

/// A running program.
pub(crate) struct Interpreter {
    route: Route,
    limits: Limits,
    printed: String,
    calls: usize,
    /// The answer the program gave, until its end.
    answer: Option<String>,
}

impl Interpreter {
    /// Starts `program`: in a worker process `launcher` starts, or in this process, on the
    /// calling thread (which needs the interpreter's stack), without one.
    pub(crate) fn start(
        program: Program,
        launcher: Option<&Arc<dyn WorkerLauncher>>,
    ) -> Result<Self, String> {
        let limits = program.limits;
        let route = match launcher {
            Some(launcher) => Route::Worker(Box::new(
                Connection::start(launcher.as_ref(), program)
                    .map_err(|e| format!("its worker process cannot start: {e}"))?,
            )),
            None => Route::Thread(Box::new(program::start(program))),
        };
        Ok(Self {
            route,
            limits,
            printed: String::new(),
            calls: 0,
            answer: None,
        })
    }

    /// The program's next request.
    pub(crate) async fn next(&mut self) -> Request {
        let (limit, report) = loop {
            match self.message().await {
                // Held until the end that follows it.
                Message::Answer { text }
                    if text.len() <= self.limits.output && self.answer.is_none() =>
                {
                    self.answer = Some(text);
                }
                Message::Answer { .. } => {
                    break (
                        Limit::Output,
                        "the program gave a second answer, or one larger than it may".to_owned(),
                    );
                }
                Message::Print { text } => {
                    let room = self.limits.output.saturating_sub(self.printed.len());
                    if text.len() <= room {
                        self.printed.push_str(&text);
                        return Request::Printed(text);
                    }
                    let mut cut = room;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.printed.push_str(&text[..cut]);
                    break (
                        Limit::Output,
                        "the program printed more than it may".to_owned(),
                    );
                }
                Message::Call { tool, args } if self.calls < self.limits.calls => {
                    self.calls += 1;
                    return Request::Call { tool, args };
                }
                Message::Call { .. } => {
                    break (
                        Limit::Calls,
                        format!(
                            "too many tool calls: a program may make {}",
                            self.limits.calls
                        ),
                    );
                }
                Message::End { result } => {
                    return Request::Finished(Outcome {
                        result,
                        printed: std::mem::take(&mut self.printed),
                        answer: self.answer.take(),
                    });
                }
            }
        };
        self.reached(limit, report).await
    }

    /// The program's next message, from where it runs.
    async fn message(&mut self) -> Message {
        match &mut self.route {
            Route::Thread(running) => running.next(),
            Route::Worker(worker) => worker.next().await,
        }
    }

    /// The end of a program that went past `limit`: only a worker can, and it is stopped.
    async fn reached(&mut self, limit: Limit, report: String) -> Request {
        if let Route::Worker(worker) = &mut self.route {
            worker.stop().await;
        }
        Request::Finished(Outcome {
            result: Err(Failure::of(FailureKind::Limit(limit), report)),
            printed: std::mem::take(&mut self.printed),
            answer: None,
        })
    }

    /// Answers the program's pending call. A result larger than the program may take in
    /// raises a `ToolError` (`E_CODE_LIMIT`) in the program instead, which it may catch.
    pub(crate) fn reply(&mut self, reply: Reply) {
        let reply = match reply {
            Reply::Value(value) => {
                let size = serde_json::to_string(&value).map_or(usize::MAX, |s| s.len());
                if size > self.limits.result {
                    Reply::Error(format!(
                        "{}: the result is {size} bytes, more than the {} a program may take from one call; ask the tool for less",
                        super::codes::LIMIT,
                        self.limits.result
                    ))
                } else {
                    Reply::Value(value)
                }
            }
            error @ Reply::Error(_) => error,
        };
        match &mut self.route {
            Route::Thread(running) => running.reply(reply),
            Route::Worker(worker) => worker.reply(reply),
        }
    }
}
