//! The `kbxscope` command: parse arguments, run, map the outcome to an exit code.
//!
//! Exit codes: 0 ok, 1 failure, 2 usage error (clap's). A closed pipe
//! (`kbxscope dump … | head`) ends quietly with 0.

mod cli;

use std::io;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    if let Err(usage) = args.check() {
        usage.exit();
    }
    match cli::run(args) {
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
