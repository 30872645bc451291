//! # peakhour
//!
//! The command-line glue: parse arguments into a validated configuration,
//! call the library crates, print, and choose an exit code. No measurement
//! logic lives here.
//!
//! Exit codes: 0 success, 1 failure (the message says why), 2 bad usage.

mod args;
mod commands;
mod config;

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
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
