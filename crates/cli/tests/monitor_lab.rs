//! The server monitor in the product: `peakhour run` against a real lab
//! writes `monitor.csv` in which Dovecot's CPU rises with the load above its
//! idle baseline, and names the bottleneck in `summary.json` and on the
//! terminal; `peakhour monitor` works on its own.
//!
//! Needs root and the packages that `scripts/setup.sh` installs.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::path::Path;

use common::{peakhour, start_lab};

/// `monitor.csv` as (header, rows of cells; an empty cell is `None`).
type Csv = (Vec<String>, Vec<Vec<Option<f64>>>);

fn read_csv(path: &Path) -> Csv {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(|c| c.parse::<f64>().ok()).collect())
        .collect();
    (header, rows)
}

/// Mean of `column` over the rows whose `time_s` is in `[from, to)`, and how many values.
fn mean_between((header, rows): &Csv, column: &str, from: f64, to: f64) -> (f64, usize) {
    let c = header.iter().position(|h| h == column).unwrap();
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| r[0].is_some_and(|t| t >= from && t < to))
        .filter_map(|r| r.get(c).copied().flatten())
        .collect();
    assert!(!values.is_empty(), "no {column} value in [{from}, {to})");
    (
        values.iter().sum::<f64>() / values.len() as f64,
        values.len(),
    )
}

#[test]
fn run_monitors_the_lab_and_names_the_bottleneck() {
    let (_dir, lab) = start_lab(10);
    let lab_dir = lab.status.dir.clone();
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");

    let init = peakhour(&["init", "--profile", "mmb-medium", "--lab-dir", &lab_dir]);
    assert!(init.status.success());
    let run = peakhour(&[
        "run",
        "--profile",
        "mmb-medium",
        "--lab-dir",
        &lab_dir,
        "--users",
        "10",
        "--speed",
        "400",
        "--duration",
        "20s",
        "--ramp-up",
        "3s",
        "--drain",
        "5s",
        "--interval",
        "5s",
        "--monitor-baseline",
        "6s",
        "--high-average-window",
        "10s",
        "--seed",
        "3",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);

    // monitor.csv, with the documented columns.
    let csv = read_csv(&run_dir.join("monitor.csv"));
    let header = &csv.0;
    assert_eq!(header[0], "time_s");
    assert_eq!(header[1], "cpu_busy_pct");
    for column in [
        "run_queue",
        "mem_available_kb",
        "group_dovecot_cpu_pct",
        "group_postfix_cpu_pct",
        "group_peakhour_cpu_pct",
        "postfix_queue_active",
        "dovecot_connections",
        "monitor_cpu_us",
    ] {
        assert!(
            header.iter().any(|h| h == column),
            "no {column} in {header:?}"
        );
    }
    assert!(csv.1.len() >= 30, "{} rows", csv.1.len());

    // Dovecot's CPU: idle baseline (before the load: time_s < 0) vs the steady
    // phase (3 s .. 23 s after the start).
    let (idle, idle_n) = mean_between(&csv, "group_dovecot_cpu_pct", -10.0, -0.01);
    let (load, load_n) = mean_between(&csv, "group_dovecot_cpu_pct", 4.0, 23.5);
    let (connections, _) = mean_between(&csv, "dovecot_connections", 4.0, 23.5);
    eprintln!(
        "Dovecot CPU: idle {idle:.2}% of a core ({idle_n} samples), steady {load:.2}% ({load_n} samples); {connections:.1} connections"
    );
    assert!(idle_n >= 3 && load_n >= 15);
    assert!(
        load > idle + 1.0 && load > 1.5 * idle,
        "Dovecot CPU did not rise with the load: idle {idle:.2}%, steady {load:.2}%"
    );
    assert!(connections >= 5.0, "{connections} Dovecot connections");

    // summary.json names the bottleneck, with evidence, and the high averages.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    let schema: serde_json::Value = serde_json::from_str(peakhour_report::SUMMARY_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    let bottleneck = &summary["bottleneck"];
    let resource = bottleneck["resource"].as_str().unwrap();
    let evidence = bottleneck["evidence"].as_str().unwrap();
    assert!(!resource.is_empty() && !evidence.is_empty(), "{bottleneck}");
    if resource == "none" {
        assert!(evidence.starts_with("no resource saturated"), "{evidence}");
    }
    let resources = summary["resources"].as_array().unwrap();
    let dovecot = resources
        .iter()
        .find(|r| r["metric"] == "group_dovecot_cpu_pct")
        .unwrap();
    assert!(dovecot["high_average"].as_f64().unwrap() >= dovecot["mean"].as_f64().unwrap());
    assert_eq!(dovecot["high_average_window_s"], 10.0);
    assert!(resources.iter().any(|r| r["metric"] == "cpu_busy_pct"));

    // The terminal summary shows it, before the verdict.
    let line = format!(
        "bottleneck:          {}",
        bottleneck["line"].as_str().unwrap()
    );
    assert!(stdout.contains(&line), "{stdout}");
    assert!(stdout.contains("Dovecot CPU % of a core"), "{stdout}");
}

#[test]
fn monitor_command_writes_csv_and_summary() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("m");
    let lab_dir = out.path().join("no-lab");
    let run = peakhour(&[
        "monitor",
        "--duration",
        "3s",
        "--interval",
        "1s",
        "--lab-dir",
        lab_dir.to_str().unwrap(),
        "--group",
        "shells=^(bash|sh|dash)$",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    let (header, rows) = read_csv(&dir.join("monitor.csv"));
    assert_eq!(header[0], "time_s");
    assert!(header.iter().any(|h| h == "group_shells_cpu_pct"));
    assert!(rows.len() >= 2, "{} rows", rows.len());
    // The second row has rates.
    assert!(rows[1][1].is_some());
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("bottleneck:"), "{stdout}");
    assert!(stdout.contains("CPU busy %"), "{stdout}");
    let saved = std::fs::read_to_string(dir.join("monitor-summary.txt")).unwrap();
    assert!(saved.contains("bottleneck:"));

    // Neither a length nor a bad group is accepted.
    assert!(
        !peakhour(&["monitor", "--out", dir.to_str().unwrap()])
            .status
            .success()
    );
    let bad = peakhour(&[
        "monitor",
        "--duration",
        "1s",
        "--group",
        "Bad Name=x",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
}
