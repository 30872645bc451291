//! `peakhour matrix`: seed 003's CPU × memory matrix. For every shape a
//! fresh lab (a new directory, `lab up` with the shape's caps, the same
//! seed), `init`, one `peakhour run`, `lab down`; then
//! `peakhour_analysis::plan::Matrix::build` reads which measurements rise
//! and fall with more memory or CPUs, and `peakhour_report::plan` writes
//! `matrix.json`, `matrix.csv`, `matrix-relationships.csv` and
//! `matrix.html`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use peakhour_analysis::Summary;
use peakhour_analysis::plan::{
    DEFAULT_RELATIONSHIP_THRESHOLD_PCT, METRIC_CPU_PCT, METRIC_WEIGHTED_P95_MS, Matrix, MatrixCell,
};
use peakhour_lab::{Lab, LabConfig, LabError, Limits, Ports};
use peakhour_monitor::{GroupField, MetricKey, MetricTable, SystemField};
use peakhour_report::plan::{
    matrix_json, render_matrix_html, render_matrix_terminal, write_matrix_csv,
    write_relationships_csv,
};
use peakhour_workload::HumanDuration;

use super::planner::{load_average, server_memory_bytes, shape_label, steady_window, window_mean};
use super::sweep::child::{Children, run_child};
use super::target::load_profile;
use crate::args::MatrixArgs;

/// `peakhour run`'s monitor interval.
const MONITOR_INTERVAL: Duration = Duration::from_secs(1);

pub(crate) fn run(args: MatrixArgs) -> anyhow::Result<ExitCode> {
    let profile = load_profile(&args.profile.profile)?;
    let shapes = shapes(&args)?;
    let seed = args.seed.unwrap_or(peakhour_workload::DEFAULT_SEED);
    let dir = args.out.clone().unwrap_or_else(|| {
        let name = peakhour_rundir::dir_name(
            std::time::SystemTime::now(),
            peakhour_rundir::DirKind::Sweep {
                profile: &profile.name,
            },
        );
        PathBuf::from(peakhour_rundir::RUNS_DIR).join(name.replacen("-sweep-", "-matrix-", 1))
    });
    if dir.join("matrix.json").exists() {
        bail!(
            "{} already holds a matrix; choose another --out",
            dir.display()
        );
    }
    // 0755 all the way: each cell's lab lives under it, and its servers must reach it.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir.join("labs"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let interrupt = Children::install("matrix")?;
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
        if interrupt.interrupted() {
            break;
        }
        let name = cell_name(cpus, memory);
        eprintln!(
            "matrix: cell {}/{}: {} -> {} (load average {:.2})",
            i + 1,
            shapes.len(),
            shape_label(Some(cpus), Some(memory)),
            dir.join(&name).display(),
            load_average().unwrap_or(f64::NAN)
        );
        match run_cell(&args, &dir, &name, cpus, memory, seed, &interrupt) {
            Ok(cell) => cells.push(cell),
            Err(e) => eprintln!("matrix: cell {name} left out: {e:#}"),
        }
    }
    if cells.is_empty() {
        bail!("no cell was measured");
    }
    let matrix = Matrix::build(
        &profile.name,
        u64::from(args.users),
        cells,
        DEFAULT_RELATIONSHIP_THRESHOLD_PCT,
    )?;
    write(&dir.join("matrix.json"), matrix_json(&matrix)?)?;
    let mut csv = Vec::new();
    write_matrix_csv(&matrix, &mut csv)?;
    write(&dir.join("matrix.csv"), csv)?;
    let mut csv = Vec::new();
    write_relationships_csv(&matrix, &mut csv)?;
    write(&dir.join("matrix-relationships.csv"), csv)?;
    write(&dir.join("matrix.html"), render_matrix_html(&matrix))?;
    print!("{}", render_matrix_terminal(&matrix));
    println!("results: {}", dir.display());
    Ok(if interrupt.interrupted() {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Every (CPUs, memory) shape, checked as `lab up` would.
fn shapes(args: &MatrixArgs) -> anyhow::Result<Vec<(f64, u64)>> {
    let mut out = Vec::new();
    for &cpus in &args.cpus {
        for &memory in &args.memory {
            Limits::default()
                .with_cpus(cpus)
                .and_then(|l| l.with_memory(memory))
                .map_err(|e| anyhow::anyhow!("--cpus {cpus} --memory {memory}: {e}"))?;
            if !out.contains(&(cpus, memory)) {
                out.push((cpus, memory));
            }
        }
    }
    Ok(out)
}

fn cell_name(cpus: f64, memory: u64) -> String {
    format!("cell-{cpus}cpu-{}m", memory / (1024 * 1024))
}

/// One shape: a fresh lab, init, run, lab down, and what the run measured.
fn run_cell(
    args: &MatrixArgs,
    dir: &Path,
    name: &str,
    cpus: f64,
    memory: u64,
    seed: u64,
    interrupt: &Children,
) -> anyhow::Result<MatrixCell> {
    let lab_dir = dir.join("labs").join(name);
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&lab_dir)
        .with_context(|| format!("cannot create {}", lab_dir.display()))?;
    let limits = Limits::default()
        .with_cpus(cpus)
        .and_then(|l| l.with_memory(memory))
        .map_err(anyhow::Error::msg)?;
    let mut attempts = 0;
    loop {
        let config = LabConfig {
            users: args.users,
            ports: Ports::free().context("no free loopback ports for the cell's lab")?,
            imap_client_limit: args.imap_client_limit,
            limits: limits.clone(),
            ..LabConfig::new(&lab_dir)
        };
        match Lab::up(&config) {
            Ok(_) => break,
            // A free port can be taken before the lab binds it: try others.
            Err(LabError::PortInUse { .. }) if attempts < 3 => attempts += 1,
            Err(e) => return Err(e).context("lab up failed"),
        }
    }
    let cell_dir = dir.join(name);
    let measured = init_and_run(args, &lab_dir, &cell_dir, seed, interrupt);
    let down = Lab::new(&lab_dir).down(true);
    let (summary, table) = measured?;
    if let Err(e) = down {
        eprintln!("matrix: lab down in {} failed: {e}", lab_dir.display());
    }
    Ok(cell(cpus, memory, &summary, &table, &cell_dir))
}

fn init_and_run(
    args: &MatrixArgs,
    lab_dir: &Path,
    cell_dir: &Path,
    seed: u64,
    interrupt: &Children,
) -> anyhow::Result<(Summary, MetricTable)> {
    let common: Vec<OsString> = vec![
        "--profile".into(),
        args.profile.profile.clone().into(),
        "--target".into(),
        "lab".into(),
        "--lab-dir".into(),
        lab_dir.into(),
        "--users".into(),
        args.users.to_string().into(),
        "--seed".into(),
        seed.to_string().into(),
    ];
    let mut init: Vec<OsString> = vec!["init".into()];
    init.extend(common.iter().cloned());
    let status = run_child(&init, "[init] ", interrupt)?;
    if !status.success() {
        bail!("init failed ({status})");
    }
    let d = |d: Duration| OsString::from(HumanDuration(d).to_string());
    let mut run: Vec<OsString> = vec!["run".into()];
    run.extend(common);
    run.extend([
        "--duration".into(),
        d(args.duration),
        "--ramp-up".into(),
        d(args.ramp_up),
        "--drain".into(),
        d(args.drain),
        "--out".into(),
        cell_dir.into(),
    ]);
    if let Some(speed) = args.speed {
        run.extend(["--speed".into(), speed.to_string().into()]);
    }
    run_child(&run, "[run] ", interrupt)?;
    let run_dir = peakhour_rundir::RunDir::new(cell_dir);
    if !cell_dir.join("summary.json").exists() {
        bail!("the run ended without results");
    }
    let summary = run_dir.read_summary()?;
    let table = run_dir
        .read_monitor()?
        .with_context(|| format!("{} has no monitor.csv", cell_dir.display()))?;
    Ok((summary, table))
}

/// A cell's metrics (seed 003's Tables 2 and 3, Graph 1): the weighted p95
/// and each action's, the server's CPU as % of its cap, memory, the read
/// share of the server's disk bytes, the run queue, throttling, throughput
/// and the mail queue at the end.
fn cell(
    cpus: f64,
    memory: u64,
    summary: &Summary,
    table: &MetricTable,
    cell_dir: &Path,
) -> MatrixCell {
    let window = steady_window(summary, MONITOR_INTERVAL);
    let mut metrics = BTreeMap::new();
    if let Some(p95) = summary.score.weighted_p95_ms {
        metrics.insert(METRIC_WEIGHTED_P95_MS.to_owned(), p95);
    }
    for (action, a) in &summary.actions {
        if let Some(p95) = a.p95_ms {
            metrics.insert(format!("p95_ms.{action}"), p95);
        }
    }
    let mean = |column: &str| {
        table
            .column(column)
            .and_then(|v| window_mean(table, &v, window))
    };
    let system = |f: SystemField| MetricKey::system(f).column();
    let cpu = mean(&system(SystemField::LabCpuPct)).or_else(|| {
        let groups =
            ["dovecot", "postfix"].map(|g| mean(&MetricKey::group(g, GroupField::CpuPct).column()));
        groups.iter().flatten().copied().reduce(|a, b| a + b)
    });
    if let Some(cpu) = cpu {
        metrics.insert(METRIC_CPU_PCT.to_owned(), cpu / cpus);
    }
    if let Some(bytes) = window_mean(table, &server_memory_bytes(table), window) {
        metrics.insert("memory_used_bytes".to_owned(), bytes);
    }
    let bytes = |f: GroupField| {
        ["dovecot", "postfix"]
            .map(|g| mean(&MetricKey::group(g, f).column()).unwrap_or(0.0))
            .iter()
            .sum::<f64>()
    };
    let (read, written) = (
        bytes(GroupField::ReadBytesPerS),
        bytes(GroupField::WriteBytesPerS),
    );
    if read + written > 0.0 {
        metrics.insert(
            "disk_read_share_pct".to_owned(),
            100.0 * read / (read + written),
        );
    }
    for (name, field) in [
        ("run_queue", SystemField::RunQueue),
        ("cpu_throttled_pct", SystemField::LabCpuThrottledPct),
    ] {
        if let Some(v) = mean(&system(field)) {
            metrics.insert(name.to_owned(), v);
        }
    }
    metrics.insert(
        "actions_per_s".to_owned(),
        summary.throughput.actions_per_second,
    );
    if let Some(q) = summary.delivery.mail_queue_at_end {
        metrics.insert("mail_queue_at_end".to_owned(), q as f64);
    }
    MatrixCell {
        cpus,
        memory_bytes: memory,
        metrics,
        bottleneck: summary.bottleneck.as_ref().map(|b| b.resource.clone()),
        run_dir: Some(cell_dir.display().to_string()),
    }
}
