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

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_analysis::capacity::sweep::{
    P95Basis, SweepAnalysis, SweepOutcome, SweepSettings, SweepStep, check_sweep_bounds,
    early_stop, plan_steps,
};
use peakhour_lab::Lab;
use peakhour_report::capacity::{SweepPlan, price_line, render_sweep_text, step_line};
use peakhour_rundir::SweepDir;
use peakhour_workload::HumanDuration;

use self::child::{Children, run_child};
use super::signals::EXIT_INTERRUPTED;
use crate::args::SweepArgs;
use crate::config::DEFAULT_DURATION;
use peakhour_app::setup::load_profile;
use peakhour_app::{ChildTarget, InitRequest, StepRequest};

/// The sweep as checked from its arguments.
struct Plan {
    steps: Vec<u32>,
    basis: P95Basis,
    profile: String,
    seed: u64,
    dir: SweepDir,
    /// A file profile: no mailboxes to initialize.
    files: bool,
}

fn plan(args: &SweepArgs) -> anyhow::Result<Plan> {
    let steps = plan_steps(args.users.as_deref(), args.from, args.to, args.factor)?;
    let basis: P95Basis = args.p95.parse()?;
    check_sweep_bounds(args.max_error_ratio, args.shape.qos_p95_ms, args.price)?;
    let file_profile = super::run_files::file_profile(&args.profile.profile)?;
    let files = file_profile.is_some();
    let profile = match file_profile {
        Some(choice) => choice.name().to_owned(),
        None => load_profile(&args.profile.profile)?.name,
    };
    if !files || (args.files.dir.is_none() && args.files.smb.is_none()) {
        check_lab(args, steps[steps.len() - 1])?;
    }
    let now = std::time::SystemTime::now();
    let dir = SweepDir::choose(args.out.as_deref(), now, &profile, &steps)?;
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
    let (dir, seed) = (plan.dir.path(), plan.seed);
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
        HumanDuration(args.shape.duration.unwrap_or(DEFAULT_DURATION)),
        HumanDuration(args.shape.drain),
        args.max_error_ratio
    );
    if !args.no_init && !plan.files {
        let max_users = plan.steps[plan.steps.len() - 1];
        let init = InitRequest {
            profile: args.profile.profile.clone().into(),
            target: ChildTarget::of(&args.target),
            users: max_users,
            seed,
        }
        .args();
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
        let step_dir = dir.step(users).path().to_path_buf();
        let prefix = format!("[step {}/{} {users}u] ", i + 1, steps.len());
        eprintln!(
            "sweep: step {}/{}: {users} users -> {}",
            i + 1,
            steps.len(),
            step_dir.display()
        );
        let child_args = StepRequest::sweep_step(args, users, plan.seed, &step_dir).args();
        let status = run_child(&child_args, &prefix, children)?;
        let code = status.code();
        let Some(step) = dir.read_step(users)? else {
            if !children.interrupted() {
                outcome.failed = Some(format!(
                    "the step at {users} users ended without results ({status}); see its output above"
                ));
            }
            break;
        };
        println!("step {}/{}: {}", i + 1, steps.len(), step_line(&step));
        let step_interrupted = step.interrupted || code == Some(i32::from(EXIT_INTERRUPTED));
        outcome.steps.push(step);
        dir.write_csv(&outcome.steps)?;
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
    dir.write_csv(&outcome.steps)?;
    let settings = SweepSettings {
        profile: plan.profile.clone(),
        basis: plan.basis,
        qos_p95_ms: args.shape.qos_p95_ms,
    };
    let dir_text = dir.path().display().to_string();
    let Some(sweep) = SweepAnalysis::compute(&settings, outcome)? else {
        println!(
            "sweep: {} complete step(s); the capacity analysis needs at least 2. capacity.csv: {}",
            outcome.curve_steps().count(),
            dir.csv_path().display()
        );
        return Ok(());
    };
    let shape = &args.shape;
    let sweep_plan = SweepPlan {
        dir: &dir_text,
        profile: &plan.profile,
        seed: plan.seed,
        steps_planned: &plan.steps,
        basis: plan.basis,
        max_error_ratio: args.max_error_ratio,
        phases: format!(
            "{} ramp-up, {} steady, {} drain",
            HumanDuration(shape.ramp_up),
            HumanDuration(shape.duration.unwrap_or(DEFAULT_DURATION)),
            HumanDuration(shape.drain)
        ),
    };
    let price = args.price.map(|amount| sweep.price_performance(amount));
    let price = price.transpose()?;
    if let Some(p) = &price {
        println!("{}", price_line(p));
    }
    dir.write_analysis(&sweep_plan, &sweep, outcome, price)?;
    print!("{}", render_sweep_text(&sweep, plan.basis, &dir_text));
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
             peakhour lab up --lab-dir {} --users {max_users}",
            dir.display()
        )
    })?;
    match status.unfit_for(max_users, dir) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}
