//! One module per command group; each turns parsed arguments into library calls.

mod init;
mod lab;
mod lab_check;
mod profiles;
mod run;
mod target;

use std::process::ExitCode;

use crate::args::{Cli, Command};

/// Runs the parsed command line.
pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Lab { command } => lab::run(command),
        Command::Profiles { command } => profiles::run(command),
        Command::Init(args) => init::run(args),
        Command::Run(args) => run::run(args),
    }
}
