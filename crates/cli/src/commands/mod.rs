//! One module per command group; each turns parsed arguments into library calls.

mod lab;
mod lab_check;

use std::process::ExitCode;

use crate::args::{Cli, Command};

/// Runs the parsed command line.
pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Lab { command } => lab::run(command),
    }
}
