//! `peakhour profiles list | show`.

use std::process::ExitCode;

use peakhour_engine::profiles;
use peakhour_workload::{Overrides, Plan};

use crate::args::{ProfilesCommand, RunShape};
use peakhour_app::setup::load_profile;

pub(crate) fn run(command: ProfilesCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProfilesCommand::List => {
            print!("{}", profiles::list_text(&RunShape::default_phases()));
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
            } else if let Some(builtin) = profiles::builtin_profile(&name) {
                print!("{}", profiles::show_text(&builtin));
            } else {
                // A file: check it parses, then show it as written.
                load_profile(&name)?;
                print!("{}", std::fs::read_to_string(&name)?);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
