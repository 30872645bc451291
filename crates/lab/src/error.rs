use std::path::{Path, PathBuf};

/// The command that installs everything the lab needs.
pub const SETUP_COMMAND: &str = "sudo scripts/setup.sh";

/// Why a lab could not be started, stopped or read.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A package the lab needs is not installed.
    #[error(
        "{what} is not installed ({path} is missing).\n  Install the lab's packages with: {SETUP_COMMAND}\n  (or: apt-get install {package})"
    )]
    MissingPackage {
        /// What is missing, in words.
        what: &'static str,
        /// The file that was looked for.
        path: &'static str,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// The servers must start as root to run as the mail uid.
    #[error(
        "the lab must be started as root: Dovecot and Postfix switch to their own users and the mail uid (try: sudo peakhour lab up)"
    )]
    NotRoot,
    /// A port the lab wants is taken by another program.
    #[error(
        "port {port} ({service}) on 127.0.0.1 is already in use by another program.\n  Choose other ports with --port-base N (standard ports + N) or --{service}-port PORT"
    )]
    PortInUse {
        /// The lab service that wanted it.
        service: &'static str,
        /// The port.
        port: u16,
    },
    /// Two services were given the same port.
    #[error("port {0} is given to two services; every lab service needs its own port")]
    DuplicatePort(u16),
    /// The lab is up with other settings than those asked for.
    #[error(
        "the lab in {dir} is already up with different settings ({running}); run `peakhour lab down --lab-dir {dir}` first to change them"
    )]
    RunningWithOtherSettings {
        /// The lab directory.
        dir: PathBuf,
        /// A summary of the running settings.
        running: String,
    },
    /// There is no lab state in the directory.
    #[error("no lab in {0} (no state.json); start one with `peakhour lab up --lab-dir {0}`")]
    NoLab(PathBuf),
    /// The state file is unreadable.
    #[error("the lab state {path} is unreadable: {reason}")]
    BadState {
        /// The state file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A helper program could not be run.
    #[error("cannot run {program}: {reason}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        reason: String,
    },
    /// A server refused its configuration or died while starting.
    #[error("{server} did not start: {reason}\n  Its log: {log}")]
    ServerFailed {
        /// Which server.
        server: &'static str,
        /// What it said, or what was observed.
        reason: String,
        /// Where to read more.
        log: PathBuf,
    },
    /// Some ports did not answer in time.
    #[error("the lab did not come up within {seconds} s: {detail}")]
    NotReady {
        /// The time waited.
        seconds: u64,
        /// Which endpoints did not answer, and why.
        detail: String,
    },
    /// The lab directory is not one the lab may use.
    #[error("refusing the lab directory {dir}: {reason}")]
    UnsafeDir {
        /// The directory.
        dir: PathBuf,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A lab setting is out of range or malformed.
    #[error("{0}")]
    BadConfig(String),
    /// The lab's cgroup could not be made, filled or removed.
    #[error("cannot confine the lab with a cgroup: {0}")]
    Cgroup(String),
    /// A file or directory operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl LabError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        LabError::Io {
            path: path.to_owned(),
            source,
        }
    }
}
