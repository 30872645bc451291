//! Turning `--profile` and `--target ...` into a plan and a target: the flags
//! mapped onto `peakhour_app::setup` (`TargetArgs::spec`), which resolves
//! them, and a warning on stderr for each security shortcut the target takes.

use peakhour_app::setup::SetupError;
pub(crate) use peakhour_app::setup::{
    ResolvedTarget, check_population, load_profile, resolve_plan,
};

use crate::args::TargetArgs;

/// The target, with a warning on stderr for each security shortcut it takes.
pub(crate) fn resolve_target(args: &TargetArgs) -> Result<ResolvedTarget, SetupError> {
    let resolved = peakhour_app::setup::resolve_target(&args.spec())?;
    for shortcut in &resolved.shortcuts {
        eprintln!("warning: {shortcut}");
    }
    Ok(resolved)
}
