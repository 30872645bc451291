//! Distributed runs: the shard and start of `run`, `merge`, `k8s job`.
//! The work is in the libraries (`peakhour_workload::Shard`, the engine's
//! start, `peakhour_rundir::merge_runs`, `peakhour_deploy::k8s`).

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context as _, bail};
use peakhour_deploy::k8s::{JobRequest, JobSpec, job_manifests, parse_start_at};
use peakhour_workload::Shard;

use crate::args::{K8sCommand, K8sJobArgs, MergeArgs, ShardArgs};

/// The shard and start a `run` was given: `--shard I/N`, or `--shards N`
/// with the index from `JOB_COMPLETION_INDEX`; a sharded run needs
/// `--start-at`, which also names the run the shards share.
pub(super) fn shard_and_start(args: &ShardArgs) -> anyhow::Result<(Shard, Option<SystemTime>)> {
    let shard = match (args.shard, args.shards) {
        (Some(shard), _) => shard,
        (None, Some(count)) => {
            let index = std::env::var("JOB_COMPLETION_INDEX")
                .context("--shards needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job)")?;
            let index: u32 = index
                .trim()
                .parse()
                .with_context(|| format!("JOB_COMPLETION_INDEX={index:?} is not an index"))?;
            Shard::new(index, count)?
        }
        (None, None) => Shard::whole(),
    };
    let start_at = args.start_at.as_deref().map(parse_start_at).transpose()?;
    if shard.count() > 1 && start_at.is_none() {
        bail!(
            "a sharded run needs --start-at: the shards' common start, and the run's name they share"
        );
    }
    Ok((shard, start_at))
}

pub(super) fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let merged = peakhour_rundir::merge_runs(&args.shards, &args.out)?;
    for path in &merged.recovered {
        eprintln!(
            "{}: rebuilt from its journal first (the shard was killed)",
            path.display()
        );
    }
    for warning in &merged.warnings {
        eprintln!("warning: {warning}");
    }
    match &merged.monitor_from {
        Some(dir) => eprintln!("server monitor data from {}", dir.display()),
        None => eprintln!("no shard had server monitor data"),
    }
    print!("{}", peakhour_report::render_terminal(&merged.summary));
    println!("results: {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}

pub(super) fn k8s(command: K8sCommand) -> anyhow::Result<ExitCode> {
    let K8sCommand::Job(args) = command;
    let spec = job_spec(&args)?;
    let manifests = job_manifests(&spec)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    for (file, manifest) in manifests {
        let path = args.out.join(file);
        std::fs::write(&path, serde_json::to_string_pretty(&manifest)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}", path.display());
    }
    eprintln!(
        "start at {}; before it: kubectl create secret generic {} --from-literal=password=...; kubectl apply -f {}",
        spec.start_at,
        spec.password_secret,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The request as the library takes it; a profile name must be one this
/// binary has built in (the image's binary is the same version).
fn job_spec(args: &K8sJobArgs) -> anyhow::Result<JobSpec> {
    let request = JobRequest {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        shards: args.shards,
        users: args.users,
        seed: args.seed,
        start_at: args.start_at.clone(),
        imap: args.imap.clone(),
        smtp: args.smtp.clone(),
        profile: args.profile.clone(),
        password_secret: args.password_secret.clone(),
        results_pvc: args.results_pvc.clone(),
        results_s3: args.results_s3.clone(),
        s3_secret: args.s3_secret.clone(),
        run_options: args.run_options.clone(),
    };
    Ok(request.into_spec(SystemTime::now(), |name| {
        peakhour_workload::builtin(name).is_ok()
    })?)
}
