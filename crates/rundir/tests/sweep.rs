//! A sweep's directory through [`SweepDir`]: steps read back from their
//! run directories, `capacity.csv` after each, the analysis files valid
//! against the committed schema, and a directory that holds a sweep refused.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use peakhour_analysis::capacity::sweep::{P95Basis, SweepAnalysis, SweepOutcome, SweepSettings};
use peakhour_report::capacity::{CAPACITY_CSV_COLUMNS, CAPACITY_SCHEMA, SweepPlan};
use peakhour_rundir::SweepDir;

fn fixture_summary() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/run-small/summary.json")
}

/// A sweep directory whose steps at `users` each hold the fixture's summary.
fn sweep_with_steps(root: &Path, users: &[u32]) -> SweepDir {
    let sweep = SweepDir::new(root.join("sweep"));
    for &n in users {
        let step = sweep.step(n);
        std::fs::create_dir_all(step.path()).unwrap();
        std::fs::copy(fixture_summary(), step.path().join("summary.json")).unwrap();
    }
    sweep
}

#[test]
fn steps_read_back_by_user_count_and_a_step_without_results_is_none() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = sweep_with_steps(tmp.path(), &[5]);
    assert_eq!(sweep.step(5).path(), sweep.path().join("step-5u"));
    let step = sweep.read_step(5).unwrap().unwrap();
    assert_eq!((step.users, step.run_dir.as_str()), (5, "step-5u"));
    assert!(sweep.read_step(10).unwrap().is_none());
}

#[test]
fn capacity_csv_has_a_row_per_step_under_the_documented_header() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = sweep_with_steps(tmp.path(), &[5, 10]);
    let steps = vec![
        sweep.read_step(5).unwrap().unwrap(),
        sweep.read_step(10).unwrap().unwrap(),
    ];
    sweep.write_csv(&steps).unwrap();
    let text = std::fs::read_to_string(sweep.csv_path()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The documented columns, then one p95 column per action.
    assert!(
        lines[0].starts_with(&CAPACITY_CSV_COLUMNS.join(",")),
        "{text}"
    );
    assert!(lines[0].contains(",p95_ms.read"), "{text}");
    assert_eq!(lines.len(), 3);
    assert!(
        lines[1].starts_with("5,") && lines[2].starts_with("10,"),
        "{text}"
    );
}

#[test]
fn the_analysis_files_are_written_and_capacity_json_matches_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let users = [2, 4, 8];
    let sweep = sweep_with_steps(tmp.path(), &users);
    let outcome = SweepOutcome {
        steps: users
            .iter()
            .map(|&n| sweep.read_step(n).unwrap().unwrap())
            .collect(),
        ..SweepOutcome::default()
    };
    let settings = SweepSettings {
        profile: "mmb-medium".into(),
        basis: P95Basis::Weighted,
        qos_p95_ms: Some(1000.0),
    };
    let analysis = SweepAnalysis::compute(&settings, &outcome)
        .unwrap()
        .unwrap();
    let dir = sweep.path().display().to_string();
    let plan = SweepPlan {
        dir: &dir,
        profile: "mmb-medium",
        seed: 1,
        steps_planned: &users,
        basis: P95Basis::Weighted,
        max_error_ratio: 0.05,
        phases: "1s ramp-up, 20s steady, 1s drain".into(),
    };
    let price = analysis.price_performance(1000.0).ok();
    sweep
        .write_analysis(&plan, &analysis, &outcome, price)
        .unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sweep.path().join("capacity.json")).unwrap())
            .unwrap();
    let schema: serde_json::Value = serde_json::from_str(CAPACITY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(json["sweep"]["steps_run"], serde_json::json!([2, 4, 8]));
    let html = std::fs::read_to_string(sweep.path().join("capacity.html")).unwrap();
    assert!(html.contains("<svg"), "capacity.html has its chart");
    // Every step is within a 1000 ms limit: the planner reads a lower bound.
    let capacity = peakhour_rundir::read_qos_capacity(sweep.path()).unwrap();
    assert!(capacity.users > 0.0, "{capacity:?}");
    assert!(capacity.source.starts_with("sweep "), "{capacity:?}");
}

#[test]
fn a_directory_that_holds_a_sweep_is_refused() {
    let at = UNIX_EPOCH + Duration::from_secs(1_795_251_600);
    let default = SweepDir::choose(None, at, "mmb-medium", &[5]).unwrap();
    assert_eq!(
        default.path(),
        Path::new("runs/20261121T090000Z-sweep-mmb-medium")
    );
    let tmp = tempfile::tempdir().unwrap();
    let sweep = sweep_with_steps(tmp.path(), &[5]);
    let out = Some(sweep.path());
    assert!(SweepDir::choose(out, at, "x", &[10, 20]).is_ok());
    let error = SweepDir::choose(out, at, "x", &[5, 10]).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} already holds a sweep; choose another --out",
            sweep.path().display()
        )
    );
    std::fs::write(sweep.csv_path(), "").unwrap();
    assert!(SweepDir::choose(out, at, "x", &[10]).is_err());
}

#[test]
fn the_planner_reads_a_sweeps_qos_capacity_from_the_file_or_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = peakhour_rundir::read_qos_capacity(tmp.path()).unwrap_err();
    assert!(matches!(missing, peakhour_rundir::RunDirError::Io { .. }));
    std::fs::write(tmp.path().join("capacity.json"), r#"{"analysis": 3}"#).unwrap();
    let error = peakhour_rundir::read_qos_capacity(tmp.path()).unwrap_err();
    let peakhour_rundir::RunDirError::Parse { path, .. } = error else {
        panic!("{error}");
    };
    assert_eq!(path, tmp.path().join("capacity.json"));
}
