//! A sharded run as Kubernetes objects: an Indexed Job of the shards, and a
//! Job that merges them.
//!
//! `completionMode: Indexed` gives each of `completions` pods its index in
//! `JOB_COMPLETION_INDEX` (0 .. K-1), which `peakhour run --shards K` maps to
//! its shard (1 .. K); `parallelism: K` starts them together and
//! `--start-at` lines up their logon phases. A failed pod is not retried
//! (`backoffLimitPerIndex: 0`): a shard restarted later would run a
//! different stretch of time than the others; and the other shards go on
//! (a plain `backoffLimit: 0` would stop them all). Shard `I` (from 0, as
//! Kubernetes counts) writes `job-index-I`.
//!
//! The merge Job starts with them and runs `peakhour merge --wait`: it waits
//! until every shard has written its results (or the shards' deadline has
//! passed), then writes the merged run and its report to `merged`, beside
//! the shards, on the same volume or under the same S3 prefix.
//!
//! Every pod runs as 65532:65532 with a read-only root file system, no
//! capabilities and the runtime's seccomp profile; every container has
//! requests and limits; the profile (a built-in one's text too) travels in
//! a ConfigMap, the password in a Secret the user creates (never in the
//! manifests); a NetworkPolicy admits no connection into the pods. The
//! Jobs end by `activeDeadlineSeconds` (the run's length) and are removed
//! a day after they finish (`ttlSecondsAfterFinished`).
//!
//! Manifests are JSON, which `kubectl apply -f` reads as well as YAML.

use std::time::Duration;

use serde_json::{Value, json};

mod request;

pub use request::{DEFAULT_START_DELAY, JobRequest, RequestError, parse_start_at, run_length};

/// The image's user and group (the Containerfile's `USER`).
pub const IMAGE_USER: u32 = 65532;

/// Where the results volume is mounted in every container.
pub const RESULTS_DIR: &str = "/results";

/// The AWS CLI image that moves results to and from S3.
pub const AWS_CLI_IMAGE: &str = "amazon/aws-cli:2.17.0";

/// How long a finished Job and its pods are kept for `kubectl logs`.
const KEEP_FINISHED: Duration = Duration::from_secs(24 * 3600);

/// Time the merge Job has beyond the shards' deadline: to read, add and
/// write every shard's results and the report.
const MERGE_TIME: Duration = Duration::from_secs(900);

/// Where each shard's run directory goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Results {
    /// A ReadWriteMany PersistentVolumeClaim mounted at `/results`; shard
    /// index I writes `/results/job-index-I`, the merge `/results/merged`.
    Volume {
        /// The claim's name.
        claim: String,
    },
    /// An S3 URL prefix (`s3://bucket/path`): each pod writes to an
    /// emptyDir, and the AWS CLI uploads `job-index-I` (and the merge Job's
    /// `merged`) under the prefix (the credentials from `secret`).
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
    /// The Job's name, and the prefix of the other objects' names.
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
    /// The profile's text (a built-in profile's too), for the ConfigMap.
    pub profile_toml: String,
    /// How long, from when the manifests are written, the shards may take:
    /// the wait for the start and the run's length ([`run_length`]).
    pub deadline: Duration,
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
        "{0:?} is not a Kubernetes name (lower-case letters, digits and '-', at most 46 characters)"
    )]
    Name(String),
}

/// The manifests, each with the file name it is written to: the ConfigMap
/// (`NAME-profile`), the NetworkPolicy, the shards' Job (`NAME`) and the
/// merge Job (`NAME-merge`).
pub fn job_manifests(spec: &JobSpec) -> Result<Vec<(String, Value)>, ManifestError> {
    if spec.shards == 0 || spec.shards > spec.users {
        return Err(ManifestError::Shards {
            shards: spec.shards,
            users: spec.users,
        });
    }
    for name in [&spec.name, &spec.namespace] {
        // 46: the merge Job's pods are named NAME-merge-RANDOM within 63,
        // and a Job's name must leave room for its pods' suffixes.
        let valid = !name.is_empty()
            && name.len() <= 46
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
        ("networkpolicy.json".to_owned(), network_policy(spec)),
        ("job.json".to_owned(), shards_job(spec)),
        ("merge-job.json".to_owned(), merge_job(spec)),
    ])
}

fn config_map(spec: &JobSpec) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(spec, &format!("{}-profile", spec.name)),
        "data": { "profile.toml": spec.profile_toml },
    })
}

/// No connection into the pods; out, anywhere (the target, DNS, S3).
fn network_policy(spec: &JobSpec) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(spec, &spec.name),
        "spec": {
            "podSelector": { "matchLabels": { "app.kubernetes.io/instance": spec.name } },
            "policyTypes": ["Ingress", "Egress"],
            "egress": [{}],
        },
    })
}

fn metadata(spec: &JobSpec, name: &str) -> Value {
    json!({ "name": name, "namespace": spec.namespace, "labels": labels(spec) })
}

fn labels(spec: &JobSpec) -> Value {
    json!({ "app.kubernetes.io/name": "peakhour", "app.kubernetes.io/instance": spec.name })
}

/// `peakhour run` as each shard's pod runs it; Kubernetes expands
/// `$(JOB_COMPLETION_INDEX)` in the arguments.
fn run_args(spec: &JobSpec) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--target",
        "explicit",
        "--profile",
        "/etc/peakhour/profile.toml",
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
    args.extend([
        "--out".to_owned(),
        format!("{RESULTS_DIR}/job-index-$(JOB_COMPLETION_INDEX)"),
    ]);
    args
}

/// The shard directories the merge reads, in the order of the shards.
fn shard_dirs(spec: &JobSpec) -> Vec<String> {
    (0..spec.shards)
        .map(|index| format!("{RESULTS_DIR}/job-index-{index}"))
        .collect()
}

/// `peakhour merge` as the merge Job runs it: waiting for the shards, at
/// most until their deadline, when given one.
fn merge_args(spec: &JobSpec, wait: Option<Duration>) -> Vec<String> {
    let mut args = vec!["merge".to_owned()];
    if let Some(wait) = wait {
        args.extend(["--wait".to_owned(), format!("{}s", wait.as_secs())]);
    }
    args.extend(shard_dirs(spec));
    args.extend(["--out".to_owned(), format!("{RESULTS_DIR}/merged")]);
    args
}

/// The restrictions every container runs under.
fn container_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": IMAGE_USER,
        "runAsGroup": IMAGE_USER,
        "readOnlyRootFilesystem": true,
        "allowPrivilegeEscalation": false,
        "privileged": false,
        "capabilities": { "drop": ["ALL"] },
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// A container with its image pulled every time (a tag names a version,
/// but a registry copy may be replaced), the security context, a writable
/// /tmp, and requests equal to what it is limited to where that matters.
fn container(name: &str, image: &str, cpu: (&str, &str), memory: &str) -> Value {
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": "Always",
        "securityContext": container_security(),
        "resources": {
            "requests": { "cpu": cpu.0, "memory": memory, "ephemeral-storage": "64Mi" },
            "limits": { "cpu": cpu.1, "memory": memory, "ephemeral-storage": "256Mi" },
        },
        "volumeMounts": [
            { "name": "results", "mountPath": RESULTS_DIR },
            { "name": "tmp", "mountPath": "/tmp" },
        ],
    })
}

/// The peakhour container: the load generator gets a core and may burst to
/// two (its own CPU is watched: a throttled client is flagged).
fn peakhour_container(spec: &JobSpec, name: &str, args: Vec<String>) -> Value {
    let mut c = container(name, &spec.image, ("1", "2"), "1Gi");
    c["command"] = json!(["/usr/local/bin/peakhour"]);
    c["args"] = json!(args);
    c
}

/// The AWS CLI, running `script` in its shell with the credentials.
fn aws_container(name: &str, secret: &str, script: String) -> Value {
    let key = |k: &str| json!({ "name": k, "valueFrom": { "secretKeyRef": { "name": secret, "key": k } } });
    let mut c = container(name, AWS_CLI_IMAGE, ("100m", "1"), "256Mi");
    c["command"] = json!(["/bin/sh", "-c", script]);
    // The CLI keeps its caches under $HOME: /tmp, the one writable place.
    c["env"] = json!([key("AWS_ACCESS_KEY_ID"), key("AWS_SECRET_ACCESS_KEY"),
        { "name": "HOME", "value": "/tmp" }]);
    c
}

fn pod_spec(volumes: Vec<Value>, init: Vec<Value>, containers: Vec<Value>) -> Value {
    let mut pod = json!({
        "restartPolicy": "Never",
        // SIGTERM (kubectl delete job) gives the run this long to write.
        "terminationGracePeriodSeconds": 60,
        "automountServiceAccountToken": false,
        "securityContext": {
            "runAsNonRoot": true,
            "runAsUser": IMAGE_USER,
            "runAsGroup": IMAGE_USER,
            "fsGroup": IMAGE_USER,
            "seccompProfile": { "type": "RuntimeDefault" },
        },
        "containers": containers,
        "volumes": volumes,
    });
    if !init.is_empty() {
        pod["initContainers"] = Value::Array(init);
    }
    pod
}

fn volumes(spec: &JobSpec, profile: bool) -> Vec<Value> {
    let results = match &spec.results {
        Results::Volume { claim } => {
            json!({ "name": "results", "persistentVolumeClaim": { "claimName": claim } })
        }
        Results::ObjectStorage { .. } => json!({ "name": "results", "emptyDir": {} }),
    };
    let mut volumes = vec![results, json!({ "name": "tmp", "emptyDir": {} })];
    if profile {
        volumes.push(json!({ "name": "profile",
            "configMap": { "name": format!("{}-profile", spec.name) } }));
    }
    volumes
}

fn s3_prefix(url: &str) -> String {
    shell_quote(url.trim_end_matches('/'))
}

fn shards_job(spec: &JobSpec) -> Value {
    let mut run = peakhour_container(spec, "peakhour", run_args(spec));
    run["env"] = json!([{ "name": "PEAKHOUR_PASSWORD", "valueFrom": { "secretKeyRef":
        { "name": spec.password_secret, "key": "password" } } }]);
    if let Some(mounts) = run["volumeMounts"].as_array_mut() {
        mounts.push(json!({ "name": "profile", "mountPath": "/etc/peakhour", "readOnly": true }));
    }
    let (init, containers) = match &spec.results {
        Results::Volume { .. } => (vec![], vec![run]),
        Results::ObjectStorage { url, secret } => {
            // The run first (an init container), so that the upload starts
            // when it has written everything, whatever its verdict: its
            // exit code is kept in a file beside its results, and the upload
            // exits with it, so the pod's status is the run's (a QoS
            // failure, 1, still uploads its results).
            let exit = format!("{RESULTS_DIR}/job-index-$JOB_COMPLETION_INDEX.exit");
            let command = run["command"].clone();
            let args = run["args"].clone();
            run["command"] = json!([
                "/bin/sh",
                "-c",
                format!("\"$0\" \"$@\"; echo $? > \"{exit}\""),
                command[0]
            ]);
            run["args"] = args;
            let upload = aws_container(
                "upload",
                secret,
                format!(
                    "aws s3 cp --recursive \"{RESULTS_DIR}/job-index-$JOB_COMPLETION_INDEX\" {}/job-index-$JOB_COMPLETION_INDEX && exit \"$(cat \"{exit}\")\"",
                    s3_prefix(url)
                ),
            );
            (vec![run], vec![upload])
        }
    };
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(spec, &spec.name),
        "spec": {
            "completionMode": "Indexed",
            "completions": spec.shards,
            "parallelism": spec.shards,
            "backoffLimitPerIndex": 0,
            "activeDeadlineSeconds": spec.deadline.as_secs(),
            "ttlSecondsAfterFinished": KEEP_FINISHED.as_secs(),
            "template": {
                "metadata": { "labels": labels(spec) },
                "spec": pod_spec(volumes(spec, true), init, containers),
            },
        },
    })
}

fn merge_job(spec: &JobSpec) -> Value {
    let (init, containers) = match &spec.results {
        Results::Volume { .. } => (
            vec![],
            vec![peakhour_container(
                spec,
                "merge",
                merge_args(spec, Some(spec.deadline)),
            )],
        ),
        Results::ObjectStorage { url, secret } => {
            // Fetch each shard's upload as soon as it is there, until the
            // shards' deadline; then merge what came, and upload the merge.
            let prefix = s3_prefix(url);
            let fetch = aws_container(
                "fetch",
                secret,
                format!(
                    "deadline=$(( $(date +%s) + {} )); for index in $(seq 0 {}); do \
                 until aws s3 ls {prefix}/job-index-$index/summary.json >/dev/null || [ $(date +%s) -ge $deadline ]; do sleep 15; done; \
                 if aws s3 ls {prefix}/job-index-$index/summary.json >/dev/null; then \
                 aws s3 cp --recursive {prefix}/job-index-$index \"{RESULTS_DIR}/job-index-$index\" || exit 1; fi; done",
                    spec.deadline.as_secs(),
                    spec.shards - 1
                ),
            );
            let merge = peakhour_container(spec, "merge", merge_args(spec, Some(Duration::ZERO)));
            let upload = aws_container(
                "upload",
                secret,
                format!("aws s3 cp --recursive \"{RESULTS_DIR}/merged\" {prefix}/merged"),
            );
            (vec![fetch, merge], vec![upload])
        }
    };
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(spec, &format!("{}-merge", spec.name)),
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 0,
            "activeDeadlineSeconds": (spec.deadline + MERGE_TIME).as_secs(),
            "ttlSecondsAfterFinished": KEEP_FINISHED.as_secs(),
            "template": {
                "metadata": { "labels": labels(spec) },
                "spec": pod_spec(volumes(spec, false), init, containers),
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
            profile_toml: "[profile]\nname = 'x'\n".into(),
            deadline: Duration::from_secs(3_000),
            password_secret: "pw".into(),
            results: Results::Volume {
                claim: "results".into(),
            },
            run_options: vec!["--duration".into(), "10m".into()],
        }
    }

    fn manifest<'a>(all: &'a [(String, Value)], file: &str) -> &'a Value {
        &all.iter().find(|(f, _)| f == file).unwrap().1
    }

    #[test]
    fn an_indexed_job_with_one_pod_per_shard_and_a_merge_job() {
        let manifests = job_manifests(&spec()).unwrap();
        let job = manifest(&manifests, "job.json");
        assert_eq!(job["spec"]["completionMode"], "Indexed");
        assert_eq!(job["spec"]["completions"], 3);
        assert_eq!(job["spec"]["parallelism"], 3);
        assert_eq!(job["spec"]["activeDeadlineSeconds"], 3_000);
        let pod = &job["spec"]["template"]["spec"];
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let line = args.join(" ");
        assert!(line.contains("--shards 3 --start-at 2026-05-01T12:00:00Z"));
        assert!(line.contains("--duration 10m"));
        assert!(line.ends_with("--out /results/job-index-$(JOB_COMPLETION_INDEX)"));
        assert!(
            !job.to_string().contains("password\":\""),
            "no password inline"
        );
        assert_eq!(pod["securityContext"]["runAsUser"], IMAGE_USER);

        let merge = manifest(&manifests, "merge-job.json");
        let args = merge["spec"]["template"]["spec"]["containers"][0]["args"].clone();
        assert_eq!(
            args,
            json!([
                "merge",
                "--wait",
                "3000s",
                "/results/job-index-0",
                "/results/job-index-1",
                "/results/job-index-2",
                "--out",
                "/results/merged"
            ])
        );
        assert_eq!(
            manifest(&manifests, "configmap.json")["data"]["profile.toml"],
            spec().profile_toml
        );
    }

    #[test]
    fn issue_30_every_container_is_limited_and_locked_down_and_no_exit_code_is_hidden() {
        let mut s3 = spec();
        s3.results = Results::ObjectStorage {
            url: "s3://bucket/runs/".into(),
            secret: "s3".into(),
        };
        for spec in [spec(), s3] {
            for (file, manifest) in job_manifests(&spec).unwrap() {
                let Some(pod) = manifest["spec"]["template"]["spec"].as_object() else {
                    continue;
                };
                let text = manifest.to_string();
                assert!(
                    !text.contains("; true") && !text.contains("|| true"),
                    "{file}"
                );
                let containers = pod["containers"].as_array().unwrap().iter().chain(
                    pod.get("initContainers")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten(),
                );
                for c in containers {
                    let name = &c["name"];
                    for kind in ["requests", "limits"] {
                        for what in ["cpu", "memory", "ephemeral-storage"] {
                            assert!(
                                c["resources"][kind][what].is_string(),
                                "{file} {name} {kind} {what}"
                            );
                        }
                    }
                    assert_eq!(c["imagePullPolicy"], "Always");
                    let security = &c["securityContext"];
                    assert_eq!(security["readOnlyRootFilesystem"], true, "{file} {name}");
                    assert_eq!(security["allowPrivilegeEscalation"], false);
                    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
                    assert_eq!(security["runAsUser"], IMAGE_USER);
                }
                assert!(manifest["spec"]["ttlSecondsAfterFinished"].is_u64());
                assert!(manifest["spec"]["activeDeadlineSeconds"].is_u64());
            }
        }
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
