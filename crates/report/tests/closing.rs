//! What commands print when they are done, over a recorded run (the
//! `run-small` fixture: a run against the lab with the monitor beside it).
#![allow(clippy::unwrap_used)]

use std::io::BufReader;
use std::path::Path;
use std::time::Duration;

use peakhour_analysis::Summary;
use peakhour_analysis::monitor::{MetricTable, MonitorCost, MonitorReport};
use peakhour_report::{
    TextFormat, render_monitor_session, render_run_end, render_summary_as, render_terminal,
};

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
    let text = render_run_end(&summary, true, dir, None);
    assert_eq!(
        text,
        format!("{}results: runs/x\n", render_terminal(&summary))
    );
    summary.panics = 2;
    let text = render_run_end(&summary, false, dir, None);
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

#[test]
fn issue_26_item_9_a_skipped_tls_check_shows_in_the_run_end_and_every_report_format() {
    let mut summary = summary();
    let shortcut = "TLS certificates were not verified (--insecure-skip-tls-verify)";
    for format in [TextFormat::Text, TextFormat::Markdown, TextFormat::Csv] {
        let text = render_summary_as(&summary, format).unwrap();
        assert!(!text.contains("--insecure-skip-tls-verify"), "{text}");
    }
    summary.security_shortcuts = vec![shortcut.to_owned()];
    let end = render_run_end(&summary, true, Path::new("runs/x"), None);
    assert!(
        end.contains(&format!("WARNING: security shortcut: {shortcut}")),
        "{end}"
    );
    for format in [TextFormat::Text, TextFormat::Markdown, TextFormat::Csv] {
        let text = render_summary_as(&summary, format).unwrap();
        assert!(text.contains(shortcut), "{format:?}: {text}");
    }
}

#[test]
fn issue_26_item_9_a_run_whose_results_were_not_written_says_so_after_its_figures() {
    let summary = summary();
    let why = "runs/x/record.json: No space left on device (os error 28)";
    let text = render_run_end(&summary, true, Path::new("runs/x"), Some(why));
    assert!(text.starts_with(&render_terminal(&summary)), "{text}");
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("results: NOT written to runs/x"), "{last}");
    assert!(last.contains(why), "{last}");
}
