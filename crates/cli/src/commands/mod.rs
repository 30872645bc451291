//! One module per command group; each turns parsed arguments into library calls.

mod analyze;
mod capacity;
mod completions;
mod distributed;
mod init;
mod lab;
mod matrix;
mod monitor;
mod plan;
mod planner;
mod profiles;
mod report;
mod run;
mod run_files;
mod signals;
mod sweep;
mod tasks;

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
        Command::Capacity(args) => capacity::run(args),
        Command::Tasks(args) => tasks::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Matrix(args) => matrix::run(args),
        Command::Monitor(args) => monitor::run(args),
        Command::Analyze { command } => analyze::run(command),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => report::compare(args),
        Command::Merge(args) => distributed::merge(args),
        Command::K8s { command } => distributed::k8s(command),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}
