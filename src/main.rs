//! The `kbxscope` command: parse arguments, run, map the outcome to an exit code.
//!
//! Exit codes: 0 ok, 1 failure, 2 usage error (clap's). A closed pipe
//! (`kbxscope dump … | head`) ends quietly with 0.

mod cli;

use std::io;
use std::process::ExitCode;

use clap::Parser;

/// A usage error as one line on stderr, exit 2 (help and version print in
/// full, exit 0): clap's first paragraph, its lines joined.
fn usage_exit(e: &clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit();
    }
    let text = e.render().to_string();
    let first = text.split("\n\n").next().unwrap_or_default();
    let line = first.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    eprintln!("kbxscope: {} (see kbxscope --help)", line.trim_start_matches("error: "));
    std::process::exit(2);
}

fn main() -> ExitCode {
    let argv = cli::args::join_optional_values(std::env::args_os());
    let given = argv
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a.to_str().is_some_and(|s| s == "--gnupg-version" || s.starts_with("--gnupg-version=")));
    let mut args = cli::args::Cli::try_parse_from(argv).unwrap_or_else(|e| usage_exit(&e));
    args.gnupg_version_given = given;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let options = cli::resolve::resolve(args, now).unwrap_or_else(|e| usage_exit(&e));
    match cli::run(options) {
        Ok(code) => code,
        Err(err) => {
            let broken_pipe = err
                .chain()
                .any(|e| e.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe));
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            if err.downcast_ref::<cli::Reported>().is_none() {
                eprintln!("kbxscope: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}
