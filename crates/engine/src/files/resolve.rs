//! The target of a file run as the command line names it: a directory
//! (`--dir`), an SMB share (`--smb`, with a shared password or a users
//! file), or the lab's Samba (`--target lab`, from `lab up --with smb`); and
//! the run's live line.

use std::path::{Path, PathBuf};

use peakhour_lab::{Lab, LabStatus};
use peakhour_net::Secret;

use crate::files::setup::{FileSetupError, cache_policy, read_file_users};
use crate::files::target::FileTarget;
use crate::setup::TargetSpec;
use crate::target::Credentials;

/// The file-server flags that name a target.
#[derive(Debug, Clone, Default)]
pub struct FileTargetSpec {
    /// `--dir PATH`: a directory on any mounted file system.
    pub dir: Option<PathBuf>,
    /// `--smb smb://[LOGIN@]HOST[:PORT]/SHARE`.
    pub smb: Option<String>,
    /// `--cache`: `auto`, `bypass` or `keep` (a directory only).
    pub cache: String,
}

/// The target, and the lab's status when it is the lab's Samba. `target`
/// gives the lab (`lab_dir`), the users file and the password variable.
pub fn resolve_file_target(
    files: &FileTargetSpec,
    target: &TargetSpec,
) -> Result<(FileTarget, Option<LabStatus>), FileSetupError> {
    if let Some(root) = &files.dir {
        let cache = cache_policy(&files.cache).unwrap_or_default();
        return Ok((FileTarget::dir(root, cache)?, None));
    }
    if let Some(url) = &files.smb {
        let credentials = match &target.users_file {
            Some(path) => Credentials::PerUser(read_file_users(path)?),
            None => {
                let var = &target.password_env;
                let password =
                    std::env::var(var).map_err(|e| FileSetupError::NoPassword(var.clone(), e))?;
                Credentials::Shared(Secret::new(password))
            }
        };
        return Ok((FileTarget::smb(url, credentials)?, None));
    }
    let lab_dir = target.lab_dir.as_deref().ok_or(FileSetupError::NoTarget)?;
    let (status, url) = lab_samba(lab_dir)?;
    let share = FileTarget::lab_share(&url, Secret::new(status.password.clone()));
    Ok((share, Some(status)))
}

/// The lab's status and its Samba share's address, if it runs Samba and is healthy.
fn lab_samba(lab_dir: &Path) -> Result<(LabStatus, String), FileSetupError> {
    let status = Lab::new(lab_dir).status().map_err(FileSetupError::NoLab)?;
    let Some(url) = status.endpoints.smb.clone() else {
        return Err(FileSetupError::LabWithoutSamba(status.dir));
    };
    if !status.healthy {
        return Err(FileSetupError::LabUnhealthy {
            dir: status.dir,
            lab_dir: lab_dir.display().to_string(),
        });
    }
    Ok((status, url))
}

/// Clients of a file run on the lab when `--users` is not given.
pub const LAB_DEFAULT_CLIENTS: u32 = 8;

/// The lab has a user for every client (with `--target lab`).
pub fn check_lab_users(clients: u32, lab: Option<&LabStatus>) -> Result<(), FileSetupError> {
    match lab {
        Some(lab) if clients > lab.users => Err(FileSetupError::LabTooSmall {
            lab: lab.users,
            clients,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_dir_no_share_and_no_lab_is_no_target() {
        let error = resolve_file_target(&FileTargetSpec::default(), &TargetSpec::default())
            .expect_err("nothing named");
        assert!(matches!(error, FileSetupError::NoTarget));
        assert!(!error.is_usage());
    }

    #[test]
    fn a_share_without_a_password_names_the_variable() {
        let files = FileTargetSpec {
            smb: Some("smb://127.0.0.1/share".into()),
            ..FileTargetSpec::default()
        };
        let target = TargetSpec {
            password_env: "PEAKHOUR_TEST_SURELY_UNSET_VARIABLE".into(),
            ..TargetSpec::default()
        };
        let error = resolve_file_target(&files, &target).expect_err("unset");
        assert_eq!(
            error.to_string(),
            "set the SMB password in $PEAKHOUR_TEST_SURELY_UNSET_VARIABLE (or give --users-file)"
        );
    }

    #[test]
    fn a_directory_that_is_not_there_is_bad_usage() {
        let files = FileTargetSpec {
            dir: Some("/nonexistent/peakhour-test".into()),
            cache: "auto".into(),
            ..FileTargetSpec::default()
        };
        let error = resolve_file_target(&files, &TargetSpec::default()).expect_err("missing");
        assert!(error.is_usage(), "{error}");
    }
}
