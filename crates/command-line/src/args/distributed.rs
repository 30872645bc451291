//! Arguments of distributed runs: `run --shard/--shards/--start-at`,
//! `merge` and `k8s job`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The shard a `run` is, and when it starts.
#[derive(Debug, Args, Clone, Default)]
pub struct ShardArgs {
    /// Run shard I of N of the population (0-based): users u with u % N == I. The N
    /// shards together run exactly what one process would; merge them with
    /// `peakhour merge`. Needs --start-at.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<peakhour_workload::Shard>,
    /// Run one of N shards, the index taken from JOB_COMPLETION_INDEX (as a Kubernetes
    /// Indexed Job sets it). Needs --start-at.
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// Begin the logon phase at this instant (RFC 3339, e.g. 2026-05-01T12:00:00Z):
    /// every shard waits for it. A shard that gets there late says so. At most 24h
    /// ahead and 1h in the past; further is refused (exit 2).
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
}

/// `peakhour merge`
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' run directories.
    #[arg(value_name = "SHARD_DIR", required = true, num_args = 1..)]
    pub shards: Vec<PathBuf>,
    /// The merged run directory. It must be new or empty: a directory that holds a run,
    /// or files peakhour does not write, is refused (exit 2) and nothing is overwritten.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `peakhour k8s`
#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Write the manifests of a Kubernetes Indexed Job that runs a sharded `peakhour
    /// run`, one pod per shard (docs/distributed.md).
    Job(K8sJobArgs),
}

/// `peakhour k8s job`
#[derive(Debug, Args)]
pub struct K8sJobArgs {
    /// A built-in profile's name or a profile file (put into a ConfigMap).
    #[arg(long, value_name = "PROFILE")]
    pub profile: String,
    /// Simulated users in all.
    #[arg(long, value_name = "N")]
    pub users: u32,
    /// Shards (pods).
    #[arg(long, value_name = "K")]
    pub shards: u32,
    /// IMAP server, e.g. imap://mail.example.test:143.
    #[arg(long, value_name = "URL")]
    pub imap: String,
    /// SMTP submission server.
    #[arg(long, value_name = "URL")]
    pub smtp: String,
    /// The common start (RFC 3339); default: 10 minutes from now.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// The seed every shard shares.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// The container image with peakhour in it.
    #[arg(long, value_name = "IMAGE", default_value = "peakhour:latest")]
    pub image: String,
    /// Kubernetes namespace.
    #[arg(long, value_name = "NS", default_value = "default")]
    pub namespace: String,
    /// Name of the Job (and prefix of the other objects).
    #[arg(long, value_name = "NAME", default_value = "peakhour")]
    pub name: String,
    /// The Secret holding the users' password under the key `password` (not written
    /// by peakhour; create it yourself).
    #[arg(long, value_name = "NAME", default_value = "peakhour-password")]
    pub password_secret: String,
    /// Results to this PersistentVolumeClaim (ReadWriteMany), one directory per shard.
    #[arg(long, value_name = "CLAIM", conflicts_with = "results_s3")]
    pub results_pvc: Option<String>,
    /// Results uploaded to this S3 URL prefix (s3://bucket/path) by an `aws s3 cp`
    /// sidecar step, credentials from the Secret named by --s3-secret.
    #[arg(long, value_name = "URL")]
    pub results_s3: Option<String>,
    /// Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for --results-s3.
    #[arg(long, value_name = "NAME", default_value = "peakhour-s3")]
    pub s3_secret: String,
    /// Directory the manifests are written to.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// More `peakhour run` options, passed to every shard (after --).
    #[arg(last = true, value_name = "RUN_OPTIONS")]
    pub run_options: Vec<String>,
}
