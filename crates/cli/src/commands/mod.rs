//! One module per command group; each turns parsed arguments into library calls.

mod analyze;
mod completions;
mod init;
mod lab;
mod monitor;
mod profiles;
mod report;
mod run;
mod signals;
mod status_line;
mod sweep;
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
        Command::Sweep(args) => sweep::run(args),
        Command::Monitor(args) => monitor::run(args),
        Command::Analyze { command } => analyze::run(command),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => report::compare(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}
