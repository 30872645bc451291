//! # peakhour
//!
//! The command-line glue: parse arguments into a validated configuration
//! (the definitions are `peakhour-command-line`'s), call the library crates,
//! print, and choose an exit code. No measurement logic lives here.
//!
//! Exit codes: 0 success, 1 failure (the message says why), 2 bad usage.

mod commands;

/// The raw arguments, as the commands name them (`crate::args::RunArgs`).
pub(crate) use peakhour_command_line::args;

/// The checked settings and their bounds, and the binary's one use of them
/// that needs `anyhow`: turning a usage error into exit code 2.
mod config {
    use std::process::ExitCode;

    pub(crate) use peakhour_command_line::config::*;

    use peakhour_app::is_usage_cause;

    /// Prints `error` and returns exit code 2 if it is bad usage
    /// ([`is_usage_cause`]). Gives any other error back.
    pub(crate) fn usage_exit(error: anyhow::Error) -> anyhow::Result<ExitCode> {
        let is_usage = error.chain().any(is_usage_cause);
        if is_usage {
            eprintln!("error: {}", error_text(error.as_ref()));
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        Err(error)
    }
}

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            // A closed pipe (`peakhour lab status --json | head`) is not an error.
            if error
                .chain()
                .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
                .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", config::error_text(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}
