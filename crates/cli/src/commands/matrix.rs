//! `peakhour matrix`: seed 003's CPU × memory matrix. For every shape a
//! fresh lab (a new directory, `lab up` with the shape's caps, the same
//! seed), `init`, one `peakhour run`, `lab down`; a cell's metrics are
//! `peakhour_analysis::monitor::server::matrix_cell_metrics`, the relationships
//! `peakhour_analysis::plan::Matrix::build`'s, and the files
//! (`matrix.json`, `matrix.csv`, `matrix-relationships.csv`, `matrix.html`)
//! `peakhour_report::plan`'s.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use peakhour_analysis::plan::{DEFAULT_RELATIONSHIP_THRESHOLD_PCT, Matrix, MatrixCell};
use peakhour_lab::{Lab, LabConfig, Limits, shape_label};
use peakhour_report::plan::{render_matrix_terminal, write_matrix_files};
use peakhour_workload::HumanDuration;

use super::planner::{load_average, output_dir};
use super::signals::EXIT_INTERRUPTED;
use super::sweep::child::{Children, run_child};
use crate::args::MatrixArgs;
use crate::config::MONITOR_INTERVAL;
use peakhour_app::setup::load_profile;
use peakhour_app::{ChildTarget, InitRequest, StepPhases, StepRequest};

pub(crate) fn run(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    let profile = load_profile(&args.profile.profile)?;
    let shapes = Limits::shapes(&args.cpus, &args.memory).map_err(anyhow::Error::msg)?;
    let seed = args.seed.unwrap_or(peakhour_workload::DEFAULT_SEED);
    let dir = output_dir(args.out.as_deref(), "matrix", &profile.name, "matrix.json")?;
    // 0755 all the way: each cell's lab lives under it, and its servers must reach it.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir.join("labs"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let children = Children::install("matrix")?;
    eprintln!(
        "matrix {}: profile {}, {} users, seed {seed}, {} shapes, each {} ramp-up + {} steady + {} drain",
        dir.display(),
        profile.name,
        args.users,
        shapes.len(),
        HumanDuration(args.ramp_up),
        HumanDuration(args.duration),
        HumanDuration(args.drain)
    );
    let mut cells = Vec::new();
    for (i, &(cpus, memory)) in shapes.iter().enumerate() {
        if children.interrupted() {
            break;
        }
        let name = format!("cell-{cpus}cpu-{}m", memory / (1024 * 1024));
        eprintln!(
            "matrix: cell {}/{}: {} -> {} (load average {:.2})",
            i + 1,
            shapes.len(),
            shape_label(Some(cpus), Some(memory)),
            dir.join(&name).display(),
            load_average()
        );
        match run_cell(&args, &dir, &name, (cpus, memory), seed, &children) {
            Ok(cell) => cells.push(cell),
            Err(e) => eprintln!("matrix: cell {name} left out: {e:#}"),
        }
    }
    if cells.is_empty() {
        bail!("no cell was measured");
    }
    let users = u64::from(args.users);
    let matrix = Matrix::build(
        &profile.name,
        users,
        cells,
        DEFAULT_RELATIONSHIP_THRESHOLD_PCT,
    )?;
    write_matrix_files(&dir, &matrix)
        .with_context(|| format!("cannot write into {}", dir.display()))?;
    print!("{}", render_matrix_terminal(&matrix));
    println!("results: {}", dir.display());
    Ok(if children.interrupted() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

/// One shape: a fresh lab, init, run, lab down, and what the run measured.
fn run_cell(
    args: &MatrixArgs,
    dir: &Path,
    name: &str,
    (cpus, memory): (f64, u64),
    seed: u64,
    children: &Children,
) -> anyhow::Result<MatrixCell> {
    let lab_dir = dir.join("labs").join(name);
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&lab_dir)
        .with_context(|| format!("cannot create {}", lab_dir.display()))?;
    let config = LabConfig {
        users: args.users,
        imap_client_limit: args.imap_client_limit,
        limits: Limits::shape(cpus, memory).map_err(anyhow::Error::msg)?,
        ..LabConfig::new(&lab_dir)
    };
    Lab::up_on_free_ports(&config).context("lab up failed")?;
    let cell_dir = dir.join(name);
    let measured = init_and_run(args, &lab_dir, &cell_dir, seed, children);
    if let Err(e) = Lab::new(&lab_dir).down(true) {
        eprintln!("matrix: lab down in {} failed: {e}", lab_dir.display());
    }
    Ok(measured?.matrix_cell(cpus, memory, MONITOR_INTERVAL)?)
}

/// `init` and one `run` against the cell's lab, into `cell_dir`.
fn init_and_run(
    args: &MatrixArgs,
    lab_dir: &Path,
    cell_dir: &Path,
    seed: u64,
    children: &Children,
) -> anyhow::Result<peakhour_rundir::RunDir> {
    let (profile, target) = (&args.profile.profile, ChildTarget::lab(lab_dir));
    let init = InitRequest {
        profile: profile.into(),
        target: target.clone(),
        users: args.users,
        seed,
    };
    let status = run_child(&init.args(), "[init] ", children)?;
    if !status.success() {
        bail!("init failed ({status})");
    }
    let mut phases = StepPhases::new(args.ramp_up, args.duration, args.drain);
    phases.speed = args.speed;
    let run = StepRequest::new(profile, target, (args.users, seed), phases, cell_dir);
    run_child(&run.args(), "[run] ", children)?;
    if !cell_dir.join("summary.json").exists() {
        bail!("the run ended without results");
    }
    Ok(peakhour_rundir::RunDir::new(cell_dir))
}
