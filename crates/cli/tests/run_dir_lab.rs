//! A short real run against the lab, read back through `peakhour-rundir`:
//! its `summary.json` matches the committed schema file, and every file of
//! the run directory reads as its type (config.toml through `toml`, the
//! monitor view from monitor.csv).
//!
//! Needs root and the packages that `scripts/setup.sh` installs.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;

use common::{peakhour, start_lab};
use peakhour_rundir::{RunDir, RunFile};

fn committed_summary_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/summary.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn a_real_run_directory_reads_back_typed_and_matches_the_schema() {
    let (_dir, lab) = start_lab(5);
    let lab_dir = lab.status.dir.clone();
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");

    assert!(
        peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir])
            .status
            .success()
    );
    peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        &lab_dir,
        "--speed",
        "400",
        "--duration",
        "6s",
        "--ramp-up",
        "2s",
        "--drain",
        "3s",
        "--interval",
        "2s",
        "--seed",
        "11",
        "--out",
        run_dir.to_str().unwrap(),
    ]);

    // The real summary.json against the committed schema file.
    let dir = RunDir::new(&run_dir);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.file(RunFile::Summary)).unwrap())
            .unwrap();
    let problems: Vec<String> = committed_summary_schema()
        .iter_errors(&written)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");

    // Every file reads as its type.
    let run = dir.load().unwrap();
    assert_eq!(run.summary.seed, 11);
    assert_eq!(run.record.meta.users, 5);
    let id = &run.record.meta.run_id;
    assert!(
        id.ends_with("-mmb-medium-5u") && id.len() == 16 + 14,
        "{id}"
    );
    let config = run.config.as_ref().unwrap();
    assert_eq!(config.config.target.imap, lab.status.endpoints.imap);
    assert_eq!(config.config.run.duration.to_string(), "6s");
    assert_eq!(config.config.plan["seed"].as_integer(), Some(11));
    let monitor = run.monitor.as_ref().unwrap();
    assert!(monitor.charts.iter().any(|c| c.key == "cpu"));
    assert!(
        monitor
            .config
            .iter()
            .any(|(k, v)| k == "configured interval" && v == "1s")
    );
    assert!(run.host.is_some(), "host.json is written with report.html");
    assert!(dir.has(RunFile::Report));
}
