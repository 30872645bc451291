//! From what a command line names to a file run ready to start: the profile (a built-in
//! disk mix, a TOML file, or `nbench`), the load file, the target (a directory, an SMB
//! address, the lab's share once `peakhour-app` has read the lab) and the workload with its overrides; and the texts a run
//! shows about itself (what it is about to do, its live line, how it left the target).
//! The binary only maps its flags onto these calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use peakhour_files::{CachePolicy, DirBackend, SmbTarget};
use peakhour_net::Secret;
use peakhour_workload::files::{
    FileOverrides, FilePlan, FileProfile, file_builtin, parse_loadfile,
};
use peakhour_workload::{DEFAULT_SEED, HumanDuration, PlanError, ProfileError};

use crate::files::run::{FileProgress, FileRunOutcome, FileRunSettings, FileWorkload};
use crate::files::target::FileTarget;
use crate::sessions::files::replay::LoadFile;
use crate::target::{Account, Credentials};

/// The built-in trace-replay profile.
pub const NBENCH: &str = "nbench";

/// Bad lines of a load file named in its error, at most.
const BAD_LINES_SHOWN: usize = 10;

/// Why a file run could not be set up. Nothing has connected yet.
#[derive(Debug, thiserror::Error)]
pub enum FileSetupError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file profile that does not parse.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Overrides the profile cannot take.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Lines of the load file that do not parse (the first few shown).
    #[error("{path}: {count} lines do not parse:\n  {shown}")]
    LoadFileLines {
        /// The load file.
        path: PathBuf,
        /// How many.
        count: usize,
        /// The first ones, one per line.
        shown: String,
    },
    /// A load file without a single operation.
    #[error("{0} holds no operation")]
    EmptyLoadFile(PathBuf),
    /// `nbench` without `--loadfile`.
    #[error(
        "--profile nbench replays a load file: give --loadfile FILE (Debian's dbench ships /usr/share/dbench/client.txt)"
    )]
    NoLoadFile,
    /// `--loadfile` with a disk mix.
    #[error("--loadfile is for --profile nbench")]
    LoadFileWithMix,
    /// A target the run cannot use (the directory, the address).
    #[error("{what}: {why}")]
    Target {
        /// The flag or the source, e.g. `--dir /mnt/share`.
        what: String,
        /// Why.
        why: String,
    },
    /// A users file that does not read as one (see [`crate::users_file`]).
    #[error("{}", error.in_file(&path.display()))]
    UsersFile {
        /// The users file.
        path: PathBuf,
        /// The line and why.
        error: crate::users_file::UsersFileError,
    },
    /// No target at all.
    #[error("a file profile needs --dir PATH, --smb URL or --target lab")]
    NoTarget,
    /// An SMB share without a password in the environment or a users file.
    #[error("set the SMB password in ${0} (or give --users-file)")]
    NoPassword(String, #[source] std::env::VarError),
}

impl FileSetupError {
    /// Whether the command line cannot run as given (bad usage: exit code 2),
    /// rather than the target not being there.
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            FileSetupError::NoTarget | FileSetupError::NoPassword(..)
        )
    }
}

/// A file profile, as `--profile` names it.
#[derive(Debug, Clone)]
pub enum FileProfileChoice {
    /// A disk mix (boxed: a profile is large and `Nbench` is nothing).
    Mix(Box<FileProfile>),
    /// `nbench`: replay a load file.
    Nbench,
}

impl FileProfileChoice {
    /// The file profile `name` names, or `None` when it is a mail profile: a built-in
    /// file profile, `nbench`, or a TOML file with a `[workspace]` table or a `[[script]]`.
    pub fn from_name(name: &str) -> Result<Option<Self>, FileSetupError> {
        if name == NBENCH {
            return Ok(Some(FileProfileChoice::Nbench));
        }
        if let Ok(builtin) = file_builtin(name) {
            return Ok(Some(FileProfileChoice::Mix(Box::new(builtin.profile()?))));
        }
        let path = Path::new(name);
        if !path.is_file() {
            return Ok(None);
        }
        let source = read(path)?;
        let is_file_profile = source.lines().any(|l| {
            let l = l.trim();
            l == "[workspace]" || l == "[[script]]"
        });
        if !is_file_profile {
            return Ok(None);
        }
        let profile = FileProfile::parse(&path.display().to_string(), &source)?;
        Ok(Some(FileProfileChoice::Mix(Box::new(profile))))
    }

    /// The profile's name, as results record it.
    pub fn name(&self) -> &str {
        match self {
            FileProfileChoice::Mix(p) => &p.name,
            FileProfileChoice::Nbench => NBENCH,
        }
    }
}

fn read(path: &Path) -> Result<String, FileSetupError> {
    std::fs::read_to_string(path).map_err(|source| FileSetupError::Read {
        path: path.to_owned(),
        source,
    })
}

impl LoadFile {
    /// Reads and parses a dbench/NBENCH load file; every bad line is an error (the
    /// first ten named), and so is a file without an operation.
    pub fn read(path: &Path) -> Result<LoadFile, FileSetupError> {
        let text = read(path)?;
        let mut lines = Vec::new();
        let mut bad = Vec::new();
        for line in parse_loadfile(&text) {
            match line {
                Ok(l) => lines.push(l),
                Err(e) => bad.push(e.to_string()),
            }
        }
        if !bad.is_empty() {
            return Err(FileSetupError::LoadFileLines {
                path: path.to_owned(),
                count: bad.len(),
                shown: bad[..bad.len().min(BAD_LINES_SHOWN)].join("\n  "),
            });
        }
        if lines.is_empty() {
            return Err(FileSetupError::EmptyLoadFile(path.to_owned()));
        }
        Ok(LoadFile {
            source: path.display().to_string(),
            lines,
        })
    }
}

impl FileWorkload {
    /// The workload `choice` names: a disk mix resolved with `overrides` (its clients
    /// default to the profile's), or `loadfile` replayed by `overrides.clients` clients
    /// (default 1).
    pub fn resolve(
        choice: FileProfileChoice,
        overrides: &FileOverrides,
        loadfile: Option<&Path>,
    ) -> Result<FileWorkload, FileSetupError> {
        match choice {
            FileProfileChoice::Mix(profile) => {
                if loadfile.is_some() {
                    return Err(FileSetupError::LoadFileWithMix);
                }
                let plan = FilePlan::resolve(&profile, overrides)?;
                Ok(FileWorkload::Mix(Arc::new(plan)))
            }
            FileProfileChoice::Nbench => {
                let path = loadfile.ok_or(FileSetupError::NoLoadFile)?;
                Ok(FileWorkload::Replay {
                    load: Arc::new(LoadFile::read(path)?),
                    clients: overrides.clients.unwrap_or(1).max(1),
                    name: NBENCH.into(),
                    seed: overrides.seed.unwrap_or(DEFAULT_SEED),
                })
            }
        }
    }

    /// One line on what the run is about to do: clients, profile, target, seed, shape.
    pub fn describe(&self, target: &FileTarget, settings: &FileRunSettings) -> String {
        let shape = match self {
            FileWorkload::Mix(plan) => {
                let (up, measured, down) = plan.iterations();
                format!(
                    "{up}+{measured}+{down} iterations of {} pieces of work, think time {}, start delay up to {}, workspace {} bytes",
                    plan.work_per_iteration(),
                    HumanDuration(plan.think_time()),
                    HumanDuration(plan.start_delay_max()),
                    plan.workspace_size()
                )
            }
            FileWorkload::Replay { load, .. } => format!(
                "{} ({} operations) replayed for {} warm-up + {} measured",
                load.source,
                load.lines.len(),
                HumanDuration(settings.ramp_up),
                HumanDuration(settings.duration)
            ),
        };
        format!(
            "run {}: {} clients of {} against {} {} (seed {}): {shape}",
            settings.run_id,
            self.clients(),
            self.name(),
            target.kind(),
            target.describe(),
            self.seed()
        )
    }

    /// Every setting of the workload and the target, as `config.toml`'s `[files]` table
    /// records them (no password).
    pub fn recorded_settings(
        &self,
        target: &FileTarget,
        cleanup: bool,
    ) -> Vec<(&'static str, RecordedValue)> {
        use RecordedValue::{Flag, Number, Text};
        let mut out = vec![
            ("target", Text(target.kind().into())),
            ("address", Text(target.describe())),
        ];
        if let Some(login) = target.login(1) {
            out.push(("login_of_client_1", Text(login)));
        }
        if let FileTarget::Dir { cache, .. } = target {
            out.push(("cache", Text(format!("{cache:?}").to_lowercase())));
        }
        out.push(("cleanup", Flag(cleanup)));
        match self {
            FileWorkload::Mix(plan) => {
                let (up, measured, down) = plan.iterations();
                let workspace = plan.workspace_dir(1).replace("client1", "client{n}");
                out.extend([
                    ("ramp_up_iterations", Number(up.into())),
                    ("measured_iterations", Number(measured.into())),
                    ("ramp_down_iterations", Number(down.into())),
                    (
                        "think_time",
                        Text(HumanDuration(plan.think_time()).to_string()),
                    ),
                    (
                        "start_delay",
                        Text(HumanDuration(plan.start_delay_max()).to_string()),
                    ),
                    ("workspace_bytes", Number(plan.workspace_size())),
                    ("workspace_directory", Text(workspace)),
                    (
                        "work_per_iteration",
                        Number(plan.work_per_iteration().into()),
                    ),
                    (
                        "operations_per_work",
                        Number(plan.operations_per_work().into()),
                    ),
                ]);
            }
            FileWorkload::Replay { load, .. } => {
                out.push(("loadfile", Text(load.source.clone())));
                out.push(("loadfile_lines", Number(load.lines.len() as u64)));
            }
        }
        out
    }
}

/// One value of a file run's recorded settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedValue {
    /// Words: a name, a path, a duration as written.
    Text(String),
    /// A count or a size.
    Number(u64),
    /// Yes or no.
    Flag(bool),
}

/// `auto`, `bypass` or `keep`, as `--cache` takes them.
pub fn cache_policy(name: &str) -> Option<CachePolicy> {
    match name {
        "auto" => Some(CachePolicy::Auto),
        "bypass" => Some(CachePolicy::Bypass),
        "keep" => Some(CachePolicy::Keep),
        _ => None,
    }
}

impl FileTarget {
    /// A directory on any mounted file system, checked now (it exists, is a
    /// directory, and the cache policy works on it), before any client starts.
    pub fn dir(root: &Path, cache: CachePolicy) -> Result<FileTarget, FileSetupError> {
        DirBackend::new(root, cache).map_err(|e| FileSetupError::Target {
            what: format!("--dir {}", root.display()),
            why: e.to_string(),
        })?;
        Ok(FileTarget::Dir {
            root: root.to_owned(),
            cache,
        })
    }

    /// An SMB share, `smb://[LOGIN@]HOST[:PORT]/SHARE`: client `n` logs in as LOGIN with
    /// `{n}` replaced (default `user{n}`), or as its line of a users file; every
    /// workspace goes at the share's root.
    pub fn smb(url: &str, credentials: Credentials) -> Result<FileTarget, FileSetupError> {
        let (login, url) = split_login(url);
        SmbTarget::from_url(&url, "", "").map_err(|e| FileSetupError::Target {
            what: "--smb".into(),
            why: e.to_string(),
        })?;
        Ok(FileTarget::Smb {
            url,
            credentials,
            login_pattern: login.unwrap_or_else(|| "user{n}".into()),
            home_pattern: None,
        })
    }

    /// The lab's share (`endpoints.smb` of `lab status --json`): client `n` logs in as
    /// the lab's `user{n}` and works in the share's directory `user{n}`, the only one
    /// that user may write.
    pub fn lab_share(url: &str, password: Secret<String>) -> FileTarget {
        FileTarget::Smb {
            url: url.to_owned(),
            credentials: Credentials::Shared(password),
            login_pattern: "user{n}".into(),
            home_pattern: Some("user{n}".into()),
        }
    }
}

/// `smb://[LOGIN@]host[:port]/share` split into the login pattern and the address.
fn split_login(url: &str) -> (Option<String>, String) {
    let Some(rest) = url.strip_prefix("smb://") else {
        return (None, url.to_owned());
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((login, host)) => (
            Some(login.to_owned()),
            format!("smb://{host}{}", &rest[authority_end..]),
        ),
        None => (None, url.to_owned()),
    }
}

/// The SMB users of a `--users-file`, in the mail runs' format
/// ([`crate::users_file`]: CSV, a password with a comma quoted); client `n` is
/// the `n`th, and a third column, if any, is ignored (a file server has no mail).
pub fn read_file_users(path: &Path) -> Result<Vec<Account>, FileSetupError> {
    let bytes = std::fs::read(path).map_err(|source| FileSetupError::Read {
        path: path.to_owned(),
        source,
    })?;
    let lines =
        crate::users_file::parse_users_file(&bytes).map_err(|error| FileSetupError::UsersFile {
            path: path.to_owned(),
            error,
        })?;
    Ok(lines
        .into_iter()
        .map(|user| Account {
            // A file server has no mail: the address is only the user's name.
            address: user.login.clone(),
            login: user.login,
            password: user.password,
        })
        .collect())
}

impl FileProgress {
    /// The live line: elapsed time, phase, clients, operations, errors, and the
    /// measured bytes per second since the last line (`rate`).
    pub fn live_text(&self, rate_bytes_per_second: f64) -> String {
        let failed = if self.clients_failed > 0 {
            format!(" ({} failed)", self.clients_failed)
        } else {
            String::new()
        };
        format!(
            "{:>5.0} s {:<6} {} clients running{failed} · {} ops · {} errors · {:.1} MB/s measured · cpu {:.0}%",
            self.elapsed.as_secs_f64(),
            self.phase,
            self.clients_running,
            self.operations,
            self.errors,
            rate_bytes_per_second / 1e6,
            self.cpu_percent
        )
    }
}

impl FileRunOutcome {
    /// What the run left on the target and which clients failed, one line each.
    pub fn closing_lines(&self, cleanup: bool) -> Vec<String> {
        let mut lines: Vec<String> = self
            .failed_clients
            .iter()
            .map(|(client, error)| format!("client {client} failed: {error}"))
            .collect();
        if !cleanup {
            lines.push("workspaces kept on the target (--keep-workspace)".into());
        } else if self.leftovers.is_empty() {
            lines.push("workspaces: cleaned up, nothing left behind".into());
        } else {
            lines.extend(
                self.leftovers
                    .iter()
                    .map(|(path, status)| format!("left behind: {path} ({status})")),
            );
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_in_the_url_is_split_off() {
        assert_eq!(
            split_login("smb://user{n}@127.0.0.1:1445/bench"),
            (
                Some("user{n}".to_owned()),
                "smb://127.0.0.1:1445/bench".to_owned()
            )
        );
        assert_eq!(
            split_login("smb://files.example/data"),
            (None, "smb://files.example/data".to_owned())
        );
    }

    #[test]
    fn names_choose_file_profiles_and_leave_mail_profiles_alone() {
        assert!(matches!(
            FileProfileChoice::from_name("nbench"),
            Ok(Some(FileProfileChoice::Nbench))
        ));
        let mix = FileProfileChoice::from_name("netbench-disk-mix")
            .unwrap()
            .unwrap();
        assert_eq!(mix.name(), "netbench-disk-mix");
        assert!(
            FileProfileChoice::from_name("mmb-medium")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn nbench_needs_a_load_file_and_a_mix_takes_none() {
        let none = FileOverrides::default();
        assert!(matches!(
            FileWorkload::resolve(FileProfileChoice::Nbench, &none, None),
            Err(FileSetupError::NoLoadFile)
        ));
        let mix = FileProfileChoice::from_name("netbench-disk-mix")
            .unwrap()
            .unwrap();
        assert!(matches!(
            FileWorkload::resolve(mix, &none, Some(Path::new("/x"))),
            Err(FileSetupError::LoadFileWithMix)
        ));
    }

    #[test]
    fn every_bad_line_of_a_load_file_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.txt");
        std::fs::write(&path, "0.1 Nonsense\n0.2 Frobnicate x\n").unwrap();
        match LoadFile::read(&path) {
            Err(FileSetupError::LoadFileLines { count, .. }) => assert_eq!(count, 2),
            other => panic!("expected bad lines, got {other:?}"),
        }
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(matches!(
            LoadFile::read(&path),
            Err(FileSetupError::EmptyLoadFile(_))
        ));
    }

    #[test]
    fn a_users_file_gives_one_login_per_client_and_keeps_quoted_commas_in_passwords() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.csv");
        std::fs::write(&path, "# smb users\nalice,\"pa,ss\"\n\nbob,word\n").unwrap();
        let users = read_file_users(&path).unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users[0].login, "alice");
        assert_eq!(users[0].password.expose(), "pa,ss");
        std::fs::write(&path, "no-comma\n").unwrap();
        assert!(matches!(
            read_file_users(&path),
            Err(FileSetupError::UsersFile {
                error: crate::users_file::UsersFileError::Line { line: 1, .. },
                ..
            })
        ));
    }
}
