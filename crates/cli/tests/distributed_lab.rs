//! A distributed run on one machine, the way a Kubernetes Indexed Job runs
//! it: two `peakhour run --shards 2` processes, each with
//! `JOB_COMPLETION_INDEX` set, the same seed and `--start-at`, against the
//! lab; then `peakhour merge`. The merged run measured every action, lost
//! nothing, and its counts are within noise of one process running the
//! whole population.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{PEAKHOUR, peakhour, start_lab};

const SHAPE: [&str; 12] = [
    "--profile",
    "mmb-medium",
    "--speed",
    "400",
    "--duration",
    "15s",
    "--ramp-up",
    "2s",
    "--drain",
    "8s",
    "--interval",
    "5s",
];

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(peakhour_report::SUMMARY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{}: {problems:#?}", dir.display());
    summary
}

fn count(summary: &serde_json::Value, action: &str) -> u64 {
    summary["actions"][action]["count"].as_u64().unwrap_or(0)
}

/// Two shards, as an Indexed Job's pods run them (`--shards 2` with
/// `JOB_COMPLETION_INDEX`), in `out/shard-INDEX`; each checked whole.
fn run_shards(lab_dir: &str, out: &Path) -> Vec<String> {
    let start_at = (chrono::Utc::now() + chrono::Duration::seconds(5))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);

    let shards: Vec<_> = (0..2)
        .map(|index| {
            let dir = out.join(format!("shard-{index}"));
            let child = Command::new(PEAKHOUR)
                .args(["run", "--lab-dir", lab_dir, "--seed", "7", "--shards", "2"])
                .args(["--start-at", &start_at, "--out", dir.to_str().unwrap()])
                .args(SHAPE)
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (dir, child)
        })
        .collect();
    let mut dirs = Vec::new();
    for (dir, child) in shards {
        let output = child.wait_with_output().unwrap();
        eprintln!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let shard = summary(&dir);
        assert_eq!(shard["interrupted"], false);
        assert!(
            shard["delivery"]["reconciled"].as_bool().unwrap(),
            "{}",
            shard["delivery"]
        );
        assert!(
            shard["meta"]["shards"][0]["started_late_ms"].is_null(),
            "started late"
        );
        dirs.push(dir.to_str().unwrap().to_owned());
    }
    dirs
}

#[test]
fn issue_26_item_10_two_shards_merged_are_their_sum_and_measure_what_one_process_does() {
    let (_dir, lab) = start_lab(10);
    let lab_dir = lab.status.dir.clone();
    assert!(
        peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir])
            .status
            .success()
    );
    let out = tempfile::tempdir().unwrap();
    // One process, the whole population, the same seed and shape; first,
    // so that its mail (another run's) sits in the mailboxes the shards
    // read (issue 26, item 10: the merge counted it as crossed copies).
    let single_dir = out.path().join("single");
    let single = peakhour(
        &[
            &[
                "run",
                "--lab-dir",
                &lab_dir,
                "--seed",
                "7",
                "--out",
                single_dir.to_str().unwrap(),
            ][..],
            &SHAPE[..],
        ]
        .concat(),
    );
    assert!(single.status.code().is_some());
    let single = summary(&single_dir);

    let dirs = run_shards(&lab_dir, out.path());
    let merged_dir = out.path().join("merged");
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["--out", merged_dir.to_str().unwrap()]);
    let merging = peakhour(&args);
    let merge_said = String::from_utf8_lossy(&merging.stderr).into_owned();
    assert!(merging.status.success(), "{merge_said}");
    assert!(
        !merge_said.contains("no merged shard records sending"),
        "the other run's mail was taken for crossed copies: {merge_said}"
    );
    let merged = summary(&merged_dir);
    // Issue 31, item 7: runs of one length have one number of intervals.
    assert_eq!(merged["steady"]["intervals"], single["steady"]["intervals"]);
    assert_eq!(merged["meta"]["merged"], true);
    assert_eq!(merged["meta"]["shards"].as_array().unwrap().len(), 2);
    for file in [
        "record.json",
        "intervals.csv",
        "latency.hlog",
        "report.html",
        "monitor.csv",
    ] {
        assert!(
            merged_dir.join(file).exists(),
            "{file} missing from the merged run"
        );
    }
    let delivery = &merged["delivery"];
    assert_eq!(delivery["lost"], 0, "{delivery}");
    assert!(delivery["submitted_recipients"].as_u64().unwrap() > 0);
    assert_eq!(
        delivery["submitted_recipients"].as_u64().unwrap(),
        delivery["delivered_recipients"].as_u64().unwrap()
            + delivery["failed_recipients"].as_u64().unwrap()
    );
    // The merged counts add the shards' counts exactly.
    let shard_summaries: Vec<_> = dirs.iter().map(|d| summary(Path::new(d))).collect();
    for action in ["check_inbox", "send", "read"] {
        let sum: u64 = shard_summaries.iter().map(|s| count(s, action)).sum();
        assert_eq!(count(&merged, action), sum, "{action}");
        assert!(count(&merged, action) > 0, "{action} never ran");
    }
    // Issue 26, item 10: the merged steady phase is each shard's, interval
    // for interval, and its throughput the sum of theirs.
    for shard in &shard_summaries {
        assert_eq!(merged["steady"]["intervals"], shard["steady"]["intervals"]);
        assert_eq!(merged["steady"]["length_s"], shard["steady"]["length_s"]);
    }
    let rate = |s: &serde_json::Value| s["throughput"]["actions_per_second"].as_f64().unwrap();
    let sum: f64 = shard_summaries.iter().map(rate).sum();
    assert!(
        // Rates are rounded to 3 significant digits; an average would be half.
        (rate(&merged) - sum).abs() <= sum * 0.01,
        "merged {} actions/s, the shards' sum {sum}",
        rate(&merged)
    );

    for action in ["check_inbox", "send", "read", "move", "delete"] {
        let (m, s) = (count(&merged, action) as f64, count(&single, action) as f64);
        // The schedules are the same; only actions near a phase edge may
        // fall on the other side of it.
        assert!(
            (m - s).abs() <= 3.0 + 0.2 * s,
            "{action}: merged {m}, one process {s}"
        );
    }
}

/// Issue 31, item 4: shards are numbered 1..N, as Playwright and Jest number
/// them; `0/2` (the old first shard) is refused before anything runs, saying
/// why, with the exit code of bad input.
#[test]
fn issue_31_item_4_shard_zero_is_refused_saying_shards_are_numbered_from_one() {
    let refused = peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--shard",
        "0/2",
        "--start-at",
        "2026-05-01T12:00:00Z",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("numbered from 1 to 2") && said.contains("now 1/2"),
        "{said}"
    );
}
