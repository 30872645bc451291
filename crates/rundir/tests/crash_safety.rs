//! Issue 11, point 4: a run's closed intervals reach the disk as they close,
//! and `RunDir::recover` rebuilds a killed run's record and summary from
//! them, marked interrupted. (The kill itself is in
//! `crates/cli/tests/crash_safety.rs`, against the lab.)
#![allow(clippy::unwrap_used, clippy::float_cmp)]

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use peakhour_analysis::{
    ActionTiming, IntervalRecord, IntervalRecorder, Outcome, Phase, RecorderConfig, RunMeta,
    Summary,
};
use peakhour_engine::Observer as _;
use peakhour_rundir::{RunDir, RunDirError, RunFile};

/// Eight closed 5-second intervals: 30 s of steady phase, then a drain, with
/// a read ending every 500 ms (10 ms each; every tenth refused as
/// `imap.NO`, which lands in the interval its end starts), and 4 recipients
/// submitted and 3 delivered every 5 s.
fn closed_intervals() -> Vec<IntervalRecord> {
    let mut rec = IntervalRecorder::new(RecorderConfig {
        interval: Duration::from_secs(5),
        late_start_threshold: Duration::from_millis(50),
    })
    .unwrap();
    rec.enter_phase(Phase::Steady, Duration::ZERO);
    for i in 1..=80 {
        let end = Duration::from_millis(500 * i);
        if i == 60 {
            rec.enter_phase(Phase::Drain, Duration::from_secs(30));
        }
        let timing = ActionTiming {
            intended_start: end - Duration::from_millis(10),
            actual_start: end - Duration::from_millis(10),
            end,
        };
        let outcome = if i % 10 == 0 {
            Outcome::Error("imap.NO")
        } else {
            Outcome::Ok
        };
        rec.record_action("read", timing, outcome);
        if i % 10 == 1 {
            rec.count(end, "recipients_submitted", 4);
            rec.count(end, "recipients_delivered", 3);
        }
    }
    rec.advance(Duration::from_secs(40));
    rec.closed().to_vec()
}

fn meta() -> RunMeta {
    let mut meta = RunMeta::new("r-killed", "mmb-medium", 10, 7, "2026-05-01T12:00:00Z");
    meta.interval = Duration::from_secs(5);
    meta.interrupted = true;
    meta
}

/// A directory whose run journaled `intervals` and was then killed.
fn killed_run(tmp: &Path, intervals: &[IntervalRecord]) -> RunDir {
    let dir = RunDir::create(tmp.join("run")).unwrap();
    let mut journal = dir.journal().unwrap();
    journal.started(&meta());
    for interval in intervals {
        journal.interval_closed(interval);
    }
    journal.finish().unwrap();
    dir
}

fn summary_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/summary.schema.json");
    let schema = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

#[test]
fn issue_11_closed_intervals_are_on_disk_in_every_journal_file_before_the_run_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let intervals = closed_intervals();
    assert_eq!(intervals.len(), 8);
    let dir = killed_run(tmp.path(), &intervals);
    assert!(!dir.holds_run(), "no summary before the run ends");
    let journal = std::fs::read_to_string(dir.file(RunFile::Journal)).unwrap();
    assert_eq!(
        journal.lines().count(),
        1 + 8,
        "the head, then one line per interval"
    );
    let csv = std::fs::read_to_string(dir.file(RunFile::Intervals)).unwrap();
    assert_eq!(
        csv.lines().next(),
        Some(peakhour_report::INTERVALS_CSV_HEADER)
    );
    assert_eq!(csv.lines().count(), 1 + 8, "one action per interval");
    let errors = std::fs::read_to_string(dir.file(RunFile::Errors)).unwrap();
    assert_eq!(
        errors.lines().count(),
        1 + 7,
        "one imap.NO per interval from 5 s"
    );
    // The hlog as written incrementally is the hlog of those intervals.
    let mut whole = Vec::new();
    let record = peakhour_analysis::RunRecord::new(meta(), intervals, Default::default());
    peakhour_report::write_hlog(&record, &mut whole).unwrap();
    assert_eq!(std::fs::read(dir.file(RunFile::Hlog)).unwrap(), whole);
}

#[test]
fn issue_11_report_rebuilds_an_interrupted_summary_from_the_journal_of_a_killed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let intervals = closed_intervals();
    let dir = killed_run(tmp.path(), &intervals);
    // The kill came in the middle of the next line.
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.file(RunFile::Journal))
        .unwrap();
    journal
        .write_all(br#"{"start_us":40000000,"length_us":500"#)
        .unwrap();

    let recovery = dir.recover().unwrap().unwrap();
    assert_eq!(recovery.from, "intervals.jsonl");
    assert_eq!(recovery.intervals, 8);
    assert_eq!(recovery.measured_until_s, 40.0);
    assert!(recovery.torn_tail);

    let summary = dir.read_summary().unwrap();
    assert!(summary.interrupted);
    assert_eq!(summary.recovered.as_ref(), Some(&recovery));
    assert_eq!(summary.steady.length_s, 30.0);
    let read = &summary.actions["read"];
    assert_eq!((read.count, read.errors), (54, 5));
    // Deliveries are the whole run's, as far as the closed intervals counted.
    assert_eq!(summary.delivery.submitted_recipients, 8 * 4);
    assert_eq!(summary.delivery.delivered_recipients, 8 * 3);
    assert!(!summary.delivery.reconciled);
    assert!(summary.delivery.lost_recipients.is_empty());
    // Like any run's: the summary is the contract, the journal is gone, and
    // the rebuilt directory loads, reports and does not rebuild again.
    let written =
        serde_json::from_str(&std::fs::read_to_string(dir.file(RunFile::Summary)).unwrap())
            .unwrap();
    let problems: Vec<String> = summary_schema()
        .iter_errors(&written)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(!dir.has(RunFile::Journal));
    assert_eq!(dir.read_record().unwrap().intervals, intervals);
    dir.write_report().unwrap();
    assert_eq!(dir.recover().unwrap(), None);
}

#[test]
fn issue_11_a_run_killed_while_writing_its_results_is_rebuilt_from_record_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path().join("run")).unwrap();
    let mut meta = meta();
    meta.interrupted = false;
    let record = peakhour_analysis::RunRecord::new(meta, closed_intervals(), Default::default());
    let summary = Summary::compute(&record).unwrap();
    dir.write_results(&record, &summary).unwrap();
    std::fs::remove_file(dir.file(RunFile::Summary)).unwrap();

    let recovery = dir.recover().unwrap().unwrap();
    assert_eq!(recovery.from, "record.json");
    let rebuilt = dir.read_summary().unwrap();
    assert!(rebuilt.interrupted);
    assert_eq!(rebuilt.actions, summary.actions);
}

#[test]
fn issue_11_a_damaged_journal_line_before_the_last_is_an_error_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = killed_run(tmp.path(), &closed_intervals());
    let text = std::fs::read_to_string(dir.file(RunFile::Journal)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{not json";
    std::fs::write(dir.file(RunFile::Journal), lines.join("\n") + "\n").unwrap();
    match dir.recover() {
        Err(RunDirError::Parse { path, field, .. }) => {
            assert_eq!(path, dir.file(RunFile::Journal));
            assert_eq!(field, "line 4");
        }
        other => panic!("not a parse error: {other:?}"),
    }
    assert!(!dir.holds_run());
}

#[test]
fn issue_11_a_directory_with_neither_journal_nor_record_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path().join("empty")).unwrap();
    assert!(matches!(dir.recover(), Err(RunDirError::NotARun { .. })));
}
