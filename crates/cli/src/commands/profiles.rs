//! `peakhour profiles list | show`.

use std::process::ExitCode;

use peakhour_workload::{Overrides, Plan, builtin, builtins};

use super::target::load_profile;
use crate::args::ProfilesCommand;

pub(crate) fn run(command: ProfilesCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProfilesCommand::List => {
            for profile in builtins() {
                println!("{:<16} {}", profile.name, profile.description);
            }
        }
        ProfilesCommand::Show {
            name,
            resolved,
            users,
            speed,
        } => {
            if resolved {
                let profile = load_profile(&name)?;
                let overrides = Overrides {
                    users,
                    speed,
                    ..Overrides::default()
                };
                print!("{}", Plan::resolve(&profile, &overrides)?.to_toml()?);
            } else if let Ok(builtin) = builtin(&name) {
                print!("{}", builtin.source);
            } else {
                // A file: check it parses, then show it as written.
                load_profile(&name)?;
                print!("{}", std::fs::read_to_string(&name)?);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
