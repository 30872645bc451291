//! The target of a file run as the command line names it: a directory
//! (`--dir`), an SMB share (`--smb`, with a shared password or a users
//! file), or the lab's Samba (`--target lab`, from `lab up --with smb`).
//! [`FileRequest`] resolves a file run's command line once (the target, the
//! workload with its overrides). The engine takes the resolved
//! [`FileTarget`]; only this layer reads the lab.

use std::path::{Path, PathBuf};

use peakhour_command_line::TargetSpec;
use peakhour_command_line::args::RunArgs;
use peakhour_command_line::config::RunConfig;
use peakhour_engine::Credentials;
use peakhour_engine::files::{
    FileProfileChoice, FileSetupError, FileTarget, FileWorkload, cache_policy, read_file_users,
};
use peakhour_lab::{Lab, LabError, LabStatus};
use peakhour_net::Secret;
use peakhour_workload::files::FileOverrides;

/// Why a file run's target could not be resolved: the engine's own reasons
/// ([`FileSetupError`]), or the lab's.
#[derive(Debug, thiserror::Error)]
pub enum FileTargetError {
    /// A reason of the engine's (the directory, the address, the users file).
    #[error(transparent)]
    Setup(#[from] FileSetupError),
    /// `--target lab` without a lab that answers.
    #[error("--target lab needs a running lab with Samba (peakhour lab up --with smb)")]
    NoLab(#[source] LabError),
    /// A lab without Samba.
    #[error(
        "the lab in {0} runs no Samba; start it with `peakhour lab up --with smb`, or give --dir or --smb"
    )]
    LabWithoutSamba(String),
    /// The lab runs, but not all of it.
    #[error("the lab in {dir} is not healthy; see `peakhour lab status --lab-dir {lab_dir}`")]
    LabUnhealthy {
        /// The lab's directory, as its status names it.
        dir: String,
        /// The directory as given.
        lab_dir: String,
    },
    /// More clients than the lab has users.
    #[error(
        "the lab has {lab} users and {clients} clients were asked for; restart it with more --users"
    )]
    LabTooSmall {
        /// The lab's users.
        lab: u32,
        /// The clients asked for.
        clients: u32,
    },
}

impl FileTargetError {
    /// Whether the command line cannot run as given (bad usage: exit code 2),
    /// rather than the target (or the lab) not being there.
    pub fn is_usage(&self) -> bool {
        match self {
            FileTargetError::Setup(error) => error.is_usage(),
            _ => false,
        }
    }
}

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
) -> Result<(FileTarget, Option<LabStatus>), FileTargetError> {
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
    let no_target = FileTargetError::Setup(FileSetupError::NoTarget);
    let lab_dir = target.lab_dir.as_deref().ok_or(no_target)?;
    let (status, url) = lab_samba(lab_dir)?;
    let share = FileTarget::lab_share(&url, Secret::new(status.password.clone()));
    Ok((share, Some(status)))
}

/// The lab's status and its Samba share's address, if it runs Samba and is healthy.
fn lab_samba(lab_dir: &Path) -> Result<(LabStatus, String), FileTargetError> {
    let status = Lab::new(lab_dir).status().map_err(FileTargetError::NoLab)?;
    let Some(url) = status.endpoints.smb.clone() else {
        return Err(FileTargetError::LabWithoutSamba(status.dir));
    };
    if !status.healthy {
        return Err(FileTargetError::LabUnhealthy {
            dir: status.dir,
            lab_dir: lab_dir.display().to_string(),
        });
    }
    Ok((status, url))
}

/// Clients of a file run on the lab when `--users` is not given.
pub const LAB_DEFAULT_CLIENTS: u32 = 8;

/// The lab has a user for every client (with `--target lab`).
pub fn check_lab_users(clients: u32, lab: Option<&LabStatus>) -> Result<(), FileTargetError> {
    match lab {
        Some(lab) if clients > lab.users => Err(FileTargetError::LabTooSmall {
            lab: lab.users,
            clients,
        }),
        _ => Ok(()),
    }
}

/// A file run as the command line names it, resolved: the target (and the
/// lab behind it), and the workload with its overrides, the lab checked to
/// have a user for every client.
#[derive(Debug)]
pub struct FileRequest {
    /// The directory, the share or the lab's Samba.
    pub target: FileTarget,
    /// The lab's status, with `--target lab`.
    pub lab: Option<LabStatus>,
    /// The disk mix or the replay, with its clients.
    pub workload: FileWorkload,
}

impl FileRequest {
    /// Resolves `args` (with their checked `config`) for the file profile `choice`.
    pub fn resolve(
        args: &RunArgs,
        config: &RunConfig,
        choice: FileProfileChoice,
    ) -> Result<Self, FileTargetError> {
        let f = &args.files;
        let files = FileTargetSpec {
            dir: f.dir.clone(),
            smb: f.smb.clone(),
            cache: f.cache.clone(),
        };
        let (target, lab) = resolve_file_target(&files, &args.target.spec())?;
        let overrides = FileOverrides {
            clients: (config.users).or(lab.as_ref().map(|l| l.users.min(LAB_DEFAULT_CLIENTS))),
            seed: config.shape.seed,
            think_time: f.think_time,
            start_delay: f.start_delay,
            workspace_size: f.workspace,
            ramp_up: f.ramp_up_iterations,
            measured: f.measured_iterations,
            ramp_down: f.ramp_down_iterations,
            work_per_iteration: f.work_per_iteration,
        };
        let workload = FileWorkload::resolve(choice, &overrides, f.loadfile.as_deref())?;
        check_lab_users(workload.clients(), lab.as_ref())?;
        Ok(Self {
            target,
            lab,
            workload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_dir_no_share_and_no_lab_is_no_target() {
        let error = resolve_file_target(&FileTargetSpec::default(), &TargetSpec::default())
            .expect_err("nothing named");
        assert!(matches!(
            error,
            FileTargetError::Setup(FileSetupError::NoTarget)
        ));
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
