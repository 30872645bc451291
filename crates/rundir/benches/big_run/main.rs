//! Big runs stay quick to read (issue 16, point 4): `peakhour report`,
//! `peakhour compare` and a sweep's analysis over runs of a million
//! actions each.
//!
//! ```text
//! cargo bench -p peakhour-rundir --bench big_run
//! cargo bench -p peakhour-rundir --bench big_run -- --keep /tmp/big-run   # keep the directories
//! PEAKHOUR=$PWD/target/release/peakhour cargo bench -p peakhour-rundir --bench big_run   # also time the binary (absolute path: benches run in crates/rundir)
//! ```
//!
//! It generates (see `generate.rs`) a sweep of mmb-medium over 500 to
//! 5,000 users, each step a 2-hour steady phase after a 5-minute logon and
//! before a 2-minute drain, 10 s intervals and a 1 s monitor.csv with the
//! lab's columns. The 2,000-user step is the "big run" (about a million
//! actions, the server near its capacity); a second 2,000-user run with
//! another seed and a 5% slower server is what it is compared with. Then
//! it times, each step several times, the library calls the commands make:
//!
//! * `peakhour report DIR`: `RunDir::write_report` (reading every file,
//!   the monitor view, the HTML page, writing it), and its parts; with
//!   `--format`, `render_summary_as`; and `Summary::compute`, the summary
//!   `peakhour run` computes from the record;
//! * `peakhour compare A B`: `RunDir::load` of both, `peakhour_report::compare`
//!   (the bootstrap), the text and the HTML;
//! * the sweep's analysis: every step's `summary.json`, `SweepAnalysis::compute`,
//!   capacity.csv/json/html and the text.
//!
//! It prints the figures and asserts no time. With `PEAKHOUR` set to a
//! built binary it also times `peakhour report` and `peakhour compare`
//! end to end as processes.

mod generate;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use peakhour_analysis::Summary;
use peakhour_analysis::capacity::sweep::{
    P95Basis, SweepAnalysis, SweepOutcome, SweepSettings, SweepStep,
};
use peakhour_report::capacity::{
    SweepPlan, capacity_json, render_sweep_text, sweep_html, sweep_json, write_capacity_csv,
};
use peakhour_report::{CompareRun, TextFormat, render_comparison_as, render_summary_as};
use peakhour_rundir::{Run, RunDir};

use self::generate::{Generated, Shape};

type BoxError = Box<dyn std::error::Error>;

/// Each step is timed this many times; the best and the worst are printed.
const REPEATS: usize = 3;
/// The sweep's user counts; the big run is the 2,000-user step.
const SWEEP_USERS: [u32; 6] = [500, 1000, 2000, 3000, 4000, 5000];
const BIG_USERS: u32 = 2000;

fn shape(users: u32, seed: u64) -> Shape {
    Shape {
        users,
        // 2,000 users at speed 12.2 offer about 137 actions/s: a million
        // actions over 5 min of logon and 2 h of steady state.
        speed: 12.2,
        seed,
        logon: Duration::from_secs(300),
        steady: Duration::from_secs(7200),
        drain: Duration::from_secs(120),
        capacity_per_s: 150.0,
        slowdown: 1.0,
    }
}

/// Times `f` [`REPEATS`] times; prints and returns the best.
fn time<T>(label: &str, mut f: impl FnMut() -> Result<T, BoxError>) -> Result<Duration, BoxError> {
    let mut times = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let start = Instant::now();
        std::hint::black_box(f()?);
        times.push(start.elapsed());
    }
    times.sort();
    let best = times[0];
    println!(
        "  {label:<58} best {:>8.1} ms   worst {:>8.1} ms",
        ms(best),
        ms(times[times.len() - 1])
    );
    Ok(best)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn describe(label: &str, dir: &Path, g: &Generated, took: Duration) {
    let mib = |name: &str| file_size(&dir.join(name)) as f64 / (1024.0 * 1024.0);
    println!(
        "{label}: {} actions, {} commands, {} monitor rows in {:.1} s; record.json {:.1} MiB, summary.json {:.2} MiB, monitor.csv {:.1} MiB, report.html {:.1} MiB",
        g.actions,
        g.commands,
        g.monitor_rows,
        took.as_secs_f64(),
        mib("record.json"),
        mib("summary.json"),
        mib("monitor.csv"),
        mib("report.html"),
    );
}

fn generate_all(root: &Path) -> Result<(), BoxError> {
    for users in SWEEP_USERS {
        let dir = root.join("sweep").join(format!("step-{users}u"));
        let started = Instant::now();
        let g = generate::run_dir(&dir, &shape(users, 1))?;
        describe(&format!("step {users}u"), &dir, &g, started.elapsed());
    }
    let other = Shape {
        slowdown: 1.05,
        ..shape(BIG_USERS, 2)
    };
    let dir = root.join("run-b");
    let started = Instant::now();
    let g = generate::run_dir(&dir, &other)?;
    describe(
        "run-b (2000u, seed 2, 5% slower)",
        &dir,
        &g,
        started.elapsed(),
    );
    Ok(())
}

fn big_run(root: &Path) -> PathBuf {
    root.join("sweep").join(format!("step-{BIG_USERS}u"))
}

/// `peakhour report DIR [--format F]` and the summary, step by step.
fn bench_report(root: &Path) -> Result<(), BoxError> {
    let dir = RunDir::new(big_run(root));
    println!("\npeakhour report {} (library calls)", dir.path().display());
    time("RunDir::read_record (record.json)", || {
        Ok(dir.read_record()?)
    })?;
    time("RunDir::read_summary (summary.json)", || {
        Ok(dir.read_summary()?)
    })?;
    time("RunDir::read_monitor (monitor.csv)", || {
        Ok(dir.read_monitor()?)
    })?;
    time(
        "RunDir::load (every file, monitor view)",
        || Ok(dir.load()?),
    )?;
    let run = dir.load()?;
    time("Summary::compute (what `peakhour run` computes)", || {
        Ok(Summary::compute(&run.record)?)
    })?;
    time("render_html (report.html)", || {
        Ok(peakhour_report::render_html(&run.report_input())?)
    })?;
    for format in ["text", "json", "markdown", "csv"] {
        let parsed: TextFormat = format.parse()?;
        time(
            &format!("render_summary_as {format} (--format {format})"),
            || Ok(render_summary_as(&run.summary, parsed)?),
        )?;
    }
    time(
        "total: RunDir::write_report (`peakhour report DIR`)",
        || Ok(dir.write_report()?),
    )?;
    Ok(())
}

fn compare_runs(loaded: &[Run]) -> Result<peakhour_report::Comparison, BoxError> {
    let runs: Vec<CompareRun<'_>> = loaded
        .iter()
        .zip(["step-2000u", "run-b"])
        .map(|(r, label)| CompareRun {
            label,
            record: &r.record,
            summary: &r.summary,
        })
        .collect();
    Ok(peakhour_report::compare(&runs)?)
}

/// `peakhour compare A B [--html F]`.
fn bench_compare(root: &Path) -> Result<(), BoxError> {
    let dirs = [RunDir::new(big_run(root)), RunDir::new(root.join("run-b"))];
    println!("\npeakhour compare (library calls)");
    let load = || -> Result<Vec<Run>, BoxError> {
        Ok(dirs.iter().map(RunDir::load).collect::<Result<_, _>>()?)
    };
    time("RunDir::load of both runs", load)?;
    let loaded = load()?;
    time(
        "peakhour_report::compare (bootstrap, 1000 resamples)",
        || compare_runs(&loaded),
    )?;
    let comparison = compare_runs(&loaded)?;
    time("render_comparison_as text", || {
        Ok(render_comparison_as(&comparison, TextFormat::Text)?)
    })?;
    time("render_compare_html (--html)", || {
        Ok(peakhour_report::render_compare_html(&comparison))
    })?;
    time("total: load, compare, text and HTML", || {
        let loaded = load()?;
        let comparison = compare_runs(&loaded)?;
        let text = render_comparison_as(&comparison, TextFormat::Text)?;
        Ok((text, peakhour_report::render_compare_html(&comparison)))
    })?;
    Ok(())
}

/// What the sweep does after its last step (`sweep.rs`'s `finish`).
fn sweep_files(dir: &Path, outcome: &SweepOutcome) -> Result<(String, String, String), BoxError> {
    let mut csv = Vec::new();
    write_capacity_csv(&outcome.steps, &mut csv)?;
    let settings = SweepSettings {
        profile: "mmb-medium".into(),
        basis: P95Basis::Weighted,
        qos_p95_ms: None,
    };
    let sweep = SweepAnalysis::compute(&settings, outcome)?.ok_or("fewer than two steps")?;
    let dir_text = dir.display().to_string();
    let plan = SweepPlan {
        dir: &dir_text,
        profile: "mmb-medium",
        seed: 1,
        steps_planned: &SWEEP_USERS,
        basis: P95Basis::Weighted,
        max_error_ratio: 0.05,
        phases: "5m ramp-up, 2h steady, 2m drain".into(),
    };
    let json = capacity_json(&sweep_json(&plan, &sweep, outcome))?;
    let html = sweep_html(&plan, &sweep, outcome);
    let text = render_sweep_text(&sweep, P95Basis::Weighted, &dir_text);
    Ok((json, html, text))
}

fn read_steps(dir: &Path) -> Result<SweepOutcome, BoxError> {
    let mut outcome = SweepOutcome::default();
    for users in SWEEP_USERS {
        let name = format!("step-{users}u");
        let summary = RunDir::new(dir.join(&name)).read_summary()?;
        outcome
            .steps
            .push(SweepStep::from_summary(users, &name, &summary));
    }
    Ok(outcome)
}

/// The sweep's analysis over its six steps.
fn bench_sweep(root: &Path) -> Result<(), BoxError> {
    let dir = root.join("sweep");
    println!("\nthe sweep's analysis over {} steps", SWEEP_USERS.len());
    time(
        "read every step's summary.json (RunDir::read_summary)",
        || read_steps(&dir),
    )?;
    let outcome = read_steps(&dir)?;
    time("SweepAnalysis::compute (capacity, USL, knee)", || {
        let settings = SweepSettings {
            profile: "mmb-medium".into(),
            basis: P95Basis::Weighted,
            qos_p95_ms: None,
        };
        Ok(SweepAnalysis::compute(&settings, &outcome)?)
    })?;
    time("capacity.csv/json/html and the text", || {
        sweep_files(&dir, &outcome)
    })?;
    time("total: read, analyse, render", || {
        sweep_files(&dir, &read_steps(&dir)?)
    })?;
    let (_, _, text) = sweep_files(&dir, &outcome)?;
    print!("{text}");
    Ok(())
}

/// The binary end to end, when `PEAKHOUR` names it.
fn bench_binary(root: &Path) -> Result<(), BoxError> {
    let Some(bin) = std::env::var_os("PEAKHOUR") else {
        println!("\n(set PEAKHOUR=path/to/peakhour to time the binary too)");
        return Ok(());
    };
    let big = big_run(root);
    let run_b = root.join("run-b");
    let html = root.join("compare.html");
    println!("\nthe binary, {}", Path::new(&bin).display());
    let cases: [(&str, Vec<&std::ffi::OsStr>); 4] = [
        (
            "peakhour report BIG",
            vec!["report".as_ref(), big.as_os_str()],
        ),
        (
            "peakhour report BIG --format json",
            vec![
                "report".as_ref(),
                big.as_os_str(),
                "--format".as_ref(),
                "json".as_ref(),
            ],
        ),
        (
            "peakhour compare BIG RUN_B",
            vec!["compare".as_ref(), big.as_os_str(), run_b.as_os_str()],
        ),
        (
            "peakhour compare BIG RUN_B --html F",
            vec![
                "compare".as_ref(),
                big.as_os_str(),
                run_b.as_os_str(),
                "--html".as_ref(),
                html.as_os_str(),
            ],
        ),
    ];
    for (label, args) in cases {
        time(label, || {
            let out = Command::new(&bin).args(&args).output()?;
            if !out.status.success() {
                return Err(format!(
                    "{label}: {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                )
                .into());
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let temp = tempfile::tempdir()?;
    let root = keep.unwrap_or_else(|| temp.path().to_path_buf());
    if !big_run(&root).join("summary.json").exists() || !root.join("run-b").exists() {
        generate_all(&root)?;
    } else {
        println!("reusing the runs in {}", root.display());
    }
    bench_report(&root)?;
    bench_compare(&root)?;
    bench_sweep(&root)?;
    bench_binary(&root)?;
    Ok(())
}
