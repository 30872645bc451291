//! From what `peakhour k8s job` was asked to the [`JobSpec`] the manifests
//! are made from: the common start checked (or set ten minutes ahead), a
//! profile file read into the ConfigMap, and one place for the results.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{JobSpec, Results};

/// How long after the manifests are written the shards start, when no
/// `--start-at` was given: time to create the Secret and apply them.
pub const DEFAULT_START_DELAY: Duration = Duration::from_secs(600);

/// What `peakhour k8s job` was asked for, unchecked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    /// The Job's name.
    pub name: String,
    /// Namespace of every object.
    pub namespace: String,
    /// Container image with the `peakhour` binary.
    pub image: String,
    /// Shards (pods).
    pub shards: u32,
    /// Users in all.
    pub users: u32,
    /// Seed shared by every shard.
    pub seed: u64,
    /// The common start (RFC 3339); `None`: [`DEFAULT_START_DELAY`] from now.
    pub start_at: Option<String>,
    /// IMAP URL.
    pub imap: String,
    /// SMTP URL.
    pub smtp: String,
    /// A profile file's path, or a built-in profile's name.
    pub profile: String,
    /// Secret with the users' password under the key `password`.
    pub password_secret: String,
    /// Results to this PersistentVolumeClaim ...
    pub results_pvc: Option<String>,
    /// ... or to this S3 URL prefix: exactly one of the two.
    pub results_s3: Option<String>,
    /// Secret with the S3 credentials, for `results_s3`.
    pub s3_secret: String,
    /// More `peakhour run` options, for every shard.
    pub run_options: Vec<String>,
}

/// Why a [`JobRequest`] makes no [`JobSpec`].
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// `--start-at` is not an RFC 3339 instant.
    #[error("--start-at {text:?} is not an RFC 3339 time (2026-05-01T12:00:00Z)")]
    StartAt {
        /// What was given.
        text: String,
        /// Why it does not parse.
        #[source]
        source: chrono::ParseError,
    },
    /// The profile is a file that cannot be read.
    #[error("cannot read the profile {}", path.display())]
    ReadProfile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The profile is neither a file nor a built-in profile's name.
    #[error("{0:?} is neither a profile file nor a built-in profile")]
    UnknownProfile(String),
    /// A run option whose value is not a duration.
    #[error("{flag} {value:?} in the run options is not a duration ({reason})")]
    RunOption {
        /// The flag.
        flag: String,
        /// Its value.
        value: String,
        /// Why.
        reason: String,
    },
    /// Neither or both of the places results can go.
    #[error(
        "say where results go: --results-pvc CLAIM or --results-s3 s3://bucket/path (one of them)"
    )]
    Results,
}

/// The instant an RFC 3339 `--start-at` names.
pub fn parse_start_at(text: &str) -> Result<SystemTime, RequestError> {
    let at =
        chrono::DateTime::parse_from_rfc3339(text).map_err(|source| RequestError::StartAt {
            text: text.to_owned(),
            source,
        })?;
    Ok(at.with_timezone(&chrono::Utc).into())
}

/// The phases of `peakhour run` and their defaults, as the run options may
/// set them: (flag, default).
const RUN_PHASES: [(&str, Duration); 4] = [
    ("--ramp-up", Duration::from_secs(20)),
    ("--duration", Duration::from_secs(120)),
    ("--drain", Duration::from_secs(20)),
    // Twice: the drain waits for in-flight actions, then the reconciliation's.
    ("--action-timeout", Duration::from_secs(30)),
];

/// The longest the reconciliation searches for deliveries after the drain
/// (the engine's `RECONCILE_LIMIT`).
const RECONCILE_LIMIT: Duration = Duration::from_secs(600);

/// Time beyond the phases: the target's check before the wait, writing the
/// results and the report, a pod's start.
const RUN_MARGIN: Duration = Duration::from_secs(300);

/// How long one shard's `peakhour run` can take from its `--start-at` to its
/// last file, from the phases its run options set (defaults otherwise).
pub fn run_length(run_options: &[String]) -> Result<Duration, RequestError> {
    let mut total = RECONCILE_LIMIT + RUN_MARGIN;
    for (flag, default) in RUN_PHASES {
        let given = run_options
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, option)| match option.strip_prefix(flag) {
                Some("") => run_options.get(i + 1).cloned(),
                Some(rest) => rest.strip_prefix('=').map(str::to_owned),
                None => None,
            });
        let length = match given {
            None => default,
            Some(value) => {
                peakhour_workload::HumanDuration::parse(&value)
                    .map_err(|reason| RequestError::RunOption {
                        flag: flag.to_owned(),
                        value,
                        reason,
                    })?
                    .0
            }
        };
        total += if flag == "--action-timeout" {
            length * 2
        } else {
            length
        };
    }
    Ok(total)
}

impl JobRequest {
    /// The spec, with the start [`DEFAULT_START_DELAY`] after `now` when
    /// none was asked for. A `profile` naming a file is read; otherwise it
    /// must be a built-in profile, whose text `builtin_toml` gives. Either
    /// way the profile's text goes into the ConfigMap, so the shards run
    /// the profile that was planned, not whatever the image has built in.
    pub fn into_spec(
        self,
        now: SystemTime,
        builtin_toml: impl Fn(&str) -> Option<String>,
    ) -> Result<JobSpec, RequestError> {
        let (start_at, start) = match self.start_at {
            Some(text) => {
                let start = parse_start_at(&text)?;
                (text, start)
            }
            None => (
                chrono::DateTime::<chrono::Utc>::from(now + DEFAULT_START_DELAY)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                now + DEFAULT_START_DELAY,
            ),
        };
        // From now, when the manifests are written (and applied soon after).
        let deadline =
            start.duration_since(now).unwrap_or_default() + run_length(&self.run_options)?;
        let path = Path::new(&self.profile);
        let profile_toml = if path.is_file() {
            std::fs::read_to_string(path).map_err(|source| RequestError::ReadProfile {
                path: path.to_owned(),
                source,
            })?
        } else if let Some(text) = builtin_toml(&self.profile) {
            text
        } else {
            return Err(RequestError::UnknownProfile(self.profile));
        };
        let results = match (self.results_pvc, self.results_s3) {
            (Some(claim), None) => Results::Volume { claim },
            (None, Some(url)) => Results::ObjectStorage {
                url,
                secret: self.s3_secret,
            },
            _ => return Err(RequestError::Results),
        };
        Ok(JobSpec {
            name: self.name,
            namespace: self.namespace,
            image: self.image,
            shards: self.shards,
            users: self.users,
            seed: self.seed,
            start_at,
            imap: self.imap,
            smtp: self.smtp,
            profile_toml,
            deadline,
            password_secret: self.password_secret,
            results,
            run_options: self.run_options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(profile: &str) -> JobRequest {
        JobRequest {
            name: "peakhour".into(),
            namespace: "load".into(),
            image: "peakhour:1".into(),
            shards: 2,
            users: 100,
            seed: 7,
            start_at: None,
            imap: "imap://mail.test:143".into(),
            smtp: "smtp://mail.test:587".into(),
            profile: profile.into(),
            password_secret: "pw".into(),
            results_pvc: Some("results".into()),
            results_s3: None,
            s3_secret: "s3".into(),
            run_options: vec!["--duration".into(), "10m".into()],
        }
    }

    fn builtin(name: &str) -> Option<String> {
        (name == "mmb-medium").then(|| "name = 'mmb-medium'\n".to_owned())
    }

    /// 2026-05-01T12:00:00Z.
    fn noon() -> SystemTime {
        parse_start_at("2026-05-01T12:00:00Z").unwrap()
    }

    #[test]
    fn the_start_defaults_to_ten_minutes_ahead_and_a_given_one_is_kept() {
        let spec = request("mmb-medium").into_spec(noon(), builtin).unwrap();
        assert_eq!(spec.start_at, "2026-05-01T12:10:00Z");
        // The built-in's text, in the ConfigMap too.
        assert_eq!(spec.profile_toml, "name = 'mmb-medium'\n");
        // Ten minutes' wait, then 20 s + 10 m + 20 s + 2 × 30 s, the
        // reconciliation's 10 m and 5 m to spare.
        assert_eq!(
            spec.deadline,
            Duration::from_secs(600 + 40 + 600 + 60 + 600 + 300)
        );
        assert_eq!(
            spec.results,
            Results::Volume {
                claim: "results".into()
            }
        );
        assert_eq!(spec.run_options, ["--duration", "10m"]);

        let mut given = request("mmb-medium");
        given.start_at = Some("2026-05-01T14:00:00+02:00".into());
        let spec = given.into_spec(noon(), builtin).unwrap();
        assert_eq!(spec.start_at, "2026-05-01T14:00:00+02:00");
        assert_eq!(parse_start_at(&spec.start_at).unwrap(), noon());

        let mut bad = request("mmb-medium");
        bad.start_at = Some("tomorrow".into());
        let error = bad.into_spec(noon(), builtin).unwrap_err();
        assert!(matches!(error, RequestError::StartAt { .. }), "{error}");
    }

    #[test]
    fn a_profile_file_goes_into_the_config_map_and_an_unknown_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        std::fs::write(&file, "name = 'mine'\n").unwrap();
        let spec = request(file.to_str().unwrap())
            .into_spec(noon(), builtin)
            .unwrap();
        assert_eq!(spec.profile_toml, "name = 'mine'\n");
        let manifests = super::super::job_manifests(&spec).unwrap();
        assert_eq!(manifests[0].1["data"]["profile.toml"], "name = 'mine'\n");

        let error = request("no-such-profile")
            .into_spec(noon(), builtin)
            .unwrap_err();
        assert!(
            matches!(&error, RequestError::UnknownProfile(name) if name == "no-such-profile"),
            "{error}"
        );
    }

    #[test]
    fn results_go_to_exactly_one_place() {
        let mut s3 = request("mmb-medium");
        s3.results_pvc = None;
        s3.results_s3 = Some("s3://bucket/runs".into());
        let spec = s3.clone().into_spec(noon(), builtin).unwrap();
        assert_eq!(
            spec.results,
            Results::ObjectStorage {
                url: "s3://bucket/runs".into(),
                secret: "s3".into()
            }
        );
        let mut both = s3.clone();
        both.results_pvc = Some("results".into());
        let mut neither = s3;
        neither.results_s3 = None;
        for request in [both, neither] {
            assert!(matches!(
                request.into_spec(noon(), builtin),
                Err(RequestError::Results)
            ));
        }
    }

    #[test]
    fn the_run_length_follows_the_run_options_and_a_bad_one_is_named() {
        let options = |o: &[&str]| o.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let base = run_length(&[]).unwrap();
        assert_eq!(base, Duration::from_secs(20 + 120 + 20 + 60 + 600 + 300));
        let longer = run_length(&options(&[
            "--speed",
            "4",
            "--duration=30m",
            "--drain",
            "1m",
        ]));
        assert_eq!(
            longer.unwrap(),
            base + Duration::from_secs(1_800 - 120 + 60 - 20)
        );
        let error = run_length(&options(&["--ramp-up", "soon"])).unwrap_err();
        assert!(error.to_string().contains("--ramp-up \"soon\""), "{error}");
    }
}
