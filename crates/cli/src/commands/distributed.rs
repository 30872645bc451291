//! Distributed runs: `merge` and `k8s job` (a run's shard and start are
//! checked with its other options). The work is in the libraries
//! (`peakhour_rundir::merge_runs`, `peakhour_deploy::k8s`).

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context as _;
use peakhour_deploy::k8s::{JobRequest, JobSpec, job_manifests};

use crate::args::{K8sCommand, K8sJobArgs, MergeArgs};

pub(super) fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let merged = match peakhour_rundir::merge_runs(&args.shards, &args.out) {
        Ok(merged) => merged,
        Err(error) => return crate::config::usage_exit(error.into()),
    };
    for note in merged.notes() {
        eprintln!("{note}");
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
