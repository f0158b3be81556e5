//! `goondan-sandbox`: the helper program of goondan's sandbox (`goondan_base::sandbox`). The
//! tools start it for each sandboxed process; it confines itself, then runs the command.

fn main() -> std::process::ExitCode {
    goondan_base::sandbox::helper::main()
}
