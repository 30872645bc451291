//! `run --out` and `merge --out` never overwrite files peakhour did not
//! write, nor a run it did (issue 26, item 5): [`RunDir::check_unused`],
//! which [`RunDir::start`] and [`merge_runs`] call before anything else.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use peakhour_rundir::{
    MonitorSection, RunConfig, RunDir, RunDirError, RunSection, TargetSection, merge_runs,
};
use peakhour_workload::{HumanDuration, Overrides, Plan, builtin};

fn config() -> RunConfig {
    let profile = builtin("mmb-medium").unwrap().profile().unwrap();
    let plan = Plan::resolve(&profile, &Overrides::default()).unwrap();
    let secs = |s| HumanDuration(Duration::from_secs(s));
    RunConfig::new(
        RunSection {
            ramp_up: secs(3),
            duration: secs(20),
            drain: secs(5),
            interval: secs(5),
            action_timeout: secs(30),
            check_state: None,
        },
        TargetSection {
            imap: "127.0.0.1:31143".into(),
            smtp: "127.0.0.1:31025".into(),
            security_shortcuts: Vec::new(),
            lab: None,
            source_addresses: Vec::new(),
        },
        MonitorSection {
            interval: secs(1),
            high_average_window: secs(30),
            baseline: secs(0),
        },
        &plan,
    )
    .unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures")
        .join(name)
}

/// Every file of `dir` with its bytes, to show nothing changed.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn issue_26_item_5_new_and_empty_directories_and_a_runs_lone_config_are_used() {
    let tmp = tempfile::tempdir().unwrap();
    RunDir::check_unused(&tmp.path().join("new/deeper")).unwrap();
    RunDir::check_unused(tmp.path()).unwrap();
    // A run whose check of the server failed left only its config.toml:
    // the same command may be run again into it.
    let stopped = RunDir::start(Some(&tmp.path().join("stopped")), "id").unwrap();
    stopped.write_config(&config()).unwrap();
    RunDir::check_unused(stopped.path()).unwrap();
    RunDir::start(Some(stopped.path()), "id").unwrap();
}

#[test]
fn issue_26_item_5_a_directory_with_other_files_is_refused_naming_one_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("report.html"), "my own report").unwrap();
    std::fs::write(out.join("notes.txt"), "my notes").unwrap();
    std::fs::write(out.join("config.toml"), "[server]\nport = 8080\n").unwrap();
    let before = contents(&out);
    let error = RunDir::start(Some(&out), "id").unwrap_err();
    assert!(matches!(error, RunDirError::NotARunDir { ref file, .. } if file == "notes.txt"));
    assert!(error.is_usage());
    let text = error.to_string();
    assert!(text.contains(&out.display().to_string()), "{text}");
    assert!(text.contains("notes.txt") && text.contains("not a peakhour run directory"));
    // A config.toml that is not a run's is someone else's too.
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("config.toml"), "[server]\nport = 8080\n").unwrap();
    std::fs::write(theirs.join("report.html"), "theirs").unwrap();
    let error = RunDir::check_unused(&theirs).unwrap_err();
    assert!(matches!(error, RunDirError::NotARunDir { ref file, .. } if file == "config.toml"));
    // A report.html alone is not a run either.
    std::fs::remove_file(theirs.join("config.toml")).unwrap();
    let error = RunDir::check_unused(&theirs).unwrap_err();
    assert!(matches!(error, RunDirError::NotARunDir { ref file, .. } if file == "report.html"));
    // merge refuses before reading its shards (here: none exist).
    let error = merge_runs(&[tmp.path().join("no-such-shard")], &out).unwrap_err();
    assert!(matches!(error, RunDirError::NotARunDir { .. }), "{error}");
    assert_eq!(contents(&out), before, "nothing in it changed");
}

#[test]
fn issue_26_item_5_a_directory_holding_a_run_is_refused_for_run_and_merge() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for entry in std::fs::read_dir(fixture("run-small")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), run.join(entry.file_name())).unwrap();
    }
    let before = contents(&run);
    let error = RunDir::start(Some(&run), "id").unwrap_err();
    assert!(matches!(error, RunDirError::Taken { ref file, .. } if file == "summary.json"));
    assert!(
        error
            .to_string()
            .contains("already holds a run (summary.json)"),
        "{error}"
    );
    let error = merge_runs(&[fixture("run-small")], &run).unwrap_err();
    assert!(matches!(error, RunDirError::Taken { .. }), "{error}");
    // A killed run (its journal, no summary) is a run too.
    let killed = tmp.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    std::fs::write(killed.join("intervals.jsonl"), "{}\n").unwrap();
    std::fs::write(killed.join("latency.hlog"), "").unwrap();
    let error = RunDir::check_unused(&killed).unwrap_err();
    assert!(matches!(error, RunDirError::Taken { ref file, .. } if file == "intervals.jsonl"));
    assert_eq!(contents(&run), before);
}
