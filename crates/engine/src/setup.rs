//! From what a command line names to a mail run ready to start: the profile (a
//! built-in name or a TOML file), the target (the lab in a directory, or
//! explicit endpoints with a shared password or a users file), the plan with
//! its overrides, and the test population, checked before any connection.
//! The binary maps its flags onto a [`TargetSpec`] and calls these; nothing
//! here prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use peakhour_lab::{Lab, LabError, LabStatus};
use peakhour_net::{Secret, TlsError, TlsSettings};
use peakhour_workload::{Overrides, Plan, PlanError, Profile, ProfileError, builtin};

use crate::population::{Population, PopulationError};
use crate::sessions::caldav::CalDavEndpoint;
use crate::target::{
    Account, Credentials, Endpoint, EndpointError, ServerOptions, Target, security_shortcuts,
};
use crate::users_file::UsersFileError;

/// Where the load goes and who logs in, as the command line gave it.
#[derive(Debug, Clone, Default)]
pub struct TargetSpec {
    /// `Some(dir)` for the lab in `dir` (`--target lab`), `None` for the
    /// explicit endpoints below.
    pub lab_dir: Option<PathBuf>,
    /// `--imap`, `--smtp`, `--lmtp`, `--pop3`: URLs (explicit targets).
    pub imap: Option<String>,
    /// See `imap`.
    pub smtp: Option<String>,
    /// See `imap`.
    pub lmtp: Option<String>,
    /// See `imap`.
    pub pop3: Option<String>,
    /// `--caldav`: for any target; the lab's own when it runs one.
    pub caldav: Option<String>,
    /// `--jmap`: the JMAP session URL (explicit targets); the lab's own when
    /// it serves JMAP (a Cyrus lab).
    pub jmap: Option<String>,
    /// `--users-file`: the run's whole test population.
    pub users_file: Option<PathBuf>,
    /// `--password-env`: the variable holding the shared password.
    pub password_env: String,
    /// `--ca-file`: extra trusted CA certificates (the lab's by default).
    pub ca_file: Option<PathBuf>,
    /// `--insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// How the server is driven (`--smtp-auth`, `--folder-prefix`).
    pub options: ServerOptions,
}

/// Why a run could not be set up. Nothing has connected yet.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// Neither a built-in profile nor a file of that name.
    #[error("no built-in profile or file called {name:?} (built-in: {builtins})")]
    NoProfile {
        /// The name given.
        name: String,
        /// The built-in names, comma-separated.
        builtins: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A profile that does not parse or breaks a bound.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Overrides the profile cannot take.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// `--target lab` without a lab that answers.
    #[error("--target lab needs a running lab (peakhour lab up)")]
    NoLab(#[source] LabError),
    /// The lab runs, but not all of it.
    #[error("the lab in {dir} is not healthy; see `peakhour lab status --lab-dir {lab_dir}`")]
    LabUnhealthy {
        /// The lab's directory, as its status names it.
        dir: String,
        /// The directory as given.
        lab_dir: String,
    },
    /// An explicit target without a URL it needs.
    #[error("--target explicit needs {0} URL")]
    MissingUrl(&'static str),
    /// A URL that does not parse; `flag` names it (empty for the lab's own).
    #[error("{flag}")]
    Url {
        /// The flag.
        flag: &'static str,
        /// Why.
        #[source]
        source: EndpointError,
    },
    /// One of the lab's own endpoints does not parse.
    #[error(transparent)]
    LabUrl(EndpointError),
    /// The TLS settings (the CA file) do not load.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// No shared password in the environment and no users file.
    #[error("set the users' password in ${0} (or give --users-file)")]
    NoPassword(String, #[source] std::env::VarError),
    /// A users file that does not read as one: a line that is not a user
    /// or not UTF-8, or no user at all.
    #[error("{}", error.in_file(path))]
    UsersFile {
        /// The file.
        path: String,
        /// The line and why.
        error: UsersFileError,
    },
    /// More users than the lab has.
    #[error(
        "the lab has {lab} users and {asked} were asked for; restart it with `peakhour lab down && peakhour lab up --users {asked}`"
    )]
    LabTooSmall {
        /// The lab's users.
        lab: u32,
        /// The users asked for.
        asked: u32,
    },
    /// More users than the users file lists.
    #[error("--users {asked} but the users file lists only {listed}")]
    UsersFileTooShort {
        /// The users asked for.
        asked: u32,
        /// The file's lines.
        listed: usize,
    },
    /// A test population that cannot be used.
    #[error("the test population: {0}")]
    Population(PopulationError),
    /// A domain of the population is neither reserved for tests nor allowed.
    #[error("{0}; nothing was sent and no server was contacted")]
    Domain(PopulationError),
}

impl SetupError {
    /// Whether the command line cannot run as given (bad usage: exit code 2),
    /// rather than the world not being as it expects.
    pub fn is_usage(&self) -> bool {
        // A file that is there but not text is bad input; one that is not there, the world.
        if let SetupError::Read { source, .. } = self {
            return source.kind() == std::io::ErrorKind::InvalidData;
        }
        matches!(
            self,
            SetupError::Profile(_)
                | SetupError::Plan(_)
                | SetupError::UsersFile { .. }
                | SetupError::UsersFileTooShort { .. }
                | SetupError::Population(_)
                | SetupError::Domain(_)
        )
    }
}

/// Reads a built-in profile by name, or a profile file by path.
pub fn load_profile(name: &str) -> Result<Profile, SetupError> {
    if let Ok(builtin) = builtin(name) {
        return Ok(builtin.profile()?);
    }
    let path = Path::new(name);
    if !path.exists() {
        // Every name `run` takes, file profiles too: `run` tries those first.
        return Err(SetupError::NoProfile {
            name: name.to_owned(),
            builtins: crate::profiles::builtin_names(),
        });
    }
    let source = read(path)?;
    Ok(Profile::parse(&path.display().to_string(), &source)?)
}

fn read(path: &Path) -> Result<String, SetupError> {
    std::fs::read_to_string(path).map_err(|source| SetupError::Read {
        path: path.to_owned(),
        source,
    })
}

/// A resolved target, and the lab's status when it is the lab.
#[derive(Debug)]
pub struct ResolvedTarget {
    /// The endpoints, TLS and credentials.
    pub target: Arc<Target>,
    /// The lab's status, with `--target lab`.
    pub lab: Option<LabStatus>,
    /// What weakens its security: to be warned about and recorded.
    pub shortcuts: Vec<String>,
}

impl TargetSpec {
    fn tls(&self, lab_ca: Option<&str>) -> Result<Arc<rustls::ClientConfig>, SetupError> {
        let settings = TlsSettings {
            verify: !self.insecure_skip_tls_verify,
            extra_ca_file: self.ca_file.clone().or_else(|| lab_ca.map(Into::into)),
            use_system_roots: true,
        };
        Ok(settings.client_config()?)
    }

    /// The CalDAV server: `--caldav URL` if given (for any target), else the
    /// lab's own (`endpoints.caldav` of its status), else none.
    fn caldav(&self, lab: Option<&str>) -> Result<Option<CalDavEndpoint>, SetupError> {
        self.caldav
            .as_deref()
            .or(lab)
            .map(CalDavEndpoint::parse)
            .transpose()
            .map_err(|source| SetupError::Url {
                flag: "--caldav",
                source,
            })
    }
}

/// The target, with the security shortcuts it takes (for the caller to warn about).
pub fn resolve_target(spec: &TargetSpec) -> Result<ResolvedTarget, SetupError> {
    let mut resolved = match &spec.lab_dir {
        Some(dir) => lab_target(spec, dir)?,
        None => explicit_target(spec)?,
    };
    let t = &resolved.target;
    resolved.shortcuts = security_shortcuts(&t.imap, &t.smtp, spec.insecure_skip_tls_verify);
    Ok(resolved)
}

/// The lab's status, if it runs and is healthy.
pub fn healthy_lab(lab_dir: &Path) -> Result<LabStatus, SetupError> {
    let status = Lab::new(lab_dir).status().map_err(SetupError::NoLab)?;
    if !status.healthy {
        return Err(SetupError::LabUnhealthy {
            dir: status.dir.clone(),
            lab_dir: lab_dir.display().to_string(),
        });
    }
    Ok(status)
}

fn lab_target(spec: &TargetSpec, lab_dir: &Path) -> Result<ResolvedTarget, SetupError> {
    let status = healthy_lab(lab_dir)?;
    let endpoint = |scheme: &str, address: &str| {
        Endpoint::parse(&format!("{scheme}://{address}"), &[scheme]).map_err(SetupError::LabUrl)
    };
    let e = &status.endpoints;
    let target = Target {
        imap: endpoint("imap", &e.imap)?,
        smtp: endpoint("smtp", &e.smtp)?,
        lmtp: Some(endpoint("lmtp", &e.lmtp)?),
        jmap: (e.jmap.as_deref())
            .map(|url| Endpoint::parse(url, &["http"]).map_err(SetupError::LabUrl))
            .transpose()?,
        caldav: spec.caldav(e.caldav.as_deref())?.map(|mut caldav| {
            // The lab's Cyrus knows its users as `userN@domain`.
            caldav.login_with_domain = status.mail_server == peakhour_lab::MailServer::Cyrus;
            caldav
        }),
        pop3: Some(endpoint("pop3", &e.pop3)?),
        tls: spec.tls(Some(&status.ca_file))?,
        credentials: Credentials::Shared(Secret::new(status.password.clone())),
        options: spec.options.clone(),
    };
    Ok(ResolvedTarget {
        target: Arc::new(target),
        lab: Some(status),
        shortcuts: Vec::new(),
    })
}

fn explicit_target(spec: &TargetSpec) -> Result<ResolvedTarget, SetupError> {
    let imap = spec
        .imap
        .as_deref()
        .ok_or(SetupError::MissingUrl("--imap"))?;
    let smtp = spec
        .smtp
        .as_deref()
        .ok_or(SetupError::MissingUrl("--smtp"))?;
    let credentials = match &spec.users_file {
        Some(path) => Credentials::PerUser(read_users_file(path)?),
        None => Credentials::Shared(Secret::new(shared_password(&spec.password_env)?)),
    };
    let parse = |flag: &'static str, url: &str, schemes: &[&str]| {
        Endpoint::parse(url, schemes).map_err(|source| SetupError::Url { flag, source })
    };
    let optional = |flag: &'static str, url: Option<&str>, schemes: &[&str]| {
        url.map(|url| parse(flag, url, schemes)).transpose()
    };
    let target = Target {
        imap: parse("--imap", imap, &["imap", "imaps"])?,
        smtp: parse(
            "--smtp",
            smtp,
            &["smtp", "submission", "submissions", "smtps"],
        )?,
        lmtp: optional("--lmtp", spec.lmtp.as_deref(), &["lmtp"])?,
        jmap: optional("--jmap", spec.jmap.as_deref(), &["http", "https"])?,
        caldav: spec.caldav(None)?,
        pop3: optional("--pop3", spec.pop3.as_deref(), &["pop3", "pop3s"])?,
        tls: spec.tls(None)?,
        credentials,
        options: spec.options.clone(),
    };
    Ok(ResolvedTarget {
        target: Arc::new(target),
        lab: None,
        shortcuts: Vec::new(),
    })
}

/// The password every user shares, from the environment variable `name`.
fn shared_password(name: &str) -> Result<String, SetupError> {
    std::env::var(name).map_err(|e| SetupError::NoPassword(name.to_owned(), e))
}

/// The users file (see [`Account::parse_users`]): the run's whole test population.
fn read_users_file(path: &Path) -> Result<Vec<Account>, SetupError> {
    let bytes = std::fs::read(path).map_err(|source| SetupError::Read {
        path: path.to_owned(),
        source,
    })?;
    Account::parse_users(bytes).map_err(|error| SetupError::UsersFile {
        path: path.display().to_string(),
        error,
    })
}

/// The run's test population, refused before any connection when it is
/// unusable, or (on an explicit target) when a domain of it is neither a
/// reserved test domain nor in `allowed` (`--allow-domain`).
pub fn check_population(
    plan: &Plan,
    resolved: &ResolvedTarget,
    allowed: &[String],
) -> Result<Population, SetupError> {
    let population =
        Population::new(plan, &resolved.target.credentials).map_err(SetupError::Population)?;
    if resolved.lab.is_none() {
        population
            .check_domains(allowed)
            .map_err(SetupError::Domain)?;
    }
    Ok(population)
}

/// Resolves the plan; with the lab, the user count defaults to the lab's and
/// may not exceed it; with a users file, to its length.
pub fn resolve_plan(
    profile: &Profile,
    mut overrides: Overrides,
    resolved: &ResolvedTarget,
) -> Result<Arc<Plan>, SetupError> {
    if let Some(lab) = &resolved.lab {
        let users = *overrides.users.get_or_insert(lab.users);
        if users > lab.users {
            return Err(SetupError::LabTooSmall {
                lab: lab.users,
                asked: users,
            });
        }
    }
    if let Credentials::PerUser(list) = &resolved.target.credentials {
        let users = *overrides
            .users
            .get_or_insert(u32::try_from(list.len()).unwrap_or(u32::MAX));
        if users as usize > list.len() {
            return Err(SetupError::UsersFileTooShort {
                asked: users,
                listed: list.len(),
            });
        }
    }
    Ok(Arc::new(Plan::resolve(profile, &overrides)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_profile_loads_by_name() {
        let profile = load_profile("mmb-medium").expect("built in");
        assert_eq!(profile.name, "mmb-medium");
    }

    #[test]
    fn an_unknown_profile_names_the_builtins() {
        let error = load_profile("no-such-profile").expect_err("unknown");
        let text = error.to_string();
        assert!(text.contains("\"no-such-profile\""), "{text}");
        assert!(text.contains("mmb-medium"), "{text}");
        assert!(!error.is_usage());
    }

    #[test]
    fn issue_26_item_7_files_that_are_not_text_are_bad_usage_and_missing_ones_are_not() {
        let dir = tempfile::tempdir().expect("dir");
        let profile = dir.path().join("profile.toml");
        std::fs::write(&profile, b"name = \"p\xff\"\n").expect("write");
        let error = load_profile(profile.to_str().expect("utf-8")).expect_err("not UTF-8");
        assert!(error.is_usage(), "{error}");
        let users = dir.path().join("users.csv");
        std::fs::write(&users, b"u1@test.example,p\xffw\n").expect("write");
        let error = read_users_file(&users).expect_err("not UTF-8");
        assert!(
            error.is_usage() && error.to_string().contains("users.csv:1:"),
            "{error}"
        );
        let error = read_users_file(&dir.path().join("missing.csv")).expect_err("missing");
        assert!(!error.is_usage(), "{error}");
    }

    #[test]
    fn an_explicit_target_needs_both_urls() {
        let spec = TargetSpec::default();
        let error = resolve_target(&spec).expect_err("no --imap");
        assert_eq!(error.to_string(), "--target explicit needs --imap URL");
        let spec = TargetSpec {
            imap: Some("imap://127.0.0.1:1143".into()),
            ..TargetSpec::default()
        };
        let error = resolve_target(&spec).expect_err("no --smtp");
        assert_eq!(error.to_string(), "--target explicit needs --smtp URL");
    }

    #[test]
    fn a_bad_url_is_named_by_its_flag() {
        let spec = TargetSpec {
            imap: Some("ftp://127.0.0.1".into()),
            smtp: Some("smtp://127.0.0.1".into()),
            // Any variable that is set: the password is read before the URLs.
            password_env: "PATH".into(),
            ..TargetSpec::default()
        };
        let error = resolve_target(&spec).expect_err("ftp");
        assert!(matches!(error, SetupError::Url { flag: "--imap", .. }));
    }

    #[test]
    fn a_missing_password_variable_is_named() {
        let spec = TargetSpec {
            imap: Some("imap://127.0.0.1:1143".into()),
            smtp: Some("smtp://127.0.0.1:1025".into()),
            password_env: "PEAKHOUR_TEST_SURELY_UNSET_VARIABLE".into(),
            ..TargetSpec::default()
        };
        let error = resolve_target(&spec).expect_err("unset");
        assert_eq!(
            error.to_string(),
            "set the users' password in $PEAKHOUR_TEST_SURELY_UNSET_VARIABLE (or give --users-file)"
        );
    }

    #[test]
    fn a_users_file_bounds_the_user_count() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("users.csv");
        std::fs::write(&file, "u1@test.example,pw\nu2@test.example,pw\n").expect("write");
        let spec = TargetSpec {
            imap: Some("imap://127.0.0.1:1143".into()),
            smtp: Some("smtp://127.0.0.1:1025".into()),
            users_file: Some(file),
            ..TargetSpec::default()
        };
        let resolved = resolve_target(&spec).expect("resolves");
        let profile = load_profile("mmb-medium").expect("profile");
        let plan = resolve_plan(&profile, Overrides::default(), &resolved).expect("plan");
        assert_eq!(plan.users(), 2);
        let three = Overrides {
            users: Some(3),
            ..Overrides::default()
        };
        let error = resolve_plan(&profile, three, &resolved).expect_err("too many");
        assert_eq!(
            error.to_string(),
            "--users 3 but the users file lists only 2"
        );
    }
}
