//! What commands print when they are done, over a recorded run (the
//! `run-small` fixture: a run against the lab with the monitor beside it).
#![allow(clippy::unwrap_used)]

use std::io::BufReader;
use std::path::Path;
use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_monitor::{MetricTable, MonitorCost, MonitorReport};
use peakhour_report::{render_monitor_session, render_run_end, render_terminal};

fn fixture(file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/run-small")
        .join(file)
}

fn summary() -> Summary {
    serde_json::from_str(&std::fs::read_to_string(fixture("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_run_ends_with_its_summary_its_notes_and_where_the_results_are() {
    let mut summary = summary();
    let dir = Path::new("runs/x");
    let text = render_run_end(&summary, true, dir);
    assert_eq!(
        text,
        format!("{}results: runs/x\n", render_terminal(&summary))
    );
    summary.panics = 2;
    let text = render_run_end(&summary, false, dir);
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    assert_eq!(tail[0], "results: runs/x");
    assert!(
        tail[1].starts_with("FAILED: 2 of peakhour's tasks panicked"),
        "{text}"
    );
    assert_eq!(
        tail[2],
        "deliveries were not reconciled (the run was interrupted)"
    );
}

#[test]
fn a_monitor_session_ends_with_what_was_watched_the_findings_and_the_cost() {
    let csv = std::fs::File::open(fixture("monitor.csv")).unwrap();
    let table = MetricTable::from_csv(BufReader::new(csv), 100_000).unwrap();
    let samples = table.len();
    let report = MonitorReport {
        table,
        cost: MonitorCost {
            samples: samples as u64,
            total_cpu: Duration::from_millis(30),
            max_sample_cpu: Duration::from_millis(2),
            wall: Duration::from_secs(29),
        },
        errors: 0,
        last_error: None,
        dropped_columns: Vec::new(),
    };
    let text = render_monitor_session("this host", &report, Duration::from_secs(30));
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        format!("peakhour monitor · this host · {samples} samples over 29 s")
    );
    assert!(text.contains("monitor.csv, whole run"), "{text}");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("monitor: "),
        "{text}"
    );
}
