//! Run directories as the planner reads them: a recorded run (the report
//! crate's `run-small` fixture, measured against the lab with the monitor
//! beside it) read back as a task of `peakhour tasks` and as a cell of
//! `peakhour matrix`, and the planner's output directories.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use peakhour_analysis::plan::{METRIC_WEIGHTED_P95_MS, TaskUnit};
use peakhour_rundir::{RunDir, RunDirError, planner_dir};

const INTERVAL: Duration = Duration::from_secs(1);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures")
        .join(name)
}

#[test]
fn an_action_of_a_run_reads_back_as_a_task_with_its_count_latency_and_server_window() {
    let dir = RunDir::new(fixture("run-small"));
    let task = dir.action_task("read", 3, INTERVAL).unwrap();
    assert!(task.notes.is_empty(), "{:?}", task.notes);
    let run = task.run.unwrap();
    assert_eq!(run.name, "read");
    assert_eq!(run.workstations, 3);
    assert_eq!(run.tasks_completed, 48.0);
    assert_eq!(run.unit, TaskUnit::Task);
    let latency = run.latency.unwrap();
    assert_eq!((latency.p95_ms, latency.samples), (3.29, 48));
    // The steady phase (20 s from 3 s) with the monitor's 1 s samples.
    assert!((run.measured.window_s - 20.0).abs() <= 1.0, "{run:?}");
    assert!(run.measured.server_cpu_s > 0.0);
}

#[test]
fn an_action_the_run_did_not_record_is_left_out_with_a_note() {
    let task = RunDir::new(fixture("run-small"))
        .action_task("search", 1, INTERVAL)
        .unwrap();
    assert_eq!(task.run, None);
    assert_eq!(task.notes, ["search: the run recorded no search action"]);
}

#[test]
fn a_run_without_monitor_csv_is_an_error_naming_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("run");
    std::fs::create_dir(&copy).unwrap();
    let summary = fixture("run-small").join("summary.json");
    std::fs::copy(summary, copy.join("summary.json")).unwrap();
    let error = RunDir::new(&copy)
        .action_task("read", 1, INTERVAL)
        .unwrap_err();
    assert!(matches!(&error, RunDirError::NoMonitor(p) if p == &copy));
    assert_eq!(
        error.to_string(),
        format!("{} has no monitor.csv", copy.display())
    );
}

#[test]
fn a_run_reads_back_as_a_matrix_cell_of_its_shape() {
    let path = fixture("run-small");
    let cell = RunDir::new(&path)
        .matrix_cell(0.5, 1 << 30, INTERVAL)
        .unwrap();
    assert_eq!((cell.cpus, cell.memory_bytes), (0.5, 1 << 30));
    assert_eq!(cell.bottleneck.as_deref(), Some("none"));
    assert_eq!(cell.run_dir, Some(path.display().to_string()));
    assert!(cell.metrics.contains_key(METRIC_WEIGHTED_P95_MS));
    assert!(
        cell.metrics.contains_key("p95_ms.read"),
        "{:?}",
        cell.metrics
    );
}

#[test]
fn a_planner_directory_is_named_by_command_and_profile_and_never_reused() {
    // 2026-11-21T09:00:00Z.
    let at = UNIX_EPOCH + Duration::from_secs(1_795_251_600);
    let dir = planner_dir(None, at, "matrix", "mmb-medium", "matrix.json").unwrap();
    assert_eq!(
        dir,
        PathBuf::from("runs/20261121T090000Z-matrix-mmb-medium")
    );
    let tmp = tempfile::tempdir().unwrap();
    let given = planner_dir(Some(tmp.path()), at, "tasks", "x", "tasks.json").unwrap();
    assert_eq!(given, tmp.path());
    std::fs::write(tmp.path().join("tasks.json"), "{}").unwrap();
    let error = planner_dir(Some(tmp.path()), at, "tasks", "x", "tasks.json").unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} already holds tasks.json; choose another --out",
            tmp.path().display()
        )
    );
}
