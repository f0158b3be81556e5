//! The `goondan` command: `goondan validate`, `goondan tools list|call|export`.

fn main() -> std::process::ExitCode {
    goondan_base::cli::run()
}
