//! Issue 11, point 4, against a real lab: a run killed with SIGKILL leaves
//! its closed intervals on disk and `peakhour report` rebuilds a summary
//! marked interrupted; SIGTERM and SIGHUP end a run as SIGINT does (results
//! kept, exit code 130); a second SIGINT exits at once, keeping what was
//! already written.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{PEAKHOUR, peakhour, start_lab};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Starts a two-minute run against the lab, 1-second intervals.
fn start_run(lab_dir: &str, run_dir: &Path) -> Child {
    Command::new(PEAKHOUR)
        .args(["run", "--profile", "mmb-medium", "--lab-dir", lab_dir])
        .args(["--users", "6", "--speed", "400", "--duration", "120s"])
        .args(["--ramp-up", "2s", "--interval", "1s", "--out"])
        .arg(run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Interval lines in the run's journal (its first line is the head).
fn journaled_intervals(run_dir: &Path) -> usize {
    std::fs::read_to_string(run_dir.join("intervals.jsonl"))
        .map_or(0, |text| text.lines().count().saturating_sub(1))
}

/// Waits (at most a minute: a bound, not a timing assertion) until the run
/// has journaled `n` closed intervals.
fn wait_for_intervals(run_dir: &Path, n: usize) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while journaled_intervals(run_dir) < n {
        assert!(
            Instant::now() < give_up,
            "the run journaled {} intervals in a minute",
            journaled_intervals(run_dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Actions done or failed in the steady phase, all kinds.
fn steady_actions(summary: &serde_json::Value) -> u64 {
    let actions = summary["actions"].as_object().unwrap();
    actions
        .values()
        .map(|a| a["count"].as_u64().unwrap() + a["errors"].as_u64().unwrap())
        .sum()
}

fn summary(run_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(peakhour_report::SUMMARY_SCHEMA).unwrap();
    let problems: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    summary
}

#[test]
fn issue_11_sigkill_mid_run_leaves_closed_intervals_and_report_rebuilds_an_interrupted_summary() {
    let (_dir, lab) = start_lab(6);
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let mut child = start_run(&lab.status.dir, &run_dir);
    // Into the steady phase (it starts at 2 s), then kill without warning.
    wait_for_intervals(&run_dir, 5);
    signal(&child, Signal::SIGKILL);
    child.wait().unwrap();
    let on_disk = journaled_intervals(&run_dir);
    assert!(on_disk >= 5, "{on_disk} intervals on disk");
    assert!(!run_dir.join("summary.json").exists());
    let csv = std::fs::read_to_string(run_dir.join("intervals.csv")).unwrap();
    // At least a row per closed interval but the last, which the kill may
    // have caught between the journal and the CSV.
    assert!(
        csv.lines().count() >= on_disk,
        "{on_disk} intervals:\n{csv}"
    );
    assert!(
        std::fs::metadata(run_dir.join("latency.hlog"))
            .unwrap()
            .len()
            > 0
    );
    assert!(std::fs::metadata(run_dir.join("monitor.csv")).is_ok());

    let report = peakhour(&["report", run_dir.to_str().unwrap()]);
    assert!(report.status.success());
    let stderr = String::from_utf8_lossy(&report.stderr);
    assert!(stderr.contains("rebuilt from intervals.jsonl"), "{stderr}");
    let summary = summary(&run_dir);
    assert_eq!(summary["interrupted"], true);
    assert_eq!(summary["recovered"]["from"], "intervals.jsonl");
    let rebuilt = summary["recovered"]["intervals"].as_u64().unwrap();
    assert!(rebuilt >= on_disk as u64, "{rebuilt} < {on_disk}");
    assert!(summary["steady"]["intervals"].as_u64().unwrap() >= 1);
    assert!(steady_actions(&summary) > 0, "what was measured is kept");
    assert!(run_dir.join("report.html").exists());
    assert!(run_dir.join("record.json").exists());
    assert!(
        !run_dir.join("intervals.jsonl").exists(),
        "record.json supersedes it"
    );
}

#[test]
fn issue_11_sigterm_and_sighup_end_a_run_like_sigint() {
    let (_dir, lab) = start_lab(6);
    let out = tempfile::tempdir().unwrap();
    for stop in [Signal::SIGTERM, Signal::SIGHUP] {
        let run_dir = out.path().join(stop.as_str());
        let child = start_run(&lab.status.dir, &run_dir);
        wait_for_intervals(&run_dir, 4);
        signal(&child, stop);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "{stop}: {stderr}");
        assert!(stderr.contains("stopping:"), "{stop}: {stderr}");
        let summary = summary(&run_dir);
        assert_eq!(summary["interrupted"], true, "{stop}");
        assert!(
            summary.get("recovered").is_none(),
            "{stop}: written by the run itself"
        );
        assert!(
            steady_actions(&summary) > 0,
            "{stop}: what was measured is kept"
        );
        assert!(!run_dir.join("intervals.jsonl").exists());
    }
}

#[test]
fn issue_11_a_second_sigint_exits_at_once_keeping_what_was_written() {
    let (_dir, lab) = start_lab(6);
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let mut child = start_run(&lab.status.dir, &run_dir);
    wait_for_intervals(&run_dir, 4);
    signal(&child, Signal::SIGINT);
    // The second Ctrl-C once the first has been taken (two signals sent
    // back to back may be delivered as one).
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no `stopping:` in {seen}"
        );
        seen.push_str(&line);
        if line.starts_with("stopping:") {
            break;
        }
    }
    signal(&child, Signal::SIGINT);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    seen.push_str(&rest);
    eprintln!("{seen}");
    assert_eq!(status.code(), Some(130));
    assert!(seen.contains("second signal: exiting now"), "{seen}");
    // What was written stays, whole: the journal's intervals (or, had the
    // results been written already, the results), and report reads it.
    assert!(journaled_intervals(&run_dir) >= 4 || run_dir.join("summary.json").exists());
    let leftovers: Vec<_> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    eprintln!("left: {leftovers:?}");
    let report = peakhour(&["report", run_dir.to_str().unwrap()]);
    assert!(report.status.success());
    assert_eq!(summary(&run_dir)["interrupted"], true);
}
