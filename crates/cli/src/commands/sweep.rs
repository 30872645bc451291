//! `peakhour sweep`: one `peakhour run` per user count, then the capacity
//! curve (NetBench's mixes of growing client counts, seed 004).
//!
//! Each step is a child process (`peakhour run ... --out SWEEP_DIR/step-Nu`)
//! so that a step is exactly what `peakhour run` measures, with its own run
//! directory and report. This file only starts the children, passes
//! signals on and reads each step's `summary.json`; the rules (steps, early
//! stop, QoS limit, capacity statement) are `peakhour_analysis::capacity::sweep`,
//! and the files (`capacity.csv`, `.json`, `.html`) `peakhour_report::capacity`.
//! See `docs/capacity.md`.

pub(super) mod child;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_analysis::Summary;
use peakhour_analysis::capacity::sweep::{
    P95Basis, SweepAnalysis, SweepOutcome, SweepSettings, SweepStep, early_stop, plan_steps,
};
use peakhour_lab::Lab;
use peakhour_report::capacity::{
    SweepPlan, capacity_json, price_line, render_sweep_text, step_line, sweep_html, sweep_json,
    write_capacity_csv,
};
use peakhour_workload::HumanDuration;

use self::child::{Children, common_args, run_args, run_child};
use super::signals::EXIT_INTERRUPTED;
use super::target::load_profile;
use crate::args::SweepArgs;

/// A step's `summary.json` as the typed [`Summary`], through the run directory's reader.
fn read_summary(dir: &Path) -> anyhow::Result<Summary> {
    Ok(peakhour_rundir::RunDir::new(dir).read_summary()?)
}

fn write_file(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn write_csv(dir: &Path, steps: &[SweepStep]) -> anyhow::Result<()> {
    let mut csv = Vec::new();
    write_capacity_csv(steps, &mut csv)?;
    write_file(&dir.join("capacity.csv"), csv)
}

/// The sweep as checked from its arguments.
struct Plan {
    steps: Vec<u32>,
    basis: P95Basis,
    profile: String,
    seed: u64,
    dir: PathBuf,
    /// A file profile: no mailboxes to initialize.
    files: bool,
}

fn plan(args: &SweepArgs) -> anyhow::Result<Plan> {
    let steps = plan_steps(args.users.as_deref(), args.from, args.to, args.factor)?;
    let basis: P95Basis = args.p95.parse()?;
    if !(0.0..=1.0).contains(&args.max_error_ratio) {
        bail!("--max-error-ratio must lie between 0 and 1");
    }
    if let Some(ms) = args.shape.qos_p95_ms
        && !(ms > 0.0 && ms.is_finite())
    {
        bail!("--qos-p95-ms must be a positive number of milliseconds");
    }
    let file_profile = super::run_files::file_profile(&args.profile.profile)?;
    let files = file_profile.is_some();
    let profile = match file_profile {
        Some(choice) => choice.name().to_owned(),
        None => load_profile(&args.profile.profile)?.name,
    };
    if let Some(price) = args.price
        && !(price >= 0.0 && price.is_finite())
    {
        bail!("--price must be a finite amount of at least 0");
    }
    if !files || (args.files.dir.is_none() && args.files.smb.is_none()) {
        check_lab(args, steps[steps.len() - 1])?;
    }
    let dir = args.out.clone().unwrap_or_else(|| {
        peakhour_rundir::default_dir(
            std::time::SystemTime::now(),
            peakhour_rundir::DirKind::Sweep { profile: &profile },
        )
    });
    let taken = |n: &u32| dir.join(format!("step-{n}u")).join("summary.json").exists();
    if dir.join("capacity.csv").exists() || steps.iter().any(taken) {
        bail!(
            "{} already holds a sweep; choose another --out",
            dir.display()
        );
    }
    let seed = args.shape.seed.unwrap_or(peakhour_workload::DEFAULT_SEED);
    Ok(Plan {
        steps,
        basis,
        profile,
        seed,
        dir,
        files,
    })
}

pub(crate) fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let plan = plan(&args)?;
    let (dir, seed) = (&plan.dir, plan.seed);
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the sweep directory {}", dir.display()))?;
    let children = Children::install("sweep")?;
    let list: Vec<String> = plan.steps.iter().map(u32::to_string).collect();
    eprintln!(
        "sweep {}: profile {}, users {}, seed {seed}, each step {} ramp-up + {} steady + {} drain; stop after two QoS failures in a row or errors above {}",
        dir.display(),
        plan.profile,
        list.join(", "),
        HumanDuration(args.shape.ramp_up),
        HumanDuration(args.shape.duration),
        HumanDuration(args.shape.drain),
        args.max_error_ratio
    );
    if !args.no_init && !plan.files {
        let max_users = plan.steps[plan.steps.len() - 1];
        let mut init: Vec<OsString> = vec!["init".into()];
        init.extend(common_args(&args));
        init.extend(["--users".into(), max_users.to_string().into()]);
        init.extend(["--seed".into(), seed.to_string().into()]);
        eprintln!("sweep: initializing {max_users} mailboxes once, for the largest step");
        let status = run_child(&init, "[init] ", &children)?;
        if children.interrupted() {
            eprintln!("sweep: interrupted during init; no step was run");
            return Ok(ExitCode::from(EXIT_INTERRUPTED));
        }
        if !status.success() {
            bail!("init failed ({status}); no step was run (see its output above)");
        }
    }
    let outcome = run_steps(&args, &plan, &children)?;
    let code = if outcome.interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if outcome.failed.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    if let Some(why) = &outcome.failed {
        eprintln!("sweep: {why}");
    }
    finish(&args, &plan, &outcome)?;
    Ok(code)
}

/// Runs the steps in turn until the last, an early stop, a failure or a signal.
fn run_steps(args: &SweepArgs, plan: &Plan, children: &Children) -> anyhow::Result<SweepOutcome> {
    let (steps, dir) = (&plan.steps, &plan.dir);
    let mut outcome = SweepOutcome::default();
    for (i, &users) in steps.iter().enumerate() {
        if children.interrupted() {
            break;
        }
        let name = format!("step-{users}u");
        let step_dir = dir.join(&name);
        let prefix = format!("[step {}/{} {users}u] ", i + 1, steps.len());
        eprintln!(
            "sweep: step {}/{}: {users} users -> {}",
            i + 1,
            steps.len(),
            step_dir.display()
        );
        let child_args = run_args(args, users, plan.seed, &step_dir);
        let status = run_child(&child_args, &prefix, children)?;
        let code = status.code();
        if !step_dir.join("summary.json").exists() {
            if !children.interrupted() {
                outcome.failed = Some(format!(
                    "the step at {users} users ended without results ({status}); see its output above"
                ));
            }
            break;
        }
        let step = SweepStep::from_summary(users, &name, &read_summary(&step_dir)?);
        println!("step {}/{}: {}", i + 1, steps.len(), step_line(&step));
        let step_interrupted = step.interrupted || code == Some(i32::from(EXIT_INTERRUPTED));
        outcome.steps.push(step);
        write_csv(dir, &outcome.steps)?;
        if step_interrupted || children.interrupted() {
            break;
        }
        if !matches!(code, Some(0) | Some(1)) {
            outcome.failed = Some(format!(
                "the step at {users} users exited with {status}; see its output above"
            ));
            break;
        }
        let checks: Vec<_> = outcome.steps.iter().map(SweepStep::check).collect();
        if let Some(why) = early_stop(&checks, args.max_error_ratio) {
            if i + 1 < steps.len() {
                let rest: Vec<String> = steps[i + 1..].iter().map(u32::to_string).collect();
                println!(
                    "sweep: stopping early: {why}; not running {} users",
                    rest.join(", ")
                );
                outcome.stopped_early = Some(why);
            }
            break;
        }
    }
    outcome.interrupted = children.interrupted() || outcome.steps.iter().any(|s| s.interrupted);
    Ok(outcome)
}

/// Writes capacity.csv, and with two or more steps on the curve
/// capacity.json and capacity.html, and prints the analysis.
fn finish(args: &SweepArgs, plan: &Plan, outcome: &SweepOutcome) -> anyhow::Result<()> {
    let dir = &plan.dir;
    write_csv(dir, &outcome.steps)?;
    let settings = SweepSettings {
        profile: plan.profile.clone(),
        basis: plan.basis,
        qos_p95_ms: args.shape.qos_p95_ms,
    };
    let Some(sweep) = SweepAnalysis::compute(&settings, outcome)? else {
        println!(
            "sweep: {} complete step(s); the capacity analysis needs at least 2. capacity.csv: {}",
            outcome.curve_steps().count(),
            dir.join("capacity.csv").display()
        );
        return Ok(());
    };
    let dir_text = dir.display().to_string();
    let sweep_plan = SweepPlan {
        dir: &dir_text,
        profile: &plan.profile,
        seed: plan.seed,
        steps_planned: &plan.steps,
        basis: plan.basis,
        max_error_ratio: args.max_error_ratio,
        phases: format!(
            "{} ramp-up, {} steady, {} drain",
            HumanDuration(args.shape.ramp_up),
            HumanDuration(args.shape.duration),
            HumanDuration(args.shape.drain)
        ),
    };
    let mut json = sweep_json(&sweep_plan, &sweep, outcome);
    if let Some(amount) = args.price {
        let p = sweep.price_performance(amount)?;
        println!("{}", price_line(&p));
        json.sweep.price_performance = Some(p);
    }
    write_file(&dir.join("capacity.json"), capacity_json(&json)?)?;
    let html = sweep_html(&sweep_plan, &sweep, outcome);
    write_file(&dir.join("capacity.html"), html)?;
    print!(
        "{}",
        render_sweep_text(&sweep, plan.basis, &dir.display().to_string())
    );
    Ok(())
}

/// With `--target lab`: the lab is up and has users for the largest step.
fn check_lab(args: &SweepArgs, max_users: u32) -> anyhow::Result<()> {
    if args.target.target != "lab" {
        return Ok(());
    }
    let dir = &args.target.lab_dir;
    let status = Lab::new(dir).status().with_context(|| {
        format!(
            "--target lab needs a running lab with at least {max_users} users: \
             peakhour lab up --dir {} --users {max_users}",
            dir.display()
        )
    })?;
    match status.unfit_for(max_users, dir) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}
