//! A distributed run's start and cancel against the lab (issue 17, point 2;
//! seed 001's PALM halted every workstation when a test was cancelled):
//! SIGTERM to every shard mid-run leaves each shard's results written and
//! marked, and their merge marked too; a shard cancelled while it waits for
//! `--start-at` ends interrupted and empty without one of its users having
//! logged on; a shard started after `--start-at` records by how much, and
//! the merge marks it.
//!
//! No assertion reads the clock: waits are bounded (a test that hangs
//! fails), and lateness is checked against a margin set in the past.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{PEAKHOUR, peakhour, start_lab};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Users in the lab and in every run.
const USERS: &str = "6";

/// `--start-at`, `offset` from now (negative: in the past).
fn start_at(offset: chrono::Duration) -> String {
    (chrono::Utc::now() + offset).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Starts shard `number` (1 or 2) of 2 of a mmb-medium run, 1-second intervals.
fn start_shard(lab_dir: &str, out: &Path, number: u32, start_at: &str, shape: &[&str]) -> Child {
    Command::new(PEAKHOUR)
        .args(["run", "--profile", "mmb-medium", "--lab-dir", lab_dir])
        .args(["--users", USERS, "--seed", "7", "--speed", "400"])
        .args(["--interval", "1s", "--shard", &format!("{number}/2")])
        .args(["--start-at", start_at, "--out"])
        .arg(out.join(format!("shard-{number}")))
        .args(shape)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the shard to end; its output, echoed into the test's log.
fn finish(child: Child) -> Output {
    let output = child.wait_with_output().unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Closed steady intervals in the run's journal in which an action ended.
fn journaled_steady_actions(run_dir: &Path) -> usize {
    std::fs::read_to_string(run_dir.join("intervals.jsonl")).map_or(0, |text| {
        text.lines()
            .filter(|l| l.contains(r#""phase":"steady""#) && !l.contains(r#""actions":{}"#))
            .count()
    })
}

/// Waits (at most two minutes: a bound, not a timing assertion) until
/// every run has journaled a steady interval with actions in it: on a busy
/// machine the first seconds may see none.
fn wait_for_steady_actions(run_dirs: &[PathBuf]) {
    let give_up = Instant::now() + Duration::from_secs(120);
    while run_dirs.iter().any(|d| journaled_steady_actions(d) == 0) {
        assert!(Instant::now() < give_up, "no steady actions in two minutes");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(peakhour_report::SUMMARY_SCHEMA).unwrap();
    let problems: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{}: {problems:#?}", dir.display());
    summary
}

/// Each action's (done, failed) in the steady phase.
fn action_counts(summary: &serde_json::Value) -> Vec<(String, u64, u64)> {
    summary["actions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, a)| {
            let n = |key: &str| a[key].as_u64().unwrap();
            (name.clone(), n("count"), n("errors"))
        })
        .collect()
}

fn merge(shards: &[PathBuf], out: &Path) -> (Output, serde_json::Value) {
    let mut args = vec!["merge".to_owned()];
    args.extend(shards.iter().map(|d| d.to_str().unwrap().to_owned()));
    args.extend(["--out".to_owned(), out.to_str().unwrap().to_owned()]);
    let output = peakhour(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(output.status.success());
    (output, summary(out))
}

/// The body of a GET of `/metrics` at `address` (HTTP/1.0: no chunks).
fn scrape(address: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn issue_17_sigterm_to_every_shard_leaves_each_written_and_marked_and_the_merge_marked() {
    let (_dir, lab) = start_lab(6);
    let out = tempfile::tempdir().unwrap();
    let at = start_at(chrono::Duration::seconds(4));
    let shape = ["--duration", "120s", "--ramp-up", "2s"];
    let shards: Vec<Child> = (1..=2)
        .map(|i| start_shard(&lab.status.dir, out.path(), i, &at, &shape))
        .collect();
    let dirs: Vec<PathBuf> = (0..2)
        .map(|i| out.path().join(format!("shard-{}", i + 1)))
        .collect();
    // Into the steady phase (it starts 2 s after --start-at), then cancel all.
    wait_for_steady_actions(&dirs);
    for child in &shards {
        kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    }
    let mut summaries = Vec::new();
    for (child, dir) in shards.into_iter().zip(&dirs) {
        let output = finish(child);
        assert_eq!(output.status.code(), Some(130), "{}", dir.display());
        assert!(String::from_utf8_lossy(&output.stderr).contains("stopping:"));
        let shard = summary(dir);
        assert_eq!(shard["interrupted"], true);
        assert!(
            shard.get("recovered").is_none(),
            "written by the shard itself"
        );
        assert_eq!(shard["meta"]["shards"][0]["interrupted"], true);
        assert!(shard["steady"]["intervals"].as_u64().unwrap() >= 1);
        assert!(
            action_counts(&shard).iter().any(|(_, n, _)| *n > 0),
            "what was measured is kept: {}",
            shard["actions"]
        );
        let csv = std::fs::read_to_string(dir.join("intervals.csv")).unwrap();
        assert!(csv.lines().count() > 3, "closed intervals:\n{csv}");
        assert!(dir.join("record.json").exists());
        assert!(
            !dir.join("intervals.jsonl").exists(),
            "record.json supersedes it"
        );
        summaries.push(shard);
    }

    let merged_dir = out.path().join("merged");
    let (output, merged) = merge(&dirs, &merged_dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for index in 0..2 {
        assert!(
            stderr.contains(&format!(
                "shard {}/2 was interrupted: its figures are partial",
                index + 1
            )),
            "{stderr}"
        );
        assert_eq!(merged["meta"]["shards"][index]["interrupted"], true);
    }
    assert_eq!(merged["interrupted"], true);
    assert_eq!(merged["meta"]["merged"], true);
    // Each shard's measurements, all of them, and nothing else.
    let mut expected: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for (name, n, e) in summaries.iter().flat_map(action_counts) {
        let sum = expected.entry(name).or_default();
        *sum = (sum.0 + n, sum.1 + e);
    }
    let measured: std::collections::BTreeMap<String, (u64, u64)> = action_counts(&merged)
        .into_iter()
        .map(|(name, n, e)| (name, (n, e)))
        .collect();
    assert_eq!(measured, expected);
    assert!(measured.values().any(|(n, _)| *n > 0));
    for file in [
        "record.json",
        "intervals.csv",
        "latency.hlog",
        "report.html",
    ] {
        assert!(merged_dir.join(file).exists(), "{file} missing");
    }
}

#[test]
fn issue_17_sigterm_while_a_shard_waits_leaves_an_interrupted_empty_run_and_issue_31_item_8_its_live_phase_is_waiting()
 {
    let (_dir, lab) = start_lab(6);
    let out = tempfile::tempdir().unwrap();
    let at = start_at(chrono::Duration::minutes(10));
    // Shard 2 of 2 runs user2, user4, user6; the check before the load logs
    // on as user1.
    let live = ["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "0s"];
    let mut child = start_shard(&lab.status.dir, out.path(), 2, &at, &live);
    let (lines_tx, lines) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            eprintln!("{line}");
            let _ = lines_tx.send(line);
        }
    });
    // The shard says it waits once a SIGTERM would be taken.
    let give_up = Instant::now() + Duration::from_secs(120);
    let mut metrics_at = None;
    loop {
        let line = lines
            .recv_timeout(give_up.saturating_duration_since(Instant::now()))
            .expect("the shard never said it waits for --start-at");
        if let Some(rest) = line.strip_prefix("live metrics at http://") {
            metrics_at = rest.split('/').next().map(str::to_owned);
        }
        if line.starts_with("waiting ") {
            assert!(line.contains("for --start-at"), "{line}");
            break;
        }
    }
    // Issue 31, item 8: while it waits, the live phase is `waiting`.
    let metrics_at = metrics_at.expect("the shard never said where its live metrics are");
    let scraped = scrape(&metrics_at);
    assert!(
        scraped.contains("peakhour_phase{peakhour_phase=\"waiting\"} 1"),
        "{scraped}"
    );
    assert!(
        scraped.contains("peakhour_phase{peakhour_phase=\"logon\"} 0"),
        "{scraped}"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(output.status.code(), Some(130));

    let dir = out.path().join("shard-2");
    let shard = summary(&dir);
    assert_eq!(shard["interrupted"], true);
    assert_eq!(shard["meta"]["shards"][0]["interrupted"], true);
    assert!(shard["meta"]["shards"][0].get("started_late_ms").is_none());
    for (name, n, e) in action_counts(&shard) {
        assert_eq!((n, e), (0, 0), "{name} ran");
    }
    assert_eq!(shard["delivery"]["submitted_recipients"], 0);
    // Dovecot logs every logon: only the check's, none of the shard's users.
    let log =
        std::fs::read_to_string(peakhour_lab::Layout::new(&lab.status.dir).dovecot_log()).unwrap();
    let logons: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Login: user=<"))
        .collect();
    assert!(!logons.is_empty(), "the check's logon is logged:\n{log}");
    for line in &logons {
        assert!(
            line.contains("user=<user1@") || line.contains("user=<user1>"),
            "a shard's user logged on: {line}"
        );
    }
}

#[test]
fn issue_17_a_shard_started_after_its_start_records_how_late_and_the_merge_marks_it() {
    const LATE_BY_AT_LEAST_MS: u64 = 30_000;
    let (_dir, lab) = start_lab(6);
    let out = tempfile::tempdir().unwrap();
    // The agreed start passed half a minute ago: both shards are late by at
    // least that much, however long they take to get going.
    let at = start_at(-chrono::Duration::milliseconds(LATE_BY_AT_LEAST_MS as i64));
    let shape = ["--duration", "3s", "--ramp-up", "1s", "--drain", "3s"];
    let shards: Vec<Child> = (1..=2)
        .map(|i| start_shard(&lab.status.dir, out.path(), i, &at, &shape))
        .collect();
    let mut dirs = Vec::new();
    for (number, child) in (1..).zip(shards) {
        let output = finish(child);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("warning: shard {number}/2 began its logon phase ")),
            "the shard says it is late: {stderr}"
        );
        assert!(!stderr.contains("waiting "), "{stderr}");
        let dir = out.path().join(format!("shard-{number}"));
        let late = summary(&dir)["meta"]["shards"][0]["started_late_ms"]
            .as_u64()
            .unwrap();
        assert!(late >= LATE_BY_AT_LEAST_MS, "{late} ms");
        dirs.push(dir);
    }

    let (output, merged) = merge(&dirs, &out.path().join("merged"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for index in 0..2 {
        assert!(
            stderr.contains(&format!(
                "warning: shard {}/2 began its logon phase ",
                index + 1
            )),
            "{stderr}"
        );
        let late = merged["meta"]["shards"][index]["started_late_ms"]
            .as_u64()
            .unwrap();
        assert!(late >= LATE_BY_AT_LEAST_MS, "{late} ms");
    }
}
