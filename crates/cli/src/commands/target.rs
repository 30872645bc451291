//! Turning `--profile` and `--target ...` into a plan and a target: the flags
//! mapped onto `peakhour_engine::setup`, which resolves them, and a warning
//! on stderr for each security shortcut the target takes.

use peakhour_engine::ServerOptions;
pub(crate) use peakhour_engine::setup::{
    ResolvedTarget, check_population, load_profile, resolve_plan,
};
use peakhour_engine::setup::{SetupError, TargetSpec};

use crate::args::TargetArgs;

impl TargetArgs {
    /// The target as the engine takes it.
    pub(crate) fn spec(&self) -> TargetSpec {
        TargetSpec {
            lab_dir: (self.target == "lab").then(|| self.lab_dir.clone()),
            imap: self.imap.clone(),
            smtp: self.smtp.clone(),
            lmtp: self.lmtp.clone(),
            pop3: self.pop3.clone(),
            caldav: self.caldav.clone(),
            jmap: self.jmap.clone(),
            users_file: self.users_file.clone(),
            password_env: self.password_env.clone(),
            ca_file: self.ca_file.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            options: ServerOptions {
                smtp_auth: self.smtp_auth,
                folder_prefix: self.folder_prefix.clone(),
            },
        }
    }
}

/// The target, with a warning on stderr for each security shortcut it takes.
pub(crate) fn resolve_target(args: &TargetArgs) -> Result<ResolvedTarget, SetupError> {
    let resolved = peakhour_engine::setup::resolve_target(&args.spec())?;
    for shortcut in &resolved.shortcuts {
        eprintln!("warning: {shortcut}");
    }
    Ok(resolved)
}
