//! A stdio server's process and the transport rmcp talks to it through. rmcp's own framing
//! reads the messages, but from a pipe of ours: each line the server writes is read within
//! [`MAX_LINE_BYTES`] and [screened](super::screen) first, so that a message rmcp cannot
//! read takes only what it must with it (one tool, one call), never the connection.

use std::process::Stdio;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, ReadHalf, SimplexStream, WriteHalf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::screen::{LeftOutSink, Passed, screen};

/// The longest line read from a server; a longer one is dropped as it arrives (rmcp's own
/// bound).
pub(crate) const MAX_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How long a server has to exit once its input is closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// The room between the screen and rmcp.
const PIPE_BYTES: usize = 64 * 1024;

/// The transport of one stdio server: rmcp's framing over the server's input and the
/// screened copy of its output. Dropping it kills the process.
pub(crate) struct ChildTransport {
    rw: AsyncRwTransport<RoleClient, ReadHalf<SimplexStream>, ChildStdin>,
    child: Option<Child>,
}

impl ChildTransport {
    /// Starts `cmd` (its input, output and error piped) for the server `server`; the tools
    /// the screen leaves out go to `left_out`. Returns the transport, the process id and its
    /// error output.
    pub(crate) fn spawn(
        mut cmd: tokio::process::Command,
        server: &str,
        left_out: LeftOutSink,
    ) -> std::io::Result<(Self, Option<u32>, Option<ChildStderr>)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other(
                "the server's input or output is not piped",
            ));
        };
        let stderr = child.stderr.take();
        let pid = child.id();
        let (read, write) = tokio::io::simplex(PIPE_BYTES);
        tokio::spawn(pump(stdout, write, server.to_owned(), left_out));
        let rw = AsyncRwTransport::new_client(read, stdin);
        Ok((
            Self {
                rw,
                child: Some(child),
            },
            pid,
            stderr,
        ))
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.rw.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
        self.rw.receive()
    }

    /// Closes the server's input, as the stdio transport's shutdown asks, and kills it when it
    /// has not exited within [`EXIT_GRACE`].
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.rw.close().await?;
        // Taken out first: a close dropped half way still kills the process with it.
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_GRACE, child.wait())
            .await
            .is_err()
        {
            child.kill().await?;
        }
        Ok(())
    }
}

/// Copies the server's output to rmcp one line at a time, each line bounded and screened,
/// until either side ends; then rmcp reads the end of the output (the server stopped).
async fn pump(
    stdout: ChildStdout,
    mut to_rmcp: WriteHalf<SimplexStream>,
    server: String,
    left_out: LeftOutSink,
) {
    let mut from_server = tokio::io::BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut from_server, &mut line).await {
            Ok(Line::Whole) => {}
            Ok(Line::Oversized) => {
                tracing::warn!(target: "goondan::mcp", server = %server, "the server wrote a message of more than {MAX_LINE_BYTES} bytes; it is dropped");
                continue;
            }
            Ok(Line::End) | Err(_) => break,
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let written = match screen(text).passed(&server, &left_out) {
            Passed::AsIs => to_rmcp.write_all(&line).await,
            // What is written in the message's place is a line of its own.
            Passed::Instead(mut instead) => {
                instead.push(b'\n');
                to_rmcp.write_all(&instead).await
            }
            Passed::Dropped => continue,
        };
        if written.is_err() {
            break;
        }
    }
    // The end is not told by dropping a half of the pipe; it is told by shutting it.
    let _ = to_rmcp.shutdown().await;
}

/// How one line read ended.
enum Line {
    /// A whole line, its newline included, is in the buffer.
    Whole,
    /// The line was longer than [`MAX_LINE_BYTES`]; it was read and dropped.
    Oversized,
    /// The server's output ended.
    End,
}

/// Reads one line into `line`, never holding more than [`MAX_LINE_BYTES`] of it.
async fn read_line(
    from: &mut tokio::io::BufReader<ChildStdout>,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut oversized = false;
    loop {
        let available = from.fill_buf().await?;
        if available.is_empty() {
            return Ok(Line::End);
        }
        let (take, whole) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if !oversized && line.len() + take > MAX_LINE_BYTES {
            oversized = true;
            line.clear();
        }
        if !oversized {
            line.extend_from_slice(&available[..take]);
        }
        from.consume(take);
        if whole {
            return Ok(if oversized {
                Line::Oversized
            } else {
                Line::Whole
            });
        }
    }
}
