//! A running program, seen from the host, on either route: a thread of the agent's process
//! (`super::program`) or a worker process (`super::worker`).
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
    Thread(Running),
    Worker(Box<Connection>),
}

/// A running program.
pub(crate) struct Interpreter {
    route: Route,
    limits: Limits,
    printed: String,
    calls: usize,
}

impl Interpreter {
    /// Starts `program`: in a worker process `launcher` starts, or on a thread of this
    /// process without one.
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
            None => Route::Thread(program::start(program).map_err(|e| e.to_string())?),
        };
        Ok(Self {
            route,
            limits,
            printed: String::new(),
            calls: 0,
        })
    }

    /// The program's next request.
    pub(crate) async fn next(&mut self) -> Request {
        loop {
            let message = match &mut self.route {
                Route::Thread(running) => running.next().await,
                Route::Worker(worker) => worker.next().await,
            };
            let reached = match message {
                Message::Print { text } => {
                    let room = self.limits.output.saturating_sub(self.printed.len());
                    if text.len() <= room {
                        self.printed.push_str(&text);
                        continue;
                    }
                    let mut cut = room;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.printed.push_str(&text[..cut]);
                    (
                        Limit::Output,
                        "the program printed more than it may".to_owned(),
                    )
                }
                Message::Call { tool, args } if self.calls < self.limits.calls => {
                    self.calls += 1;
                    return Request::Call { tool, args };
                }
                Message::Call { .. } => (
                    Limit::Calls,
                    format!(
                        "too many tool calls: a program may make {}",
                        self.limits.calls
                    ),
                ),
                Message::End { result } => {
                    return Request::Finished(Outcome {
                        result,
                        printed: std::mem::take(&mut self.printed),
                    });
                }
            };
            // Only a worker goes past a limit the interpreter holds it to.
            if let Route::Worker(worker) = &mut self.route {
                worker.stop().await;
            }
            let (limit, report) = reached;
            return Request::Finished(Outcome {
                result: Err(Failure {
                    kind: FailureKind::Limit(limit),
                    report,
                    line: None,
                }),
                printed: std::mem::take(&mut self.printed),
            });
        }
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
