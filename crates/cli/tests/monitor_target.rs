//! Issue 26 item 11: on an explicit target the monitor attributes nothing to
//! servers it was not pointed at. The target here is the lab's own servers,
//! named by their addresses (`--target explicit`): from the run's point of
//! view the lab's Dovecot and Postfix are just processes on this host, so
//! the `dovecot_*` columns stay empty, and the report shows no Dovecot row
//! and no Postfix queue chart. The lab run itself (monitor_lab.rs) keeps
//! them.
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

mod common;

use std::process::Command;

use common::{PEAKHOUR, start_lab};

#[test]
fn issue_26_item_11_an_explicit_target_run_counts_no_dovecot_or_postfix_of_this_host() {
    let (_dir, lab) = start_lab(4);
    let status = lab.status.clone();
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("explicit");
    let (imap, smtp) = (
        format!("imap://{}", status.endpoints.imap),
        format!("smtp://{}", status.endpoints.smtp_noauth.clone().unwrap()),
    );
    let args = [
        "run",
        "--profile",
        "mmb-medium",
        "--target",
        "explicit",
        "--imap",
        &imap,
        "--smtp",
        &smtp,
        "--smtp-auth",
        "none",
        "--users",
        "4",
        "--speed",
        "400",
        "--duration",
        "6s",
        "--ramp-up",
        "1s",
        "--drain",
        "4s",
        "--interval",
        "2s",
        "--out",
        run_dir.to_str().unwrap(),
    ];
    let run = Command::new(PEAKHOUR)
        .args(args)
        .env("PEAKHOUR_PASSWORD", &status.password)
        .output()
        .unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.code().is_some_and(|c| c <= 1), "{run:?}");

    let csv = std::fs::read_to_string(run_dir.join("monitor.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() >= 2, "{csv}");
    // The lab's Dovecot serves this very run, with 4 users logged on: were
    // it counted, these columns would say so.
    for (index, name) in header.iter().enumerate() {
        if name.starts_with("dovecot_") || name.starts_with("postfix_queue") {
            let values: Vec<&str> = rows
                .iter()
                .map(|r| r[index])
                .filter(|v| !v.is_empty())
                .collect();
            assert!(values.is_empty(), "{name}: {values:?}");
        }
        assert!(
            !name.starts_with("group_dovecot") && !name.starts_with("group_postfix"),
            "{name}"
        );
    }
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(!html.contains("Dovecot connections"), "a Dovecot row");
    assert!(
        !html.contains("Postfix mail queue"),
        "a Postfix queue chart"
    );
    assert!(
        !html.contains("Postfix incoming queue length"),
        "a Postfix queue row"
    );
    // ... and it says so, plainly.
    assert!(
        html.contains("The monitor counted no server process"),
        "no note"
    );
}
