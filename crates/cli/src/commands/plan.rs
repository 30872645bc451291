//! `peakhour plan`: the sizing answer from measured task costs and a
//! profile's rates. It runs nothing: `peakhour_analysis::plan` maps the
//! profile's rates onto the tasks and computes, `peakhour_report::plan`
//! lays out; this file reads the inputs and the host's capacities.

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_analysis::plan::{
    HostCapacity, Plan, PlanRequest, ProfileRates, QosModel, per_user_rates, use_working_memory,
};
use peakhour_lab::{Lab, shape_label};
use peakhour_report::plan::{plan_json, render_plan_terminal, tasks_from_json, write_plan_files};
use peakhour_rundir::read_qos_capacity;
use peakhour_workload::Profile;

use crate::args::PlanArgs;
use crate::config::{UsageError, usage_exit};
use peakhour_app::setup::load_profile;

pub(crate) fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.tasks)
        .with_context(|| format!("cannot read {}", args.tasks.display()))?;
    let mut tasks = tasks_from_json(&text)
        .with_context(|| format!("{} is not a tasks.json", args.tasks.display()))?;
    let working: Vec<_> = match (args.working_run.iter())
        .map(|dir| {
            peakhour_rundir::read_working_memory(dir)
                .map_err(|e| UsageError(format!("--working-run {}: {e}", dir.display())))
        })
        .collect::<Result<_, _>>()
    {
        Ok(working) => working,
        // A directory that is not a usable run is bad input (exit 2).
        Err(error) => return usage_exit(error.into()),
    };
    let working = use_working_memory(&mut tasks.memory, &working)?;
    let profile = load_profile(&args.profile.profile)?;
    let (rates, notes) = per_user_rates(
        &profile_rates(&profile, args.speed)?,
        args.sessions_per_user,
        &tasks,
    );
    let qos = QosModel {
        p95_limit_ms: args
            .qos_p95_ms
            .unwrap_or_else(|| *profile.qos.p95_ms.get_ref()),
        sweep: args.sweep.as_deref().map(read_qos_capacity).transpose()?,
    };
    let request = PlanRequest {
        profile: profile.name.clone(),
        rates_per_user_hour: rates,
        sessions_per_user: args.sessions_per_user,
        users: args.users.clone(),
        headroom: args.headroom,
        host: Some(host(&args)?),
        qos,
        price: args.price.clone(),
    };
    let mut plan = Plan::compute(&tasks, &request)?;
    plan.warnings.extend(notes);
    plan.assumptions.extend(working);
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        write_plan_files(dir, &plan)
            .with_context(|| format!("cannot write into {}", dir.display()))?;
    }
    if args.json {
        print!("{}", plan_json(&plan)?);
    } else {
        print!("{}", render_plan_terminal(&plan));
        if let Some(dir) = &args.out {
            println!("results: {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile's rates per user and real hour, at its speed or `speed`.
fn profile_rates(profile: &Profile, speed: Option<f64>) -> anyhow::Result<ProfileRates> {
    if speed.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
        bail!("--speed must be a positive number");
    }
    Ok(peakhour_engine::profile_rates(profile, speed)?)
}

/// The host: a shaped lab's caps, or this machine's, with the flags on top.
fn host(args: &PlanArgs) -> anyhow::Result<HostCapacity> {
    let (mut cores, memory) = peakhour_monitor::server::host_capacity();
    let mut memory = memory as f64;
    let mut label = "this host".to_owned();
    if let Some(dir) = &args.host_lab {
        let status = Lab::new(dir)
            .status()
            .with_context(|| format!("--host-lab {}: no lab there", dir.display()))?;
        let limits = &status.limits;
        cores = limits.cpus.unwrap_or(cores);
        memory = limits.memory_bytes.map_or(memory, |m| m as f64);
        label = format!("lab {}", limits.label());
    }
    cores = args.host_cpus.unwrap_or(cores);
    memory = args.host_memory.map_or(memory, |m| m as f64);
    if args.host_cpus.is_some() || args.host_memory.is_some() {
        label = shape_label(Some(cores), Some(memory as u64));
    }
    if !(cores > 0.0 && cores.is_finite()) {
        bail!("--host-cpus must be a positive number of cores");
    }
    Ok(HostCapacity {
        label,
        cores,
        memory_bytes: memory,
        disk_iops: args.host_disk_iops,
        disk_kib_per_s: args.host_disk_kib_s,
        net_kib_per_s: args.host_net_kib_s,
    })
}
