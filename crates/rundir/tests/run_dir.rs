//! The run directory read and written through [`RunDir`]: config.toml
//! round-trips as a typed struct, files that do not parse are errors that
//! name the file and the field, and the report crate's fixtures (run
//! directories recorded against the lab) load with their monitor view.
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, IntervalRecorder, Outcome, Phase, RecorderConfig, RunMeta, RunRecord, Summary,
};
use peakhour_rundir::{
    MonitorSection, RunConfig, RunDir, RunDirError, RunFile, RunSection, TargetSection,
};
use peakhour_workload::{HumanDuration, Overrides, Plan, builtin};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures")
        .join(name)
}

/// A copy of a fixture run directory, to change files in.
fn copy_fixture(name: &str, into: &Path) -> RunDir {
    let dir = into.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    RunDir::new(dir)
}

fn secs(s: u64) -> HumanDuration {
    HumanDuration(Duration::from_secs(s))
}

fn config() -> RunConfig {
    let profile = builtin("mmb-medium").unwrap().profile().unwrap();
    let overrides = Overrides {
        users: Some(10),
        ..Overrides::default()
    };
    let plan = Plan::resolve(&profile, &overrides).unwrap();
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
            smtp: "127.0.0.1:31025 (STARTTLS)".into(),
            security_shortcuts: Vec::new(),
            lab: None,
            source_addresses: Vec::new(),
        },
        MonitorSection {
            interval: secs(1),
            high_average_window: HumanDuration(Duration::from_millis(1500)),
            baseline: secs(0),
        },
        &plan,
    )
    .unwrap()
}

/// A small record: reads of 10 ms in the steady phase.
fn record() -> RunRecord {
    let mut rec = IntervalRecorder::new(RecorderConfig {
        interval: Duration::from_secs(5),
        late_start_threshold: Duration::from_millis(50),
    })
    .unwrap();
    rec.enter_phase(Phase::Steady, Duration::ZERO);
    for i in 1..=20 {
        let end = Duration::from_millis(500 * i);
        let timing = ActionTiming {
            intended_start: end - Duration::from_millis(10),
            actual_start: end - Duration::from_millis(10),
            end,
        };
        rec.record_action("read", timing, Outcome::Ok);
    }
    let intervals = rec.finish(Duration::from_secs(10));
    let meta = RunMeta::new("r1", "mmb-medium", 10, 1, "2026-05-01T12:00:00Z");
    RunRecord::new(meta, intervals, Default::default())
}

fn parse_error(result: Result<impl std::fmt::Debug, RunDirError>) -> (PathBuf, String, String) {
    match result.unwrap_err() {
        RunDirError::Parse {
            path,
            field,
            message,
        } => (path, field, message),
        other => panic!("not a parse error: {other}"),
    }
}

#[test]
fn config_toml_round_trips_with_the_plan_outside_monitor() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path().join("run")).unwrap();
    let config = config();
    dir.write_config(&config).unwrap();
    let read = dir.read_config().unwrap().unwrap();
    assert_eq!(read.config, config);
    let text = &read.text;
    assert!(text.starts_with(&format!(
        "# peakhour {} run configuration (no credentials are stored)\n",
        env!("CARGO_PKG_VERSION")
    )));
    // Regression: the plan's top-level keys were written after [monitor],
    // so that TOML read them as the monitor's (monitor.seed, monitor.users).
    let table: toml::Table = toml::from_str(text).unwrap();
    let monitor = table["monitor"].as_table().unwrap();
    assert_eq!(
        monitor.keys().collect::<Vec<_>>(),
        ["interval", "high_average_window", "baseline"]
    );
    assert_eq!(table["seed"].as_integer(), Some(1));
    assert_eq!(table["users"].as_integer(), Some(10));
    assert_eq!(table["profile"]["name"].as_str(), Some("mmb-medium"));
    assert_eq!(table["run"]["ramp_up"].as_str(), Some("3s"));
    assert_eq!(
        table["monitor"]["high_average_window"].as_str(),
        Some("1500ms")
    );
    // The plan keeps its own order: seed first, the profile's name first.
    let seed = text.find("\nseed = 1\n").unwrap();
    assert!(seed < text.find("[run]").unwrap(), "{text}");
    let profile = text.find("[profile]\nname = \"mmb-medium\"").unwrap();
    assert!(profile > text.find("[monitor]").unwrap(), "{text}");
    assert!(!text.to_ascii_lowercase().contains("password"));
}

#[test]
fn config_toml_written_before_the_fix_still_reads() {
    let dir = RunDir::new(fixture("run-small"));
    let config = dir.read_config().unwrap().unwrap();
    assert_eq!(config.config.target.imap, "127.0.0.1:31143");
    assert_eq!(config.config.run.duration, secs(20));
    assert_eq!(config.config.monitor.high_average_window, secs(30));
    assert!(config.text.contains("[profile.users]"));
}

#[test]
fn a_bad_config_value_names_the_file_and_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_fixture("run-small", tmp.path());
    let path = dir.file(RunFile::Config);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("ramp_up = \"3s\"", "ramp_up = \"3 parsecs\""),
    )
    .unwrap();
    let (file, field, message) = parse_error(dir.read_config());
    assert_eq!(file, path);
    assert_eq!(field, "run.ramp_up");
    assert!(message.contains("line 3"), "{message}");
    // The report does not go on without it.
    let (_, field, _) = parse_error(dir.load());
    assert_eq!(field, "run.ramp_up");

    std::fs::write(&path, text.replace("[target]\n", "[target\n")).unwrap();
    let err = dir.read_config().unwrap_err().to_string();
    assert!(err.contains("config.toml: field `.`"), "{err}");
}

#[test]
fn a_summary_that_does_not_parse_is_an_error_not_recomputed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_fixture("run-small", tmp.path());
    let path = dir.file(RunFile::Summary);
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    summary["delivery"]["lost"] = "none".into();
    std::fs::write(&path, summary.to_string()).unwrap();
    for result in [dir.read_summary().map(|_| ()), dir.load().map(|_| ())] {
        let (file, field, message) = parse_error(result);
        assert_eq!(file, path);
        assert_eq!(field, "delivery.lost");
        assert!(message.contains("invalid type"), "{message}");
    }
    let shown = parse_error_text(dir.read_summary());
    assert!(
        shown.contains("summary.json: field `delivery.lost`: invalid type"),
        "{shown}"
    );
}

fn parse_error_text<T: std::fmt::Debug>(result: Result<T, RunDirError>) -> String {
    result.unwrap_err().to_string()
}

#[test]
fn a_directory_without_a_record_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::new(tmp.path());
    match dir.load().unwrap_err() {
        RunDirError::NotARun { path, .. } => assert!(path.ends_with("record.json")),
        other => panic!("{other}"),
    }
    assert!(!dir.holds_run());
    assert!(dir.read_config().unwrap().is_none());
    assert!(dir.read_host().unwrap().is_none());
    assert!(dir.read_monitor().unwrap().is_none());
}

#[test]
fn fixtures_load_with_their_monitor_view_and_configured_settings() {
    for name in ["run-small", "run-small-maildir"] {
        let dir = RunDir::new(fixture(name));
        let run = dir.load().unwrap();
        let on_disk: Summary =
            serde_json::from_str(&std::fs::read_to_string(dir.file(RunFile::Summary)).unwrap())
                .unwrap();
        assert_eq!(run.summary, on_disk, "summary.json is used as it is");
        assert!(run.host.is_some());
        let monitor = run.monitor.as_ref().unwrap();
        assert_eq!(monitor.charts.len(), 5);
        assert!(monitor.table.len() > 20);
        let configured: Vec<&str> = monitor
            .config
            .iter()
            .filter(|(k, _)| k.starts_with("configured "))
            .map(|(k, v)| {
                assert!(!v.is_empty());
                k.as_str()
            })
            .collect();
        assert_eq!(
            configured,
            [
                "configured interval",
                "configured high average window",
                "configured baseline"
            ]
        );
        let input = run.report_input();
        assert!(input.config_toml.unwrap().contains("[target]"));
    }
}

#[test]
fn missing_monitor_findings_are_computed_from_monitor_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_fixture("run-small", tmp.path());
    let recorded = dir.load().unwrap().summary;
    assert!(!recorded.resources.is_empty());
    let path = dir.file(RunFile::Summary);
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    summary["resources"] = serde_json::json!([]);
    summary.as_object_mut().unwrap().remove("bottleneck");
    std::fs::write(&path, summary.to_string()).unwrap();
    let computed = dir.load().unwrap().summary;
    let metrics =
        |s: &Summary| -> Vec<String> { s.resources.iter().map(|r| r.metric.clone()).collect() };
    assert_eq!(metrics(&computed), metrics(&recorded));
    assert!(computed.bottleneck.is_some());
}

#[test]
fn results_written_read_back_and_match_the_committed_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path().join("a/b")).unwrap();
    assert!(!dir.holds_run());
    let record = record();
    let summary = Summary::compute(&record).unwrap();
    dir.write_results(&record, &summary).unwrap();
    assert!(dir.holds_run());
    for file in [
        RunFile::Summary,
        RunFile::Record,
        RunFile::Intervals,
        RunFile::Errors,
        RunFile::Hlog,
    ] {
        assert!(dir.has(file), "{}", file.name());
    }
    assert_eq!(dir.read_summary().unwrap(), summary);
    assert_eq!(dir.read_record().unwrap(), record);

    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/summary.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.file(RunFile::Summary)).unwrap())
            .unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&written)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_report_is_written_from_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_fixture("run-small", tmp.path());
    std::fs::remove_file(dir.file(RunFile::Report)).unwrap();
    let path = dir.write_report().unwrap();
    assert_eq!(path, dir.file(RunFile::Report));
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg id=\"timeline-cpu\""));
    assert!(html.contains("Logical Drive Utilization"));
}
