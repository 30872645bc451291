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

impl JobRequest {
    /// The spec, with the start [`DEFAULT_START_DELAY`] after `now` when
    /// none was asked for. A `profile` naming a file is read (its text goes
    /// into the ConfigMap); otherwise it must be a name `is_builtin` knows,
    /// which the image's `peakhour` has built in too.
    pub fn into_spec(
        self,
        now: SystemTime,
        is_builtin: impl Fn(&str) -> bool,
    ) -> Result<JobSpec, RequestError> {
        let start_at = match self.start_at {
            Some(text) => {
                parse_start_at(&text)?;
                text
            }
            None => chrono::DateTime::<chrono::Utc>::from(now + DEFAULT_START_DELAY)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        let path = Path::new(&self.profile);
        let profile_toml = if path.is_file() {
            let text =
                std::fs::read_to_string(path).map_err(|source| RequestError::ReadProfile {
                    path: path.to_owned(),
                    source,
                })?;
            Some(text)
        } else if is_builtin(&self.profile) {
            None
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
            profile: self.profile,
            profile_toml,
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

    fn builtin(name: &str) -> bool {
        name == "mmb-medium"
    }

    /// 2026-05-01T12:00:00Z.
    fn noon() -> SystemTime {
        parse_start_at("2026-05-01T12:00:00Z").unwrap()
    }

    #[test]
    fn the_start_defaults_to_ten_minutes_ahead_and_a_given_one_is_kept() {
        let spec = request("mmb-medium").into_spec(noon(), builtin).unwrap();
        assert_eq!(spec.start_at, "2026-05-01T12:10:00Z");
        assert_eq!(spec.profile_toml, None);
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
        assert_eq!(spec.profile_toml.as_deref(), Some("name = 'mine'\n"));
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
}
