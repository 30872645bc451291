//! A sharded run as a Kubernetes Indexed Job.
//!
//! `completionMode: Indexed` gives each of `completions` pods its index in
//! `JOB_COMPLETION_INDEX` (0 .. K-1), which `peakhour run --shards K` reads
//! as its shard; `parallelism: K` starts them together and `--start-at`
//! lines up their logon phases. A failed pod is not retried
//! (`backoffLimit: 0`): a shard restarted later would run a different
//! stretch of time than the others. The profile travels in a ConfigMap, the
//! password in a Secret the user creates (never in the manifests), and the
//! results to a shared PersistentVolumeClaim or, through an init/main split,
//! to object storage.
//!
//! Manifests are JSON, which `kubectl apply -f` reads as well as YAML.

use serde_json::{Value, json};

mod request;

pub use request::{DEFAULT_START_DELAY, JobRequest, RequestError, parse_start_at};

/// Where each shard's run directory goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Results {
    /// A ReadWriteMany PersistentVolumeClaim mounted at `/results`; shard
    /// I writes `/results/shard-I`.
    Volume {
        /// The claim's name.
        claim: String,
    },
    /// An S3 URL prefix (`s3://bucket/path`): the run writes to an emptyDir,
    /// and a second container uploads `shard-I` with the AWS CLI when the
    /// run has ended (the credentials from `secret`).
    ObjectStorage {
        /// The prefix.
        url: String,
        /// Secret with `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
        secret: String,
    },
}

/// What the manifests are made from.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// The Job's name, and the prefix of the ConfigMap's.
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
    /// The common start, RFC 3339.
    pub start_at: String,
    /// IMAP URL.
    pub imap: String,
    /// SMTP URL.
    pub smtp: String,
    /// The profile's file name in the ConfigMap (`profile.toml`), or a
    /// built-in profile's name when `profile_toml` is `None`.
    pub profile: String,
    /// The profile file's text, when it is a file.
    pub profile_toml: Option<String>,
    /// Secret with the users' password under the key `password`.
    pub password_secret: String,
    /// Where results go.
    pub results: Results,
    /// More `peakhour run` options, for every shard.
    pub run_options: Vec<String>,
}

/// Why manifests cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// No shard, or more shards than users.
    #[error("{shards} shards for {users} users: each shard needs at least one user")]
    Shards {
        /// Shards asked for.
        shards: u32,
        /// Users.
        users: u32,
    },
    /// A name Kubernetes would refuse (RFC 1123 label).
    #[error(
        "{0:?} is not a Kubernetes name (lower-case letters, digits and '-', at most 52 characters)"
    )]
    Name(String),
}

/// The manifests, each with the file name it is written to: the ConfigMap
/// (`NAME-profile`) and the Job.
pub fn job_manifests(spec: &JobSpec) -> Result<Vec<(String, Value)>, ManifestError> {
    if spec.shards == 0 || spec.shards > spec.users {
        return Err(ManifestError::Shards {
            shards: spec.shards,
            users: spec.users,
        });
    }
    for name in [&spec.name, &spec.namespace] {
        // 52: a Job's pods are named NAME-INDEX-RANDOM within 63.
        let valid = !name.is_empty()
            && name.len() <= 52
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if !valid {
            return Err(ManifestError::Name(name.clone()));
        }
    }
    Ok(vec![
        ("configmap.json".to_owned(), config_map(spec)),
        ("job.json".to_owned(), job(spec)),
    ])
}

fn config_map(spec: &JobSpec) -> Value {
    let mut data = serde_json::Map::new();
    if let Some(text) = &spec.profile_toml {
        data.insert("profile.toml".into(), Value::String(text.clone()));
    }
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": format!("{}-profile", spec.name), "namespace": spec.namespace,
                      "labels": labels(spec) },
        "data": data,
    })
}

fn labels(spec: &JobSpec) -> Value {
    json!({ "app.kubernetes.io/name": "peakhour", "app.kubernetes.io/instance": spec.name })
}

/// `peakhour run` as each pod runs it.
fn run_args(spec: &JobSpec) -> Vec<String> {
    let profile = if spec.profile_toml.is_some() {
        "/etc/peakhour/profile.toml".to_owned()
    } else {
        spec.profile.clone()
    };
    let mut args: Vec<String> = [
        "run",
        "--target",
        "explicit",
        "--profile",
        &profile,
        "--users",
        &spec.users.to_string(),
        "--seed",
        &spec.seed.to_string(),
        "--shards",
        &spec.shards.to_string(),
        "--start-at",
        &spec.start_at,
        "--imap",
        &spec.imap,
        "--smtp",
        &spec.smtp,
    ]
    .map(str::to_owned)
    .into();
    args.extend(spec.run_options.iter().cloned());
    args
}

fn job(spec: &JobSpec) -> Value {
    // Each shard's directory is named after its index; the shell expands it.
    let mut command = run_args(spec)
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    command = format!("exec peakhour {command} --out \"/results/shard-$JOB_COMPLETION_INDEX\"");
    let mut volumes = vec![json!({ "name": "profile",
        "configMap": { "name": format!("{}-profile", spec.name) } })];
    let mut containers = Vec::new();
    let mut init_containers = Vec::new();
    let runner = |mounts: Value| {
        json!({
            "name": "peakhour",
            "image": spec.image,
            "command": ["/bin/sh", "-c", command],
            "env": [{ "name": "PEAKHOUR_PASSWORD", "valueFrom": { "secretKeyRef":
                { "name": spec.password_secret, "key": "password" } } }],
            "volumeMounts": mounts,
            "resources": { "requests": { "cpu": "1", "memory": "512Mi" } },
        })
    };
    let mounts = json!([
        { "name": "profile", "mountPath": "/etc/peakhour", "readOnly": true },
        { "name": "results", "mountPath": "/results" },
    ]);
    match &spec.results {
        Results::Volume { claim } => {
            volumes.push(json!({ "name": "results",
                "persistentVolumeClaim": { "claimName": claim } }));
            containers.push(runner(mounts));
        }
        Results::ObjectStorage { url, secret } => {
            volumes.push(json!({ "name": "results", "emptyDir": {} }));
            // The run as an init container, so the upload starts only when
            // it has written everything (also when it was cancelled: a
            // SIGTERM run exits 130 after writing, and the upload runs
            // only on success, so the pod is then kept for `kubectl cp`).
            let mut run = runner(mounts.clone());
            run["command"] = json!(["/bin/sh", "-c", format!("{command}; true")]);
            init_containers.push(run);
            let key = |k: &str| {
                json!({ "name": k, "valueFrom": { "secretKeyRef":
                { "name": secret, "key": k } } })
            };
            containers.push(json!({
                "name": "upload",
                "image": "amazon/aws-cli:2.17.0",
                "command": ["/bin/sh", "-c", format!(
                    "aws s3 cp --recursive \"/results/shard-$JOB_COMPLETION_INDEX\" {}/shard-$JOB_COMPLETION_INDEX",
                    shell_quote(url.trim_end_matches('/')))],
                "env": [key("AWS_ACCESS_KEY_ID"), key("AWS_SECRET_ACCESS_KEY")],
                "volumeMounts": [{ "name": "results", "mountPath": "/results" }],
            }));
        }
    }
    let mut pod_spec = json!({
        "restartPolicy": "Never",
        // SIGTERM (kubectl delete job) gives the run this long to write.
        "terminationGracePeriodSeconds": 60,
        "containers": containers,
        "volumes": volumes,
    });
    if !init_containers.is_empty() {
        pod_spec["initContainers"] = Value::Array(init_containers);
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": spec.name, "namespace": spec.namespace, "labels": labels(spec) },
        "spec": {
            "completionMode": "Indexed",
            "completions": spec.shards,
            "parallelism": spec.shards,
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels(spec) },
                "spec": pod_spec,
            },
        },
    })
}

/// `text` as one word of a POSIX shell.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@+,".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            name: "peakhour".into(),
            namespace: "load".into(),
            image: "peakhour:1".into(),
            shards: 3,
            users: 300,
            seed: 7,
            start_at: "2026-05-01T12:00:00Z".into(),
            imap: "imap://mail.test:143".into(),
            smtp: "smtp://mail.test:587".into(),
            profile: "profile.toml".into(),
            profile_toml: Some("[profile]\nname = 'x'\n".into()),
            password_secret: "pw".into(),
            results: Results::Volume {
                claim: "results".into(),
            },
            run_options: vec!["--duration".into(), "10m".into()],
        }
    }

    #[test]
    fn an_indexed_job_with_one_pod_per_shard() {
        let manifests = job_manifests(&spec()).unwrap();
        let job = &manifests[1].1;
        assert_eq!(job["spec"]["completionMode"], "Indexed");
        assert_eq!(job["spec"]["completions"], 3);
        assert_eq!(job["spec"]["parallelism"], 3);
        let command = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap();
        assert!(command.contains("--shards 3 --start-at 2026-05-01T12:00:00Z"));
        assert!(command.contains("--duration 10m"));
        assert!(command.contains("/results/shard-$JOB_COMPLETION_INDEX"));
        assert!(
            !job.to_string().contains("password\":\""),
            "no password inline"
        );
    }

    #[test]
    fn refuses_more_shards_than_users_and_bad_names() {
        let mut s = spec();
        s.shards = 301;
        assert!(job_manifests(&s).is_err());
        let mut s = spec();
        s.name = "Peak_hour".into();
        assert!(job_manifests(&s).is_err());
        assert_eq!(shell_quote("a b'c"), "'a b'\\''c'");
    }
}
