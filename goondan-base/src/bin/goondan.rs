//! The `goondan` command: `goondan validate`, `goondan tools list|call|export`, `goondan mcp serve`,
//! `goondan run`. It is also the agent host of `goondan run`: see `goondan_base::cli::run`.

fn main() -> std::process::ExitCode {
    goondan_base::cli::run()
}
